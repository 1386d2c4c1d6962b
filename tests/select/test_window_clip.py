"""The turn window's clipping, kept between turns: what it shows is what a fresh look shows."""

from __future__ import annotations

from types import SimpleNamespace

from loomctx import HashingEmbedder, Session
from loomctx.items import ContextItem


def _message(i: int, words: int) -> ContextItem:
    text = " ".join(f"w{i}x{k}" for k in range(words))
    return ContextItem(id=f"m{i}", source="h", content=text, kind="message", role="user",
                       message={"role": "user", "content": text}, seq=i)


def _shown(window, items: list[ContextItem], clip: int) -> tuple[list[str], set[str]]:
    st = SimpleNamespace(originals={})
    out = window._clipped(st, "h", items, clip)
    return [it.content for it in out], set(st.originals)


def test_a_kept_clipping_follows_appends_and_a_front_that_moves() -> None:
    window = Session(embedder=HashingEmbedder(dim=16), model="gpt-4o").builder.window
    fresh = Session(embedder=HashingEmbedder(dim=16), model="gpt-4o").builder.window
    history = [_message(i, 400 if i % 3 == 0 else 5) for i in range(9)]
    later = [*history[2:], _message(9, 400), _message(10, 5)]  # as long, its front moved
    for items in (history[:6], history, later, history[2:], [*history[2:], _message(9, 400)],
                  history[:4]):
        got = _shown(window, items, 64)
        assert got == _shown(fresh, items, 64)  # a fresh window sees the same
        fresh = Session(embedder=HashingEmbedder(dim=16), model="gpt-4o").builder.window
        cut = {it.id for it in items if len(it.content) > 1000}
        assert got[1] == cut and cut  # the large ones are cut, their originals kept
