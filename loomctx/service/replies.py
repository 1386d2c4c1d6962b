"""An upstream reply, as it passes through unchanged, read into the message the session keeps.

The proxy streams the upstream's bytes to the client as they arrive and feeds the same bytes to
a :class:`ReplyReader`; at the end the reader holds the assistant message (OpenAI shape, tool
calls with their ids) and the usage the upstream reported. A reply the reader cannot make sense
of in a stream is still passed on (only the session's memory misses it, and the build says so);
a JSON answer that cannot be read is the upstream's fault, answered with a 502.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from loomctx.errors import ModelError
from loomctx.models.anthropic import _Accumulator as _AnthropicStream
from loomctx.models.anthropic import parse_message
from loomctx.models.openai import _Accumulator as _OpenAIStream
from loomctx.models.openai import parse_completion
from loomctx.models.protocol import ModelResponse
from loomctx.service.checks import read_upstream

Format = Literal["openai", "anthropic"]


def read_body(fmt: Format, body: bytes) -> tuple[ModelResponse | None, str]:
    """The reply of a JSON (non-streamed) answer, or None and why it is not one."""
    raw = read_upstream(body)
    if raw is None:
        return None, f"not JSON: {body[:80].decode('utf-8', 'replace')!r}"
    try:
        return (parse_completion(raw) if fmt == "openai" else parse_message(raw)), ""
    except ModelError as exc:
        return None, str(exc)[:300]


class ReplyReader:
    """Reads server-sent events from raw chunks into one reply."""

    def __init__(self, fmt: Format) -> None:
        self.fmt = fmt
        self._acc: Any = _OpenAIStream() if fmt == "openai" else _AnthropicStream()
        self._buffer = b""
        self._data: list[str] = []
        self.error: str | None = None
        """Why the stream could not be read, when it could not."""

    def feed(self, chunk: bytes) -> None:
        if self.error is not None:
            return
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if not line:
                self._dispatch()
            elif line.startswith("data:"):
                self._data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])

    def _dispatch(self) -> None:
        data, self._data = "\n".join(self._data), []
        if not data or data == "[DONE]" or self.error is not None:
            return
        try:
            self._acc.add(json.loads(data))
        except (ValueError, RecursionError, ModelError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"[:300]

    def result(self) -> ModelResponse | None:
        """The reply, once the stream has ended (None when it could not be read)."""
        if self._buffer:
            self.feed(b"\n")
        self._dispatch()
        if self.error is not None:
            return None
        try:
            response: ModelResponse = self._acc.response()
        except ModelError as exc:
            self.error = str(exc)[:300]
            return None
        return response


__all__ = ["ReplyReader", "read_body"]
