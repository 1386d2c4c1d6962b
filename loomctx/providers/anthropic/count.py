"""Anthropic's chat counting rules: what a Messages request costs beyond its text.

4 tokens per message (role turn markers) + its content blocks: text as text, ``tool_use`` =
name + compact JSON of ``input`` + 8, ``tool_result`` = its content + 5, images by the area rule
(:mod:`loomctx.providers._media`), others by their JSON. ``system`` = its text + 3. Replies are
primed with 3. Tools: compact JSON of each definition, plus Anthropic's published 346-token
tool-use system prompt once. Each rule is a documented approximation, not an official count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.providers import _media, _schema
from loomctx.providers.protocol import Count, dump

PER_MESSAGE = 4
PER_SYSTEM = 3
PER_TOOL_USE = 8
PER_TOOL_RESULT = 5
TOOLS_SYSTEM_PROMPT = 346


class AnthropicCounting:
    """:class:`~loomctx.providers.protocol.CountingRules` of the Anthropic Messages API."""

    reply_priming = 3

    def tools_overhead(self, count: Count) -> int:
        return TOOLS_SYSTEM_PROMPT

    def message(self, msg: Mapping[str, Any], count: Count) -> int:
        return PER_MESSAGE + _content(msg.get("content"), count)

    def system(self, system: str | Sequence[Mapping[str, Any]], count: Count) -> int:
        return PER_SYSTEM + _content(system, count)

    def tool(self, tool_def: Mapping[str, Any], count: Count) -> int:
        return count(_schema.render_json(_schema.as_function(tool_def)))


def _content(content: Any, count: Count) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return count(content)
    if isinstance(content, Sequence):
        return sum(_block(b, count) for b in content)
    return count(dump(content))


def _block(block: Any, count: Count) -> int:
    if isinstance(block, str):
        return count(block)
    if not isinstance(block, Mapping):
        return count(dump(block))
    kind = block.get("type")
    if kind == "text":
        return count(str(block.get("text", "")))
    if kind == "tool_use":
        return (PER_TOOL_USE + count(str(block.get("name", "")))
                + count(dump(block.get("input", {}))))
    if kind == "tool_result":
        return PER_TOOL_RESULT + _content(block.get("content"), count)
    if kind == "image":
        return _media.anthropic_image_tokens(block)
    if kind == "thinking":
        return count(str(block.get("thinking", "")))
    return count(dump({k: v for k, v in block.items() if k != "cache_control"}))


__all__ = ["PER_MESSAGE", "PER_SYSTEM", "PER_TOOL_RESULT", "PER_TOOL_USE", "TOOLS_SYSTEM_PROMPT",
           "AnthropicCounting"]
