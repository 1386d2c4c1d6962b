"""Benchmark scripts import each other by name, so a test module that imports one puts the
benchmarks folder on ``sys.path`` for as long as it runs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench_path() -> Iterator[Path]:
    """The benchmarks folder, on ``sys.path`` for the test module."""
    sys.path.insert(0, str(BENCH))
    try:
        yield BENCH
    finally:
        sys.path.remove(str(BENCH))
