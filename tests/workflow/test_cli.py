"""``loomctx workspace demo`` then ``show``: the saved workspace printed; bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loomctx.cli.main import main
from loomctx.workflow.demo import BRIEF


def _demo(db: Path, *extra: str) -> None:
    assert main(["workspace", "demo", "--db", str(db), *extra]) == 0


def test_demo_then_show_prints_notes_timeline_and_quota(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "loomi.db"
    _demo(db)
    assert "5 notes" in capsys.readouterr().out
    assert main(["workspace", "show", "--db", str(db), "--session", "demo"]) == 0
    out = capsys.readouterr().out
    for note in ("@material1 (material, from user)", "@websearch1", "@persona1",
                 "@hitpoint1 (hitpoint, from hitpoint)", "@xhs1 (xhs, from xhs_post)"):
        assert note in out
    assert "Round2: observe: @websearch1 and @persona1 are in." in out
    assert "hitpoint: Find the hitpoint from @websearch1 and @persona1. -> @hitpoint1" in out
    assert "quota: executed 4/12, remaining 8" in out


def test_show_json_is_the_store_content(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "loomi.db"
    _demo(db, "--session", "s1", "--tenant", "acme", "--agent", "team")
    capsys.readouterr()
    assert main(["workspace", "show", "--db", str(db), "--session", "s1", "--tenant", "acme",
                 "--agent", "team", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["notes"][0]["content"] == BRIEF
    assert [n["id"] for n in doc["notes"]] == ["material1", "websearch1", "persona1",
                                                "hitpoint1", "xhs1"]
    assert doc["quota"] == {"executed": 4, "max": 12, "remaining": 8}
    assert len(doc["timeline"][0]["execution_records"]) == 3


@pytest.mark.parametrize("argv, message", [
    (["--session", "nope"], "session 'nope'"),
    (["--session", "demo", "--tenant", "other"], "tenant 'other'"),
    (["--session", "demo", "--agent", "other"], "agent 'other'"),
])
def test_unknown_scope_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          argv: list[str], message: str) -> None:
    db = tmp_path / "loomi.db"
    _demo(db)
    capsys.readouterr()
    assert main(["workspace", "show", "--db", str(db), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_missing_file_is_exit_2_and_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "absent.db"
    assert main(["workspace", "show", "--db", str(db), "--session", "demo"]) == 2
    err = capsys.readouterr().err
    assert "is not a file" in err and err.count("\n") == 1
    assert not db.exists()


def test_show_requires_a_session(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["workspace", "show", "--db", str(tmp_path / "x.db")])
    assert exc.value.code == 2


def test_a_file_that_is_not_a_store_is_exit_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "notes.txt"
    db.write_text("not a database\n", encoding="utf-8")
    assert main(["workspace", "show", "--db", str(db), "--session", "demo"]) == 2
    err = capsys.readouterr().err
    assert "not a database" in err and err.count("\n") == 1


def test_show_contexts_prints_each_call_role_report_and_expansions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "loomi.db"
    _demo(db)
    capsys.readouterr()
    assert main(["workspace", "show", "--db", str(db), "--session", "demo", "--contexts"]) == 0
    out = capsys.readouterr().out
    assert "contexts: 11 model calls" in out  # concierge 3, orchestrator 4, actions 4
    assert out.count("; report: ") == 11
    assert "#1 concierge (openai):" in out
    assert "action hitpoint (openai):" in out
    assert "expanded: @websearch1 @persona1 @material1" in out
    assert "note: thinking_budget 1200 not sent: Chat Completions has no thinking" in out
    assert "[Instruction]\n     Write one Xiaohongshu post from @hitpoint1." in out
    assert main(["workspace", "show", "--db", str(db), "--session", "demo", "--contexts",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["role"] for c in doc["calls"]][:3] == ["concierge", "concierge", "orchestrator"]
