"""The background publisher sends what is queued when it wakes in one round trip, in order;
a refusal of one event of a batch gives up that event only."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from loomctx.bus._emitter import BATCH, Emitter
from loomctx.errors import BusError


class _Server:
    """A send that holds its first call until told, recording every batch."""

    def __init__(self, refuse: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.first = threading.Event()
        self.go = threading.Event()
        self.refuse = refuse

    def send(self, data: Sequence[str]) -> list[BaseException | None]:
        self.batches.append(list(data))
        if len(self.batches) == 1:
            self.first.set()
            self.go.wait(10)
        return [ValueError("refused") if d == self.refuse else None for d in data]


def _event(n: int) -> str:
    return f'{{"kind": "message_added", "id": "e{n}"}}'


def test_what_is_queued_goes_in_one_round_trip_in_order() -> None:
    server = _Server()
    emitter = Emitter(server.send, timeout=1.0, retry_errors=(OSError,), where="test")
    emitter.put(_event(0))
    assert server.first.wait(10)  # the sender holds the first event
    for n in range(1, BATCH + 6):
        emitter.put(_event(n))
    server.go.set()
    emitter.flush(10)
    emitter.close()
    assert [len(b) for b in server.batches] == [1, BATCH, 5]
    assert [e for b in server.batches for e in b] == [_event(n) for n in range(BATCH + 6)]


def test_a_refused_event_is_given_up_alone() -> None:
    server = _Server(refuse=_event(2))
    emitter = Emitter(server.send, timeout=1.0, retry_errors=(OSError,), where="test")
    emitter.put(_event(0))
    assert server.first.wait(10)
    for n in (1, 2, 3):
        emitter.put(_event(n))
    server.go.set()
    with pytest.raises(BusError, match="1 emitted events could not be sent"):
        emitter.flush(10)
    emitter.close()
    assert server.batches[1] == [_event(1), _event(2), _event(3)]
    assert [e["id"] for e in emitter.unsent] == ["e2"]
