"""The Anthropic Messages renderer: ``system`` + ``messages`` (+ ``tools``) with cache
breakpoints.

History arrives in the OpenAI message shape loomctx stores; it is converted to content blocks
(tool calls to ``tool_use``, tool results to ``tool_result`` in a user turn, images to image
blocks) and same-role turns are merged. The volatile part is a text block in the last user turn
(or, with ``first_system``, a last system block).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from loomctx.errors import ConfigError
from loomctx.items import ContextItem
from loomctx.providers._chat import (
    EVIDENCE_HEADER,
    ChatCount,
    LineCosts,
    check_placement,
    input_message,
    summary_text,
    system_text,
    volatile_text,
)
from loomctx.providers.layout import Layout, Rendered, stable_hash
from loomctx.providers.placement import Placement
from loomctx.text.messages import content_text


def anthropic_tool(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI-shaped tool definition as a Messages tool (``name``, ``input_schema``)."""
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
    msg = input_message(item)
    return _user_blocks(msg["content"], item.content)


class AnthropicRenderer:
    """Anthropic Messages ``system`` + ``messages`` (+ ``tools``) with cache breakpoints.

    The Messages API has no system role inside ``messages``: recall notes and the evidence
    block are user-side text already, so ``"system"`` and ``"user_block"`` render alike;
    ``"first_system"`` moves the evidence block into a last ``system`` block instead (after
    the cache breakpoint, so the cached system prompt stays reusable).
    """

    format = "anthropic"

    def __init__(self, chat: ChatCount, *, placement: Placement = "user_block") -> None:
        check_placement(placement)
        self.chat = chat
        self.placement = placement
        self._line = LineCosts(chat)

    def cost(self, item: ContextItem) -> int:
        if item.kind == "message":
            role, blocks = _to_blocks(item)
            return self.chat.message({"role": role, "content": blocks})
        if item.kind == "tool":
            return self.chat.tool(anthropic_tool(item.metadata["schema"]))
        if item.kind == "input":
            return self.chat.message({"role": "user", "content": _input_blocks(item)})
        if item.metadata.get("compacted"):  # the summary: a system block of its own
            return self.chat.system([{"type": "text", "text": item.content}])
        return self._line(item.content)

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
        volatile = volatile_text(layout)
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
        text = system_text(layout)
        system = ([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]
                  if text else [])
        summary = summary_text(layout)
        if summary:
            system.append({"type": "text", "text": summary})
        if volatile and in_system:
            system.append({"type": "text", "text": volatile})
        tools = [anthropic_tool(i.metadata["schema"]) for i in layout.tools]
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


__all__ = ["EMPTY", "AnthropicRenderer", "anthropic_tool"]
