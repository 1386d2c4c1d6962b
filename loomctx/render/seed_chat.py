"""The seed's labels and source tags in a chat request's turn-context block (an option).

The seed's structurer writes one text with a label under each section and a ``[来源: …]`` tag
before each piece of evidence, so an answer can cite where a fact came from. The text formats
have it as ``text_style="seed"``. A chat request (OpenAI, Anthropic, any registered wire format)
puts state and evidence in one block (``Context for this turn …``); with
``BuildOptions(chat_style="seed")`` that block gets the same labels (progress and open questions,
facts and references) and tags, in ``text_language``. The rest of the request keeps its roles:
the system message is the instructions and the user message the question, which is what the
other labels say in a text.

:class:`SeedChatRenderer` wraps the format's renderer: it prices each piece of evidence with its
tag and reserves the label lines (measure before render), and renders a copy of the layout whose
state and evidence carry them. The build's own items and its report are unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from loomctx.errors import ConfigError
from loomctx.items import ContextItem
from loomctx.render.protocol import Layout, Rendered, Renderer
from loomctx.render.text import SEED_LABELS, SOURCE_TAG

_BLOCK = ("state", "evidence")


class SeedChatRenderer:
    """``inner`` (a chat renderer) with the seed's labels and source tags in its context block."""

    def __init__(self, inner: Renderer, *, language: Literal["zh", "en"] = "zh") -> None:
        if language not in SEED_LABELS:
            raise ConfigError(f"language must be one of {sorted(SEED_LABELS)!r}, got "
                              f"{language!r}")
        self.inner = inner
        self.format = inner.format
        self.labels = {k: SEED_LABELS[language][k] for k in _BLOCK}
        self.tag = SOURCE_TAG[language]
        chat = getattr(inner, "chat", None)
        if chat is None:
            raise ConfigError(f"chat_style='seed' applies to chat formats; the {inner.format!r} "
                              "format has no chat counter (use text_style='seed' for text)")
        self._label_cost = {k: chat.text(v) + 2 for k, v in self.labels.items()}

    def __getattr__(self, name: str) -> Any:
        """The inner renderer's other attributes (``chat``, ``placement`` …)."""
        return getattr(self.inner, name)

    def _tagged(self, item: ContextItem) -> ContextItem:
        return replace(item, content=self.tag.format(source=item.source) + item.content,
                       tokens=None)

    def cost(self, item: ContextItem) -> int:
        if item.section == "evidence" and item.kind != "message":
            return self.inner.cost(self._tagged(item))
        return self.inner.cost(item)

    def overhead(self, sections: frozenset[str] | None = None) -> int:
        extra = sum(c for k, c in self._label_cost.items() if sections is None or k in sections)
        return self.inner.overhead(sections) + extra

    def render(self, layout: Layout) -> Rendered:
        evidence = [self._tagged(i) if i.kind != "message" else i for i in layout.evidence]
        state = list(layout.state)
        for name, items in (("state", state), ("evidence", evidence)):
            if items:  # the label line opens the part, as under a text format's header
                items[0] = replace(items[0], content=f"{self.labels[name]}\n{items[0].content}",
                                   tokens=None)
        return self.inner.render(replace(layout, state=state, evidence=evidence))


__all__ = ["SeedChatRenderer"]
