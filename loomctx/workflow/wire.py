"""What a role call adds to its built context, in the words of the model's wire format.

A role builder renders its context for the model's format (``openai`` or ``anthropic``). The
team keeps its tool schemas and the concierge's in-flight tool exchange in the OpenAI shape, one
way for every provider, and turns them into the provider's shape here, with the model settings:

- tools: ``{"type": "function", "function": {...}}`` → Anthropic ``{name, description,
  input_schema}``;
- the exchange: an assistant message with ``tool_calls`` → an assistant turn of ``tool_use``
  blocks; the tool results that follow → one user turn of ``tool_result`` blocks (Anthropic
  wants every result of a turn in the next user message);
- settings: ``temperature`` is sent as given; ``thinking_budget`` becomes Anthropic's
  ``thinking`` parameter. Chat Completions has no field for a thinking budget, so there it is
  dropped, and the call's ``notes`` say so. Anthropic takes at least
  :data:`ANTHROPIC_MIN_THINKING` thinking tokens and no temperature but 1 while thinking, so a
  smaller budget is raised to the minimum and the temperature left out, each with a note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from loomctx import providers
from loomctx.errors import ConfigError
from loomctx.workspace import ModelSettings

FORMATS = ("openai", "anthropic")
"""The wire formats a team speaks."""

ANTHROPIC_MIN_THINKING = 1024
"""The smallest ``thinking.budget_tokens`` the Messages API accepts."""


def check_format(format: str, role: str) -> None:
    """Refuse a model whose payload format the team cannot send."""
    if format not in FORMATS:
        raise ConfigError(f"the {role} model takes {format!r} requests; a team sends "
                          f"{' or '.join(repr(f) for f in FORMATS)} ones: use an "
                          "OpenAIChatModel or an AnthropicChatModel")


def tools_for(format: str, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-shaped tool schemas in ``format``'s shape (its provider writes them)."""
    return providers.get(format).tools(tools)


def exchange_for(format: str, exchange: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """An OpenAI-shaped tool exchange (assistant tool calls, tool results) in ``format``."""
    if format != "anthropic":
        return [dict(m) for m in exchange]
    out: list[dict[str, Any]] = []
    for msg in exchange:
        if msg.get("role") == "tool":
            block = {"type": "tool_result", "tool_use_id": msg.get("tool_call_id", ""),
                     "content": str(msg.get("content") or "")}
            if out and out[-1]["role"] == "user":
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        blocks: list[dict[str, Any]] = []
        if isinstance(msg.get("content"), str) and msg["content"].strip():
            blocks.append({"type": "text", "text": msg["content"]})
        for call in msg.get("tool_calls") or ():
            fn = call.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {"arguments": fn.get("arguments")}
            blocks.append({"type": "tool_use", "id": call.get("id", ""),
                           "name": fn.get("name", ""),
                           "input": args if isinstance(args, dict) else {"value": args}})
        out.append({"role": "assistant", "content": blocks})
    return out


def settings_for(format: str, settings: ModelSettings) -> tuple[dict[str, Any], list[str]]:
    """The request fields carrying ``settings`` in ``format``, and notes on what was changed
    or dropped (``max_output_tokens`` travels as the client's ``max_tokens``)."""
    budget = settings.thinking_budget
    if format != "anthropic":
        notes = ([f"thinking_budget {budget} not sent: Chat Completions has no thinking "
                  "budget field"] if budget else [])
        return {"temperature": settings.temperature}, notes
    if not budget:
        return {"temperature": settings.temperature}, []
    notes = [f"temperature {settings.temperature} not sent: Anthropic takes no temperature "
             "but 1 while thinking"]
    sent = max(budget, ANTHROPIC_MIN_THINKING)
    if sent != budget:
        notes.append(f"thinking_budget {budget} raised to {sent}: Anthropic's minimum")
    if sent >= settings.max_output_tokens:
        raise ConfigError(f"thinking_budget {sent} must be below max_output_tokens "
                          f"{settings.max_output_tokens} for Anthropic: raise "
                          "max_output_tokens or lower the thinking budget")
    return {"thinking": {"type": "enabled", "budget_tokens": sent}}, notes


__all__ = ["ANTHROPIC_MIN_THINKING", "FORMATS", "check_format", "exchange_for",
           "settings_for", "tools_for"]
