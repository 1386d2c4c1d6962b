"""A streamed upstream reply, cut into whole server-sent events on its way to the client.

The proxy passes a stream on event by event, bytes unchanged, so that it can hold back what a
client must not see too early or at all: the stream's last event (``data: [DONE]``, Anthropic's
``message_stop``) waits until the reply is stored, so a client that has its whole reply knows
the session holds it too (a crash right after loses nothing acknowledged); a usage chunk the
client did not ask for is dropped; and when the upstream breaks off mid-stream, the client gets
one error event in its provider's shape after the last whole event, never half an event or a
connection cut without a word.
"""

from __future__ import annotations

import json
import re
from typing import Any

from loomctx.service.replies import Format

_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
"""The blank line that ends an event (the SSE spec allows all three line breaks)."""


class Events:
    """Cuts a byte stream into whole events (each with its blank line)."""

    def __init__(self) -> None:
        self._pending = b""

    def push(self, chunk: bytes) -> list[bytes]:
        """The events ``chunk`` completes, in order."""
        data = self._pending + chunk
        out, start = [], 0
        for end in _END.finditer(data):
            out.append(data[start:end.end()])
            start = end.end()
        self._pending = data[start:]
        return out

    def rest(self) -> bytes:
        """Bytes after the last whole event (a stream that ended without its blank line)."""
        rest, self._pending = self._pending, b""
        return rest


def _data(event: bytes) -> bytes:
    lines = event.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    return b"\n".join(line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:"))


def is_last(fmt: Format, event: bytes) -> bool:
    """The event that ends a reply: ``[DONE]`` (OpenAI), ``message_stop`` (Anthropic)."""
    if fmt == "openai":
        return b"[DONE]" in event and _data(event).strip() == b"[DONE]"
    if b"message_stop" not in event:
        return False
    if re.search(rb"^event: ?message_stop\r?$", event, re.MULTILINE):
        return True
    try:
        data = json.loads(_data(event))
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("type") == "message_stop"


def usage_only(event: bytes) -> bool:
    """An OpenAI stream event that carries only the usage (``choices`` empty)."""
    data = _data(event)
    if not data.startswith(b"{"):
        return False
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and parsed.get("choices") == [] and "usage" in parsed


def error_event(fmt: Format, message: str, type_: str = "api_error") -> bytes:
    """One stream event that an SDK raises as an API error, in ``fmt``'s shape."""
    if fmt == "openai":
        data: dict[str, Any] = {"error": {"message": message, "type": type_, "code": None}}
        return f"data: {json.dumps(data)}\n\n".encode()
    data = {"type": "error", "error": {"type": type_, "message": message}}
    return f"event: error\ndata: {json.dumps(data)}\n\n".encode()


__all__ = ["Events", "error_event", "is_last", "usage_only"]
