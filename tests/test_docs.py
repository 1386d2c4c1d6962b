"""The code blocks of the README and of the docs/ pages run, and the architecture page names the
code as it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import loomctx

ROOT = Path(__file__).parent.parent
ARCH = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_readme_points_to_the_architecture_page() -> None:
    assert "docs/architecture.md" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("block", _python_blocks((ROOT / "README.md").read_text("utf-8")))
def test_readme_python_blocks_run(block: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip()


DOC_BLOCKS = [(page.name, block) for page in sorted((ROOT / "docs").glob("*.md"))
              for block in _python_blocks(page.read_text("utf-8"))]


def test_the_docs_pages_have_code_to_run() -> None:
    assert DOC_BLOCKS


@pytest.mark.parametrize(("page", "block"), DOC_BLOCKS, ids=[name for name, _ in DOC_BLOCKS])
def test_docs_python_blocks_run(page: str, block: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(block, f"docs/{page}", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip()


def test_every_package_is_on_the_architecture_page() -> None:
    packages = sorted(p.name for p in Path(loomctx.__file__).parent.iterdir()
                      if (p / "__init__.py").exists() and p.name not in ("testing",))
    missing = [name for name in packages if f"{name}/" not in ARCH and f"`{name}" not in ARCH
               and f"loomctx.{name}" not in ARCH]
    assert missing == []


def test_every_path_the_page_names_exists() -> None:
    paths = set(re.findall(r"\b((?:[a-z_]+/)+[a-z_]+\.py)\b", ARCH))
    assert paths
    missing = sorted(p for p in paths if not (ROOT / p).exists()
                     and not (ROOT / "loomctx" / p).exists())
    assert missing == []
