"""``ScriptedModel``: a :class:`~loomctx.models.protocol.ChatModel` that replays a script.

Tests of an agent need a model whose replies are known in advance and a record of what it was
shown. Each call takes the next step of the script:

- a ``str``: a final text reply;
- a :class:`ToolCall` or a list of them: a reply asking for those tool calls;
- a ``Mapping``: an assistant message as given (OpenAI shape);
- a :class:`~loomctx.models.protocol.ModelResponse`: returned as is (its usage too);
- an exception instance: raised (e.g. ``ContextLengthError(..., limit=8000)``);
- a callable ``step(payload)``, sync or async: called with the payload, and what it returns is
  used as above (to answer from what the model was shown, or to wait on an event).

Every payload is kept in ``requests`` (a deep copy, as sent) with its ``max_tokens``. Usage is
made up deterministically unless a step gives it: about one token per four characters of the
JSON request (tools, system, then messages: the order a provider reads), and as cached tokens
the common prefix with the previous request (what a provider's prompt cache would reuse), so
cache hits are measurable offline.

It lives with the model clients, not in :mod:`loomctx.testing`, because the offline demos (``loomctx
agent`` without ``--base-url``, the scripted team) run it in production; ``loomctx.testing``
re-exports it for tests.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loomctx.models.protocol import ModelResponse, StreamEvent, Usage
from loomctx.text.messages import common_prefix_length

CHARS_PER_TOKEN = 4
"""The made-up usage's characters per token."""


@dataclass(frozen=True)
class ToolCall:
    """A tool call in a scripted reply (a :class:`ScriptedModel` step, or part of a
    :class:`~loomctx.testing.Reply` a fake server sends)."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    """A mapping, or the exact JSON string OpenAI should send (Anthropic gets it parsed)."""
    id: str | None = None
    """Defaults to ``call_<i>_<name>`` (OpenAI) or ``toolu_<i>_<name>`` (Anthropic)."""


Step = Any
"""One scripted reply (see the module docstring for the accepted shapes)."""


class ScriptedModel:
    """Replays ``steps`` one per call; records every request it was given."""

    def __init__(self, steps: Sequence[Step], *, format: str = "openai",
                 model: str = "gpt-4o") -> None:
        self.format = format
        self.model = model
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        """Every payload received, in order, deep-copied when it arrived."""
        self.max_tokens: list[int | None] = []
        """The ``max_tokens`` of each call."""
        self._ids = itertools.count(1)
        self._previous = ""

    @property
    def calls(self) -> int:
        return len(self.requests)

    async def complete(self, payload: Mapping[str, Any], *,
                       max_tokens: int | None = None) -> ModelResponse:
        index = len(self.requests)
        self.requests.append(copy.deepcopy(dict(payload)))
        self.max_tokens.append(max_tokens)
        sent = _as_read(payload)
        shared = common_prefix_length(self._previous, sent)
        self._previous = sent
        if index >= len(self.steps):
            raise AssertionError(f"ScriptedModel has {len(self.steps)} steps but was called "
                                 f"{index + 1} times: add steps to the script")
        step = self.steps[index]
        if callable(step) and not isinstance(step, type):
            step = step(payload)
            if inspect.isawaitable(step):
                step = await step
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ModelResponse):
            return step
        message = self._message(step)
        out_chars = len(json.dumps(message, ensure_ascii=False))
        usage = Usage(prompt_tokens=-(-len(sent) // CHARS_PER_TOKEN),
                      completion_tokens=-(-out_chars // CHARS_PER_TOKEN),
                      cached_tokens=shared // CHARS_PER_TOKEN)
        return ModelResponse(message=message, usage=usage,
                             finish_reason="tool_calls" if message.get("tool_calls") else "stop")

    async def stream(self, payload: Mapping[str, Any], *,
                     max_tokens: int | None = None) -> AsyncIterator[StreamEvent]:
        response = await self.complete(payload, max_tokens=max_tokens)
        content = response.message.get("content")
        if isinstance(content, str) and content:
            for i in range(0, len(content), 16):
                yield StreamEvent(kind="text", text=content[i:i + 16])
        for _ in response.message.get("tool_calls") or []:
            yield StreamEvent(kind="tool_call")
        yield StreamEvent(kind="done", response=response)

    def _message(self, step: Step) -> dict[str, Any]:
        if isinstance(step, str):
            return {"role": "assistant", "content": step}
        if isinstance(step, ToolCall):
            step = [step]
        if isinstance(step, Mapping):
            return {"role": "assistant", **copy.deepcopy(dict(step))}
        if isinstance(step, Sequence) and all(isinstance(c, ToolCall) for c in step):
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": c.id or f"call_{next(self._ids)}", "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments if isinstance(
                     c.arguments, str) else json.dumps(dict(c.arguments))}}
                for c in step]}
        raise TypeError(f"a script step must be a str, ToolCall(s), a message, a "
                        f"ModelResponse, an exception or a callable, got {step!r:.80}")


def _as_read(payload: Mapping[str, Any]) -> str:
    """The request as a provider reads it for its prompt cache: tools, system, messages."""
    order = ["tools", "system", "messages"]
    keys = [k for k in order if k in payload] + [k for k in payload if k not in order]
    return json.dumps({k: payload[k] for k in keys}, ensure_ascii=False)


ScriptStep = Callable[[Mapping[str, Any]], Any]
"""A callable script step's signature."""

__all__ = ["CHARS_PER_TOKEN", "ScriptStep", "ScriptedModel", "Step", "ToolCall"]
