"""Phases in the loop: the agent passes each build the phase of its turn, the session's default
budget shifts the sources' shares by it, and ``loomctx build --phase`` does the same."""

from __future__ import annotations

import json

import pytest

from loomctx.agent.phases import LATE_AFTER, infer_phase
from loomctx.cli.main import main
from loomctx.testing import ToolCall


def track_shipment(shipment_id: str) -> str:
    """Current status of a shipment.

    Args:
        shipment_id: The shipment's id.
    """
    return f"{shipment_id}: customs hold at Lyon"


def _shares(event) -> dict[str, int]:
    return {s.name: s.allocated for s in event.report.sources}


def test_infer_phase_follows_the_run() -> None:
    assert infer_phase(0, "user") == "early"
    assert infer_phase(1, "tool") == "middle"
    assert infer_phase(3, "user") == "early"  # a new user message: a new task starts
    assert infer_phase(LATE_AFTER, "tool") == "late"
    assert infer_phase(3, "tool", max_turns=5) == "late"  # near the step limit
    assert infer_phase(0, "user", max_turns=1) == "early"


def test_the_agent_passes_the_phase_and_the_shares_move(make_agent) -> None:
    agent, _, sink = make_agent([
        ToolCall(name="track_shipment", arguments={"shipment_id": "SHP-7"}),
        ToolCall(name="track_shipment", arguments={"shipment_id": "SHP-8"}),
        "Both are on customs hold at Lyon."], tools=[track_shipment])
    result = agent.run_sync("Where are SHP-7 and SHP-8?")
    assert [t.phase for t in result.turns] == ["early", "middle", "middle"]
    early, middle, _ = (_shares(e) for e in sink.of("context_rebuilt"))
    # early favours recalled memory, middle the recent exchange (where tool results are)
    assert early["L4_semantic"] > middle["L4_semantic"]
    assert middle["L1_recent"] > early["L1_recent"]
    assert middle["tools"] > early["tools"]


def test_late_near_the_turn_limit(make_agent) -> None:
    from loomctx import AgentLimits

    agent, _, sink = make_agent([
        ToolCall(name="track_shipment", arguments={"shipment_id": "SHP-7"}),
        ToolCall(name="track_shipment", arguments={"shipment_id": "SHP-8"}),
        "Done."], tools=[track_shipment], limits=AgentLimits(max_turns=4))
    result = agent.run_sync("Where are SHP-7 and SHP-8?")
    assert [t.phase for t in result.turns] == ["early", "middle", "late"]
    late = _shares(sink.of("context_rebuilt")[2])
    middle = _shares(sink.of("context_rebuilt")[1])
    assert late["L2_important"] > middle["L2_important"]


def test_phases_off_builds_without_one(make_agent) -> None:
    agent, _, sink = make_agent([
        ToolCall(name="track_shipment", arguments={"shipment_id": "SHP-7"}), "Done."],
        tools=[track_shipment], phases=False)
    result = agent.run_sync("Where is SHP-7?")
    assert [t.phase for t in result.turns] == [None, None]
    first, second = (_shares(e) for e in sink.of("context_rebuilt"))
    assert first == second


def _build(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert main(["build", "--example", "--report", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)["report"]


def test_cli_phase_shifts_the_allocation_and_what_goes_in(
        capsys: pytest.CaptureFixture[str]) -> None:
    plain, early, middle = (_build(capsys, *a) for a in
                            ((), ("--phase", "early"), ("--phase", "middle")))
    alloc = {name: {s["name"]: s["allocated"] for s in r["sources"]}
             for name, r in (("plain", plain), ("early", early), ("middle", middle))}
    assert alloc["early"]["RAG_knowledge"] > alloc["plain"]["RAG_knowledge"] \
        > alloc["middle"]["RAG_knowledge"]
    assert alloc["middle"]["L1_recent"] > alloc["plain"]["L1_recent"]
    assert alloc["middle"]["tools"] > alloc["early"]["tools"]

    def knowledge_in(report: dict) -> set[str]:
        return {i["id"] for i in report["items"]
                if i["source"] == "RAG_knowledge" and i["included"]}

    # Under pressure the phase changes what goes in (a question build at a small budget: the
    # shares decide there; a turn's evidence may take the room its window leaves).
    ask = ("--query", "How do customs holds and refunds work?", "--max-tokens", "500")
    early_q, middle_q = (_build(capsys, *ask, "--phase", p) for p in ("early", "middle"))

    def included(report: dict) -> set[str]:
        return {i["id"] for i in report["items"] if i["included"]}

    assert included(early_q) != included(middle_q)
    assert knowledge_in(early) and knowledge_in(middle)
    for r in (plain, early, middle):
        assert r["tokens"] <= r["budget"]
