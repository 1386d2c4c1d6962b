"""A fake upstream with a context window, as real APIs have one.

:class:`WindowedFakeServer` counts each request's prompt with a real tokenizer (chat framing
and tool definitions included), refuses with the provider's context-length 400 when prompt plus
``max_tokens`` exceeds its window, and reports in each reply's usage the prompt tokens it counted
and, as cached, the tokens of the request's leading part (tools, system, messages) that repeat
the previous accepted request byte for byte: what a provider's prefix cache could serve.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from loomctx.testing.fake_script import ContextLength, Reply, Step
from loomctx.testing.fake_server import FakeModelServer, RecordedRequest
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import counter_for_model


class WindowedFakeServer(FakeModelServer):
    """A :class:`FakeModelServer` that refuses prompts over ``window`` tokens.

    ``default`` answers when the script has run out (None: the usual "script exhausted" 400).
    ``accepted`` and ``refused`` count requests; ``usage`` holds ``(prompt, cached)`` per
    accepted request.
    """

    def __init__(self, script: Iterable[Step | str] = (), *, window: int,
                 model: str = "gpt-4o", default: Reply | str | None = None,
                 port: int = 0) -> None:
        super().__init__(script, port=port)
        self.window = window
        counter = counter_for_model(model).counter
        self._chat = {"openai": ChatCounter(counter, "openai"),
                      "anthropic": ChatCounter(counter, "anthropic")}
        self.default = default
        self.refused = 0
        self.usage: list[tuple[int, int]] = []
        self._previous: dict[str, Any] | None = None

    @property
    def accepted(self) -> int:
        return len(self.usage)

    def _next(self, request: RecordedRequest) -> Step | str | None:
        body = request.body if isinstance(request.body, dict) else {}
        fmt = "anthropic" if request.path.split("?")[0].endswith("/messages") else "openai"
        chat = self._chat[fmt]
        tools, system = body.get("tools") or [], body.get("system")
        messages = body.get("messages") or []
        prompt = chat.messages(messages, tools, system=system)
        out = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        if prompt + int(out) > self.window:
            with self._lock:
                self.requests.append(request)
                self.refused += 1
            return ContextLength(limit=self.window, requested=prompt + int(out))
        cached = self._cached(chat, tools, system, messages)
        self._previous = {"tools": tools, "system": system, "messages": messages}
        step = super()._next(request)
        if step is None and self.default is not None:
            step = self.default
        if isinstance(step, str):
            step = Reply(text=step)
        if isinstance(step, Reply):
            step = replace(step, prompt_tokens=prompt, cached_tokens=cached)
            with self._lock:
                self.usage.append((prompt, cached))
        return step

    def _cached(self, chat: ChatCounter, tools: Any, system: Any,
                messages: list[Mapping[str, Any]]) -> int:
        prev = self._previous
        if prev is None or prev["tools"] != tools or prev["system"] != system:
            return 0
        total = chat.tools(tools) + chat.system(system) + chat.reply_priming
        for old, new in zip(prev["messages"], messages, strict=False):
            if old != new:
                break
            total += chat.message(new)
        return total


__all__ = ["WindowedFakeServer"]
