"""Development and held-out splits of the evaluation data, and how turns are presented.

Defaults are tuned on the development split only; the held-out (test) split is run to report, so
a setting that only wins on the data it was tuned on shows as a gap between the two. The split is
fixed by position in the file, never drawn at random, so every run and every reader agree:

- LoCoMo: conversations 1-5 are ``dev``, 6-10 ``test``;
- HotpotQA and generic files: the first 100 questions are ``dev``, the rest ``test`` (with
  ``--limit 200``, questions 101-200);
- the generated multilingual conversations: conversation 1 (in every language) is ``dev``.

Presentation: real messages carry metadata in their text. ``with_metadata`` rewrites every turn
as ``[id] (timestamp) content`` (LoCoMo content is already ``speaker: text``), the line form an
independent harness gives every system, so that the cost and the noise of that metadata are
measured. The gold text changes with it: a turn counts only if its whole decorated line is in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import datetime, timezone

from loomctx.errors import ConfigError
from loomctx.eval.records import EvalQuestion, Turn

SPLITS = ("dev", "test", "all")
"""The split names ``loomctx eval --split`` accepts (``all``: both, reported apart too)."""
DEV_CONVERSATIONS = 5
"""LoCoMo: how many leading conversations form the development split."""
DEV_QUESTIONS = 100
"""HotpotQA and generic data: how many leading questions form the development split."""
SPLIT_KEY = "split"
"""The ``EvalQuestion.extras`` key holding a question's split name."""


def with_splits(questions: Iterable[EvalQuestion], dataset: str, split: str = "all",
                ) -> Iterator[EvalQuestion]:
    """The questions of ``split``, each tagged with its split in ``extras["split"]``.

    LoCoMo questions are split by conversation (their shared ``history``), the others by
    position. The stream is consumed lazily, so ``--limit`` still stops reading early.
    """
    if split not in SPLITS:
        raise ConfigError(f"split {split!r} is not one of {', '.join(SPLITS)}")
    histories: dict[int, int] = {}
    held: list[tuple[Turn, ...]] = []  # keeps the ids in ``histories`` from being reused
    for position, q in enumerate(questions):
        if dataset == "locomo":
            key = id(q.history)
            if key not in histories:
                histories[key] = len(histories)
                held.append(q.history)
            name = "dev" if histories[key] < DEV_CONVERSATIONS else "test"
        elif dataset == "multilingual":
            name = "dev" if q.extras.get("conversation", 0) == 0 else "test"
        else:
            name = "dev" if position < DEV_QUESTIONS else "test"
        if split in ("all", name):
            yield replace(q, extras={**q.extras, SPLIT_KEY: name})


def _stamp(timestamp: float | None) -> str:
    if timestamp is None:
        return "unknown time"
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def decorate(turn: Turn) -> Turn:
    """``turn`` with its id and time in the text: ``[D1:3] (2023-05-08 13:56) Ann: ...``."""
    return replace(turn, content=f"[{turn.id}] ({_stamp(turn.timestamp)}) {turn.content}")


def with_metadata(questions: Iterable[EvalQuestion]) -> Iterator[EvalQuestion]:
    """The questions with every history turn :func:`decorate` d; a history shared by many
    questions stays one shared tuple (decorated once), as the systems' caches expect."""
    source: tuple[Turn, ...] | None = None
    decorated: tuple[Turn, ...] = ()
    for q in questions:
        if q.history is not source:
            source, decorated = q.history, tuple(decorate(t) for t in q.history)
        yield replace(q, history=decorated)


__all__ = [
    "DEV_CONVERSATIONS",
    "DEV_QUESTIONS",
    "SPLITS",
    "SPLIT_KEY",
    "decorate",
    "with_metadata",
    "with_splits",
]
