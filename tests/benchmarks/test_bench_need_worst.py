"""bench_need_worst.py: the messages that cost ``need_of`` the most, timed against a peer tree."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench(bench_path: Path) -> ModuleType:
    return importlib.import_module("bench_need_worst")


def test_the_messages_are_the_same_every_run_and_within_what_is_read_whole(
        bench: ModuleType) -> None:
    texts = bench.messages(120, seed=3)
    assert texts == bench.messages(120, seed=3) and len(set(texts)) > 100
    assert all(len(t) <= 4000 for t in texts)
    assert " " * 3000 in texts[0]  # every unit alone first: the long run of blanks


def test_this_tree_and_a_peer_are_timed_message_for_message(bench: ModuleType,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "worst.json"
    # this checkout as its own peer: two worker processes read the same messages
    assert bench.main(["--quick", "--peer", str(ROOT), "--peer-label", "again", "--json",
                       str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["messages"] == 40 and set(result["runs"]) == {"this", "again"}
    assert str(ROOT) not in out.read_text()  # trees are named by label, not by path
    for run in result["runs"].values():
        assert 0 < run["median_ms"] <= run["p90_ms"] <= run["max_ms"]
        assert run["slowest"][0]["ms"] == run["max_ms"]


def test_a_peer_that_is_no_checkout_is_refused(bench: ModuleType, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main(["--quick", "--peer", str(tmp_path), "--json", str(tmp_path / "x.json")])
    assert exc.value.code == 2
    assert "no loomctx/text/need.py there" in capsys.readouterr().err
