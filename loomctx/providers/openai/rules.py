"""OpenAI Chat Completions structural rules (listed in :mod:`loomctx.render.validate`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from loomctx.providers._rules import (
    OPENAI_ROLES,
    _at,
    _json_problems,
    _tool_names,
)


def check_openai(payload: Mapping[str, Any]) -> list[str]:
    """Problems of an OpenAI Chat Completions request (see the module docstring)."""
    if not isinstance(payload, Mapping):
        return [f"payload must be an object with 'messages', got {type(payload).__name__}"]
    problems = _json_problems(payload)
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, f"messages must be a non-empty list, got {messages!r:.60}"]
    for i, msg in enumerate(messages):
        problems.extend(_openai_message(i, msg))
    problems.extend(_openai_sequence(messages))
    tools = payload.get("tools")
    if tools is not None:
        problems.extend(_openai_tools(tools))
    return problems


def _openai_content(where: str, content: Any, *, allow_none: bool) -> list[str]:
    if content is None:
        return [] if allow_none else [f"{where}: content is missing: give a string"]
    if isinstance(content, str):
        return []
    if not isinstance(content, list) or not content:
        return [f"{where}: content must be a string or a non-empty list of parts, "
                f"got {content!r:.60}"]
    problems = []
    for j, part in enumerate(content):
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            problems.append(f"{where}: content[{j}] {part!r:.60} is not a part with a 'type'")
        elif part["type"] == "text" and not isinstance(part.get("text"), str):
            problems.append(f"{where}: content[{j}] is a text part without string 'text'")
    return problems


_PLAIN_ROLES = frozenset({"system", "developer", "user", "assistant"})


def _openai_message(i: int, msg: Any) -> list[str]:
    if type(msg) is dict and type(msg.get("content")) is str \
            and msg.get("role") in _PLAIN_ROLES and "tool_calls" not in msg:
        return []  # the usual message, text only: nothing below can object to it
    where = _at(i, msg)
    if not isinstance(msg, Mapping):
        return [f"{where}: {msg!r:.60} is not a message object"]
    role = msg.get("role")
    if role not in OPENAI_ROLES:
        return [f"{where}: unknown role {role!r}: use one of {', '.join(sorted(OPENAI_ROLES))}"]
    if role != "assistant":
        problems = _openai_content(where, msg.get("content"), allow_none=False)
        if "tool_calls" in msg:
            problems.append(f"{where}: only assistant messages carry tool_calls")
        if role == "tool" and not isinstance(msg.get("tool_call_id"), str):
            problems.append(f"{where}: tool message without a string tool_call_id")
        return problems
    calls = msg.get("tool_calls")
    problems = _openai_content(where, msg.get("content"), allow_none=bool(calls))
    if calls is None:
        return problems
    if not isinstance(calls, list) or not calls:
        return [*problems, f"{where}: tool_calls is {calls!r:.40}: it must be a non-empty list; "
                "leave the key out when there are no calls"]
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(call, Mapping) or not isinstance(fn, Mapping):
            problems.append(f"{where}: tool_calls[{j}] needs an object 'function'")
            continue
        if not isinstance(call.get("id"), str) or not call["id"]:
            problems.append(f"{where}: tool_calls[{j}] needs a non-empty string id")
        if call.get("type") != "function":
            problems.append(f"{where}: tool_calls[{j}] type is {call.get('type')!r}: "
                            "use 'function'")
        if not isinstance(fn.get("name"), str):
            problems.append(f"{where}: tool_calls[{j}] needs a string function.name")
        args = fn.get("arguments")
        if not isinstance(args, str):
            problems.append(f"{where}: tool_calls[{j}] function.arguments is "
                            f"{type(args).__name__}: send a JSON string (json.dumps it)")
        else:
            try:
                json.loads(args)
            except ValueError:
                problems.append(f"{where}: tool_calls[{j}] function.arguments {args[:40]!r} is "
                                "not valid JSON")
    return problems


def _call_ids(msg: Any) -> list[Any]:
    if not isinstance(msg, Mapping) or msg.get("role") != "assistant":
        return []
    calls = msg.get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [c.get("id") for c in calls if isinstance(c, Mapping)]


def _openai_sequence(messages: list[Any]) -> list[str]:
    """Each call block answered right after it; no tool message outside a block."""
    problems = []
    i = 0
    while i < len(messages):
        msg = messages[i]
        if type(msg) is dict and "tool_calls" not in msg and msg.get("role") != "tool":
            i += 1  # neither a call block nor a result: nothing to pair
            continue
        ids = _call_ids(msg)
        if not ids:
            if isinstance(msg, Mapping) and msg.get("role") == "tool":
                problems.append(f"{_at(i, msg)}: orphan result: no assistant tool_calls right "
                                f"before it has id {msg.get('tool_call_id')!r}; drop it or keep "
                                "its call")
            i += 1
            continue
        if len(set(map(str, ids))) != len(ids):
            problems.append(f"{_at(i, msg)}: duplicate tool call ids {ids!r}: give each call "
                            "its own id")
        pending = [x for x in ids if isinstance(x, str)]
        answered: set[str] = set()
        j = i + 1
        while j < len(messages) and isinstance(messages[j], Mapping) \
                and messages[j].get("role") == "tool":
            cid = messages[j].get("tool_call_id")
            if cid in answered:
                problems.append(f"{_at(j, messages[j])}: second answer to call {cid!r}: "
                                "keep one tool message per call")
            elif cid not in pending:
                problems.append(f"{_at(j, messages[j])}: orphan result: call {cid!r} is not in "
                                f"messages[{i}]'s tool_calls; drop it or keep its call")
            else:
                answered.add(cid)
            j += 1
        missing = [x for x in pending if x not in answered]
        if missing and j == len(messages):
            problems.append(f"{_at(i, msg)}: the request ends with unanswered tool calls "
                            f"{missing!r}: add their tool messages or leave the pending call out")
        elif missing:
            problems.append(f"{_at(i, msg)}: tool calls {missing!r} are not answered before "
                            f"messages[{j}]: put one tool message per call right after it, or "
                            "drop the whole group")
        i = j
    return problems


def _openai_tools(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return [f"tools must be a list, got {type(tools).__name__}"]
    problems: list[str] = []
    names: list[tuple[int, Any]] = []
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type") != "function" \
                or not isinstance(fn, Mapping):
            problems.append(f"tools[{i}]: must be {{'type': 'function', 'function': {{...}}}}, "
                            f"got {tool!r:.60}")
            continue
        names.append((i, fn.get("name")))
    return problems + _tool_names(names)


__all__ = ["check_openai"]
