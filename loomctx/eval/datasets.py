"""Evaluation records and the loaders that turn public data sets into them.

Every data set becomes a stream of :class:`EvalQuestion`: a question, the whole history a fresh
session would be given, and the ids of the gold evidence turns. Questions of one conversation share
one ``history`` tuple so that a 150-question conversation is held (and indexed by the systems) once.
The loaders never copy data anywhere: they read the file they are given.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from loomctx._jsonl import json_lines
from loomctx.errors import ConfigError, InputError
from loomctx.eval.generic import load_generic
from loomctx.eval.metric import count_tokens
from loomctx.eval.multilingual import multilingual_questions
from loomctx.eval.records import EvalQuestion, Turn, parse_timestamp

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
}
"""LoCoMo category numbers; 5 (adversarial, no answer in the history) is excluded."""

_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_SESSION_KEY = re.compile(r"session_(\d+)")
_LOCOMO_DATE = "%I:%M %p on %d %B, %Y"
_QA_FIELDS = ("question", "evidence", "category")
_HOTPOT_KEYS = ("question_id", "question_text", "contexts")
_PARAGRAPH_KEYS = ("id", "title", "paragraph_text")


def _read_json(path: str | Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", where=f"{path}:{exc.lineno}") from exc


def _locomo_time(text: str, where: str) -> float:
    try:
        moment = datetime.strptime(text.strip(), _LOCOMO_DATE)
    except ValueError:
        try:
            return parse_timestamp(text)
        except ValueError as exc:
            raise InputError(
                f"session date {text!r} is neither like '1:56 pm on 8 May, 2023' nor ISO 8601",
                where=where,
            ) from exc
    return moment.replace(tzinfo=timezone.utc).timestamp()


def _clean_evidence(raw: Any, known: set[str]) -> tuple[str, ...]:
    """Split malformed strings ("D8:6; D9:17"), fix "D:11:26", drop unknown ids, keep order."""
    out: list[str] = []
    for entry in raw if isinstance(raw, list) else [raw]:
        for part in _EVIDENCE_SPLIT.split(str(entry)):
            dia_id = "D" + part[2:] if part.startswith("D:") else part
            if dia_id in known and dia_id not in out:
                out.append(dia_id)
    return tuple(out)


def _locomo_history(conv: dict[str, Any], where: str) -> tuple[Turn, ...]:
    speaker_a = conv.get("speaker_a")
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.fullmatch(k)))
    turns: list[Turn] = []
    for number in numbers:
        session = f"session_{number}"
        date = conv.get(f"{session}_date_time")
        start = _locomo_time(date, where) if isinstance(date, str) else None
        for index, raw in enumerate(conv[session]):
            text = str(raw["text"])
            if raw.get("blip_caption"):
                text += f" [image: {raw['blip_caption']}]"
            speaker = str(raw["speaker"])
            if speaker_a is not None:
                role = "user" if speaker == speaker_a else "assistant"
            else:
                role = "user" if index % 2 == 0 else "assistant"
            turns.append(
                Turn(
                    id=str(raw["dia_id"]),
                    role=role,
                    content=f"{speaker}: {text}",
                    timestamp=None if start is None else start + index,
                    session=session,
                )
            )
    return tuple(turns)


def load_locomo(path: str | Path) -> list[EvalQuestion]:
    """Load LoCoMo (``locomo10.json``): categories 1-4, evidence cleaned, one history per sample.

    Questions whose evidence is empty after cleaning are dropped (they cannot be scored).
    """
    data = _read_json(path)
    if not isinstance(data, list):
        raise InputError("expected a JSON list of conversations", where=str(path))
    questions: list[EvalQuestion] = []
    for number, sample in enumerate(data):
        sample_id = str(sample.get("sample_id", number)) if isinstance(sample, dict) else number
        where = f"{path}: sample {sample_id}"
        try:
            history = _locomo_history(sample["conversation"], where)
            known = {turn.id for turn in history}
            for q_index, qa in enumerate(sample["qa"]):
                category = LOCOMO_CATEGORIES.get(int(qa["category"]))
                gold = _clean_evidence(qa.get("evidence", []), known)
                if category is None or not gold:
                    continue
                extras = {k: v for k, v in qa.items() if k not in _QA_FIELDS}
                questions.append(
                    EvalQuestion(
                        id=f"{sample_id}/{q_index}",
                        question=str(qa["question"]),
                        history=history,
                        gold=gold,
                        category=category,
                        extras=extras,
                    )
                )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(
                f"not a LoCoMo sample ({type(exc).__name__}: {exc})", where=where
            ) from exc
    return questions


def _hotpot_records(path: str | Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for _, where, record in json_lines(path):
        missing = [k for k in _HOTPOT_KEYS if not isinstance(record, dict) or k not in record]
        if missing or not isinstance(record["contexts"], list):
            raise InputError(
                f"not a HotpotQA record: missing {missing or ['contexts']}", where=where
            )
        for number, para in enumerate(record["contexts"]):
            if not isinstance(para, dict) or not all(k in para for k in _PARAGRAPH_KEYS):
                raise InputError(
                    f"contexts[{number}] needs the keys {list(_PARAGRAPH_KEYS)}", where=where
                )
        records.append(record)
    return records


def load_hotpotqa(
    path: str | Path, *, pad_tokens: int = 16000, seed: int = 0
) -> list[EvalQuestion]:
    """Load HotpotQA (IRCoT JSONL): each paragraph a turn, the pool padded with other questions'.

    A question's pool is its own paragraphs plus other questions' paragraphs drawn with a fixed
    seed until adding one more would pass ``pad_tokens`` cl100k tokens; the pool is then shuffled
    (same seed) so that neither position nor recency gives the gold paragraphs away.
    """
    if not isinstance(pad_tokens, int) or pad_tokens < 0:
        raise ConfigError(f"pad_tokens must be an int >= 0, got {pad_tokens!r}; 16000 is usual")
    records = _hotpot_records(path)
    per_record: list[list[Turn]] = []
    for record in records:
        qid = str(record["question_id"])
        per_record.append(
            [
                Turn(
                    id=f"{qid}/{p['id']}",
                    role="user",
                    content=f"{p['title']}: {p['paragraph_text']}",
                )
                for p in record["contexts"]
            ]
        )
    all_turns = [turn for turns in per_record for turn in turns]
    cost = {turn.id: count_tokens(turn.content) for turn in all_turns}
    questions: list[EvalQuestion] = []
    for index, record in enumerate(records):
        rng = random.Random(seed * 1_000_003 + index)
        pool = list(per_record[index])
        seen = {turn.content for turn in pool}
        total = sum(cost[turn.id] for turn in pool)
        for candidate in rng.sample(all_turns, len(all_turns)):
            if total >= pad_tokens:
                break
            if candidate.content in seen or total + cost[candidate.id] > pad_tokens:
                continue
            pool.append(candidate)
            seen.add(candidate.content)
            total += cost[candidate.id]
        rng.shuffle(pool)
        own = {turn.id for turn in per_record[index]}
        qid = str(record["question_id"])
        supporting = (f"{qid}/{p['id']}" for p in record["contexts"] if p.get("is_supporting"))
        gold = tuple(g for g in supporting if g in own)
        if not gold:
            continue
        questions.append(
            EvalQuestion(
                id=str(record["question_id"]),
                question=str(record["question_text"]),
                history=tuple(pool),
                gold=gold,
                category=record.get("type") if isinstance(record.get("type"), str) else None,
                extras={"pool_tokens": total},
            )
        )
    return questions


def iter_dataset(name: str, path: str | Path | None, **options: Any) -> Iterator[EvalQuestion]:
    """Questions of ``name`` (``locomo``, ``hotpotqa`` or ``generic``) read from ``path``;
    ``multilingual`` is generated (``path`` unused, ``options`` go to the generator)."""
    if name == "multilingual":
        yield from multilingual_questions(**options)
        return
    if path is None:
        raise ConfigError(f"data set {name!r} is read from a file: pass --data PATH")
    if name == "locomo":
        yield from load_locomo(path)
    elif name == "hotpotqa":
        yield from load_hotpotqa(path, **options)
    elif name == "generic":
        yield from load_generic(path)
    else:
        raise InputError(
            f"unknown data set {name!r}: use locomo, hotpotqa, generic or multilingual")


__all__ = [
    "LOCOMO_CATEGORIES",
    "EvalQuestion",
    "Turn",
    "iter_dataset",
    "load_generic",
    "load_hotpotqa",
    "load_locomo",
]
