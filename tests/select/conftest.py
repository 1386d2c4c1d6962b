"""A session with a distant past: what was said about the Hamburg depot, 2 messages a note."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from loomctx import BuildOptions, HashingEmbedder, Session


@pytest.fixture
def depot_past() -> Callable[[int], Session]:
    """A factory: a gpt-4o session whose first ``notes`` exchanges are Hamburg depot notes
    (``options``: more ``BuildOptions``)."""

    def make(notes: int, **options: float) -> Session:
        s = Session(embedder=HashingEmbedder(dim=512), clock=lambda: 1_700_000_000.0,
                    model="gpt-4o", options=BuildOptions(model="gpt-4o", **options))
        for i in range(notes):
            s.add_message_sync("user", f"Hamburg depot note {i}: pickups of pallet batch {i} "
                                       f"moved to dock {i % 7} on Tuesday, contact Jana at "
                                       f"extension {i}.")
            s.add_message_sync("assistant", f"Noted the Hamburg depot change {i}.")
        return s

    return make
