"""The turn window's clipping, kept between turns: what it shows is what a fresh look shows."""

from __future__ import annotations

from types import SimpleNamespace

from loomctx import BuildOptions, HashingEmbedder, Session
from loomctx.items import ContextItem
from loomctx.select.window import MESSAGE_SHARE, TOOL_FLOOR


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


def _tool_and_user(text: str) -> list[ContextItem]:
    return [ContextItem(id="t", source="h", content=text, kind="message", role="tool",
                        message={"role": "tool", "tool_call_id": "c1", "content": text}, seq=1),
            ContextItem(id="u", source="h", content=text, kind="message", role="user",
                        message={"role": "user", "content": text}, seq=2)]


def test_a_tool_output_is_cut_past_its_share_of_the_room_with_its_last_lines() -> None:
    """Past ``tool_output_share`` of the room (a sixteenth, where any other message is cut past
    a quarter), a tool's output is shown cut, its head and its latest lines; a user's message of
    the same size is still shown whole."""
    window = Session(embedder=HashingEmbedder(dim=16), model="gpt-4o").builder.window
    text = _log(1, 40)
    items = _tool_and_user(text)
    size = window.measure(items[0])
    clip = size // 64 * 64 + 64  # over the tool output: only a tool's own share cuts
    tool_clip = max(min(clip, TOOL_FLOOR),
                    int(clip * BuildOptions().tool_output_share / MESSAGE_SHARE))
    assert size > tool_clip
    shown, cut = _shown(window, items, clip)
    assert cut == {"t"} and shown[1] == text
    head, _, end = shown[0].partition("\n…[truncated: ")
    last = text.split("\n")[-1]
    assert text.startswith(head) and end.endswith(last)  # the latest scan is still there
    assert window.measure(ContextItem(id="t", source="h", content=shown[0], kind="message",
                                      role="tool", message={"role": "tool", "tool_call_id": "c1",
                                                            "content": shown[0]})) <= tool_clip


def test_tool_output_share_sets_how_much_of_a_tool_output_the_window_shows() -> None:
    text = _log(1, 40)
    items = _tool_and_user(text)
    seen = {}
    for share in (0.0625, MESSAGE_SHARE):
        window = Session(embedder=HashingEmbedder(dim=16), model="gpt-4o",
                         options=BuildOptions(tool_output_share=share)).builder.window
        clip = window.measure(items[0]) // 64 * 64 + 64
        seen[share] = _shown(window, items, clip)
    assert seen[0.0625][1] == {"t"}
    assert seen[MESSAGE_SHARE] == ([text, text], set())  # as much as any message: whole


def test_a_tool_output_keeps_its_floor_at_a_small_room_but_never_more_than_a_message() -> None:
    """At a small room a sixteenth is a line or two: a tool's output keeps ``TOOL_FLOOR``
    tokens, its head, its last lines and the marker, unless a message's own cut is smaller."""
    window = Session(embedder=HashingEmbedder(dim=16), model="gpt-4o").builder.window
    items = _tool_and_user(_log(1, 40))
    for clip, most in ((320, TOOL_FLOOR), (128, 128)):
        (shown, _), cut = _shown(window, items, clip)
        assert cut == {"t", "u"}
        size = window.measure(ContextItem(id="t", source="h", content=shown, kind="message",
                                          role="tool", message={"role": "tool",
                                                                "tool_call_id": "c1",
                                                                "content": shown}))
        assert most - 64 < size <= most  # a sixteenth of 320 would be 80
