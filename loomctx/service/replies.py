"""An upstream reply, as it passes through unchanged, read into the message the session keeps.

The proxy streams the upstream's bytes to the client as they arrive and hands the same events
(cut by the one SSE reader, :mod:`loomctx.providers.sse`) to a :class:`ReplyReader`; the
format's provider joins them, with the code a model client reads its streams with. At the end
the reader holds the assistant message (OpenAI shape, tool calls with their ids) and the usage
the upstream reported. A reply the reader cannot make sense of in a stream is still passed on
(only the session's memory misses it, and the build says so); a JSON answer that cannot be read
is the upstream's fault, answered with a 502.
"""

from __future__ import annotations

from loomctx import providers
from loomctx.errors import ModelError
from loomctx.providers.reply import ModelResponse
from loomctx.providers.sse import Decoder, Event
from loomctx.service.checks import read_upstream

Format = str
"""A registered provider's name (``openai``, ``anthropic``)."""


def read_body(fmt: Format, body: bytes) -> tuple[ModelResponse | None, str]:
    """The reply of a JSON (non-streamed) answer, or None and why it is not one."""
    raw = read_upstream(body)
    if raw is None:
        return None, f"not JSON: {body[:80].decode('utf-8', 'replace')!r}"
    try:
        return providers.get(fmt).parse_reply(raw), ""
    except ModelError as exc:
        return None, str(exc)[:300]


class ReplyReader:
    """Reads a stream's events into one reply.

    With ``max_chars``, a stream whose events' data pass that many characters in all is not
    read further (the reply could not be stored; what was read of it is let go): memory per
    stream is bounded, however long the upstream goes on. The events still pass on to the
    client; :meth:`result` is None and :attr:`error` says why."""

    def __init__(self, fmt: Format, *, max_chars: int | None = None) -> None:
        self._fmt = fmt
        self._reply = providers.get(fmt).stream_reply()
        self._decoder = Decoder()
        self._limit = self._left = max_chars
        self.error: str | None = None
        """Why the stream could not be read, when it could not."""

    def feed(self, chunk: bytes) -> None:
        """Raw bytes of the stream (for a caller that does not cut events itself)."""
        for event in self._decoder.feed(chunk):
            self.add(event)

    def add(self, event: Event) -> None:
        """One whole event of the stream."""
        if event.data is None or not event.data or self.error is not None:
            return
        if self._left is not None:
            self._left -= len(event.data)
            if self._left < 0:
                self.error = (f"the reply's events passed {self._limit:,} characters, the most "
                              "one reply may hold (serve --max-body-mb)")
                self._reply = providers.get(self._fmt).stream_reply()  # what was read goes
                return
        try:
            self._reply.feed(event.event, event.data)
        except (ValueError, RecursionError, ModelError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"[:300]

    def result(self) -> ModelResponse | None:
        """The reply, once the stream has ended (None when it could not be read)."""
        last = self._decoder.close()
        if last is not None:
            self.add(last)
        if self.error is not None:
            return None
        try:
            return self._reply.response()
        except ModelError as exc:
            self.error = str(exc)[:300]
            return None


__all__ = ["Format", "ReplyReader", "read_body"]
