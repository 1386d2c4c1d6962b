"""One kind → section map (``KIND_SECTION``): layout, renderers and framing all follow it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

import pytest

from loomctx.builder import BuildOptions, ContextBuilder
from loomctx.items import KIND_SECTION, ContextItem, Kind, Tier
from loomctx.render.protocol import SECTION_FIELD, Layout
from loomctx.render.text import HEADERS
from loomctx.sources.protocol import SourceRequest

NOW = 1_714_560_000.0
TOOL = {"type": "function", "function": {"name": "lookup", "description": "Look a word up.",
                                         "parameters": {"type": "object", "properties": {}}}}


def item(kind: str, n: int = 0) -> ContextItem:
    extra: dict = {}
    if kind == "message":
        extra = {"role": "user", "message": {"role": "user", "content": f"msg-{kind}-{n}"}}
    if kind == "tool":
        extra = {"metadata": {"schema": TOOL}}
    return ContextItem(id=f"{kind}-{n}", source="mixed", content=f"body-{kind}-{n}",
                       kind=kind, tier=Tier.P0, seq=n, **extra)  # type: ignore[arg-type]


class Mixed:
    """One pinned item of every kind."""

    name = "mixed"

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        return [item(k, n) for n, k in enumerate(get_args(Kind))]


def test_every_kind_has_a_section_and_every_section_a_place() -> None:
    assert set(KIND_SECTION) == set(get_args(Kind))
    assert set(KIND_SECTION.values()) <= set(SECTION_FIELD)
    assert set(SECTION_FIELD) | {"output"} == set(HEADERS)
    assert KIND_SECTION["custom"] == "evidence"  # volatile, and not a chat message
    assert ContextItem(id="x", source="s", content="c", kind="other").section == "evidence"  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", get_args(Kind))
def test_layout_add_places_an_item_by_its_section(kind: str) -> None:
    lay = Layout()
    it = item(kind)
    lay.add(it)
    placed = {name: getattr(lay, name) for name in SECTION_FIELD.values()}
    assert [name for name, items in placed.items() if items] == [SECTION_FIELD[it.section]]


def test_the_built_text_puts_each_kind_under_its_section_header() -> None:
    """The builder's layout agrees with the map (a custom item once rendered as evidence while
    the map said context)."""
    builder = ContextBuilder([Mixed()], options=BuildOptions(format="text", model="gpt-4o"))
    text = builder.build_sync("", max_tokens=2000, now=NOW).text
    headed: dict[str, str] = {}
    current = ""
    for line in text.splitlines():
        if line in HEADERS.values():
            current = line
        elif line:
            headed[line] = current
    for n, kind in enumerate(get_args(Kind)):
        line = next(k for k in headed if f"-{kind}-{n}" in k or (kind == "tool" and "lookup" in k))
        assert headed[line] == HEADERS[KIND_SECTION[kind]], (kind, line)

