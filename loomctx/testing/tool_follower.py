"""A fake model that answers by the tools it is offered, for driving agents end to end offline.

:class:`ToolFollower` plugs into :class:`~loomctx.testing.FakeModelServer` (``respond=``): for
each request it calls the first offered tool it has not called yet — its first required string
argument says what to do and names the last ``@refs`` it saw in the request, so a workflow that
expands references has some to expand — and once every offered tool was called it answers in
text. Tools are read in the OpenAI shape (``function.name``) and the Anthropic one (``name``),
so one follower drives either wire format.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from loomctx.models.scripted import ToolCall
from loomctx.testing.fake_script import Reply
from loomctx.testing.fake_server import RecordedRequest
from loomctx.text.messages import content_text

_REF = re.compile(r"@([a-zA-Z_]+\d+)")


def _tools(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, first required argument) of each tool offered, in order."""
    out = []
    for tool in body.get("tools") or ():
        fn = tool.get("function", tool)
        schema = fn.get("parameters") or fn.get("input_schema") or {}
        required = list(schema.get("required") or schema.get("properties") or ["input"])
        out.append((str(fn.get("name")), str(required[0])))
    return out


def request_text(body: Mapping[str, Any]) -> str:
    """The system prompt and every message's text of an OpenAI or Anthropic request."""
    parts = [content_text(body.get("system"))] if body.get("system") else []
    parts += [content_text(m.get("content")) for m in body.get("messages") or ()]
    return "\n".join(parts)


class ToolFollower:
    """Calls each offered tool once, first come first served, then answers in text."""

    def __init__(self) -> None:
        self.called: list[str] = []
        """The tools called so far, in order."""
        self._ids = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.body if isinstance(request.body, Mapping) else {}
        text = request_text(body)
        refs = list(dict.fromkeys(_REF.findall(text)))
        for name, arg in _tools(body):
            if name not in self.called:
                self.called.append(name)
                self._ids += 1
                said = " ".join(f"@{r}" for r in refs[-2:])
                what = f"Do the {name} step" + (f" from {said}." if said else ".")
                return Reply(text=f"Observe: {len(refs)} notes so far.\nThink: next, {name}.",
                             tool_calls=[ToolCall(name, {arg: what}, id=f"call_{self._ids}")])
        last = text.strip().splitlines()[-1] if text.strip() else "nothing"
        return Reply(text=f"Done: answered {last[:80]!r}")


__all__ = ["ToolFollower", "request_text"]
