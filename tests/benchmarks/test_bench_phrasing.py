"""The phrasing benchmark end to end on tiny synthetic data (hashing embedder)."""

from __future__ import annotations

import gzip
import importlib
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from loomctx.eval.phrasing import PHRASINGS

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench(bench_path: Path) -> ModuleType:
    return importlib.import_module("bench_phrasing")


PEOPLE = [("Ann", "Bob"), ("Cleo", "Dan"), ("Eve", "Finn"), ("Gus", "Hana"), ("Ida", "Jon"),
          ("Kai", "Lea"), ("Mo", "Nia")]


def _locomo(path: Path, count: int = 2) -> Path:
    """``count`` conversations of two sessions; questions about named people across them."""
    samples = []
    for c, (a, b) in enumerate(PEOPLE[:count]):
        conv: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
        for s in (1, 2):
            conv[f"session_{s}_date_time"] = f"1:56 pm on {s} May, 2023"
            conv[f"session_{s}"] = [
                {"speaker": a if i % 2 == 0 else b, "dia_id": f"D{s}:{i + 1}",
                 "text": f"line {i + 1} of session {s} about hobby {c * 100 + s * 10 + i}"}
                for i in range(6)]
        qa = [{"question": f"What hobby did {a} mention first?", "answer": "x",
               "evidence": ["D1:1"], "category": 4},
              {"question": f"When did {b} talk about hobby {c * 100 + 22}?", "answer": "x",
               "evidence": ["D2:3"], "category": 2}]
        samples.append({"sample_id": f"conv-{c}", "conversation": conv, "qa": qa})
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def _generic(path: Path) -> Path:
    """Two questions, each after its own short history."""
    lines = []
    for n in range(2):
        history = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"message {i} about the garden item {n * 10 + i}",
                    "timestamp": 1_700_000_000 + i} for i in range(12)]
        lines.append(json.dumps({"id": f"q{n}", "question": f"Which garden item {n * 10 + 4} "
                                 "did I plant?", "gold": ["m4"], "history": history,
                                 "question_date": "2023-12-01T00:00:00Z"}))
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def test_every_phrasing_is_asked_as_a_turn_and_as_a_question(
        bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "phrasing.json"
    code = bench.main(["--family", "locomo,longmemeval", "--budgets", "300,2000",
                       "--locomo", str(_locomo(tmp_path / "locomo.json")),
                       "--longmemeval", str(_generic(tmp_path / "lme.jsonl.gz")),
                       "--embedder", "hashing", "--split", "heldout", "--json", str(out),
                       "--by-template"])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["split"] == "heldout" and doc["families"] == ["locomo", "longmemeval"]
    # LoCoMo: both conversations are development data (1-5), two questions each; LME: two.
    assert len(doc["rows"]) == len(PHRASINGS) * 2 * (2 + 2)
    rows = [(key.split("|"), row) for key, got in doc["rows"].items() for row in got]
    assert len(rows) == len(PHRASINGS) * 2 * (4 + 2)
    for (_, phrasing, _), (_, template, turn, question) in rows:
        assert 0.0 <= turn <= 1.0 and 0.0 <= question <= 1.0
        name, index = template.split("/")
        assert name == phrasing
        assert phrasing == "dataset" or int(index) % 2 == 1  # the heldout half
    cells = {(s["family"], s["budget"], s["phrasing"]) for s in doc["summary"]}
    assert cells == {(f, b, p) for f in ("locomo", "longmemeval") for b in (300, 2000)
                     for p in PHRASINGS}
    # At 2,000 tokens the whole tiny history fits: every phrasing recalls every gold turn.
    for s in doc["summary"]:
        assert s["over_budget"] == 0 and s["sources_failed"] == 0
        if s["budget"] == 2000:
            assert s["turn"] == s["question"] == 1.0, s
    table = capsys.readouterr().out
    assert "locomo at 300 tokens" in table and "follow_up" in table
    assert re.search(r"^request/\d*[13579] +\d+ +[01]\.\d{3}", table, re.M)  # per template


def test_the_test_split_and_a_conversation_choose_the_questions(
        bench: ModuleType, tmp_path: Path) -> None:
    locomo = _locomo(tmp_path / "locomo.json")
    got = list(bench.groups("locomo", locomo, "dev", {2}, None))
    assert [name for name, _ in got] == ["locomo:2"]
    assert got[0][1][0].question == "What hobby did Cleo mention first?"
    assert list(bench.groups("locomo", locomo, "test", None, None)) == []
    limited = list(bench.groups("locomo", locomo, "dev", None, 3))
    assert [len(qs) for _, qs in limited] == [2, 1]


def test_a_conversation_of_the_test_split_is_numbered_as_in_the_file(
        bench: ModuleType, tmp_path: Path) -> None:
    locomo = _locomo(tmp_path / "locomo.json", count=7)
    got = list(bench.groups("locomo", locomo, "test", {6}, None))
    assert [name for name, _ in got] == ["locomo:6"]
    assert got[0][1][0].question == "What hobby did Kai mention first?"
    assert [name for name, _ in bench.groups("locomo", locomo, "test", None, None)] == [
        "locomo:6", "locomo:7"]
    assert list(bench.groups("locomo", locomo, "dev", {6}, None)) == []


def test_bad_options_are_one_line_errors(bench: ModuleType, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    for argv, words in [(["--family", "nope"], "--family 'nope'"),
                        (["--budgets", "4k"], "--budgets '4k'"),
                        (["--locomo", str(tmp_path / "none.json"), "--family", "locomo"],
                         "is not a file")]:
        with pytest.raises(SystemExit) as exc:
            bench.main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert words in err and "\n" not in err


def test_a_callers_own_templates_are_asked_and_recorded(
        bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loomctx.eval import phrasing

    monkeypatch.setattr(phrasing, "_TABLES", dict(phrasing._TABLES))
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"chatter": ["Hmm, {low}?", "Quick one — {q}"]}))
    out = tmp_path / "phrasing.json"
    assert bench.main(["--family", "locomo", "--budgets", "2000", "--phrasing", "chatter",
                       "--locomo", str(_locomo(tmp_path / "locomo.json")),
                       "--embedder", "hashing", "--templates", str(own),
                       "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["templates"] == {"chatter": ["Hmm, {low}?", "Quick one — {q}"]}
    used = {row[1] for key, got in doc["rows"].items() if "|chatter|" in key for row in got}
    assert used and used <= {"chatter/0", "chatter/1", "chatter/2", "chatter/3"}


def test_bad_templates_are_one_line_errors(bench: ModuleType, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from loomctx.eval import phrasing

    monkeypatch.setattr(phrasing, "_TABLES", dict(phrasing._TABLES))
    for text, words in [(None, "No such file"), ("{", "Expecting"), ('["{q}"]', "JSON object"),
                        ('{"dataset": ["{q}"]}', "takes no templates"),
                        ('{"request": ["{q}"]}', "must be a lead"),
                        ('{"follow_up": ["{subject}"]}', "not a pair"),
                        ('{"chatter": ["Hi."]}', "holds none of")]:
        path = tmp_path / "own.json"
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text)
        with pytest.raises(SystemExit) as exc:
            bench.main(["--family", "locomo", "--templates", str(path)])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert words in err and "\n" not in err, err


@pytest.mark.parametrize("path", sorted(BENCH.glob("templates_*.json")), ids=lambda p: p.name)
def test_each_committed_template_set_is_taken(bench: ModuleType, path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The sets benchmarks/README.md runs with ``--templates`` load, and what they say holds
    the question (lower-cased first or without its mark; a follow-up names its subject in the
    turn before and leans on it)."""
    from loomctx.eval import phrasing

    monkeypatch.setattr(phrasing, "_TABLES", dict(phrasing._TABLES))
    own = bench._templates(str(path))
    assert own
    for name, templates in own.items():
        for i in range(4 * len(templates)):
            said = phrasing.phrase("When did Caroline go to the support group?", name,
                                   key=f"q{i}", split="dev")
            if name == "follow_up":
                assert "Caroline" in said.context[0] and "Caroline" not in said.message
                assert "go to the support group" in said.message
            else:
                assert "Caroline go to the support group" in said.message


def test_a_build_whose_source_failed_is_counted_and_shown(bench: ModuleType) -> None:
    # a source that times out on a loaded machine is no recall result: the table says so
    rows = [{"family": "locomo", "budget": 300, "phrasing": p, "turn": 1.0, "question": 1.0,
             "over": 0, "failed": f, "turn_ms": 1.0} for p, f in (("dataset", 0), ("request", 2))]
    summary = bench.summarize(rows)
    assert {s["phrasing"]: s["sources_failed"] for s in summary} == {"dataset": 0, "request": 2}
    shown = bench.table(summary)
    assert "sources failed 2" in shown and shown.count("sources failed") == 1
