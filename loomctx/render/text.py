"""Plain-text renderers: sectioned (GSSC sections), minimal, and a user template.

Sections are ``[Role & Policies] [Tools] [Context] [State] [Evidence] [Task] [Output]`` in the
cache-friendly order (stable first, volatile last); ``order="gssc"`` gives the seed order
``[Role & Policies] [Task] [State] [Evidence] [Context] [Output]``.

``style="seed"`` writes the sections as seed 002's DefaultStructurer does: a label under each
of ``[Task] [State] [Evidence] [Context]`` (用户问题： ...), each evidence line tagged with its
source (``[来源: memory] ...``), and the seed's default ``[Output]`` instruction when the build
gives none. The tags and labels are counted in each item's cost and in the overhead, so the
rendered text stays within the budget.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Literal

from loomctx.errors import ConfigError
from loomctx.items import ContextItem
from loomctx.render.protocol import SECTION_FIELD, Layout, Rendered, stable_hash
from loomctx.tokens.protocol import TokenCounter

HEADERS = {
    "role": "[Role & Policies]",
    "tools": "[Tools]",
    "context": "[Context]",
    "state": "[State]",
    "evidence": "[Evidence]",
    "task": "[Task]",
    "output": "[Output]",
}
CACHE_ORDER = ("role", "tools", "output", "context", "state", "evidence", "task")
GSSC_ORDER = ("role", "tools", "task", "state", "evidence", "context", "output")
STABLE = frozenset({"role", "tools", "output"})
Style = Literal["plain", "seed"]
SEED_LABELS = {"task": "用户问题：", "state": "关键进展与未决问题：", "evidence": "事实与引用：",
               "context": "对话历史与背景："}
"""The seed's label line under a section header (seed 002, DefaultStructurer)."""
SEED_OUTPUT = ("请按以下格式回答：\n1. 结论（简洁明确）\n2. 依据（列出支撑证据及来源）\n"
               "3. 风险与假设（如有）\n4. 下一步行动建议（如适用）")
"""The seed's default ``[Output]`` instruction, used when the build gives none."""


def source_tag(item: ContextItem) -> str:
    """The seed's source tag of an evidence line: ``[来源: memory] ``."""
    return f"[来源: {item.source}] "


def item_line(item: ContextItem) -> str:
    """The text form of one item (history lines carry their role)."""
    if item.kind == "message":
        return f"{item.role}: {item.content}"
    if item.kind == "tool":
        fn = item.metadata["schema"]["function"]
        params = json.dumps(fn.get("parameters", {}), ensure_ascii=False, sort_keys=True)
        return f"{fn['name']}: {fn.get('description', '')} {params}"
    return item.content


def sections(layout: Layout, style: Style = "plain") -> dict[str, list[str]]:
    """The lines of each section, read from the layout lists of :data:`SECTION_FIELD`."""
    parts: dict[str, list[str]] = {sec: [_line(i, style) for i in getattr(layout, fld)]
                                   for sec, fld in SECTION_FIELD.items()}
    parts["context"] = [item_line(i) for i in layout.summary] + parts["context"]
    output = layout.output or (SEED_OUTPUT if style == "seed" else "")
    parts["output"] = [output] if output else []
    return parts


def _line(item: ContextItem, style: Style) -> str:
    line = item_line(item)
    return source_tag(item) + line if style == "seed" and item.section == "evidence" else line


class TextRenderer:
    """Sectioned plain text; ``headers=False`` gives the minimal format."""

    def __init__(self, counter: TokenCounter, *, order: Literal["cache", "gssc"] = "cache",
                 headers: bool = True, style: Style = "plain") -> None:
        if order not in ("cache", "gssc"):
            raise ConfigError(f"order must be 'cache' or 'gssc', got {order!r}")
        if style not in ("plain", "seed"):
            raise ConfigError(f"style must be 'plain' or 'seed', got {style!r}")
        self.style: Style = style
        self.counter = counter
        self.order = CACHE_ORDER if order == "cache" else GSSC_ORDER
        self.headers = headers
        self.format = "text" if headers else "minimal"

    def cost(self, item: ContextItem) -> int:
        return self.counter.count(_line(item, self.style)) + 1

    def overhead(self, sections: frozenset[str] | None = None) -> int:
        """Header lines of the sections that may appear (all when unknown), plus joins.

        ``[Output]`` is reserved only when ``sections`` names it (the build has output
        instructions): at a 512-token budget its ~5 tokens are better spent on evidence. The
        seed style always has an ``[Output]`` (its default) and a label per section.
        """
        seed = self.style == "seed"
        total = self.counter.count(SEED_OUTPUT) + 2 if seed else 0
        if not self.headers:
            return total
        names = {k: v for k, v in HEADERS.items()
                 if sections is None or k in sections or (seed and k == "output")}
        total += sum(self.counter.count(h) + 2 for h in names.values())
        if seed:
            total += sum(self.counter.count(SEED_LABELS[k]) + 1 for k in names
                         if k in SEED_LABELS)
        return total

    def _join(self, parts: Mapping[str, list[str]], names: tuple[str, ...]) -> str:
        blocks = []
        for name in names:
            lines = parts[name]
            if not lines:
                continue
            if self.headers and self.style == "seed" and name in SEED_LABELS:
                lines = [SEED_LABELS[name], *lines]
            body = "\n".join(lines)
            blocks.append(f"{HEADERS[name]}\n{body}" if self.headers else body)
        return "\n\n".join(blocks)

    def render(self, layout: Layout) -> Rendered:
        parts = sections(layout, self.style)
        text = self._join(parts, self.order)
        stable = tuple(n for n in self.order if n in STABLE)
        # The prefix is stable only while it stays in front, as in the cache order.
        prefix_names = stable if self.order == CACHE_ORDER else ("role", "tools")
        prefix = self._join(parts, prefix_names)
        return Rendered(
            format=self.format, payload={"text": text}, tokens=self.counter.count(text),
            prefix_tokens=self.counter.count(prefix), prefix_hash=stable_hash(prefix),
        )


_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_TEMPLATE_NAMES = {"instructions": "role", "role": "role", "tools": "tools", "history": "context",
                   "context": "context", "state": "state", "evidence": "evidence", "task": "task",
                   "input": "task", "output": "output"}


class TemplateRenderer:
    """A user template with ``{{instructions}} {{tools}} {{context}} {{state}} {{evidence}}
    {{task}} {{output}}`` placeholders (``{{history}}``/``{{input}}``/``{{role}}`` are aliases)."""

    format = "template"

    def __init__(self, template: str, counter: TokenCounter) -> None:
        names = _PLACEHOLDER.findall(template)
        unknown = sorted(set(names) - set(_TEMPLATE_NAMES))
        if unknown:
            raise ConfigError(f"unknown template placeholders {unknown!r}: use "
                              f"{sorted(_TEMPLATE_NAMES)!r}")
        if not names:
            raise ConfigError("the template has no {{placeholder}}: nothing would be rendered")
        self.template = template
        self.counter = counter

    def cost(self, item: ContextItem) -> int:
        return self.counter.count(item_line(item)) + 1

    def overhead(self, sections: frozenset[str] | None = None) -> int:
        return self.counter.count(_PLACEHOLDER.sub("", self.template)) + 2

    def render(self, layout: Layout) -> Rendered:
        parts = sections(layout)
        text = _PLACEHOLDER.sub(lambda m: "\n".join(parts[_TEMPLATE_NAMES[m.group(1)]]),
                                self.template)
        first = _PLACEHOLDER.search(self.template)
        prefix = self.template[: first.start()] if first else self.template
        return Rendered(format=self.format, payload={"text": text},
                        tokens=self.counter.count(text), prefix_tokens=self.counter.count(prefix),
                        prefix_hash=stable_hash(prefix))


__all__ = ["HEADERS", "SEED_LABELS", "SEED_OUTPUT", "Style", "TemplateRenderer", "TextRenderer",
           "item_line", "source_tag"]
