"""What a model answered, whatever its wire format: one assistant message and the usage.

Every provider reads its replies (whole or streamed) into a :class:`ModelResponse` whose
message has the OpenAI shape (``role``, ``content``, ``tool_calls`` with their ids and names),
so a :class:`~loomctx.session.Session` stores every reply the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Tokens the provider reports for one call."""

    prompt_tokens: int = 0
    """Input tokens, cached ones included."""
    completion_tokens: int = 0
    """Output tokens."""
    cached_tokens: int = 0
    """Input tokens served from the provider's prompt cache."""


@dataclass(frozen=True, kw_only=True)
class ModelResponse:
    """One model reply."""

    message: dict[str, Any]
    """The assistant message, OpenAI shape: ``role``, ``content`` (str or None), and
    ``tool_calls`` (``id``, ``type: "function"``, ``function: {name, arguments (JSON str)}``)
    when the model asked for tools."""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    """``stop``, ``tool_calls``, ``length``... (Anthropic's stop reasons are mapped)."""
    raw: Mapping[str, Any] = field(default_factory=dict)
    """The provider's response body as received (for debugging and audits)."""


__all__ = ["ModelResponse", "Usage"]
