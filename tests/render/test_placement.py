"""Placement modes: where the turn's context, recall notes and the summary go in an
OpenAI-shaped request, checked against the rules of strict open-model chat templates — on
crafted conversations, and over real HTTP against a fake server that enforces those rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loomctx import Agent, BuildOptions, RecordingSink, Session
from loomctx.demo import RETURN_RATE, TOTAL_SALES, create_database, sql_demo
from loomctx.errors import ConfigError, ModelError
from loomctx.models.openai import OpenAIChatModel
from loomctx.render.chat import OpenAIRenderer
from loomctx.render.placement import CONTINUES, PLACEMENTS, place
from loomctx.testing import FakeModelServer, HashingEmbedder, Reply, ToolCall
from loomctx.testing.strict_template import template_problems
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import counter_for_model

SYSTEM = {"role": "system", "content": "You are terse."}
SUMMARY = {"role": "system", "content": "Summary of earlier turns."}
NOTE = {"role": "system", "content": "Recall note: the order was 42."}
EVIDENCE = {"role": "system", "content": "Context for this turn: doc A."}
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "7"}


def _u(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _a(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


CONVERSATIONS = {
    "new_turn": [SYSTEM, SUMMARY, _u("q1"), _a("a1"), NOTE, _u("q2"), CALL, RESULT, _a("a2"),
                 EVIDENCE, _u("q3")],
    "inside_a_tool_loop": [SYSTEM, _u("q1"), NOTE, CALL, RESULT, EVIDENCE],
    "window_starts_with_the_assistant": [SYSTEM, SUMMARY, _a("a0"), _u("q1"), EVIDENCE,
                                         _u("more")],
}

LEAD = {"new_turn": 2, "inside_a_tool_loop": 1, "window_starts_with_the_assistant": 2}


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_the_default_placement_breaks_a_strict_template_and_the_strict_ones_do_not(
        name: str) -> None:
    messages, lead = CONVERSATIONS[name], LEAD[name]
    assert place(messages, "system", lead=lead) is messages
    assert template_problems(messages)  # mid-conversation system messages
    for mode in ("first_system", "user_block"):
        placed = place(list(messages), mode, lead=lead)
        assert template_problems(placed) == [], (mode, placed)
        text = json.dumps(placed)
        for m in messages:  # nothing is lost
            if isinstance(m.get("content"), str):
                assert m["content"] in text


def test_first_system_joins_every_system_message_into_the_first() -> None:
    placed = place(CONVERSATIONS["new_turn"], "first_system", lead=2)
    assert placed[0] == {"role": "system", "content": "\n\n".join(
        m["content"] for m in (SYSTEM, SUMMARY, NOTE, EVIDENCE))}
    assert [m["role"] for m in placed[1:]] == ["user", "assistant", "user", "assistant",
                                               "tool", "assistant", "user"]


def test_user_block_puts_the_evidence_in_the_users_turn() -> None:
    placed = place(CONVERSATIONS["new_turn"], "user_block", lead=2)
    assert placed[0]["content"] == "You are terse.\n\nSummary of earlier turns."
    assert placed[-1] == _u("Context for this turn: doc A.\n\nq3")
    assert placed[3] == _u("Recall note: the order was 42.\n\nq2")
    loop = place(CONVERSATIONS["inside_a_tool_loop"], "user_block", lead=1)
    assert loop[1] == _u("q1\n\nRecall note: the order was 42.\n\nContext for this turn: doc A.")
    assert loop[-1] == RESULT  # no user message after the tool results
    cut = place(CONVERSATIONS["window_starts_with_the_assistant"], "user_block", lead=2)
    assert cut[1] == _u(CONTINUES) and cut[-1] == _u("q1\n\nContext for this turn: doc A.\n\n"
                                                     "more")


def test_user_parts_are_kept_when_joined() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
    placed = place([SYSTEM, EVIDENCE, {"role": "user", "content": [image], "name": "ann"}],
                   "user_block", lead=1)
    assert placed[1] == {"role": "user", "name": "ann", "content": [
        {"type": "text", "text": EVIDENCE["content"]}, image]}


def test_a_bad_placement_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="placement"):
        BuildOptions(placement="middle")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="placement"):
        OpenAIRenderer(ChatCounter(counter_for_model("gpt-4o").counter),
                       placement="middle")  # type: ignore[arg-type]


def test_each_format_has_its_default_placement() -> None:
    from loomctx.builder import ContextBuilder

    def placement(**kw: Any) -> str:
        return ContextBuilder([], options=BuildOptions(**kw)).renderer.placement  # type: ignore

    assert placement() == "system"
    assert placement(model="claude-sonnet-4-5") == "user_block"
    assert placement(format="openai_strict") == "user_block"
    assert placement(format="openai_strict", placement="first_system") == "first_system"


# --- over real HTTP, against a server that enforces the template rules -----------------------

@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create_database(tmp_path_factory.mktemp("sales") / "sales.db")


def _steps(scenario: Any) -> list[Reply]:
    return [Reply(text=(r.get("content") or "").replace("{result}", "x"), tool_calls=[
        ToolCall(c["function"]["name"], c["function"]["arguments"], c["id"])
        for c in r.get("tool_calls") or ()]) for r in scenario.replies]


def _run(db: Path, options: BuildOptions, server: FakeModelServer,
         sink: RecordingSink) -> None:
    demo = sql_demo(RETURN_RATE.question, db=db, embedder=HashingEmbedder(), events=sink,
                    options=options)
    agent = Agent(OpenAIChatModel("local-model", base_url=server.url + "/v1", max_retries=0),
                  tools=demo.tools.tools(), session=demo.session, budget=16_000)
    for question in (RETURN_RATE.question, TOTAL_SALES.question, "Thanks, and the week?"):
        assert agent.run_sync(question).stop == "final"


SCRIPT = [*_steps(RETURN_RATE), *_steps(TOTAL_SALES), Reply(text="Same as above.")]


@pytest.mark.parametrize("options", [
    BuildOptions(placement="first_system"),
    BuildOptions(placement="user_block"),
    BuildOptions(format="openai_strict"),
], ids=["first_system", "user_block", "openai_strict"])
def test_each_strict_placement_passes_the_strict_template_server(
        db: Path, options: BuildOptions) -> None:
    sink = RecordingSink()
    with FakeModelServer(SCRIPT, strict_template=True) as server:
        _run(db, options, server, sink)
        bodies = [r.body for r in server.requests]
    assert server.template_refusals == [] and len(bodies) == len(SCRIPT)
    counter = ChatCounter(counter_for_model("gpt-4o").counter, "openai")
    rebuilt = [e for e in sink.events if e.kind == "context_rebuilt"]
    assert len(rebuilt) == len(bodies)
    for body, event in zip(bodies, rebuilt, strict=True):
        assert template_problems(body["messages"]) == []
        # the count the budget was held to is the count of what was sent
        assert event.tokens == counter.messages(body["messages"], body.get("tools"))
        assert event.tokens <= 16_000
        assert "### Constraints" in json.dumps(body["messages"])  # the evidence went in
    for nxt in (len(RETURN_RATE.replies), len(RETURN_RATE.replies) + 2):  # a turn's first call
        before, after = bodies[nxt - 1]["messages"], bodies[nxt]["messages"]
        if options.placement == "first_system":
            # only the system message changes: the conversation after it keeps its bytes
            assert after[1:len(before)] == before[1:]
            continue
        # user_block: the earlier history keeps its bytes; the user message of the previous
        # turn loses the evidence it carried and nothing else
        user = max(k for k, m in enumerate(before) if m["role"] == "user")
        assert after[:user] == before[:user]
        assert before[user]["content"].startswith(after[user]["content"] + "\n\n")
        assert after[user + 1:len(before)] == before[user + 1:]


def test_the_default_placement_is_refused_by_the_strict_template_server(db: Path) -> None:
    with FakeModelServer(SCRIPT, strict_template=True) as server, \
            pytest.raises(ModelError, match="system message after the first"):
        _run(db, BuildOptions(), server, RecordingSink())
    assert server.template_refusals


# --- recall notes: the evidence of a question that stays in place inside the history ---------

def _recall_session(options: BuildOptions) -> Session:
    s = Session(embedder=HashingEmbedder(dim=1024), clock=lambda: 1_700_000_000.0,
                options=options)
    names = ["alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel"]
    for i, n in enumerate(names):
        s.add_message_sync("user", f"Remember: the {n} crate sits at dock {i} behind gate "
                                   f"{100 + i}.")
        s.add_message_sync("assistant", f"Noted {i}.")
    for i in range(150):
        s.add_message_sync("user", f"Small talk line {i} about the weather, lunch plans.")
        s.add_message_sync("assistant", f"Sure, line {i}.")
    for i in range(200):  # chat until the window compacts and has room to spare
        s.add_message_sync("user", f"More small talk {i}, weather, lunch.")
        compacted = sum(1 for r in s.build_sync(max_tokens=3000).report.items
                        if r.reason == "compacted")
        s.add_message_sync("assistant", f"Sure {i}.")
        if i == 0:
            start = compacted
        elif compacted > start + 2:
            return s
    pytest.fail("the window never compacted")


@pytest.mark.parametrize("placement", ["system", "first_system", "user_block"])
def test_a_recall_note_is_placed_by_the_mode(placement: str) -> None:
    s = _recall_session(BuildOptions(recall_share=0.0, placement=placement))  # type: ignore
    s.add_message_sync("user", "Where's the alder crate, which dock?")
    first = s.build_sync(max_tokens=3000)
    s.add_message_sync("assistant", None, tool_calls=[{
        "id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}])
    s.add_message_sync("tool", "gate 100 is open", tool_call_id="c1")
    second = s.build_sync(max_tokens=3000)
    counter = ChatCounter(counter_for_model("gpt-4o").counter, "openai")
    notes = [r for r in second.report.items if r.reason == "recalled"]
    assert notes  # the first call's evidence is in the second call as a recall note
    for built in (first, second):
        messages = built.payload["messages"]
        assert built.tokens == counter.messages(messages, built.payload.get("tools"))
        assert built.tokens <= 3000
        assert "dock 0 behind gate 100" in json.dumps(messages)
        problems = template_problems(messages)
        assert (problems != []) == (placement == "system"), problems
    if placement != "first_system":  # the history up to the question keeps its bytes
        before = first.payload["messages"]
        user = max(k for k, m in enumerate(before) if m["role"] == "user")
        assert second.payload["messages"][:user] == before[:user]


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_anthropic_keeps_the_evidence_user_side_unless_first_system(placement: str) -> None:
    from loomctx.items import ContextItem
    from loomctx.render.chat import AnthropicRenderer
    from loomctx.render.protocol import Layout
    from loomctx.render.validate import check

    def item(kind: str, text: str) -> ContextItem:
        return ContextItem(id=text, source="t", kind=kind, content=text)  # type: ignore

    chat = ChatCounter(counter_for_model("claude-sonnet-4-5").counter, "anthropic")
    layout = Layout(system=[item("system", "You are terse.")],
                    evidence=[item("knowledge", "doc A")], input=[item("input", "q")])
    out = AnthropicRenderer(chat, placement=placement).render(layout)  # type: ignore
    assert check("anthropic", out.payload) == []
    assert out.tokens == chat.messages(out.payload["messages"], None,
                                       system=out.payload["system"])
    system_text = json.dumps(out.payload["system"])
    turn_text = json.dumps(out.payload["messages"])
    assert ("doc A" in system_text) == (placement == "first_system")
    assert ("doc A" in turn_text) == (placement != "first_system")
    assert out.prefix_tokens == chat.system(out.payload["system"][:1])
