"""Chat-format overhead on top of a text counter: message framing, reply priming, tool schemas.

A provider does not feed the JSON of a request to the model; it renders messages with framing
tokens (``<|im_start|>role ... <|im_end|>``) and rewrites tool schemas. The budget must include
that, so :class:`ChatCounter` counts it with each wire format's documented rules, which its
provider holds (:class:`~loomctx.providers.protocol.CountingRules`: OpenAI's in
:mod:`loomctx.providers.openai.count`, Anthropic's in :mod:`loomctx.providers.anthropic.count`).
The rules are ADDITIVE by design, which lets the packer price each item once::

    messages(msgs, tools, system=s) == reply_priming + system(s) + sum(message(m)) + tools(tools)
    tools(defs) == (tools_overhead if defs else 0) + sum(tool(d))

``text`` is no wire format: a message is the count of :func:`render_text` of it; no priming, no
overheads; tools are counted by their JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loomctx import providers
from loomctx.errors import ConfigError
from loomctx.providers import _schema
from loomctx.providers.protocol import Count, CountingRules
from loomctx.text.messages import part_text, render_text
from loomctx.tokens.cache import CachedCounter
from loomctx.tokens.protocol import TokenCounter

Provider = str
"""A chat format whose rules apply: a registered provider's name, or ``"text"``."""
PROVIDERS: tuple[str, ...] = (*providers.names(), "text")
"""The built-in chat formats (a provider registered later counts too)."""


class _TextRules:
    """Plain text: a message is its rendered text, nothing around it."""

    reply_priming = 0

    def tools_overhead(self, count: Count) -> int:
        return 0

    def message(self, msg: Mapping[str, Any], count: Count) -> int:
        return count(render_text(msg))

    def system(self, system: str | Sequence[Mapping[str, Any]], count: Count) -> int:
        content = system if isinstance(system, str) else "\n".join(part_text(p) for p in system)
        return count(render_text({"role": "system", "content": content}))

    def tool(self, tool_def: Mapping[str, Any], count: Count) -> int:
        return count(_schema.render_json(_schema.as_function(tool_def)))


_TEXT = _TextRules()


def _rules(provider: str) -> CountingRules:
    if provider == "text":
        return _TEXT
    found = providers.find(provider)
    if found is None:
        raise ConfigError(f"unknown chat provider {provider!r}: use one of "
                          f"{', '.join((*providers.names(), 'text'))}")
    return found.counting


class ChatCounter:
    """Counts whole chat requests for one provider on top of a text counter.

    ``counter`` is wrapped in a :class:`~loomctx.tokens.cache.CachedCounter` unless it already
    is one, so repeated texts (system prompt, tool schemas, old turns) are counted once.
    """

    def __init__(self, counter: TokenCounter, provider: Provider = "openai") -> None:
        self.rules = _rules(provider)
        self.counter: CachedCounter = (
            counter if isinstance(counter, CachedCounter) else CachedCounter(counter)
        )
        self.provider: Provider = provider
        self.reply_priming: int = self.rules.reply_priming
        self.tools_overhead: int = self.rules.tools_overhead(self.counter.count)

    def __repr__(self) -> str:
        return f"ChatCounter({self.counter.inner!r}, provider={self.provider!r})"

    def text(self, s: str) -> int:
        """Tokens of a bare string (cached)."""
        return self.counter.count(s)

    def message(self, msg: Mapping[str, Any]) -> int:
        """Tokens of one message including its framing (its provider's rules)."""
        if not isinstance(msg, Mapping):
            raise ConfigError(f"a chat message must be a mapping with a 'role', got {msg!r}")
        return self.rules.message(msg, self.counter.count)

    def system(self, system: str | Sequence[Mapping[str, Any]] | None) -> int:
        """Tokens of a system prompt given apart from the messages (0 when empty)."""
        return self.rules.system(system, self.counter.count) if system else 0

    def tool(self, tool_def: Mapping[str, Any]) -> int:
        """Tokens of one tool definition (OpenAI, bare-function or Anthropic shape)."""
        return self.rules.tool(tool_def, self.counter.count)

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
