"""Server-sent events: the one reader every streamed reply goes through.

A stream is cut into events at blank lines; the model clients read each event's name and data,
the proxy also passes each event's bytes on unchanged (it must hold some back, and never send
half an event). Lines end in ``\\r\\n``, ``\\n`` or ``\\r`` (the SSE spec allows all three, mixed);
``event:`` names an event (default ``message``), ``data:`` lines join with ``\\n``, one space
after the colon is dropped, lines starting with ``:`` are comments, other fields are ignored.
The decoder is incremental: bytes come in chunks that may split a line, a line break or a
UTF-8 character anywhere.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_BLANK = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")
"""The end of an event: a line break followed by an empty line."""
_BOM = b"\xef\xbb\xbf"
_new = tuple.__new__
"""Builds an :class:`Event` without its Python-level ``__new__`` (a third of the reader's
time on a long stream)."""


class Event(NamedTuple):
    """One event of a stream."""

    event: str
    """Its ``event:`` name, ``message`` when it has none."""
    data: str | None
    """Its ``data:`` lines joined with ``\\n``; None when it has no data line (a comment, a
    keep-alive), which readers skip."""
    raw: bytes
    """The bytes it came as, its blank line included (the proxy passes these on)."""


def parse(raw: bytes) -> Event:
    """The fields of one event's bytes (decoded once: a line break is never inside a UTF-8
    character, so this equals decoding line by line)."""
    text = raw.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    name, data = "message", list[str]()
    for line in text.split("\n"):
        if not line or line[0] == ":":
            continue
        field, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    return Event(name, "\n".join(data) if data else None, raw)


class Decoder:
    """Cuts a byte stream into whole events as its chunks arrive."""

    def __init__(self) -> None:
        self._pending = b""
        self._first = True

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes, in order."""
        data = self._pending + chunk if self._pending else chunk
        if self._first:  # a byte-order mark opening the stream is no field
            if len(data) < len(_BOM) and _BOM.startswith(data):
                self._pending = data
                return []
            self._first, self._pending = False, b""
            if data.startswith(_BOM):
                return [Event("message", None, _BOM), *self.feed(data[len(_BOM):])]
        if b"\r" not in data:  # the usual stream: \n only, cut with C-speed splits
            *blocks, self._pending = data.split(b"\n\n")
            return [_new(Event, ("message", (b[6:] if b[5:6] == b" " else b[5:]).decode(
                        "utf-8", "replace"), b + b"\n\n"))  # one data line: the usual event
                    if b[:5] == b"data:" and b"\n" not in b else parse(b + b"\n\n")
                    for b in blocks]
        out, start = [], 0
        for end in _BLANK.finditer(data):
            if end.end() == len(data) and data[-1:] == b"\r":
                break  # the next chunk may bring the ``\n`` of this ``\r\n``
            out.append(parse(data[start:end.end()]))
            start = end.end()
        self._pending = data[start:]
        return out

    def close(self) -> Event | None:
        """The bytes after the last whole event (a stream that ended without its blank line)
        as an event, or None when there are none."""
        rest, self._pending = self._pending, b""
        return parse(rest) if rest else None


def events(chunks: list[bytes]) -> list[Event]:
    """Every event of a whole stream (its last one even without a blank line)."""
    decoder = Decoder()
    out = [event for chunk in chunks for event in decoder.feed(chunk)]
    last = decoder.close()
    return [*out, last] if last is not None else out


__all__ = ["Decoder", "Event", "events", "parse"]
