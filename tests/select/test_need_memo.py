"""What a user message needs is read once per message: a tool step reads the same message
again, and a turn's message is the next turn's message before it."""

from __future__ import annotations

import pytest

from loomctx import BuildOptions, HashingEmbedder, Session
from loomctx.items import ContextItem
from loomctx.select import window
from loomctx.text.need import Need, need_of


def test_a_message_is_read_once_across_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []

    def counting(message: str) -> Need:
        read.append(message)
        return need_of(message)

    monkeypatch.setattr(window, "need_of", counting)
    s = Session(embedder=HashingEmbedder(dim=64), clock=lambda: 1_700_000_000.0,
                model="gpt-4o", options=BuildOptions(model="gpt-4o"))
    s.add_message_sync("user", "Now, Oregon.")
    s.build_sync(max_tokens=2000)
    s.add_message_sync("assistant", "Sure.")
    s.add_message_sync("user", "how many days ago did I go rafting in the mountains?")
    s.build_sync(max_tokens=2000)
    s.build_sync(max_tokens=2000)  # built again with nothing added (a retry, a tool step)
    assert read.count("Now, Oregon.") == 1
    assert read.count("how many days ago did I go rafting in the mountains?") == 1


def test_a_changed_text_under_the_same_id_is_read_again() -> None:
    needs: dict[str, tuple[str, Need]] = {}
    asked = ContextItem(id="m1", source="h", content="What did we decide about Hamburg?")
    thanked = ContextItem(id="m1", source="h", content="Thanks!")
    assert window._need(asked, needs).asks
    assert not window._need(thanked, needs).asks
