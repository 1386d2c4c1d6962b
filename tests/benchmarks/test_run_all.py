"""The benchmark runner: scripts that need LoCoMo are skipped without it, given it with it."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def run_all(bench_path: Path) -> ModuleType:
    return importlib.import_module("run_all")


def test_scripts_that_require_data_are_told_apart(run_all: ModuleType) -> None:
    env = run_all._env()
    assert run_all._needs_data(BENCH / "bench_latency.py", env)
    assert run_all._needs_data(BENCH / "bench_recall_steps.py", env)
    assert not run_all._needs_data(BENCH / "bench_reembed.py", env)  # synthetic by default
    assert not run_all._needs_data(BENCH / "bench_tokens.py", env)


def test_without_locomo_a_data_script_is_skipped_not_failed(run_all: ModuleType) -> None:
    result = run_all.run(BENCH / "bench_question_embed.py", full=False, timeout=60)
    assert result["exit_code"] == "skipped (needs --locomo)"
    assert result["outputs"] == {}


def test_a_missing_locomo_file_is_a_usage_error(run_all: ModuleType,
                                               tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        run_all.main(["--only", "latency", "--locomo", str(tmp_path / "none.json")])
    assert exc.value.code == 2
