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


def _log(i: int, lines: int) -> str:
    return "\n".join(f"2026-01-0{k % 9 + 1} 10:{k % 60:02d} HAM-03 SHP-{i}{k:03d} SCAN"
                     for k in range(lines))


def test_a_tool_output_is_cut_at_half_the_clip_with_its_last_lines() -> None:
    """Past an eighth of the room (TOOL_CLIP), a tool's output is shown cut, its head and its
    latest lines; a user's message of the same size is still shown whole."""
    from loomctx.select.window import TOOL_CLIP

    window = Session(embedder=HashingEmbedder(dim=16), model="gpt-4o").builder.window
    text = _log(1, 40)
    tool = ContextItem(id="t", source="h", content=text, kind="message", role="tool",
                       message={"role": "tool", "tool_call_id": "c1", "content": text}, seq=1)
    user = ContextItem(id="u", source="h", content=text, kind="message", role="user",
                       message={"role": "user", "content": text}, seq=2)
    size = window.measure(tool)
    clip = size // 64 * 64 + 64  # over the tool output: only a tool's half clip cuts
    assert size > clip // TOOL_CLIP
    shown, cut = _shown(window, [tool, user], clip)
    assert cut == {"t"} and shown[1] == text
    head, _, end = shown[0].partition("\n…[truncated: ")
    last = text.split("\n")[-1]
    assert text.startswith(head) and end.endswith(last)  # the latest scan is still there
    assert window.measure(ContextItem(id="t", source="h", content=shown[0], kind="message",
                                      role="tool", message={"role": "tool", "tool_call_id": "c1",
                                                            "content": shown[0]})) \
        <= clip // TOOL_CLIP
