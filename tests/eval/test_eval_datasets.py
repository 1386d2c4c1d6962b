"""The LoCoMo, HotpotQA and generic JSONL loaders, on small synthetic files."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from loomctx.errors import ConfigError, InputError
from loomctx.eval.datasets import load_generic, load_hotpotqa, load_locomo
from loomctx.eval.metric import count_tokens


def _locomo_sample() -> dict:
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob"},
            {
                "speaker": "Bob",
                "dia_id": "D1:2",
                "text": "Look at this",
                "img_url": ["x"],
                "blip_caption": "a photo of a cat",
            },
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Cute cat"},
        ],
        "session_2_date_time": "9:00 am on 1 June, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "I moved to Oslo"},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Nice"},
        ],
        "session_3_date_time": "10:00 am on 2 June, 2023",  # a date key without its session
    }
    qa = [
        {"question": "q-malformed", "answer": "a", "evidence": ["D1:2; D1:3"], "category": 1},
        {"question": "q-colon", "answer": "a", "evidence": ["D:2:1"], "category": 2},
        {
            "question": "q-adversarial",
            "adversarial_answer": "a",
            "evidence": ["D1:1"],
            "category": 5,
        },
        {"question": "q-empty", "answer": "a", "evidence": ["D", "D9:9"], "category": 4},
        {"question": "q-spaces", "answer": "a", "evidence": ["D2:2 D1:1"], "category": 4},
    ]
    return {"sample_id": "conv-x", "conversation": conv, "qa": qa}


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_locomo_sample()]), encoding="utf-8")
    return path


def test_locomo_turns_roles_images_and_times(locomo_file: Path) -> None:
    questions = load_locomo(locomo_file)
    history = questions[0].history
    assert [t.id for t in history] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert [t.role for t in history] == ["user", "assistant", "user", "assistant", "user"]
    assert history[1].content == "Bob: Look at this [image: a photo of a cat]"
    assert history[0].content == "Ann: Hi Bob"
    start = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc).timestamp()
    assert history[0].timestamp == start
    assert history[2].timestamp == start + 2
    assert history[3].session == "session_2"
    timestamps = [t.timestamp for t in history]
    assert timestamps == sorted(timestamps)


def test_locomo_evidence_cleaning_and_category_filter(locomo_file: Path) -> None:
    questions = load_locomo(locomo_file)
    by_text = {q.question: q for q in questions}
    assert set(by_text) == {"q-malformed", "q-colon", "q-spaces"}
    assert by_text["q-malformed"].gold == ("D1:2", "D1:3")
    assert by_text["q-malformed"].category == "multi-hop"
    assert by_text["q-colon"].gold == ("D2:1",)
    assert by_text["q-colon"].category == "temporal"
    assert by_text["q-spaces"].gold == ("D2:2", "D1:1")
    assert by_text["q-spaces"].category == "single-hop"
    assert all(q.history is questions[0].history for q in questions)
    assert by_text["q-malformed"].extras == {"answer": "a"}


def test_locomo_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"not": "a list"}', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json"):
        load_locomo(path)
    path.write_text('[{"sample_id": "s", "qa": []}]', encoding="utf-8")
    with pytest.raises(InputError, match="sample s"):
        load_locomo(path)


def _hotpot_line(qid: str, n: int, supporting: tuple[int, ...]) -> str:
    contexts = [
        {
            "id": str(i),
            "title": f"{qid} title {i}",
            "paragraph_text": f"paragraph {i} of {qid}. " * 5,
            "is_supporting": i in supporting,
        }
        for i in range(n)
    ]
    return json.dumps(
        {
            "question_id": qid,
            "question_text": f"question {qid}?",
            "answers_objects": [],
            "contexts": contexts,
        }
    )


def test_hotpotqa_padding_and_gold(tmp_path: Path) -> None:
    path = tmp_path / "hotpot.jsonl"
    lines = [_hotpot_line(f"q{i}", 4, (0, 2)) for i in range(6)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    questions = load_hotpotqa(path, pad_tokens=400, seed=1)
    assert [q.id for q in questions] == [f"q{i}" for i in range(6)]
    q0 = questions[0]
    assert q0.gold == ("q0/0", "q0/2")
    ids = [t.id for t in q0.history]
    assert {"q0/0", "q0/1", "q0/2", "q0/3"} <= set(ids)
    assert len(ids) == len(set(ids)) > 4
    assert any(not i.startswith("q0/") for i in ids)
    total = sum(count_tokens(t.content) for t in q0.history)
    assert total <= 400
    assert q0.extras["pool_tokens"] == total
    assert q0.history[0].content.startswith("q") and ": paragraph" in q0.history[0].content
    again = load_hotpotqa(path, pad_tokens=400, seed=1)
    assert [t.id for t in again[0].history] == ids


def test_hotpotqa_bad_line_names_line(tmp_path: Path) -> None:
    path = tmp_path / "hotpot.jsonl"
    record = {"question_id": "q", "question_text": "?", "contexts": [{"id": "0"}]}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"hotpot.jsonl:1: contexts\[0\]"):
        load_hotpotqa(path)
    with pytest.raises(ConfigError, match="pad_tokens"):
        load_hotpotqa(path, pad_tokens=-1)
    path.write_text(_hotpot_line("q0", 2, (0,)) + '\n{"question_id": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"hotpot.jsonl:2"):
        load_hotpotqa(path)


def _generic(tmp_path: Path, records: list[dict | str]) -> Path:
    path = tmp_path / "data.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


_HISTORY = [
    {
        "id": "m1",
        "role": "user",
        "content": "I live in Oslo",
        "timestamp": "2024-05-01T10:00:00Z",
        "session": "s1",
    },
    {"id": "m2", "role": "assistant", "content": "Noted", "timestamp": 1714557660},
    {"id": "m3", "role": "user", "content": "My cat is Tom", "timestamp": "2024-05-01T10:02:00"},
]


def test_generic_inline_history_timestamps_and_extras(tmp_path: Path) -> None:
    path = _generic(
        tmp_path,
        [
            {
                "id": "q1",
                "question": "Where?",
                "history": _HISTORY,
                "gold": ["m1"],
                "category": "place",
                "question_date": "2024-05-02T00:00:00+00:00",
                "source": "x",
            },
            "",
            {"id": "q2", "question": "Cat?", "history": _HISTORY, "gold": ["m3", "m3"]},
        ],
    )
    q1, q2 = list(load_generic(path))
    assert [t.timestamp for t in q1.history] == [1714557600.0, 1714557660.0, 1714557720.0]
    assert q1.history[0].session == "s1" and q1.history[1].session is None
    assert q1.category == "place" and q2.category is None
    assert q1.extras == {"question_date": "2024-05-02T00:00:00+00:00", "source": "x"}
    assert q1.question_time == datetime(2024, 5, 2, tzinfo=timezone.utc).timestamp()
    assert q2.gold == ("m3",)
    assert q2.history is q1.history  # equal consecutive histories are shared


def test_generic_sorts_by_timestamp_when_all_present(tmp_path: Path) -> None:
    history = list(reversed(_HISTORY))
    path = _generic(tmp_path, [{"id": "q", "question": "?", "history": history, "gold": ["m2"]}])
    (q,) = load_generic(path)
    assert [t.id for t in q.history] == ["m1", "m2", "m3"]


def test_generic_shared_histories(tmp_path: Path) -> None:
    path = _generic(
        tmp_path,
        [
            {"histories": {"conv": _HISTORY}},
            {"id": "q1", "question": "a", "history_ref": "conv", "gold": ["m1"]},
            {"id": "q2", "question": "b", "history_ref": "conv", "gold": ["m2"]},
        ],
    )
    q1, q2 = load_generic(path)
    assert q1.history is q2.history and len(q1.history) == 3


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ({"id": "q", "question": "?", "history": _HISTORY, "gold": ["m9"]}, "'m9'"),
        ({"id": "q", "question": "?", "history": _HISTORY, "gold": []}, "non-empty"),
        ({"id": "q", "question": "?", "gold": ["m1"]}, "neither 'history'"),
        ({"id": "q", "question": "?", "history_ref": "nope", "gold": ["m1"]}, "'nope'"),
        (
            {
                "id": "q",
                "question": "?",
                "gold": ["m1"],
                "history": [{"id": "m1", "role": "user", "content": "x", "timestamp": "yesterday"}],
            },
            "timestamp",
        ),
        (
            {"id": "q", "question": "?", "gold": ["m1"], "history": [{"id": "m1", "role": "user"}]},
            "'content'",
        ),
        (
            {
                "id": "q",
                "question": "?",
                "gold": ["m1"],
                "history": [
                    {"id": "m1", "role": "user", "content": "a"},
                    {"id": "m1", "role": "user", "content": "b"},
                ],
            },
            "twice",
        ),
    ],
)
def test_generic_errors_name_file_and_line(tmp_path: Path, bad: dict | str, message: str) -> None:
    good = {"id": "ok", "question": "?", "history": _HISTORY, "gold": ["m1"]}
    path = _generic(tmp_path, [good, bad])
    stream = load_generic(path)
    assert next(stream).id == "ok"
    with pytest.raises(InputError, match=message) as info:
        next(stream)
    assert info.value.where == f"{path}:2"


def test_generic_large_inline_history(tmp_path: Path) -> None:
    history = [
        {
            "id": f"m{i}",
            "role": "user" if i % 2 else "assistant",
            "content": f"message {i} " * 90,
            "timestamp": 1_700_000_000 + i,
        }
        for i in range(500)
    ]
    records = [
        {"id": f"q{k}", "question": "?", "history": history, "gold": [f"m{k}"]} for k in range(3)
    ]
    path = _generic(tmp_path, records)
    assert path.stat().st_size > 3 * 400_000
    questions = list(load_generic(path))
    assert [q.gold for q in questions] == [("m0",), ("m1",), ("m2",)]
    assert len(questions[2].history) == 500
    assert questions[0].history is questions[2].history


def test_generic_reads_a_gzipped_file(tmp_path: Path) -> None:
    record = {"id": "q", "question": "Where do I live?", "history": _HISTORY, "gold": ["m1"]}
    path = tmp_path / "data.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n\n" + json.dumps({**record, "id": "q2"}) + "\n")
    questions = list(load_generic(path))
    assert [q.id for q in questions] == ["q", "q2"]
    assert questions[0].history[0].content == "I live in Oslo"
    assert questions[1].history is questions[0].history


def test_generic_corrupt_gzip_is_an_input_error(tmp_path: Path) -> None:
    """A ``.gz`` name over bytes that are not gzip: one InputError at the file, no traceback."""
    path = tmp_path / "data.jsonl.gz"
    path.write_bytes(b"not gzip data\n")
    with pytest.raises(InputError, match="cannot read") as info:
        list(load_generic(path))
    assert info.value.where == str(path)
