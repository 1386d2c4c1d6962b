"""Packing: pinned first, shares, leftover flow, ceilings, contiguous tail, atomic units, cuts."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.budget.manager import Allocation, BudgetManager, Limit
from loomctx.builder import BuildOptions, ContextBuilder
from loomctx.compress.summarize import ExtractiveSummarizer
from loomctx.compress.truncate import MARKER
from loomctx.errors import BudgetError
from loomctx.items import ContextItem, Tier
from loomctx.select.packer import PackResult, Unit, fill, make_units, pack
from loomctx.sources.history import HistorySource
from loomctx.sources.static import SystemPromptSource, UserInputSource

NOW = 1_750_000_000.0


def item(iid: str, source: str, tokens: int, *, score: float = 0.5, tier: Tier = Tier.P3,
         group: str | None = None, seq: int = 0) -> ContextItem:
    it = ContextItem(id=iid, source=source, content=f"content of {iid}", tier=tier, group=group,
                     seq=seq, tokens=tokens)
    it.scores["composite"] = score
    return it


def reason(res: PackResult, item_id: str) -> str:
    """The packer leaves units that did not fit without a reason; the report says "budget"."""
    return res.reasons.get(item_id, "budget")


def units(*items: ContextItem) -> list[Unit]:
    return make_units(items, lambda it: it.tokens or 0)


def alloc(total: int, shares: dict[str, int], ceilings: dict[str, int | None] | None = None
          ) -> Allocation:
    return Allocation(total=total, shares=shares, ceilings=ceilings or {})


def test_make_units_groups_by_source_and_group() -> None:
    us = units(item("a", "h", 5, group="g1"), item("b", "h", 7, group="g1", score=0.9),
               item("c", "h", 3), item("d", "h", 2, group="g2", tier=Tier.P1))
    assert [[i.id for i in u.items] for u in us] == [["a", "b"], ["c"], ["d"]]
    assert us[0].cost == 12 and us[0].score == 0.9
    assert us[2].tier == Tier.P1


def test_pinned_goes_first_and_p1_before_shares() -> None:
    ordered = {"sys": units(item("s", "sys", 50, tier=Tier.P0)),
               "skills": units(item("k", "skills", 40, tier=Tier.P1)),
               "ev": units(item("e", "ev", 30))}
    res = pack(ordered, allocation=alloc(100, {"sys": 10, "skills": 0, "ev": 30}), available=100,
               tail_sources=frozenset())
    assert {i: reason(res, i) for i in "ske"} == {"s": "pinned", "k": "required", "e": "budget"}
    assert [i.id for i in res.included] == ["s", "k"]
    assert res.spent == 90


def test_pinned_over_budget_raises_with_sizes() -> None:
    ordered = {"sys": units(item("s", "sys", 80, tier=Tier.P0)),
               "in": units(item("q", "in", 40, tier=Tier.P0))}
    with pytest.raises(BudgetError) as info:
        pack(ordered, allocation=alloc(100, {}), available=100, tail_sources=frozenset())
    assert (info.value.required, info.value.available) == (120, 100)
    assert "s=80" in str(info.value) and "q=40" in str(info.value)


def test_unused_share_flows_to_sources_with_candidates() -> None:
    ordered = {"a": units(item("a0", "a", 10)),
               "b": units(*(item(f"b{i}", "b", 50, score=0.9 - i / 10) for i in range(6)))}
    res = pack(ordered, allocation=alloc(300, {"a": 150, "b": 100}), available=300,
               tail_sources=frozenset())
    assert res.used == {"a": 10, "b": 250}  # b got 2 units from its share, 3 from a's leftover
    assert [i.id for i in res.included] == ["a0", "b0", "b1", "b2", "b3", "b4"]
    assert reason(res, "b5") == "budget"
    assert res.spent <= 300


def test_ceilings_are_respected_when_leftover_flows() -> None:
    ordered = {"a": units(item("a0", "a", 10)),
               "b": units(*(item(f"b{i}", "b", 50) for i in range(6))),
               "c": units(*(item(f"c{i}", "c", 40, score=0.1) for i in range(6)))}
    res = pack(ordered, allocation=alloc(400, {"a": 200, "b": 100, "c": 50}, {"b": 120}),
               available=400, tail_sources=frozenset())
    assert res.used["b"] <= 120
    assert res.used["c"] > 50  # the leftover went to c instead
    assert res.spent <= 400


def test_history_tail_is_contiguous_even_when_an_older_unit_would_fit() -> None:
    # newest first, as the builder queues a tail source
    tail = units(item("m5", "L1", 20, seq=5), item("m4", "L1", 200, seq=4),
                 item("m3", "L1", 5, seq=3))
    res = pack({"L1": tail}, allocation=alloc(100, {"L1": 100}), available=100,
               tail_sources=frozenset({"L1"}))
    assert [i.id for i in res.included] == ["m5"]
    assert reason(res, "m3") == "budget"  # would fit, but would leave a hole


def test_a_non_tail_source_skips_what_does_not_fit() -> None:
    ev = units(item("e1", "ev", 20), item("e2", "ev", 200), item("e3", "ev", 5))
    res = pack({"ev": ev}, allocation=alloc(100, {"ev": 100}), available=100,
               tail_sources=frozenset(), truncate=None)
    assert [i.id for i in res.included] == ["e1", "e3"]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(costs=st.lists(st.tuples(st.integers(1, 60), st.integers(1, 3)), max_size=15),
       available=st.integers(0, 400), share=st.integers(0, 400))
def test_units_are_atomic_and_the_tail_is_a_suffix(costs: list[tuple[int, int]], available: int,
                                                    share: int) -> None:
    items = []
    for n, (cost, size) in enumerate(costs):
        for k in range(size):
            items.append(item(f"m{n}.{k}", "L1", cost, group=f"g{n}" if size > 1 else None,
                              seq=len(items)))
    newest_first = list(reversed(units(*items)))
    res = pack({"L1": newest_first}, allocation=alloc(available, {"L1": share}),
               available=available, tail_sources=frozenset({"L1"}))
    kept = {i.id for i in res.included}
    assert res.spent == sum(i.tokens or 0 for i in res.included) <= available
    for u in newest_first:  # all or nothing per unit
        ids = {i.id for i in u.items}
        assert ids <= kept or not ids & kept
    seqs = sorted(i.seq for i in res.included)
    assert seqs == list(range(len(items) - len(seqs), len(items)))
    assert all((reason(res, i.id) == "selected") == (i.id in kept) for i in items)
    assert all(reason(res, i.id) in ("selected", "budget") for i in items)


def test_cut_unit_keeps_the_original_and_fits() -> None:
    calls = []

    def cut(it: ContextItem, target: int) -> ContextItem:
        calls.append((it.id, target))
        return replace(it, content=it.content[:5] + "…", tokens=target)

    big = item("t", "L1", 500, seq=1, group="g")
    call = item("c", "L1", 10, seq=0, group="g")
    res = pack({"L1": list(reversed(units(call, big)))}, allocation=alloc(200, {"L1": 50}),
               available=200, tail_sources=frozenset({"L1"}), truncate=cut, min_fragment=64)
    # A cut history unit takes at most half the room (200 // 2), leaving the rest for a summary.
    assert calls == [("t", 90)]
    assert res.truncated["t"] is big and big.tokens == 500
    assert res.reasons == {"c": "selected", "t": "truncated"}
    assert res.spent == 100


def test_a_history_message_recalled_whole_is_not_replaced_by_a_cut_copy() -> None:
    # The tail's oldest message fits only cut; evidence already holds it whole. The history copy
    # wins a duplicate, so cutting it would swap the whole text for a fragment: it is left out,
    # and the recalled copy stays (a HotpotQA passage lost this way at 8,192 tokens).
    def cut(it: ContextItem, target: int) -> ContextItem:
        return replace(it, content=it.content[:5] + "…", tokens=target)

    recalled = item("m", "ev", 150, score=0.9)
    newer = item("n", "L1", 40, seq=2)
    older = item("m", "L1", 150, seq=1)
    res = pack({"ev": units(recalled), "L1": list(reversed(units(older, newer)))},
               allocation=alloc(220, {"ev": 150, "L1": 60}), available=220,
               tail_sources=frozenset({"L1"}), truncate=cut, min_fragment=16)
    assert [(i.source, i.id) for i in res.included] == [("ev", "m"), ("L1", "n")]
    assert res.included[0] is recalled and "m" not in res.truncated
    # without the recalled copy the same tail message is cut, as before
    alone = pack({"L1": list(reversed(units(older, newer)))},
                 allocation=alloc(100, {"L1": 60}), available=100,
                 tail_sources=frozenset({"L1"}), truncate=cut, min_fragment=16)
    assert "m" in alone.truncated and reason(alone, "m") == "truncated"


def test_no_cut_below_min_fragment() -> None:
    def cut(it: ContextItem, target: int) -> ContextItem:
        raise AssertionError("must not be called")

    res = pack({"L1": units(item("t", "L1", 500))}, allocation=alloc(60, {"L1": 60}),
               available=60, tail_sources=frozenset({"L1"}), truncate=cut, min_fragment=64)
    assert res.included == [] and reason(res, "t") == "budget"


# ---- through the builder ---------------------------------------------------------------------

LOG = "\n".join(f"2024-05-0{i % 8 + 1} scan SHP-{40000 + i} Lyon cross-dock customs hold"
                for i in range(300))


def _history(n_old: int) -> list[dict]:
    msgs: list[dict] = []
    for i in range(n_old):
        msgs.append({"id": f"old{i}", "role": "user" if i % 2 == 0 else "assistant",
                     "content": f"Turn {i}: we agreed the Hamburg pickup moves to day {i}."})
    msgs += [
        {"id": "call", "role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "scan_log", "arguments": "{\"week\": 18}"}}]},
        {"id": "log", "role": "tool", "tool_call_id": "c1", "content": LOG},
    ]
    return msgs


def _builder(history: list[dict], **opts: object) -> ContextBuilder:
    return ContextBuilder([SystemPromptSource("You are terse."), UserInputSource(),
                           HistorySource(history)],
                          options=BuildOptions(model="gpt-4o", format="openai", **opts))


def test_truncation_marker_in_output_and_original_in_result() -> None:
    result = _builder(_history(0)).build_sync("audit the hubs", max_tokens=800, now=NOW)
    tool_msgs = [m for m in result.messages if m["role"] == "tool"]
    assert len(tool_msgs) == 1
    shown = tool_msgs[0]["content"]
    assert "…[truncated:" in shown and "full text id=log" in shown
    assert shown.split("\n…[truncated")[0] == LOG[: len(shown.split("\n…[truncated")[0])]
    assert result.originals["log"].content == LOG
    assert result.report.item("log").reason == "truncated"
    assert result.report.item("call").included  # its call came with it
    assert result.tokens <= 800
    assert MARKER.startswith("\n…[truncated")


def test_summary_of_dropped_older_history_when_room_is_left() -> None:
    # A call with three big results cannot be cut to fit (each result alone is too big), so the
    # tail stops there with room left, and the older turns are summarized into that room.
    results = [{"id": f"r{k}", "role": "tool", "tool_call_id": f"c{k}", "content": LOG[:1500]}
               for k in range(3)]
    history = [*_history(20)[:-2],
               {"id": "calls", "role": "assistant", "content": None, "tool_calls": [
                   {"id": f"c{k}", "type": "function",
                    "function": {"name": "scan_log", "arguments": "{}"}} for k in range(3)]},
               *results,
               {"id": "recent1", "role": "user", "content": "Thanks, that is all for the log."},
               {"id": "recent2", "role": "assistant", "content": "You are welcome."}]
    result = _builder(history).build_sync("when is the Hamburg pickup?", max_tokens=1000,
                                          now=NOW)
    rep = result.report
    dropped = [r.id for r in rep.items if r.source == "L1_recent" and not r.included]
    assert dropped and all(r.reason == "budget" for r in rep.items if r.id in dropped)
    assert {"old0", "old19", "calls", "r0", "r1", "r2"} <= set(dropped)
    assert rep.item("recent1").included and rep.item("recent2").included
    summary = rep.item("summary:history")
    assert summary.included and summary.reason == "summary"
    assert sorted(r.id for r in rep.items if r.summarized_in == "summary:history") == \
        sorted(dropped)
    text = json.dumps(result.payload, ensure_ascii=False)
    assert f"Summary of the {len(dropped)} earlier messages not shown" in text
    assert result.tokens <= 1000

    seen: list[list[str]] = []

    class Recording(ExtractiveSummarizer):
        async def summarize(self, items, max_tokens, counter):  # type: ignore[no-untyped-def]
            seen.append([it.id for it in items])
            return await super().summarize(items, max_tokens, counter)

    b = ContextBuilder([SystemPromptSource("You are terse."), UserInputSource(),
                        HistorySource(history)], options=BuildOptions(format="openai"),
                       summarizer=Recording())
    again = b.build_sync("when is the Hamburg pickup?", max_tokens=1000, now=NOW)
    assert seen == [dropped]  # exactly the dropped ids, oldest first
    assert json.dumps(again.payload) == json.dumps(result.payload)


def test_no_summary_when_disabled_or_nothing_dropped() -> None:
    off = _builder(_history(40), summarize_history=False).build_sync(
        "q", max_tokens=2000, now=NOW)
    assert "summary:history" not in {r.id for r in off.report.items}
    small = _builder(_history(2)[:2]).build_sync("q", max_tokens=2000, now=NOW)
    assert "summary:history" not in {r.id for r in small.report.items}


def test_builder_respects_a_source_ceiling() -> None:
    budget = BudgetManager(limits={"L1_recent": Limit(ceiling=300)})
    b = ContextBuilder([SystemPromptSource("You are terse."), UserInputSource(),
                        HistorySource(_history(60))],
                       options=BuildOptions(format="openai", summarize_history=False),
                       budget=budget)
    result = b.build_sync("q", max_tokens=4000, now=NOW)
    hist = next(s for s in result.report.sources if s.name == "L1_recent")
    assert 0 < hist.used <= 300


def test_fill_spends_room_that_appeared_after_packing_best_first_within_ceilings() -> None:
    chosen = [item("a", "docs", 60), item("b", "notes", 20)]
    rest = {"docs": units(item("c", "docs", 30, score=0.9), item("d", "docs", 8, score=0.3)),
            "notes": units(item("e", "notes", 15, score=0.6), item("f", "notes", 5, score=0.5))}
    res = fill(rest, allocation=alloc(120, {"docs": 60, "notes": 60}, {"notes": 30}),
               available=110, included=chosen)
    # 30 left after what was chosen: c fills it first (best); notes may add 10 (ceiling 30).
    assert [it.id for it in res.included] == ["c"]
    assert res.spent == 110 and reason(res, "c") == "selected"
    res = fill(rest, allocation=alloc(120, {"docs": 60, "notes": 60}, {"notes": 30}),
               available=120, included=chosen)
    # 40 left: c (30), then e does not fit notes' ceiling (20 + 15 > 30), f does, then d.
    assert [it.id for it in res.included] == ["c", "f"]
    assert reason(res, "e") == "budget" and reason(res, "d") == "budget"


def test_units_that_fit_only_cut_go_by_score_then_by_source() -> None:
    calls: list[str] = []

    def cut(it: ContextItem, target: int) -> ContextItem:
        calls.append(it.id)
        return replace(it, content=it.content[:5] + "…", tokens=target)

    # Nothing fits whole in 100 tokens; each cut takes all that is left, so only the first
    # deferred unit is cut: the best score, and of equal scores the source first by name.
    ordered = {"b": units(item("b1", "b", 300, score=0.8)),
               "a": units(item("a1", "a", 300, score=0.8)),
               "c": units(item("c1", "c", 300, score=0.9))}
    pack(ordered, allocation=alloc(100, {}), available=100, tail_sources=frozenset(),
         truncate=cut, min_fragment=16)
    assert calls == ["c1"]
    del ordered["c"]
    pack(ordered, allocation=alloc(100, {}), available=100, tail_sources=frozenset(),
         truncate=cut, min_fragment=16)
    assert calls == ["c1", "a1"]


@settings(max_examples=150, deadline=None)
@given(queues=st.lists(st.lists(st.tuples(st.integers(1, 80), st.floats(0, 1)), max_size=25),
                       min_size=1, max_size=4),
       available=st.integers(0, 600), shares=st.lists(st.integers(0, 200), min_size=4,
                                                      max_size=4),
       ceiling=st.one_of(st.none(), st.integers(0, 300)), cuts=st.booleans(),
       fragment=st.integers(1, 60), tail=st.booleans())
def test_the_leftover_stops_only_when_nothing_more_could_go_in(
        queues: list[list[tuple[int, float]]], available: int, shares: list[int],
        ceiling: int | None, cuts: bool, fragment: int, tail: bool) -> None:
    """Leftover packing stops once the room is below every queued unit (and below what a cut
    needs): the same result as reading every queue to its end."""
    import loomctx.select.packer as packer

    def cut(it: ContextItem, target: int) -> ContextItem:
        return replace(it, content=it.content[:3], tokens=target)

    def run() -> tuple[list[str], dict[str, str], int, list[str]]:
        ordered = {f"s{k}": units(*[item(f"s{k}.{n}", f"s{k}", c, score=sc, seq=n)
                                    for n, (c, sc) in enumerate(q)])
                   for k, q in enumerate(queues)}
        res = pack(ordered, allocation=alloc(available, {f"s{k}": shares[k]
                                                         for k in range(len(queues))},
                                             {"s0": ceiling}),
                   available=available, tail_sources=frozenset({"s0"} if tail else ()),
                   truncate=cut if cuts else None, min_fragment=fragment)
        return ([i.id for i in res.included], res.reasons, res.spent,
                sorted(res.truncated))

    stopping = run()
    least = packer._least_from
    # a lower bound of 0 never lets the room fall below it: every queue read to its end
    packer._least_from = lambda us: [0] * (len(us) + 1)  # type: ignore[assignment]
    try:
        assert run() == stopping
    finally:
        packer._least_from = least
