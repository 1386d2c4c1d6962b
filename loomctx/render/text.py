"""Plain-text renderers: sectioned (GSSC sections), minimal, and a user template.

Sections are ``[Role & Policies] [Tools] [Context] [State] [Evidence] [Task] [Output]`` in the
cache-friendly order (stable first, volatile last); ``order="gssc"`` gives the GSSC order
``[Role & Policies] [Task] [State] [Evidence] [Context] [Output]``.

``style="seed"`` adds the labelled structure of the design loomctx grew from
(docs/seed-differences.md): a label line under the headers of task, state, evidence and
context, a ``[来源: source]`` tag before each piece of evidence (so the answer can cite where a
fact came from), and a default ``[Output]`` answer format when the build gives none.
``overflow="sections"`` lets the packer fill up to twice the room (:attr:`TextRenderer.spill`)
and the verify step cut the text by section priority
(:func:`~loomctx.compress.truncate.truncate_sections`) instead of dropping whole items; the
items a cut removed or shortened are found again by :meth:`TextRenderer.after_cut` for the
report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Literal

from loomctx.compress.truncate import (
    SECTION_MARKER,
    Sections,
    cut_sections,
    join_sections,
    split_sections,
)
from loomctx.errors import ConfigError
from loomctx.items import ContextItem
from loomctx.render.protocol import SECTION_FIELD, Layout, Rendered, stable_hash
from loomctx.text.messages import common_prefix_length
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

SEED_LABELS: dict[str, dict[str, str]] = {
    "zh": {"task": "用户问题：", "state": "关键进展与未决问题：", "evidence": "事实与引用：",
           "context": "对话历史与背景："},
    "en": {"task": "User question:", "state": "Progress and open questions:",
           "evidence": "Facts and references:", "context": "Conversation and background:"},
}
"""Seed style: the label line under each section header, by language."""
SEED_OUTPUT = {
    "zh": "请按以下格式回答：\n1. 结论（简洁明确）\n2. 依据（列出支撑证据及来源）\n"
          "3. 风险与假设（如有）\n4. 下一步行动建议（如适用）",
    "en": "Answer in this format:\n1. Conclusion (short and clear)\n2. Grounds (the supporting "
          "evidence and its sources)\n3. Risks and assumptions (if any)\n4. Next steps (if "
          "relevant)",
}
"""Seed style: the default ``[Output]`` instruction when the build gives none."""
SOURCE_TAG = {"zh": "[来源: {source}] ", "en": "[Source: {source}] "}
"""Seed style: the tag before each piece of evidence."""


def item_line(item: ContextItem) -> str:
    """The text form of one item (history lines carry their role)."""
    if item.kind == "message":
        return f"{item.role}: {item.content}"
    if item.kind == "tool":
        fn = item.metadata["schema"]["function"]
        params = json.dumps(fn.get("parameters", {}), ensure_ascii=False, sort_keys=True)
        return f"{fn['name']}: {fn.get('description', '')} {params}"
    return item.content


def sections(layout: Layout, tag: str = "") -> dict[str, list[str]]:
    """The lines of each section, read from the layout lists of :data:`SECTION_FIELD`;
    ``tag`` (a format string with ``{source}``) goes before each evidence line."""
    parts: dict[str, list[str]] = {sec: [item_line(i) for i in getattr(layout, fld)]
                                   for sec, fld in SECTION_FIELD.items()}
    if tag:
        parts["evidence"] = [tag.format(source=i.source) + line
                             for i, line in zip(layout.evidence, parts["evidence"], strict=True)]
    parts["context"] = [item_line(i) for i in layout.summary] + parts["context"]
    parts["output"] = [layout.output] if layout.output else []
    return parts


class TextRenderer:
    """Sectioned plain text; ``headers=False`` gives the minimal format.

    ``style="seed"`` gives the labels, source tags and default output instruction in
    ``language``; ``overflow="sections"`` makes :meth:`cut` fit an over-budget text by section.
    """

    def __init__(self, counter: TokenCounter, *, order: Literal["cache", "gssc"] = "cache",
                 headers: bool = True, style: Literal["plain", "seed"] = "plain",
                 language: Literal["zh", "en"] = "zh",
                 overflow: Literal["drop", "sections"] = "drop") -> None:
        if order not in ("cache", "gssc"):
            raise ConfigError(f"order must be 'cache' or 'gssc', got {order!r}")
        if style not in ("plain", "seed"):
            raise ConfigError(f"style must be 'plain' or 'seed', got {style!r}")
        if language not in SEED_LABELS:
            raise ConfigError(f"language must be one of {sorted(SEED_LABELS)!r}, got {language!r}")
        if overflow not in ("drop", "sections"):
            raise ConfigError(f"overflow must be 'drop' or 'sections', got {overflow!r}")
        self.counter = counter
        self.order = CACHE_ORDER if order == "cache" else GSSC_ORDER
        self.headers = headers
        self.seed = style == "seed"
        self.language = language
        self.overflow = overflow
        self.format = "text" if headers else "minimal"
        self._rendered: tuple[str, Sections] | None = None
        """The last text rendered with headers and its sections (what :meth:`cut` cuts)."""
        self._cut: tuple[str, Sections] | None = None
        """The last text :meth:`cut` made and the sections it kept (what :meth:`after_cut`
        reads)."""

    @property
    def _tag(self) -> str:
        return SOURCE_TAG[self.language] if self.seed else ""

    def cost(self, item: ContextItem) -> int:
        line = item_line(item)
        if self._tag and item.section == "evidence":
            line = self._tag.format(source=item.source) + line
        return self.counter.count(line) + 1

    def overhead(self, sections: frozenset[str] | None = None) -> int:
        """Header lines of the sections that may appear (all when unknown), plus joins.

        ``[Output]`` is reserved only when ``sections`` names it (the build has output
        instructions): at a 512-token budget its ~5 tokens are better spent on evidence.
        """
        if not self.headers:
            return self.counter.count(SEED_OUTPUT[self.language]) + 2 if self.seed else 0
        names = HEADERS if sections is None else {k: v for k, v in HEADERS.items()
                                                 if k in sections or (self.seed and k == "output")}
        total = sum(self.counter.count(h) + 2 for h in names.values())
        if self.seed:
            labels = SEED_LABELS[self.language]
            total += sum(self.counter.count(labels[k]) + 1 for k in names if k in labels)
            if sections is None or "output" not in sections:  # the default instruction
                total += self.counter.count(SEED_OUTPUT[self.language]) + 1
        return total

    def _join(self, parts: Mapping[str, list[str]], names: tuple[str, ...]) -> str:
        if self.headers:
            return join_sections("", self._sectioned(parts, names))
        return "\n\n".join("\n".join(parts[name]) for name in names if parts[name])

    def _sectioned(self, parts: Mapping[str, list[str]], names: tuple[str, ...]) -> Sections:
        """The sections shown, as (header, body) pairs that join into the text."""
        labels = SEED_LABELS[self.language] if self.seed else {}
        blocks = []
        for name in names:
            lines = parts[name]
            if lines:
                body = "\n".join([labels[name], *lines] if name in labels else lines)
                blocks.append((HEADERS[name], f"\n{body}\n\n"))
        if blocks:  # no blank line after the last section
            blocks[-1] = (blocks[-1][0], blocks[-1][1][:-2])
        return blocks

    def cut(self, rendered: Rendered, total: int) -> Rendered | None:
        """``rendered`` fitted to ``total`` tokens by section priority (the
        ``[Context]`` section first, ``[Role & Policies]`` last; each cut keeps a marker), or
        None when this renderer drops items instead (``overflow="drop"``, or no headers)."""
        if self.overflow != "sections" or not self.headers:
            return None
        before = str(rendered.payload["text"])
        last = self._rendered
        # the sections as rendered (a body line that looks like a header stays in its body),
        # or, for a text this renderer did not just make, as parsed
        lead, shown = ("", last[1]) if last is not None and last[0] == before \
            else split_sections(before)
        kept = cut_sections(shown, total, self.counter, marker=SECTION_MARKER[self.language],
                            lead=lead)
        text = join_sections(lead, kept)
        self._cut = (text, kept)
        same = text[:common_prefix_length(before, text)]
        if self.counter.count(same) >= rendered.prefix_tokens:  # the stable prefix is intact
            prefix_tokens, prefix_hash = rendered.prefix_tokens, rendered.prefix_hash
        else:
            prefix_tokens, prefix_hash = self.counter.count(same), stable_hash(same)
        return Rendered(format=rendered.format, payload={"text": text},
                        tokens=self.counter.count(text), prefix_tokens=prefix_tokens,
                        prefix_hash=prefix_hash)

    @property
    def spill(self) -> int:
        """How many times the room the packer may fill: 2 when this renderer cuts by section
        (the packer then leaves history and evidence for the seed's halving, which keeps at
        most half of a section), else 1."""
        return 2 if self.overflow == "sections" and self.headers else 1

    def after_cut(self, layout: Layout, text: str) -> tuple[set[int], set[int]]:
        """Which of ``layout``'s items a :meth:`cut` ``text`` no longer shows whole: (gone,
        partly shown), as ``id()`` of the items. A deleted section is absent; a halved one
        kept a head (marker last) or, for ``[Context]``, an end (marker first) of its lines."""
        cut = self._cut
        shown = dict(cut[1] if cut is not None and cut[0] == text else split_sections(text)[1])
        marker = SECTION_MARKER[self.language]
        parts = sections(layout, self._tag)
        labels = SEED_LABELS[self.language] if self.seed else {}
        gone: set[int] = set()
        partly: set[int] = set()
        fields = {**{sec: getattr(layout, fld) for sec, fld in SECTION_FIELD.items()},
                  "context": [*layout.summary, *layout.history]}
        for sec, items in fields.items():
            body = shown.get(HEADERS[sec])
            if body is None:
                gone.update(id(it) for it in items)
                continue
            body = body.strip("\n")
            if marker not in body:
                continue
            lines = [labels[sec]] if sec in labels else []
            start = len("\n".join(lines)) + (1 if lines else 0)
            full = len("\n".join([*lines, *parts[sec]]))
            tail = body.startswith(marker)
            kept = len((body.removeprefix(marker) if tail else body.removesuffix(marker)).strip())
            lo, hi = (full - kept, full) if tail else (0, kept)
            for it, line in zip(items, parts[sec], strict=True):
                a, b = start, start + len(line)
                start = b + 1
                if lo <= a and b <= hi:
                    continue
                (partly if a < hi and b > lo else gone).add(id(it))
        return gone, partly

    def render(self, layout: Layout) -> Rendered:
        parts = sections(layout, self._tag)
        if self.seed and not parts["output"]:
            parts["output"] = [SEED_OUTPUT[self.language]]
        if self.headers:
            shown = self._sectioned(parts, self.order)
            text = join_sections("", shown)
            self._rendered = (text, shown)
        else:
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


__all__ = ["HEADERS", "SEED_LABELS", "SEED_OUTPUT", "SOURCE_TAG", "TemplateRenderer",
           "TextRenderer", "item_line"]
