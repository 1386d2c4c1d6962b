"""The one SSE reader: events cut at any line ending, whatever the chunking."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loomctx.providers.sse import Decoder, Event, events

STREAM = (b"event: a\ndata: 1\n\n"  # LF
          b"data: 2\r\ndata: 2b\r\n\r\n"  # CRLF, two data lines
          b": a comment\r\rdata:3\r\r"  # CR, no space after the colon
          b"id: 7\nretry: 10\ndata: \xc3\xa9\n\r\n"  # other fields, mixed LF then CRLF
          b"data: tail")  # the last event without its blank line


def _fields(evs: list[Event]) -> list[tuple[str, str | None]]:
    return [(e.event, e.data) for e in evs]


def test_every_line_ending_and_field() -> None:
    got = events([STREAM])
    assert _fields(got) == [("a", "1"), ("message", "2\n2b"), ("message", None),
                            ("message", "3"), ("message", "é"), ("message", "tail")]
    assert b"".join(e.raw for e in got) == STREAM  # the bytes pass on unchanged


@given(st.lists(st.integers(0, len(STREAM)), max_size=8))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    assert events(chunks) == events([STREAM])


def test_a_crlf_split_across_chunks_is_one_line_break() -> None:
    d = Decoder()
    assert d.feed(b"data: x\r\n\r") == []  # the blank line may be \r\n: wait for the next byte
    assert _fields(d.feed(b"\ndata: y\n\n")) == [("message", "x"), ("message", "y")]
    assert d.close() is None


@pytest.mark.parametrize("data", [b"data\n\n", b"data:\n\n"])
def test_an_empty_data_line_is_an_empty_event(data: bytes) -> None:
    assert _fields(events([data])) == [("message", "")]


@pytest.mark.parametrize("chunks", [[b"\xef\xbb\xbfdata: a\n\n"],
                                    [b"\xef", b"\xbb\xbfdata: a\n\n"]])
def test_a_byte_order_mark_opening_the_stream_is_skipped_and_passed_on(
        chunks: list[bytes]) -> None:
    got = events(chunks)
    assert _fields(got) == [("message", None), ("message", "a")]
    assert b"".join(e.raw for e in got) == b"".join(chunks)


def test_a_byte_order_mark_later_is_data() -> None:
    got = events([b"\n\n", b"\xef\xbb\xbfdata: a\n\n"])
    assert [e.data for e in got] == [None, None]  # the field is named "\ufeffdata": ignored
