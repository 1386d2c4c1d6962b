"""The extras: one per capability, each installing something, and ``all`` for all of them.

A user reads the extras to decide what to install: an extra that installs nothing new, an
``all`` that misses a capability, or an error message naming an extra that does not exist
would each send them the wrong way.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
TOOLING = {"bench", "dev"}
"""Extras for working on loomctx itself, not capabilities of it."""
CAPABILITIES = {name: reqs for name, reqs in EXTRAS.items() if name not in TOOLING | {"all"}}


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def test_all_is_the_union_of_the_capabilities() -> None:
    union = {str(Requirement(r)) for reqs in CAPABILITIES.values() for r in reqs}
    assert {str(Requirement(r)) for r in EXTRAS["all"]} == union
    assert len(EXTRAS["all"]) == len(set(EXTRAS["all"]))


@pytest.mark.parametrize("extra", sorted(CAPABILITIES))
def test_each_capability_installs_something_new(extra: str) -> None:
    """An extra whose packages every install already has is a promise of nothing."""
    assert _names(CAPABILITIES[extra]) - _names(PROJECT["dependencies"])


def _named_extras() -> set[tuple[str, str]]:
    """(where, extra) for every extra the package's code, examples and error messages name."""
    found = set()
    for path in sorted([*(REPO / "loomctx").rglob("*.py"), *(REPO / "examples").glob("*.py")]):
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(REPO))
        for match in re.finditer(r"loomctx\[([a-z0-9_,-]+)\]", text):
            found.update((where, name) for name in match.group(1).split(","))
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "MissingDependencyError" and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value):
                found.add((where, str(node.args[1].value)))
    return found


def test_every_extra_the_code_names_exists() -> None:
    named = _named_extras()
    assert ("loomctx/bus/redis.py", "redis") in named  # the scan sees the error messages
    assert sorted((where, extra) for where, extra in named if extra not in EXTRAS) == []
