"""The turn API: the input shown once, images kept, an append-only history that keeps the
prompt cache warm, async forms with sync twins, concurrent builds and events."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from loomctx import (
    BuildOptions,
    ContextBuilder,
    HashingEmbedder,
    RecordingSink,
    Session,
    SystemPromptSource,
    check_request,
)
from loomctx.items import ContextItem
from loomctx.sources.history import HistorySource
from loomctx.sources.protocol import SourceRequest

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def _session(**kw):
    return Session(embedder=HashingEmbedder(dim=64), clock=lambda: 1_700_000_000.0, **kw)


def _dump(payload) -> str:
    return json.dumps(payload, ensure_ascii=False)


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-5"])
def test_the_question_is_shown_once(model):
    s = _session(model=model, system_prompt="Be brief.")
    s.add_message_sync("user", "My parcel number is PX-1138.")
    s.add_message_sync("assistant", "Noted.")
    s.add_message_sync("user", "Where is parcel PX-1138 now, exactly?", id="q")
    r = s.build_sync(max_tokens=2000)
    assert _dump(r.payload).count("Where is parcel PX-1138 now, exactly?") == 1
    assert r.report.item("q").reason == "pinned"
    assert check_request(r.rendered.format, r.payload) == []
    # A query that is not in the history is shown once too.
    r = s.build_sync("Which parcel did I mention?", max_tokens=2000)
    assert _dump(r.payload).count("Which parcel did I mention?") == 1


def test_a_turn_input_keeps_its_image_parts():
    for model, needle in (("gpt-4o", '"image_url"'), ("claude-sonnet-4-5", '"type": "image"')):
        s = _session(model=model)
        s.add_message_sync("user", [{"type": "text", "text": "What is in this picture?"}, IMAGE])
        r = s.build_sync(max_tokens=4000)
        text = _dump(r.payload)
        assert needle in text and "What is in this picture?" in text
        assert check_request(r.rendered.format, r.payload) == []
        last = r.payload["messages"][-1]
        assert last["role"] == "user"


def _replay(s: Session, turns: int, budget: int) -> list:
    results = []
    for t in range(turns):
        s.add_message_sync("user", f"Turn {t}: please check order {1000 + t} for me. " * 3)
        results.append(s.build_sync(max_tokens=budget))
        s.add_message_sync("assistant", f"Order {1000 + t} is packed and leaves today. " * 5)
    return results


def test_a_budget_that_holds_the_whole_conversation_sends_all_of_it():
    s = _session(system_prompt="You track orders.")
    results = _replay(s, 12, 16_000)
    last = results[-1]
    assert len(last.payload["messages"]) == 1 + 23  # system + every message so far
    assert all(r.reason in ("window", "pinned") for r in last.report.items
               if r.source in ("L1_recent", "user_input"))


def _summary(result) -> list:
    return [m for m in result.payload["messages"]
            if m["role"] == "system" and str(m["content"]).startswith("Summary of the")]


def test_turns_only_append_between_compaction_steps():
    s = _session(system_prompt="You track orders.")
    results = _replay(s, 40, 1200)
    assert _summary(results[-1])  # compaction happened
    steps = 0
    for prev, cur in itertools.pairwise(results):
        assert cur.tokens <= 1200
        assert check_request("openai", cur.payload) == []
        if _summary(prev) != _summary(cur):
            steps += 1
            continue
        # Between steps the previous request's history is a prefix of this one: only the
        # input (and any per-turn evidence) after it changed.
        # (a turn's evidence kept as a recall note stays in place, so it is a prefix too)
        def said(r):
            return [m for m in r.payload["messages"]
                    if not str(m["content"]).startswith("Context for this turn")]

        history = said(prev)[:-1]
        assert said(cur)[:len(history)] == history
        assert cur.report.reused_prefix_tokens >= sum(
            s.builder.renderer.chat.message(m) for m in history)
    # Compaction steps are rare. These requests hold no answer and look alike, so their need
    # is read from what retrieval ranks after the earlier ones, and a run of them makes the
    # window yield: 11 steps of 40 (10 while a request said three times read as more than a
    # question; 8 for one said once).
    assert 1 <= steps <= len(results) // 3


def test_compacted_messages_are_reported_and_kept():
    s = _session()
    results = _replay(s, 30, 800)
    report = results[-1].report
    compacted = [r for r in report.items if r.reason == "compacted"]
    assert compacted and not any(r.included for r in compacted)
    assert s.store.count(scope=s.memory.scope) == 60  # nothing is lost: all still stored


def test_async_forms_and_sync_twins_agree_inside_and_outside_a_loop():
    a, b = _session(id="a"), _session(id="b")

    async def run_async() -> tuple[str, str | None]:
        await a.add_message("user", "Remember: the gate code is 4711.", id="m1")
        await a.add_messages([{"role": "assistant", "content": "Noted.", "id": "m2"}])
        built = await a.build(max_tokens=500)
        # The sync twins work inside a running loop too (on a worker thread).
        inside = a.build_sync(max_tokens=500)
        assert inside.payload == built.payload
        return _dump(built.payload), await a.end()

    built_a, summary_a = asyncio.run(run_async())
    b.add_message_sync("user", "Remember: the gate code is 4711.", id="m1")
    b.add_messages_sync([{"role": "assistant", "content": "Noted.", "id": "m2"}])
    assert _dump(b.build_sync(max_tokens=500).payload) == built_a

    async def end_inside_a_loop() -> str | None:
        return b.end_sync()

    summary_b = asyncio.run(end_inside_a_loop())
    assert summary_a == "a:summary" and summary_b == "b:summary"


def test_concurrent_builds_of_one_session_do_not_share_state():
    s = _session(system_prompt="Be brief.")
    for i in range(30):
        s.add_message_sync("user" if i % 2 == 0 else "assistant", f"message {i} " * 20)
    items = list(s.memory.history.items)
    before = [(it.tokens, dict(it.scores)) for it in items]

    async def both():
        return await asyncio.gather(s.build("message 3", max_tokens=300),
                                    s.build("message 28", max_tokens=2000),
                                    s.build("message 3", max_tokens=300))

    small, large, small_again = asyncio.run(both())
    assert small.payload == small_again.payload
    assert small.tokens <= 300 < large.tokens <= 2000
    # The source's items are never written by a build.
    assert [(it.tokens, dict(it.scores)) for it in items] == before


def test_events_cover_adds_tier_moves_builds_and_end():
    sink = RecordingSink()
    s = _session(events=sink, id="ev")
    for i in range(40):
        s.add_message_sync("user", f"a fairly long message number {i} " * 10)
    s.build_sync(max_tokens=500)
    s.end_sync()
    kinds = {e.kind for e in sink.events}
    assert kinds == {"message_added", "tier_moved", "build_completed", "session_ended"}
    built = sink.of("build_completed")[0]
    assert built.session == "ev" and built.report.tokens == built.tokens <= 500
    moved = [i for e in sink.of("tier_moved") for i in e.ids]
    assert moved and set(moved) <= {r.id for r in s.store.scan(scope=s.memory.scope)}


class _Notes:
    """A custom source that declares its own budget share."""

    name = "notes"
    share = 0.25

    async def collect(self, request: SourceRequest):
        return [ContextItem(id="note", source=self.name, content="note " * 10,
                            kind="evidence")]


def test_sources_declare_their_share_and_whether_they_are_history():
    history = HistorySource([{"role": "user", "content": "hello"}], name="chat")
    b = ContextBuilder([SystemPromptSource("sys"), history, _Notes()],
                       options=BuildOptions(format="text"))
    r = b.build_sync("hello", max_tokens=1000)
    assert next(src for src in r.report.sources if src.name == "notes").allocated == 250
    # "chat" is history because it says so, not because of its name.
    assert r.report.item("m1").reason in ("selected", "pinned")
    turn = b.build_sync(None, max_tokens=1000)
    assert turn.report.item("m1").reason == "pinned"  # the last user message is the input


def test_a_new_format_is_one_registration():
    from loomctx import register_format
    from loomctx.render.text import TextRenderer

    register_format("shout", lambda tok, opts: _Shout(tok.counter))
    b = ContextBuilder([SystemPromptSource("be loud")], options=BuildOptions(format="shout"))
    assert b.build_sync("hi", max_tokens=200).payload["text"].isupper()
    custom = ContextBuilder([SystemPromptSource("quiet")], renderer=TextRenderer(
        b.tokenizer.counter, headers=False))
    assert custom.build_sync("hi", max_tokens=200).text.startswith("quiet")


class _Shout:
    format = "shout"

    def __init__(self, counter) -> None:
        from loomctx.render.text import TextRenderer

        self.inner = TextRenderer(counter, headers=False)

    def cost(self, item):
        return self.inner.cost(item)

    def overhead(self, sections=None):
        return self.inner.overhead(sections)

    def render(self, layout):
        from dataclasses import replace

        r = self.inner.render(layout)
        return replace(r, format="shout", payload={"text": r.payload["text"].upper()})


class _Seer:
    """Records the history its requests carry; offers a block of per-turn evidence."""

    name = "seer"
    share = 0.3

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    async def collect(self, request: SourceRequest):
        self.seen.append([it.id for it in request.context.get("history", [])])
        return [ContextItem(id=f"ev{i}", source=self.name, content=f"fact {i} " * 60,
                            kind="state") for i in range(6)]


def test_sources_see_the_history_and_a_declared_per_turn_share_is_honoured():
    seer = _Seer()
    s = _session(sources=[seer])
    s.add_message_sync("user", "hello", id="u1")
    s.add_message_sync("assistant", "hi", id="a1")
    s.add_message_sync("user", "facts please", id="u2")
    r = s.build_sync(max_tokens=4000)
    assert seer.seen[-1] == ["u1", "a1", "u2"]  # the turn's history, input included
    used = next(x for x in r.report.sources if x.name == "seer").used
    # The default per-turn cap is 5 % of the budget; the source declared 30 %.
    assert used > 0.05 * 4000 and used <= 0.3 * 4000


def test_a_long_tool_result_is_shown_cut_the_same_way_on_every_later_turn():
    s = _session()
    log = " ".join(f"scan {i} at hub {i % 7} ok" for i in range(3000))
    s.add_message_sync("user", "Pull the scan log.", id="u0")
    s.add_message_sync("assistant", None, id="a0", tool_calls=[{
        "id": "c1", "type": "function", "function": {"name": "scan_log", "arguments": "{}"}}])
    s.add_message_sync("tool", log, tool_call_id="c1", id="log")
    shown = []
    for t in range(3):
        s.add_message_sync("user", f"Question {t} about the log?", id=f"q{t}")
        r = s.build_sync(max_tokens=3000)
        tool = next(m for m in r.payload["messages"] if m.get("tool_call_id") == "c1")
        shown.append(tool["content"])
        assert r.report.item("log").reason == "truncated"
        assert r.originals["log"].content == log  # the whole text is kept, by its id
        s.add_message_sync("assistant", f"Answer {t}.", id=f"r{t}")
    assert shown[0] == shown[1] == shown[2]  # deterministic: the cached prefix holds
    assert "full text id=log" in shown[0] and len(shown[0]) < len(log) // 10


def test_lone_surrogates_from_any_source_never_reach_the_request():
    from loomctx import Document, KnowledgeSource

    kb = KnowledgeSource([Document("d.md", "order notes \udc80 from a cut file")])
    for model in ("gpt-4o", "claude-sonnet-4-5"):
        s = _session(model=model, system_prompt="Be brief \ud800.", knowledge=[kb])
        s.add_message_sync("user", "order notes please")
        for r in (s.build_sync(max_tokens=2000), s.build_sync("notes \udfff?", max_tokens=2000)):
            text = json.dumps(r.payload, ensure_ascii=False)
            assert check_request(r.rendered.format, r.payload) == []
            assert "Be brief \ufffd." in text
            text.encode("utf-8")  # sendable as UTF-8


def test_an_empty_anthropic_conversation_is_a_caller_error_not_a_bad_request():
    from loomctx import ConfigError

    s = _session(model="claude-sonnet-4-5", system_prompt="Be brief.")
    with pytest.raises(ConfigError, match="at least one message"):
        s.build_sync(max_tokens=800)
    s.add_message_sync("user", "hello")
    assert check_request("anthropic", s.build_sync(max_tokens=800).payload) == []


def test_a_turn_looks_again_only_at_the_messages_added_since_the_last():
    """Placing the window (clipping, its start, its copies' costs) works on what was appended:
    the cost of a turn follows what is new, not the conversation's length."""
    s = _session(model="gpt-4o")
    s.add_messages_sync([{"role": "user" if i % 2 == 0 else "assistant",
                          "content": f"message {i} about the shipment", "id": f"m{i}"}
                         for i in range(300)])
    window = s.builder.window
    seen: list[str] = []
    measure = window.measure

    def counting(it):
        seen.append(it.id)
        return measure(it)

    window.measure = counting
    first = s.build_sync(max_tokens=100_000)
    assert len([i for i in seen if i.startswith("m")]) >= 300
    seen.clear()
    s.add_message_sync("user", "and the invoice?", id="new")
    second = s.build_sync(max_tokens=100_000)
    assert [i for i in seen if i.startswith("m")] == [] and "new" in seen
    assert [m["content"] for m in second.payload["messages"][:-1]] == \
        [m["content"] for m in first.payload["messages"]]
