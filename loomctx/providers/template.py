"""The rules a strict open-model chat template puts on a conversation, as a checker.

Many chat templates served by vLLM, llama.cpp or TGI (Mistral's, Gemma's, and others written in
their style) raise on a conversation they cannot lay out, and the server answers 400: "System
message must be first", "Conversation roles must alternate user/assistant/user/assistant/...".
:func:`template_problems` applies those rules to an OpenAI-shaped ``messages`` list:

- at most one system message, and only as the first message;
- after it, the turns start with the user; user messages and assistant replies without tool
  calls alternate (a tool call and its results sit between a user message and the reply);
- a tool message only follows an assistant message with tool calls (or another tool message),
  and answers one of those calls.

Servers that take the Anthropic Messages API in front of such a template (llama.cpp, vLLM)
lay the request out as that conversation first: the ``system`` field becomes the leading system
message, ``tool_use`` blocks an assistant's tool calls, ``tool_result`` blocks tool messages
(the rest of that user turn a user message after them). :func:`request_template_problems`
checks a request of either format that way. A strict placement (``first_system``,
``user_block``: :mod:`loomctx.providers.placement`) promises requests that pass it, and the
team checks each request with it before it is sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.text.messages import content_text

ROLES = ("system", "user", "assistant", "tool")
_UNSAID = ("tool_use", "thinking", "redacted_thinking")
"""Assistant blocks that are not the reply's text (its tool calls, its reasoning)."""


def template_problems(messages: Sequence[Any]) -> list[str]:
    """What a strict chat template would refuse in ``messages`` (empty: it renders)."""
    problems: list[str] = []
    expect = "user"
    calls: set[str] = set()
    previous = ""
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ROLES:
            problems.append(f"messages[{i}]: role {role!r} is not one of {list(ROLES)!r}")
            continue
        if role == "system":
            if i:
                problems.append(f"messages[{i}]: a system message after the first message "
                                "(the template takes one system message, first)")
        elif role == "tool":
            if previous not in ("tool_call", "tool"):
                problems.append(f"messages[{i}]: a tool message that does not follow an "
                                "assistant tool call")
            elif m.get("tool_call_id") not in calls:
                problems.append(f"messages[{i}]: tool_call_id {m.get('tool_call_id')!r} "
                                f"answers none of the calls {sorted(calls)!r}")
        elif role == "assistant" and m.get("tool_calls"):
            if expect != "assistant":
                problems.append(f"messages[{i}]: an assistant tool call before any user "
                                "message")
            calls = {str(c.get("id")) for c in m["tool_calls"] if isinstance(c, dict)}
            role = "tool_call"
        else:
            if role != expect:
                problems.append(f"messages[{i}]: {role} after {previous or 'the start'}: "
                                "conversation roles must alternate "
                                "user/assistant/user/assistant/...")
            expect = "assistant" if role == "user" else "user"
        previous = role
    return problems


def anthropic_conversation(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic request as the OpenAI-shaped conversation a chat template is given."""
    out: list[dict[str, Any]] = []
    system = payload.get("system")
    if system:
        out.append({"role": "system", "content": content_text(system)})
    for m in payload.get("messages") or ():
        if not isinstance(m, Mapping):
            out.append({"role": None})
            continue
        role, content = m.get("role"), m.get("content")
        blocks = content if isinstance(content, list) else [content]
        if role == "assistant":
            calls = [{"id": str(b.get("id")), "type": "function"} for b in blocks
                     if isinstance(b, Mapping) and b.get("type") == "tool_use"]
            text = [b for b in blocks if not (isinstance(b, Mapping) and b.get("type") in _UNSAID)]
            msg: dict[str, Any] = {"role": "assistant", "content": content_text(text)}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
            continue
        rest = []
        for b in blocks:
            if isinstance(b, Mapping) and b.get("type") == "tool_result" and role == "user":
                out.append({"role": "tool", "tool_call_id": str(b.get("tool_use_id")),
                            "content": content_text(b.get("content"))})
            else:
                rest.append(b)
        if rest or not blocks:
            out.append({"role": role, "content": content_text(rest)})
    return out


def request_template_problems(format: str, payload: Mapping[str, Any]) -> list[str]:
    """What a strict chat template would refuse in a request of ``format`` (``openai``, its
    variants, or ``anthropic``), as the server lays it out; empty: it renders."""
    if format == "anthropic":
        return template_problems(anthropic_conversation(payload))
    messages = payload.get("messages")
    return template_problems(messages if isinstance(messages, list) else [])


__all__ = ["anthropic_conversation", "request_template_problems", "template_problems"]
