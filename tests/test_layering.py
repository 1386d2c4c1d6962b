"""The architecture, as import rules every module is held to.

The pipeline stacks in layers: base utilities at the bottom (``errors``, ``text``, ``items``),
then the measuring and storage parts (``tokens``, ``embed``, ``stores``), then the pipeline
stages (sources, memory, retrieval, select, compress, render), then the orchestration on top
(``builder``, ``session``, ``eval``, ``cli``). A lower layer never imports a higher one, so a new
provider, store or source plugs in without editing the core, and no module needs a cycle to load.

Every ``import`` statement counts (module level, ``if TYPE_CHECKING:`` and inside functions): a
type-only or deferred import of a higher layer is still a dependency on it. Imports inside
functions are allowed, but each module that has them says why in :data:`LAZY`.
Importing ``loomctx.a.b`` also runs ``loomctx/__init__.py``; that implicit parent import is not
an edge here (the top-level package re-exports everything by design).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import loomctx

ROOT = Path(loomctx.__file__).parent

PIPELINE = ("select", "compress", "memory", "retrieval", "sources", "render", "builder",
            "session", "eval", "cli", "report_html", "adapters")
"""The stages and the orchestration above the measuring and storage parts."""

ONLY: dict[str, frozenset[str]] = {
    "loomctx.errors": frozenset(),
    "loomctx.text": frozenset({"loomctx.errors"}),
    "loomctx.items": frozenset({"loomctx.errors"}),
}
"""Bottom layers: the only loomctx packages each may import (besides itself)."""

NEVER: dict[str, tuple[str, ...]] = {
    "loomctx.tokens": tuple(f"loomctx.{p}" for p in PIPELINE),
    "loomctx.stores": tuple(f"loomctx.{p}" for p in PIPELINE),
    "loomctx.embed": tuple(f"loomctx.{p}" for p in PIPELINE),
}
"""Measuring and storage: packages each must never import."""

LAZY: dict[str, str] = {
    "loomctx.cli.main": "each subcommand loads its modules only when it is the one run",
    "loomctx.cli.eval": "the evaluation machinery loads only for `loomctx eval`",
    "loomctx.cli.agent": "the agent, the demo and the model clients load only for `loomctx agent`",
    "loomctx.cli.workspace": "the store, the workspace and the team load only for "
                             "`loomctx workspace`",
    "loomctx.cli.serve": "FastAPI, uvicorn and the service load only for `loomctx serve`",
    "loomctx.bus.config": "the Redis client loads only when a redis:// bus is opened",
    "loomctx.cli.devservers": "the server classes load only for `loomctx dev-servers`",
    "loomctx.cli.store": "the store and its embedder load only for `loomctx store`",
    "loomctx.eval.systems": "loomctx's own pipeline loads only when that system is chosen",
    "loomctx.eval.metric": "the cl100k counter is built on the first count",
    "loomctx.stores.urls": "psycopg (the postgres extra) loads only for a postgresql:// URL",
}
"""Modules with imports inside functions, and why those imports are deferred."""


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, is a package ``__init__``)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return found


MODULES = _modules()


def _imports(name: str) -> Iterator[tuple[str, bool, int]]:
    """(imported loomctx module, inside a function, line) for every import in ``name``."""
    path, is_pkg = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def visit(node: ast.AST, in_function: bool) -> Iterator[tuple[str, bool, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "loomctx":
                        yield alias.name, in_function, child.lineno
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = name.split(".") if is_pkg else name.split(".")[:-1]
                    package = package[: len(package) - child.level + 1]
                    base = ".".join(package + ([child.module] if child.module else []))
                if base.split(".")[0] != "loomctx":
                    continue
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    yield (sub if sub in MODULES else base), in_function, child.lineno
            else:
                inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                yield from visit(child, inner)

    yield from visit(tree, False)


GRAPH = {name: sorted({target for target, _, _ in _imports(name)}) for name in MODULES}


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_walk_sees_the_imports() -> None:
    """Guard against a parser that finds nothing and so passes every rule."""
    assert "loomctx.errors" in GRAPH["loomctx.text.lexical"]
    assert "loomctx.builder" in GRAPH["loomctx.session"]
    assert any(lazy for _, lazy, _ in _imports("loomctx.cli.main"))
    assert all(target in MODULES for targets in GRAPH.values() for target in targets)


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    cycles: list[str] = []

    def walk(name: str) -> None:
        state[name] = 1
        path.append(name)
        for target in GRAPH[name]:
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target):], target]))
            elif target not in state:
                walk(target)
        path.pop()
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            walk(name)
    assert cycles == []


@pytest.mark.parametrize("layer", sorted(ONLY))
def test_bottom_layers_import_only_what_they_may(layer: str) -> None:
    allowed = ONLY[layer]
    wrong = [f"{name} imports {target}" for name in MODULES if _within(name, layer)
             for target in GRAPH[name]
             if not _within(target, layer) and not any(_within(target, a) for a in allowed)]
    assert wrong == []


@pytest.mark.parametrize("layer", sorted(NEVER))
def test_lower_layers_never_import_the_pipeline(layer: str) -> None:
    wrong = [f"{name} imports {target}" for name in MODULES if _within(name, layer)
             for target in GRAPH[name] if any(_within(target, p) for p in NEVER[layer])]
    assert wrong == []


def test_nothing_imports_the_adapters() -> None:
    """The framework adapters are optional extras: the core never loads them."""
    wrong = [f"{name} imports {target}" for name in MODULES
             if not _within(name, "loomctx.adapters")
             for target in GRAPH[name] if _within(target, "loomctx.adapters")]
    assert wrong == []


def test_imports_inside_functions_are_documented() -> None:
    undocumented = sorted({f"{name}:{line} imports {target}" for name in MODULES
                           for target, lazy, line in _imports(name)
                           if lazy and name not in LAZY})
    assert undocumented == []
