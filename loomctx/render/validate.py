"""The provider's structural rules, checked on a rendered request: the last line of defence.

Budgeting, dedup and packing all reason about items; the provider only sees the rendered JSON.
A request that breaks the provider's rules is rejected with a 400 and the agent stops, so the
builder's verify stage runs :func:`check` on every payload and never returns one with problems.
Each problem is one string naming where it is (``messages[3]``) and how to fix it; ``[]`` means
the request is structurally valid. Only structure is checked: not model names, sizes or schemas.

The rules are the provider's: :mod:`loomctx.providers.openai.rules` (OpenAI Chat Completions)
and :mod:`loomctx.providers.anthropic.rules` (Anthropic Messages) list each with its source; a
registered provider brings its own. Every format: the payload is JSON that encodes as UTF-8 (no
lone surrogates, no NaN, only JSON types); the text formats have no other rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loomctx.providers import find
from loomctx.providers._rules import (
    MAX_CACHE_BREAKPOINTS,
    OPENAI_ROLES,
    TOOL_NAME,
    _json_problems,
)
from loomctx.providers.anthropic.rules import check_anthropic
from loomctx.providers.openai.rules import check_openai


def check(format: str, payload: Mapping[str, Any]) -> list[str]:
    """Problems of ``payload`` rendered in ``format``: its provider's rules, or for a format
    no provider serves (the text formats) only that it is JSON."""
    provider = find(format)
    return provider.check(payload) if provider is not None else _json_problems(payload)


__all__ = ["MAX_CACHE_BREAKPOINTS", "OPENAI_ROLES", "TOOL_NAME", "check", "check_anthropic",
           "check_openai"]
