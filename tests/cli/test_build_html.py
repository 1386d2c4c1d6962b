"""``loomctx build --report html``: a self-contained page on stdout or in ``--report-out``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loomctx.cli.main import main


def test_html_report_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    code = main(["build", "--example", "--report", "html", "--report-out", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert stdout.startswith(f"wrote the html report to {out}")
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and 'id="items"' in page
    assert 'id="request"' in page and 'id="budget-bar"' in page


def test_html_report_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--example", "--report", "html"]) == 0
    stdout, _ = capsys.readouterr()
    assert stdout.startswith("<!doctype html>") and stdout.rstrip().endswith("</html>")


def test_report_out_takes_the_json_report_too(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["build", "--example", "--report", "json", "--report-out", str(out)]) == 0
    capsys.readouterr()
    assert json.loads(out.read_text(encoding="utf-8"))["report"]["items"]


@pytest.mark.parametrize("where, expected", [
    ("missing/r.html", "does not exist: create it"),
    (".", "is a directory: pass a file path"),
])
def test_bad_report_out_is_one_line_and_exit_2(tmp_path: Path, where: str, expected: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["build", "--example", "--report", "html", "--report-out",
                 str(tmp_path / where)])
    stdout, err = capsys.readouterr()
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and expected in err and err.startswith("loomctx: error:")


def test_an_unknown_report_kind_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["build", "--example", "--report", "pdf"])
    assert exc.value.code == 2
    assert "invalid choice: 'pdf'" in capsys.readouterr().err
