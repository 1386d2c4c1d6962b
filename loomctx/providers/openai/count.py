"""OpenAI's chat counting rules: what a request costs beyond the text of its messages.

The OpenAI cookbook rule for gpt-3.5/4/4o: 3 tokens per message, plus the tokens of every string
value (role, content, name, tool_call_id...), +1 when ``name`` is set; replies are primed with
3. Each tool call costs its function name + its arguments string + 3. Content parts: text as
text, images by the tile rule (:mod:`loomctx.providers._media`), anything else by its JSON. Tool
definitions use the TypeScript-namespace rendering (:mod:`loomctx.providers._schema`); the
fixed overhead is the namespace header and footer + 9. The API removes a few tokens when a
system message is present too; loomctx keeps them (errs high). Each rule is a documented
approximation, not an official count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.providers import _media, _schema
from loomctx.providers.protocol import Count, dump
from loomctx.text.messages import part_text

PER_MESSAGE = 3
PER_NAME = 1
PER_TOOL_CALL = 3
TOOLS_EXTRA = 9


class OpenAICounting:
    """:class:`~loomctx.providers.protocol.CountingRules` of OpenAI Chat Completions."""

    reply_priming = 3

    def tools_overhead(self, count: Count) -> int:
        return count(_schema.NAMESPACE_HEADER) + count(_schema.NAMESPACE_FOOTER) + TOOLS_EXTRA

    def message(self, msg: Mapping[str, Any], count: Count) -> int:
        total = PER_MESSAGE
        for key, value in msg.items():
            if value is None:
                continue
            if key == "content":
                total += _content(value, count)
            elif key == "tool_calls":
                total += sum(_tool_call(c, count) for c in value)
            elif isinstance(value, str):
                total += count(value)
            else:
                total += count(dump(value))
            if key == "name":
                total += PER_NAME
        return total

    def system(self, system: str | Sequence[Mapping[str, Any]], count: Count) -> int:
        text = system if isinstance(system, str) else "\n".join(part_text(p) for p in system)
        return self.message({"role": "system", "content": text}, count)

    def tool(self, tool_def: Mapping[str, Any], count: Count) -> int:
        return count(_schema.render_typescript(_schema.as_function(tool_def)))


def _content(content: Any, count: Count) -> int:
    if isinstance(content, str):
        return count(content)
    if isinstance(content, Sequence):
        total = 0
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                total += count(str(part.get("text", "")))
            elif isinstance(part, Mapping) and part.get("type") == "image_url":
                total += _media.openai_image_tokens(part)
            else:
                total += count(part if isinstance(part, str) else dump(part))
        return total
    return count(dump(content))


def _tool_call(call: Any, count: Count) -> int:
    fn = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(fn, Mapping):
        return PER_TOOL_CALL + count(dump(call))
    args = fn.get("arguments", "")
    args = args if isinstance(args, str) else dump(args)
    return PER_TOOL_CALL + count(str(fn.get("name", ""))) + count(args)


__all__ = ["PER_MESSAGE", "PER_NAME", "PER_TOOL_CALL", "TOOLS_EXTRA", "OpenAICounting"]
