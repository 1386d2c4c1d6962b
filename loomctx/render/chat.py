"""Chat renderers: OpenAI messages and Anthropic system + messages (with ``cache_control``).

Layout (stable first, volatile last, for prompt caching): tools, then one system message (system
prompt, active skills, output instructions), then the history in order, then the volatile part —
state and retrieved evidence — and the current input last. For OpenAI the volatile part is a
system message just before the input (or, with a strict placement, in the first system message
or the user's turn: :mod:`loomctx.render.placement`); for Anthropic it is a text block in the
last user turn (or, with ``first_system``, a last system block).
"""

from __future__ import annotations

import json
from typing import Any

from loomctx.errors import ConfigError
from loomctx.items import ContextItem
from loomctx.render.placement import CONTINUES, PLACEMENTS, Placement, place
from loomctx.render.protocol import Layout, Rendered, stable_hash
from loomctx.text.messages import content_text
from loomctx.tokens.chat import ChatCounter

EVIDENCE_HEADER = "Context for this turn (state and retrieved evidence):"
SIZES_MAX = 500_000
"""History messages whose token counts a renderer keeps (cleared whole past it)."""


def _system_text(layout: Layout) -> str:
    parts = [i.content for i in layout.system]
    if layout.output:
        parts.append(layout.output)
    return "\n\n".join(parts)


def _summary_text(layout: Layout) -> str:
    return "\n\n".join(i.content for i in layout.summary)


def _input_message(item: ContextItem) -> dict[str, Any]:
    """The current input as a user message, with its parts (images) when it has them."""
    msg = item.message
    if msg is not None and msg.get("content") is not None:
        out = {"role": "user", "content": msg["content"]}
        if msg.get("name"):
            out["name"] = msg["name"]
        return out
    return {"role": "user", "content": item.content}


def _volatile_text(layout: Layout) -> str:
    lines = [i.content for i in (*layout.state, *layout.evidence)]
    return EVIDENCE_HEADER + "\n\n" + "\n\n".join(lines) if lines else ""


def _check_placement(placement: str) -> None:
    if placement not in PLACEMENTS:
        raise ConfigError(f"placement must be one of {list(PLACEMENTS)!r}, got {placement!r}; "
                          "'user_block' suits chat templates that allow one system message")


class OpenAIRenderer:
    """OpenAI Chat Completions ``messages`` (+ ``tools``).

    ``placement`` says where the summary, recall notes and evidence block go
    (:mod:`loomctx.render.placement`): ``"system"`` (mid-conversation system messages, OpenAI's
    default) or, for servers whose chat template allows one leading system message and
    alternating roles, ``"first_system"`` or ``"user_block"``.
    """

    format = "openai"

    def __init__(self, chat: ChatCounter, *, placement: Placement = "system") -> None:
        _check_placement(placement)
        self.chat = chat
        self.placement = placement
        self._sizes: dict[int, tuple[Any, int]] = {}
        """id of a history message → (the message, its tokens): a turn re-renders the
        same stored messages, so each is counted once, not on every build."""

    def _history_tokens(self, msg: Any) -> int:
        """``chat.message(msg)`` for a stored history message, cached by its identity
        (stored messages are not changed in place; the builder's costs rely on it too)."""
        hit = self._sizes.get(id(msg))
        if hit is not None and hit[0] is msg:
            return hit[1]
        n = self.chat.message(msg)
        if len(self._sizes) >= SIZES_MAX:
            self._sizes.clear()
        self._sizes[id(msg)] = (msg, n)
        return n

    def cost(self, item: ContextItem) -> int:
        if item.kind == "message":
            return self.chat.message(item.message or {"role": item.role, "content": item.content})
        if item.kind == "tool":
            return self.chat.tool(item.metadata["schema"])
        if item.kind == "input":
            return self.chat.message(_input_message(item))
        if item.metadata.get("compacted"):  # the summary: a system message of its own
            return self.chat.message({"role": "system", "content": item.content})
        return self.chat.text(item.content) + 1

    def overhead(self, sections: frozenset[str] | None = None) -> int:
        """Priming, the system message frame, and (when they may appear) the evidence message
        frame and the tools parameter's fixed cost."""
        frame = self.chat.message({"role": "system", "content": ""})
        total = self.chat.reply_priming + frame
        if sections is None or sections & {"state", "evidence"}:
            total += frame + self.chat.text(EVIDENCE_HEADER) + 2
        if sections is None or "tools" in sections:
            total += self.chat.tools_overhead
        if self.placement != "system":  # a strict mode may open with a short user turn
            total += self.chat.message({"role": "user", "content": CONTINUES})
        return total

    def render(self, layout: Layout) -> Rendered:
        messages: list[dict[str, Any]] = []
        system = _system_text(layout)
        if system:
            messages.append({"role": "system", "content": system})
        summary = _summary_text(layout)
        if summary:
            messages.append({"role": "system", "content": summary})
        others = list(messages)  # counted on every build; the history's are cached
        history_tokens = 0
        for i in layout.history:
            if i.message is not None:
                messages.append(dict(i.message))
                history_tokens += self._history_tokens(i.message)
            else:
                messages.append({"role": i.role, "content": i.content})
                others.append(messages[-1])
        volatile = _volatile_text(layout)
        if volatile:
            messages.append({"role": "system", "content": volatile})
            others.append(messages[-1])
        for i in layout.input:
            messages.append(_input_message(i))
            others.append(messages[-1])
        if self.placement == "system":  # stored history messages counted once (cached)
            tokens = self.chat.messages(others, tools_of(layout)) + history_tokens
        else:  # a strict placement rearranges the messages: count what is sent
            messages = place(messages, self.placement, lead=bool(system) + bool(summary))
            tokens = self.chat.messages(messages, tools_of(layout))
        tools = tools_of(layout)
        payload: dict[str, Any] = {"messages": messages}
        if tools:
            payload["tools"] = tools
        # The prefix is the system message when it holds the system part alone (a strict
        # placement may have joined the turn's context into it).
        prefix_msgs = messages[:1] if system and messages[0]["content"] == system else []
        prefix_tokens = self.chat.tools(tools) + sum(self.chat.message(m) for m in prefix_msgs)
        return Rendered(
            format=self.format, payload=payload, tokens=tokens,
            prefix_tokens=prefix_tokens, prefix_hash=stable_hash([tools, prefix_msgs]),
        )


def tools_of(layout: Layout) -> list[dict[str, Any]]:
    """The OpenAI tool schemas of a layout, in order."""
    return [i.metadata["schema"] for i in layout.tools]


def _anthropic_tool(schema: dict[str, Any]) -> dict[str, Any]:
    fn = schema["function"]
    out = {"name": fn["name"], "input_schema": fn.get("parameters", {"type": "object"})}
    if fn.get("description"):
        out["description"] = fn["description"]
    return out


def _to_blocks(item: ContextItem) -> tuple[str, list[dict[str, Any]]]:
    """An OpenAI-style history message as an Anthropic (role, content blocks) pair."""
    msg = item.message or {"role": item.role, "content": item.content}
    role = msg.get("role")
    if "recall_note" in item.metadata:  # shown as the turn's evidence block was: plain text
        return "user", [{"type": "text", "text": item.content or EMPTY}]
    text = item.content if role != "assistant" else _plain(msg.get("content"))
    if role == "tool":
        return "user", [{"type": "tool_result", "tool_use_id": msg.get("tool_call_id", ""),
                         "content": _plain(msg.get("content"))}]
    if role == "assistant":
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for call in msg.get("tool_calls") or []:
            fn = call.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except json.JSONDecodeError:
                args = {"arguments": fn.get("arguments")}
            blocks.append({"type": "tool_use", "id": call.get("id", ""),
                           "name": fn.get("name", ""),
                           "input": args if isinstance(args, dict) else {"value": args}})
        return "assistant", blocks or [{"type": "text", "text": EMPTY}]
    if role in ("system", "developer"):
        return "user", [{"type": "text", "text": f"[{role}] {text or EMPTY}"}]
    return "user", _user_blocks(msg.get("content"), text)


EMPTY = "(empty message)"
"""Stands in for an empty text: Anthropic rejects empty text blocks."""


def _user_blocks(content: Any, text: str) -> list[dict[str, Any]]:
    """User content as Anthropic blocks: text parts as text, images as image blocks."""
    if not isinstance(content, list):
        return [{"type": "text", "text": text or EMPTY}]
    blocks: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            blocks.append(_image_block(str(url or "")))
        elif kind == "image" and isinstance(part.get("source"), dict):
            blocks.append({"type": "image", "source": part["source"]})
        elif kind not in ("text", None):
            blocks.append({"type": "text", "text": json.dumps(part, ensure_ascii=False,
                                                              sort_keys=True)})
    return blocks or [{"type": "text", "text": text or EMPTY}]


def _image_block(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media,
                                            "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _plain(content: Any) -> str:
    return content_text(content)


def _input_blocks(item: ContextItem) -> list[dict[str, Any]]:
    msg = _input_message(item)
    return _user_blocks(msg["content"], item.content)


class AnthropicRenderer:
    """Anthropic Messages ``system`` + ``messages`` (+ ``tools``) with cache breakpoints.

    The Messages API has no system role inside ``messages``: recall notes and the evidence
    block are user-side text already, so ``"system"`` and ``"user_block"`` render alike;
    ``"first_system"`` moves the evidence block into a last ``system`` block instead (after
    the cache breakpoint, so the cached system prompt stays reusable).
    """

    format = "anthropic"

    def __init__(self, chat: ChatCounter, *, placement: Placement = "user_block") -> None:
        _check_placement(placement)
        self.chat = chat
        self.placement = placement

    def cost(self, item: ContextItem) -> int:
        if item.kind == "message":
            role, blocks = _to_blocks(item)
            return self.chat.message({"role": role, "content": blocks})
        if item.kind == "tool":
            return self.chat.tool(_anthropic_tool(item.metadata["schema"]))
        if item.kind == "input":
            return self.chat.message({"role": "user", "content": _input_blocks(item)})
        if item.metadata.get("compacted"):  # the summary: a system block of its own
            return self.chat.system([{"type": "text", "text": item.content}])
        return self.chat.text(item.content) + 1

    def overhead(self, sections: frozenset[str] | None = None) -> int:
        """Priming, system frame, two user turns the layout may add, and (when they may
        appear) the evidence header and the tools' fixed cost."""
        total = (self.chat.reply_priming + self.chat.system("x")
                 + 2 * self.chat.message({"role": "user", "content": "x"}))
        if sections is None or sections & {"state", "evidence"}:
            total += self.chat.text(EVIDENCE_HEADER) + 2
        if sections is None or "tools" in sections:
            total += self.chat.tools_overhead
        return total

    def render(self, layout: Layout) -> Rendered:
        turns: list[dict[str, Any]] = []
        for item in layout.history:
            role, blocks = _to_blocks(item)
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)  # Anthropic needs alternating roles
            else:
                turns.append({"role": role, "content": list(blocks)})
        if turns and turns[0]["role"] != "user":
            turns.insert(0, {"role": "user", "content": [{"type": "text",
                                                          "text": "[conversation continues]"}]})
        tail: list[dict[str, Any]] = []
        volatile = _volatile_text(layout)
        in_system = self.placement == "first_system"
        if volatile and not in_system:
            tail.append({"type": "text", "text": volatile})
        for i in layout.input:
            tail.extend(_input_blocks(i))
        if turns and tail:
            # Mark the end of the history as a cache breakpoint before adding volatile parts.
            turns[-1]["content"][-1] = {**turns[-1]["content"][-1],
                                        "cache_control": {"type": "ephemeral"}}
        if tail:
            if turns and turns[-1]["role"] == "user":
                turns[-1]["content"].extend(tail)
            else:
                turns.append({"role": "user", "content": tail})
        if not turns:
            raise ConfigError("an Anthropic request needs at least one message and this build "
                              "has none: add the user's message (or pass a query) first")
        system_text = _system_text(layout)
        system = ([{"type": "text", "text": system_text, "cache_control": {"type": "ephemeral"}}]
                  if system_text else [])
        summary = _summary_text(layout)
        if summary:
            system.append({"type": "text", "text": summary})
        if volatile and in_system:
            system.append({"type": "text", "text": volatile})
        tools = [_anthropic_tool(i.metadata["schema"]) for i in layout.tools]
        if tools:
            tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral"}}
        payload: dict[str, Any] = {"system": system, "messages": turns}
        if tools:
            payload["tools"] = tools
        stable = system[:-1] if volatile and in_system else system
        prefix_tokens = self.chat.tools(tools) + self.chat.system(stable)
        return Rendered(
            format=self.format, payload=payload,
            tokens=self.chat.messages(turns, tools, system=system),
            prefix_tokens=prefix_tokens, prefix_hash=stable_hash([tools, stable]),
        )


__all__ = ["EVIDENCE_HEADER", "AnthropicRenderer", "OpenAIRenderer"]
