"""Chat-format overhead on top of a text counter: message framing, reply priming, tool schemas.

A provider does not feed the JSON of a request to the model; it renders messages with framing
tokens (``<|im_start|>role ... <|im_end|>``) and rewrites tool schemas. The budget must include
that, so :class:`ChatCounter` counts it with documented per-provider rules. The rules are
ADDITIVE by design, which lets the packer price each item once::

    messages(msgs, tools, system=s) == reply_priming + system(s) + sum(message(m)) + tools(tools)
    tools(defs) == (tools_overhead if defs else 0) + sum(tool(d))

Rules (each a documented approximation, not an official count):

* ``openai``: the OpenAI cookbook rule for gpt-3.5/4/4o: 3 tokens per message, plus the tokens of
  every string value (role, content, name, tool_call_id...), +1 when ``name`` is set; replies
  are primed with 3. Each tool call costs its function name + its arguments string + 3. Content
  parts: text as text, images by :mod:`loomctx.tokens._media`, anything else by its JSON. Tool
  definitions use the TypeScript-namespace rendering (:mod:`loomctx.tokens._schema`); the fixed
  overhead is the namespace header and footer + 9. The API removes a few tokens when a system
  message is present too; loomctx keeps them (errs high).
* ``anthropic``: 4 tokens per message (role turn markers) + its content blocks: text as text,
  ``tool_use`` = name + compact JSON of ``input`` + 8, ``tool_result`` = its content + 5, images
  by the area rule, others by their JSON. ``system`` = its text + 3. Replies are primed with 3.
  Tools: compact JSON of each definition, plus Anthropic's published 346-token tool-use system
  prompt once.
* ``text``: a message is the count of :func:`render_text` of it; no priming, no overheads;
  tools are counted by their JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

from loomctx.errors import ConfigError
from loomctx.text.messages import part_text as _part_text
from loomctx.text.messages import render_text
from loomctx.tokens import _media, _schema
from loomctx.tokens.cache import CachedCounter
from loomctx.tokens.protocol import TokenCounter

Provider = Literal["openai", "anthropic", "text"]
PROVIDERS: tuple[str, ...] = get_args(Provider)

OPENAI_PER_MESSAGE = 3
OPENAI_PER_NAME = 1
OPENAI_PER_TOOL_CALL = 3
OPENAI_TOOLS_EXTRA = 9
ANTHROPIC_PER_MESSAGE = 4
ANTHROPIC_PER_SYSTEM = 3
ANTHROPIC_PER_TOOL_USE = 8
ANTHROPIC_PER_TOOL_RESULT = 5
ANTHROPIC_TOOLS_SYSTEM_PROMPT = 346
REPLY_PRIMING: dict[str, int] = {"openai": 3, "anthropic": 3, "text": 0}


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _strip(block: Mapping[str, Any]) -> dict[str, Any]:
    """A block without ``cache_control`` (an API hint, never shown to the model)."""
    return {k: v for k, v in block.items() if k != "cache_control"}


class ChatCounter:
    """Counts whole chat requests for one provider on top of a text counter.

    ``counter`` is wrapped in a :class:`~loomctx.tokens.cache.CachedCounter` unless it already
    is one, so repeated texts (system prompt, tool schemas, old turns) are counted once.
    """

    def __init__(self, counter: TokenCounter, provider: Provider = "openai") -> None:
        if provider not in PROVIDERS:
            raise ConfigError(
                f"unknown chat provider {provider!r}: use one of {', '.join(PROVIDERS)}"
            )
        self.counter: CachedCounter = (
            counter if isinstance(counter, CachedCounter) else CachedCounter(counter)
        )
        self.provider: Provider = provider
        self.reply_priming: int = REPLY_PRIMING[provider]
        self.tools_overhead: int = self._tools_overhead()

    def __repr__(self) -> str:
        return f"ChatCounter({self.counter.inner!r}, provider={self.provider!r})"

    def text(self, s: str) -> int:
        """Tokens of a bare string (cached)."""
        return self.counter.count(s)

    def _tools_overhead(self) -> int:
        if self.provider == "openai":
            return (
                self.text(_schema.NAMESPACE_HEADER)
                + self.text(_schema.NAMESPACE_FOOTER)
                + OPENAI_TOOLS_EXTRA
            )
        if self.provider == "anthropic":
            return ANTHROPIC_TOOLS_SYSTEM_PROMPT
        return 0

    # ---- messages -------------------------------------------------------------------------

    def message(self, msg: Mapping[str, Any]) -> int:
        """Tokens of one message including its framing (rules in the module docstring)."""
        if not isinstance(msg, Mapping):
            raise ConfigError(f"a chat message must be a mapping with a 'role', got {msg!r}")
        if self.provider == "text":
            return self.text(render_text(msg))
        if self.provider == "anthropic":
            return ANTHROPIC_PER_MESSAGE + self._anthropic_content(msg.get("content"))
        return self._openai_message(msg)

    def _openai_message(self, msg: Mapping[str, Any]) -> int:
        total = OPENAI_PER_MESSAGE
        for key, value in msg.items():
            if value is None:
                continue
            if key == "content":
                total += self._openai_content(value)
            elif key == "tool_calls":
                total += sum(self._openai_tool_call(c) for c in value)
            elif isinstance(value, str):
                total += self.text(value)
            else:
                total += self.text(_dump(value))
            if key == "name":
                total += OPENAI_PER_NAME
        return total

    def _openai_content(self, content: Any) -> int:
        if isinstance(content, str):
            return self.text(content)
        if isinstance(content, Sequence):
            total = 0
            for part in content:
                if isinstance(part, Mapping) and part.get("type") == "text":
                    total += self.text(str(part.get("text", "")))
                elif isinstance(part, Mapping) and part.get("type") == "image_url":
                    total += _media.openai_image_tokens(part)
                else:
                    total += self.text(part if isinstance(part, str) else _dump(part))
            return total
        return self.text(_dump(content))

    def _openai_tool_call(self, call: Any) -> int:
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping):
            return OPENAI_PER_TOOL_CALL + self.text(_dump(call))
        args = fn.get("arguments", "")
        args = args if isinstance(args, str) else _dump(args)
        return OPENAI_PER_TOOL_CALL + self.text(str(fn.get("name", ""))) + self.text(args)

    def _anthropic_content(self, content: Any) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.text(content)
        if isinstance(content, Sequence):
            return sum(self._anthropic_block(b) for b in content)
        return self.text(_dump(content))

    def _anthropic_block(self, block: Any) -> int:
        if isinstance(block, str):
            return self.text(block)
        if not isinstance(block, Mapping):
            return self.text(_dump(block))
        kind = block.get("type")
        if kind == "text":
            return self.text(str(block.get("text", "")))
        if kind == "tool_use":
            return (
                ANTHROPIC_PER_TOOL_USE
                + self.text(str(block.get("name", "")))
                + self.text(_dump(block.get("input", {})))
            )
        if kind == "tool_result":
            return ANTHROPIC_PER_TOOL_RESULT + self._anthropic_content(block.get("content"))
        if kind == "image":
            return _media.anthropic_image_tokens(block)
        if kind == "thinking":
            return self.text(str(block.get("thinking", "")))
        return self.text(_dump(_strip(block)))

    def system(self, system: str | Sequence[Mapping[str, Any]] | None) -> int:
        """Tokens of a system prompt given apart from the messages (0 when empty)."""
        if not system:
            return 0
        if self.provider == "anthropic":
            return ANTHROPIC_PER_SYSTEM + self._anthropic_content(system)
        if isinstance(system, str):
            return self.message({"role": "system", "content": system})
        text = "\n".join(_part_text(p) for p in system)
        return self.message({"role": "system", "content": text})

    # ---- tools ----------------------------------------------------------------------------

    def tool(self, tool_def: Mapping[str, Any]) -> int:
        """Tokens of one tool definition (OpenAI, bare-function or Anthropic shape)."""
        fn = _schema.as_function(tool_def)
        if self.provider == "openai":
            return self.text(_schema.render_typescript(fn))
        return self.text(_schema.render_json(fn))

    def tools(self, defs: Iterable[Mapping[str, Any]] | None) -> int:
        """``(tools_overhead if defs else 0) + sum(tool(d) for d in defs)``."""
        defs = list(defs or ())
        if not defs:
            return 0
        return self.tools_overhead + sum(self.tool(d) for d in defs)

    def messages(
        self,
        msgs: Iterable[Mapping[str, Any]],
        tools: Iterable[Mapping[str, Any]] | None = None,
        *,
        system: str | Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """Tokens of a whole request: priming + system + every message + tools."""
        return (
            self.reply_priming
            + self.system(system)
            + sum(self.message(m) for m in msgs)
            + self.tools(tools)
        )


__all__ = ["PROVIDERS", "ChatCounter", "Provider", "render_text"]
