"""Anthropic Messages structural rules: what the API rejects, each rule with its source.

- Roles are user and assistant only (the system prompt is the top-level ``system``), strictly
  alternating, starting with user. (Messages API reference, ``messages``. The API now merges
  consecutive same-role turns, but a merge is exactly what hides a missing ``tool_result``, so
  the checker asks for the alternation the renderer promises.)
- Content is non-empty: a non-empty string or a non-empty list of blocks, except in the final
  assistant turn (a prefill). Text blocks carry non-empty text. (API errors "messages: all
  messages must have non-empty content except for the optional final assistant message" and
  "messages: text content blocks must be non-empty".)
- Every ``tool_use`` block is answered by a ``tool_result`` with the same ``tool_use_id`` in the
  next message, a user message, and the results come before any other block of it; a
  ``tool_result`` answers a ``tool_use`` of the previous assistant message. (Tool use guide,
  "Handle tool calls"; API errors "`tool_use` ids were found without `tool_result` blocks
  immediately after", "Did not find 1 `tool_result` block(s) at the beginning of this message",
  "unexpected `tool_use_id` found in `tool_result` blocks".)
- ``tool_use`` ids are unique, ``input`` is an object. (Messages API reference, ToolUseBlock.)
- At most 4 ``cache_control`` breakpoints over tools, system and messages. (Prompt caching guide:
  "You can define up to 4 cache breakpoints".)
- Tool names are unique ("tools: Tool names must be unique") and match
  ``^[a-zA-Z0-9_-]{1,64}$`` (API error "tools.7.custom.name: String should match pattern").

Each problem is one line naming where it is and how to fix it (see :mod:`loomctx.render.validate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loomctx.providers._rules import (
    MAX_CACHE_BREAKPOINTS,
    _at,
    _json_problems,
    _tool_names,
)


def check_anthropic(payload: Mapping[str, Any]) -> list[str]:
    """Problems of an Anthropic Messages request (see the module docstring)."""
    if not isinstance(payload, Mapping):
        return [f"payload must be an object with 'messages', got {type(payload).__name__}"]
    problems = _json_problems(payload)
    problems.extend(_anthropic_system(payload.get("system")))
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, f"messages must be a non-empty list, got {messages!r:.60}"]
    for i, msg in enumerate(messages):
        problems.extend(_anthropic_message(i, msg, final=i == len(messages) - 1))
    problems.extend(_anthropic_roles(messages))
    problems.extend(_anthropic_tool_pairs(messages))
    tools = payload.get("tools")
    if tools is not None:
        problems.extend(_anthropic_tools(tools))
    problems.extend(_cache_breakpoints(payload))
    return problems


def _blocks(msg: Any) -> list[Any]:
    content = msg.get("content") if isinstance(msg, Mapping) else None
    return content if isinstance(content, list) else []


def _typed(block: Any, kind: str) -> bool:
    return isinstance(block, Mapping) and block.get("type") == kind


def _anthropic_system(system: Any) -> list[str]:
    if system is None or isinstance(system, str):
        return []
    if not isinstance(system, list):
        return [f"system must be a string or a list of text blocks, got {system!r:.60}"]
    return [f"system[{j}]: must be a text block with non-empty text, got {block!r:.60}"
            for j, block in enumerate(system)
            if not _typed(block, "text") or not isinstance(block.get("text"), str)
            or not block["text"].strip()]


def _anthropic_message(i: int, msg: Any, *, final: bool) -> list[str]:
    where = _at(i, msg)
    if not isinstance(msg, Mapping):
        return [f"{where}: {msg!r:.60} is not a message object"]
    role = msg.get("role")
    if role not in ("user", "assistant"):
        return [f"{where}: role {role!r} is not allowed: use user or assistant (the system "
                "prompt goes in the top-level 'system')"]
    prefill = final and role == "assistant"
    content = msg.get("content")
    if isinstance(content, str):
        if not content.strip() and not prefill:
            return [f"{where}: content is empty: only the final assistant turn may be empty; "
                    "drop the message or give it text"]
        return []
    if not isinstance(content, list) or (not content and not prefill):
        return [f"{where}: content must be a non-empty string or a non-empty list of blocks, "
                f"got {content!r:.60}"]
    problems = []
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if not isinstance(kind, str):
            problems.append(f"{at}: {block!r:.60} is not a block with a 'type'")
        elif kind == "text":
            text = block.get("text")
            if not isinstance(text, str) or (not text.strip() and not prefill):
                problems.append(f"{at}: text blocks need non-empty text, got {text!r:.40}: "
                                "drop the block")
        elif kind == "tool_use":
            if role != "assistant":
                problems.append(f"{at}: tool_use belongs in an assistant message")
            if not isinstance(block.get("id"), str) or not block["id"]:
                problems.append(f"{at}: tool_use needs a non-empty string id")
            if not isinstance(block.get("name"), str):
                problems.append(f"{at}: tool_use needs a string name")
            if not isinstance(block.get("input"), Mapping):
                problems.append(f"{at}: tool_use input is {type(block.get('input')).__name__}: "
                                "it must be an object (json.loads the arguments string)")
        elif kind == "tool_result":
            if role != "user":
                problems.append(f"{at}: tool_result belongs in a user message")
            if not isinstance(block.get("tool_use_id"), str):
                problems.append(f"{at}: tool_result needs a string tool_use_id")
            inner = block.get("content")
            if inner is not None and not isinstance(inner, str) and not (
                    isinstance(inner, list) and all(isinstance(b, Mapping)
                                                    and isinstance(b.get("type"), str)
                                                    for b in inner)):
                problems.append(f"{at}: tool_result content must be a string or a list of "
                                f"blocks, got {inner!r:.60}")
    return problems


def _anthropic_roles(messages: list[Any]) -> list[str]:
    roles = [m.get("role") if isinstance(m, Mapping) else None for m in messages]
    problems = []
    if roles[0] != "user":
        problems.append(f"{_at(0, messages[0])}: the first message must be a user turn: "
                        "prepend one or drop the leading assistant turn")
    problems.extend(f"{_at(i, messages[i])}: two {roles[i]} turns in a row: roles must "
                    "alternate; merge them into one turn"
                    for i in range(1, len(roles)) if roles[i] == roles[i - 1])
    return problems


def _anthropic_tool_pairs(messages: list[Any]) -> list[str]:
    """Each tool_use answered at the start of the next user turn; no result without its use."""
    problems: list[str] = []
    seen: set[str] = set()
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, Mapping) else None
        blocks = _blocks(msg)
        if role == "assistant":
            ids = [b.get("id") for b in blocks if _typed(b, "tool_use")]
            for tid in ids:
                if isinstance(tid, str) and tid in seen:
                    problems.append(f"{_at(i, msg)}: tool_use id {tid!r} is used twice in the "
                                    "request: ids must be unique")
                seen.add(str(tid))
            if not ids:
                continue
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            if nxt is None:
                problems.append(f"{_at(i, msg)}: the request ends with unanswered tool_use "
                                f"{ids!r}: add their tool_result turn or leave the pending "
                                "call out")
                continue
            lead = []
            for b in _blocks(nxt):
                if not _typed(b, "tool_result"):
                    break
                lead.append(b.get("tool_use_id"))
            missing = [x for x in ids if x not in lead]
            if missing:
                problems.append(f"{_at(i, msg)}: tool_use ids {missing!r} have no tool_result "
                                f"at the start of messages[{i + 1}]: the next message must be "
                                "a user turn that begins with one tool_result per tool_use")
        elif role == "user":
            prev = messages[i - 1] if i > 0 else None
            prev_ids = ([b.get("id") for b in _blocks(prev) if _typed(b, "tool_use")]
                        if isinstance(prev, Mapping) and prev.get("role") == "assistant" else [])
            answered: set[Any] = set()
            other = False
            for j, b in enumerate(blocks):
                if not _typed(b, "tool_result"):
                    other = True
                    continue
                at = f"{_at(i, msg)}.content[{j}]"
                tid = b.get("tool_use_id")
                if tid not in prev_ids:
                    before = f"messages[{i - 1}]" if i else "a previous assistant message"
                    problems.append(f"{at}: orphan tool_result {tid!r}: no tool_use with that "
                                    f"id in {before}; drop it or keep its tool_use")
                elif tid in answered:
                    problems.append(f"{at}: second tool_result for {tid!r}: keep one")
                answered.add(tid)
                if other:
                    problems.append(f"{at}: tool_result after another block: tool_result "
                                    "blocks must come first in the user turn")
    return problems


def _anthropic_tools(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return [f"tools must be a list, got {type(tools).__name__}"]
    problems: list[str] = []
    names: list[tuple[int, Any]] = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            problems.append(f"tools[{i}]: {tool!r:.60} is not a tool object")
            continue
        if tool.get("type", "custom") == "custom" and not isinstance(tool.get("input_schema"),
                                                                      Mapping):
            problems.append(f"tools[{i}]: input_schema must be a JSON schema object")
        names.append((i, tool.get("name")))
    return problems + _tool_names(names)


def _cache_breakpoints(payload: Mapping[str, Any]) -> list[str]:
    """``cache_control`` markers where the API reads them: tools, system and message blocks."""
    marked: list[tuple[str, Any]] = []

    def scan(where: str, blocks: Any) -> None:
        if not isinstance(blocks, list):
            return
        for j, block in enumerate(blocks):
            if isinstance(block, Mapping):
                if "cache_control" in block:
                    marked.append((f"{where}[{j}]", block["cache_control"]))
                if block.get("type") == "tool_result":
                    scan(f"{where}[{j}].content", block.get("content"))

    scan("tools", payload.get("tools"))
    scan("system", payload.get("system"))
    messages = payload.get("messages")
    for i, msg in enumerate(messages if isinstance(messages, list) else []):
        scan(f"messages[{i}].content", _blocks(msg))
    problems = [f"{where}: cache_control {cc!r:.60} must be {{'type': 'ephemeral'}}"
                for where, cc in marked
                if not isinstance(cc, Mapping) or cc.get("type") != "ephemeral"]
    if len(marked) > MAX_CACHE_BREAKPOINTS:
        places = ", ".join(w for w, _ in marked)
        problems.append(f"{len(marked)} cache_control breakpoints ({places})"
                        f" > {MAX_CACHE_BREAKPOINTS}: keep the last tool, the system prompt and "
                        "at most two message breakpoints")
    return problems


__all__ = ["check_anthropic"]
