"""The error tree: drawn in ``loomctx.errors``' docstring, exported, and every leaf in use."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import loomctx
from loomctx import errors

ROOT = Path(loomctx.__file__).parent

RAISED_ELSEWHERE: dict[str, str] = {}
"""Leaf errors that loomctx itself does not raise, and who does."""


def _classes() -> dict[str, type[BaseException]]:
    return {name: getattr(errors, name) for name in errors.__all__}


def test_the_docstring_tree_is_the_class_tree() -> None:
    drawn: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        m = re.match(r"^(\s*(?:[│ ]\s*)*(?:[├└]── )?)([A-Z]\w+Error)\s", line)
        if not m:
            continue
        depth = len(m.group(1))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        drawn[m.group(2)] = stack[-1][1] if stack else ""
        stack.append((depth, m.group(2)))
    classes = _classes()
    assert set(drawn) == set(classes)
    for name, parent in drawn.items():
        if parent:
            assert classes[parent] in classes[name].__bases__, (name, parent)


def test_every_error_is_exported_from_the_package() -> None:
    assert set(errors.__all__) <= set(loomctx.__all__)
    assert all(getattr(loomctx, name) is cls for name, cls in _classes().items())


def test_every_leaf_error_is_raised_somewhere() -> None:
    """An error nobody raises is a promise nobody keeps: use it or remove it."""
    raised: set[str] = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                if isinstance(func, ast.Name):
                    raised.add(func.id)
    classes = _classes()
    leaves = {name for name, cls in classes.items()
              if not any(other is not cls and issubclass(other, cls) for other in classes.values())}
    assert leaves - raised == set(RAISED_ELSEWHERE)


def test_errors_that_name_a_culprit_keep_it() -> None:
    err = errors.SourceError("source 'kb' timed out after 2.0s", source="kb")
    assert (err.source, str(err)) == ("kb", "source 'kb' timed out after 2.0s")
    assert "source" in inspect.signature(errors.SourceError).parameters
