"""The rules a strict open-model chat template puts on a conversation, as a checker.

Many chat templates served by vLLM, llama.cpp or TGI (Mistral's, Gemma's, and others written in
their style) raise on a conversation they cannot lay out, and the server answers 400: "System
message must be first", "Conversation roles must alternate user/assistant/user/assistant/...".
:func:`template_problems` applies those rules to an OpenAI-shaped ``messages`` list, and
``FakeModelServer(strict_template=True)`` refuses such a request the way those servers do, so a
test proves a request is accepted over real HTTP:

- at most one system message, and only as the first message;
- after it, the turns start with the user; user messages and assistant replies without tool
  calls alternate (a tool call and its results sit between a user message and the reply);
- a tool message only follows an assistant message with tool calls (or another tool message),
  and answers one of those calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ROLES = ("system", "user", "assistant", "tool")


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


__all__ = ["template_problems"]
