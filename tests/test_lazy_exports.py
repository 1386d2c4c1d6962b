"""``import loomctx`` is light: every public name but the errors is imported on first use.

Each check that looks at ``sys.modules`` runs in a fresh interpreter: this one has long since
imported everything.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import loomctx

HEAVY = ("numpy", "httpx", "onnxruntime")


def _loaded(code: str) -> dict[str, list[str]]:
    """Run ``code`` in a fresh interpreter; which loomctx and heavy modules it loaded."""
    probe = (f"{code}\nimport json, sys\n"
             "print(json.dumps({'loomctx': sorted(m for m in sys.modules "
             "if m.split('.')[0] == 'loomctx'), "
             f"'heavy': sorted(m for m in {HEAVY!r} if m in sys.modules)}}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_import_loomctx_loads_the_errors_only() -> None:
    loaded = _loaded("import loomctx")
    assert loaded == {"loomctx": ["loomctx", "loomctx.errors"], "heavy": []}


def test_import_loomctx_errors_loads_no_numpy_httpx_or_onnxruntime() -> None:
    assert _loaded("import loomctx.errors")["heavy"] == []
    assert _loaded("from loomctx import ConfigError")["heavy"] == []


def test_loomctx_help_loads_no_numpy_httpx_or_onnxruntime() -> None:
    loaded = _loaded("import contextlib, io\nfrom loomctx.cli.main import main\n"
                     "with contextlib.suppress(SystemExit), contextlib.redirect_stdout("
                     "io.StringIO()):\n    main(['--help'])")
    assert loaded["heavy"] == []
    assert loaded["loomctx"] == ["loomctx", "loomctx.cli", "loomctx.cli.main", "loomctx.errors"]


def test_a_build_loads_no_http_client_no_onnx_runtime_and_no_app() -> None:
    loaded = _loaded(
        "from loomctx import ContextBuilder, SystemPromptSource, UserInputSource\n"
        "b = ContextBuilder([SystemPromptSource('Be brief.'), UserInputSource()])\n"
        "assert b.build_sync('hello', max_tokens=200).tokens > 0")
    assert "numpy" in loaded["heavy"]  # the builder's BM25 scoring needs it
    assert "httpx" not in loaded["heavy"] and "onnxruntime" not in loaded["heavy"]
    apps = ("agent", "models", "service", "workspace", "workflow", "bus", "controller", "eval")
    assert [m for m in loaded["loomctx"] if m.split(".")[1:2] and m.split(".")[1] in apps] == []


def test_every_public_name_resolves_in_a_fresh_interpreter() -> None:
    names = ", ".join(loomctx.__all__)
    code = (f"from loomctx import {names}\nimport loomctx\n"
            "assert all(getattr(loomctx, n) is not None for n in loomctx.__all__)")
    subprocess.run([sys.executable, "-c", code], timeout=120, check=True)


def test_a_name_is_the_object_its_module_defines() -> None:
    from loomctx.render.validate import check
    from loomctx.session import Session

    assert loomctx.Session is Session
    assert loomctx.check_request is check


def _declared() -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """What ``loomctx/__init__.py`` imports under ``TYPE_CHECKING`` (name → (module, name)) and
    what it imports eagerly (name → module)."""
    tree = ast.parse(Path(loomctx.__file__).read_text(encoding="utf-8"))
    typed: dict[str, tuple[str, str]] = {}
    eager: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("loomctx"):
            eager.update({a.asname or a.name: node.module for a in node.names})
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                typed.update({a.asname or a.name: (imp.module, a.name) for a in imp.names})
    return typed, eager


def test_the_lazy_table_is_what_type_checkers_see() -> None:
    """The names a type checker reads (the ``TYPE_CHECKING`` imports) are the ones the lazy
    table serves, from the same modules, and together with the eager ones they are ``__all__``."""
    typed, eager = _declared()
    assert typed == loomctx._WHERE
    assert set(eager.values()) == {"loomctx.errors"}  # only the errors load eagerly
    assert {"ConfigError", "LoomctxError"} <= set(eager)
    assert sorted({*typed, *eager, "__version__"}) == loomctx.__all__


def test_dir_lists_every_public_name() -> None:
    assert set(loomctx.__all__) <= set(dir(loomctx))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'NoSuchThing'"):
        loomctx.NoSuchThing  # noqa: B018
    with pytest.raises(ImportError):
        exec("from loomctx import NoSuchThing")
