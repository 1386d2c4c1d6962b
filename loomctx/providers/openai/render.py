"""The OpenAI Chat Completions renderer: ``messages`` (+ ``tools``).

The volatile part (state and retrieved evidence) is a system message just before the input, or,
with a strict placement, in the first system message or the user's turn
(:mod:`loomctx.providers.placement`).
"""

from __future__ import annotations

from typing import Any

from loomctx.items import ContextItem
from loomctx.providers._chat import (
    EVIDENCE_HEADER,
    SIZES_MAX,
    ChatCount,
    LineCosts,
    check_placement,
    input_message,
    summary_text,
    system_text,
    volatile_text,
)
from loomctx.providers.layout import Layout, Rendered, stable_hash
from loomctx.providers.placement import CONTINUES, Placement, place


class OpenAIRenderer:
    """OpenAI Chat Completions ``messages`` (+ ``tools``).

    ``placement`` says where the summary, recall notes and evidence block go
    (:mod:`loomctx.render.placement`): ``"system"`` (mid-conversation system messages, OpenAI's
    default) or, for servers whose chat template allows one leading system message and
    alternating roles, ``"first_system"`` or ``"user_block"``.
    """

    format = "openai"

    def __init__(self, chat: ChatCount, *, placement: Placement = "system") -> None:
        check_placement(placement)
        self.chat = chat
        self.placement = placement
        self._stored: dict[int, tuple[Any, dict[str, Any], int]] = {}
        """id of a stored history message → (the message, its copy in the last payload, its
        tokens): a turn re-renders the same stored messages (they are not changed in place;
        the builder's costs rely on it too), so each is counted once, and the same copy is
        sent while it still equals the message (a caller that changed it gets a fresh one):
        the request's checks and its comparison with the previous request then see an
        object they have seen before."""
        self._line = LineCosts(chat)

    def _history(self, msg: Any) -> tuple[dict[str, Any], int]:
        """The payload's copy of a stored history message and ``chat.message`` of it."""
        hit = self._stored.get(id(msg))
        if hit is not None and hit[0] is msg:
            if hit[1] == msg:
                return hit[1], hit[2]
            copy, n = dict(msg), hit[2]
        else:
            copy, n = dict(msg), self.chat.message(msg)
        if len(self._stored) >= SIZES_MAX:
            self._stored.clear()
        self._stored[id(msg)] = (msg, copy, n)
        return copy, n

    def cost(self, item: ContextItem) -> int:
        if item.kind == "message":
            return self.chat.message(item.message or {"role": item.role, "content": item.content})
        if item.kind == "tool":
            return self.chat.tool(item.metadata["schema"])
        if item.kind == "input":
            return self.chat.message(input_message(item))
        if item.metadata.get("compacted"):  # the summary: a system message of its own
            return self.chat.message({"role": "system", "content": item.content})
        return self._line(item.content)

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
        system = system_text(layout)
        if system:
            messages.append({"role": "system", "content": system})
        summary = summary_text(layout)
        if summary:
            messages.append({"role": "system", "content": summary})
        others = list(messages)  # counted on every build; the history's are cached
        history_tokens = 0
        for i in layout.history:
            if i.message is not None:
                copy, n = self._history(i.message)
                messages.append(copy)
                history_tokens += n
            else:
                messages.append({"role": i.role, "content": i.content})
                others.append(messages[-1])
        volatile = volatile_text(layout)
        if volatile:
            messages.append({"role": "system", "content": volatile})
            others.append(messages[-1])
        for i in layout.input:
            messages.append(input_message(i))
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


__all__ = ["OpenAIRenderer", "tools_of"]
