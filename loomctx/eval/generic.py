"""The generic JSONL evaluation format, read as a stream so that large files stay cheap.

One JSON object a line. A *question line*::

    {"id": "q1", "question": "...", "gold": ["m3"],
     "history": [{"id": "m1", "role": "user", "content": "...",
                  "timestamp": "2024-05-01T10:00:00Z" | 1714557600, "session": "s1"}, ...],
     "category": "...", "question_date": "..."}          # the last two optional

``timestamp`` and ``session`` are optional; ``question_date`` (or ``question_time``) is parsed like
a timestamp; any other key is kept in ``extras``. The history is chronological as given; when every
turn has a timestamp it is sorted by it (stable).

Shared histories (to avoid repeating a 500-message history on every line): a *histories line*
``{"histories": {"<key>": [turn, ...], ...}}`` declares histories, and later question lines use
``"history_ref": "<key>"`` instead of ``"history"``. Questions that name the same key share one
history tuple, and so do consecutive lines whose inline histories are equal: the systems then index
a conversation once however it was written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from loomctx._jsonl import json_lines
from loomctx.errors import InputError
from loomctx.eval.records import EvalQuestion, Turn, parse_timestamp

_QUESTION_KEYS = {"id", "question", "history", "history_ref", "gold", "category"}
_TIME_KEYS = ("question_date", "question_time")


def _turn(raw: Any, index: int, where: str) -> Turn:
    if not isinstance(raw, dict):
        raise InputError(
            f"history[{index}] is {type(raw).__name__}, expected an object", where=where
        )
    for key in ("id", "role", "content"):
        if key not in raw:
            raise InputError(f"history[{index}] has no {key!r}", where=where)
    if not isinstance(raw["content"], str) or not isinstance(raw["role"], str):
        raise InputError(f"history[{index}]: 'role' and 'content' must be strings", where=where)
    timestamp = None
    if raw.get("timestamp") is not None:
        try:
            timestamp = parse_timestamp(raw["timestamp"])
        except ValueError as exc:
            raise InputError(
                f"history[{index}] timestamp {raw['timestamp']!r} is neither ISO 8601 nor epoch "
                "seconds",
                where=where,
            ) from exc
    session = raw.get("session")
    return Turn(
        id=str(raw["id"]),
        role=raw["role"],
        content=raw["content"],
        timestamp=timestamp,
        session=None if session is None else str(session),
    )


def _history(raw: Any, where: str) -> tuple[Turn, ...]:
    if not isinstance(raw, list):
        raise InputError(f"'history' must be a list, got {type(raw).__name__}", where=where)
    turns = [_turn(item, i, where) for i, item in enumerate(raw)]
    seen: set[str] = set()
    for turn in turns:
        if turn.id in seen:
            raise InputError(f"history has the id {turn.id!r} twice", where=where)
        seen.add(turn.id)
    if turns and all(turn.timestamp is not None for turn in turns):
        turns.sort(key=lambda turn: turn.timestamp or 0.0)
    return tuple(turns)


def _question(record: dict[str, Any], history: tuple[Turn, ...], where: str) -> EvalQuestion:
    for key in ("id", "question", "gold"):
        if key not in record:
            raise InputError(f"question line has no {key!r}", where=where)
    if not isinstance(record["question"], str):
        raise InputError("'question' must be a string", where=where)
    gold_raw = record["gold"]
    if not isinstance(gold_raw, list) or not gold_raw:
        raise InputError(
            f"'gold' must be a non-empty list of history ids, got {gold_raw!r}", where=where
        )
    known = {turn.id for turn in history}
    gold = tuple(dict.fromkeys(str(g) for g in gold_raw))
    unknown = [g for g in gold if g not in known]
    if unknown:
        raise InputError(f"gold id {unknown[0]!r} is not in the history", where=where)
    question_time = None
    for key in _TIME_KEYS:
        if record.get(key) is not None:
            try:
                question_time = parse_timestamp(record[key])
            except ValueError as exc:
                raise InputError(
                    f"{key} {record[key]!r} is neither ISO 8601 nor epoch seconds", where=where
                ) from exc
            break
    category = record.get("category")
    return EvalQuestion(
        id=str(record["id"]),
        question=record["question"],
        history=history,
        gold=gold,
        category=None if category is None else str(category),
        extras={k: v for k, v in record.items() if k not in _QUESTION_KEYS},
        question_time=question_time,
    )


def load_generic(path: str | Path) -> Iterator[EvalQuestion]:
    """Stream the questions of a generic JSONL file (format in the module docstring).

    Raises :class:`~loomctx.errors.InputError` naming the file and line for any malformed line.
    """
    shared: dict[str, tuple[Turn, ...]] = {}
    previous: tuple[Turn, ...] | None = None
    for _, where, record in json_lines(path):
        if not isinstance(record, dict):
            raise InputError(
                f"expected a JSON object, got {type(record).__name__}", where=where
            )
        if "histories" in record:
            block = record["histories"]
            if not isinstance(block, dict):
                raise InputError("'histories' must map keys to histories", where=where)
            for key, raw in block.items():
                shared[str(key)] = _history(raw, f"{where}: histories[{key!r}]")
            continue
        if "history_ref" in record:
            key = str(record["history_ref"])
            if key not in shared:
                raise InputError(
                    f"history_ref {key!r} names no earlier 'histories' entry", where=where
                )
            history = shared[key]
        elif "history" in record:
            history = _history(record["history"], where)
            if previous is not None and history == previous:
                history = previous
        else:
            raise InputError(
                "question line has neither 'history' nor 'history_ref'", where=where
            )
        previous = history
        yield _question(record, history, where)


__all__ = ["load_generic"]
