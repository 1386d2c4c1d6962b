"""bench_memory.py: a stored session reopened, and two checkouts timed build for build."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench(bench_path: Path) -> ModuleType:
    return importlib.import_module("bench_memory")


def test_two_checkouts_are_timed_build_for_build(bench: ModuleType, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    assert bench.main(["--messages", "300", "--builds", "2", "--embedder", "hashing",
                       "--db", str(db), "--out", str(tmp_path / "fill.json")]) == 0
    out = tmp_path / "paired.json"
    # this checkout as its own peer: the two sides run the same code in two processes
    assert bench.main(["--db", str(db), "--peer", str(ROOT), "--builds", "6",
                       "--embedder", "hashing", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["builds"] == 6 and result["over_budget"] == 0
    assert result["this"] == result["peer"]
    for side in ("this", "peer"):
        spread = result["warm_build_ms"][side]
        assert 0 < spread["min"] <= spread["p25"] <= spread["median"] <= spread["p75"]
    assert result["this_over_peer"]["median"] > 0
    fill = json.loads((tmp_path / "fill.json").read_text())
    assert fill["new_question_build_ms"]["n"] == bench.NEW_QUESTIONS
    # new questions, the peer on its own copy of the session
    copy = tmp_path / "copy.db"
    copy.write_bytes(db.read_bytes())
    assert bench.main(["--db", str(db), "--peer", str(ROOT), "--peer-db", str(copy),
                       "--new-questions", "--builds", "3", "--embedder", "hashing",
                       "--out", str(out)]) == 0
    fresh = json.loads(out.read_text())
    assert not fresh["same_file"] and "warm_build_ms" not in fresh
    assert fresh["new_question_build_ms"]["this"]["min"] > 0
    questions = bench._new_questions(3, seed=7, tag="this")
    assert len(set(questions)) == 3
    assert [q.split(" (")[0] for q in questions] == [
        q.split(" (")[0] for q in bench._new_questions(3, seed=7, tag="peer")]


def test_a_peer_copy_not_there_yet_is_filled_by_the_peer(bench: ModuleType,
                                                          tmp_path: Path) -> None:
    db, copy, out = tmp_path / "memory.db", tmp_path / "peer.db", tmp_path / "paired.json"
    assert bench.main(["--messages", "120", "--builds", "1", "--embedder", "hashing",
                       "--db", str(db), "--out", str(tmp_path / "fill.json")]) == 0
    assert not copy.exists()
    # as many messages as --db holds, whatever --messages says (its default is 100k)
    assert bench.main(["--db", str(db), "--peer", str(ROOT), "--peer-db", str(copy),
                       "--builds", "2", "--embedder", "hashing", "--out", str(out)]) == 0
    assert not json.loads(out.read_text())["same_file"]
    # the peer's copy holds the same messages as --db: reopened, it is timed without a fill
    assert bench.main(["--messages", "120", "--builds", "1", "--embedder", "hashing",
                       "--db", str(copy), "--out", str(tmp_path / "reopened.json")]) == 0
    reopened = json.loads((tmp_path / "reopened.json").read_text())
    assert reopened["stored"] == 120 and "reopened_seconds" in reopened


def test_new_questions_and_a_peer_copy_need_a_peer(bench: ModuleType,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.main(["--new-questions"])
    assert "go with --peer" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "says"), [
    (["--peer", "."], "--peer needs --db"),
    (["--peer", ".", "--db", "missing.db"], "does not exist"),
])
def test_a_peer_without_a_stored_session_is_refused(bench: ModuleType, tmp_path: Path,
                                                    args: list[str], says: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    args = [str(tmp_path / a) if a.endswith(".db") else a for a in args]
    with pytest.raises(SystemExit) as exc:
        bench.main(args)
    assert says in str(exc.value) + capsys.readouterr().err


def test_a_peer_that_is_not_a_checkout_is_refused(bench: ModuleType, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    db.write_bytes(b"")
    with pytest.raises(SystemExit, match="not a loomctx checkout"):
        bench.main(["--db", str(db), "--peer", str(tmp_path)])
