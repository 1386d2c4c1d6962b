"""Budget allocation: the seed worked examples, floors/ceilings, validation, phase adaptation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.budget.manager import (
    DEFAULT_RATIOS,
    MAX_TOKENS,
    PHASE_BOOST,
    PHASES,
    AdaptiveBudgetManager,
    BudgetManager,
    Limit,
)
from loomctx.builder import BuildOptions, ContextBuilder
from loomctx.errors import ConfigError
from loomctx.sources.static import UserInputSource

MEMORY = ("L1_recent", "L2_important", "L4_semantic")


@pytest.mark.parametrize(
    ("window", "available", "system", "memory"),
    [(200_000, 180_000, 21_600, 64_800), (128_000, 115_200, 13_824, 41_472),
     (8_000, 7_200, 864, 2_592)],
)
def test_seed_worked_examples(window: int, available: int, system: int, memory: int) -> None:
    alloc = BudgetManager(window=window).allocate()
    assert alloc.total == available
    assert alloc.share("system_prompt") == system
    assert sum(alloc.share(s) for s in MEMORY) == memory
    assert sum(DEFAULT_RATIOS[s] for s in MEMORY) == pytest.approx(0.36)


def test_seed_defaults_sum_to_one_and_reserve_is_ten_percent() -> None:
    assert sum(DEFAULT_RATIOS.values()) == pytest.approx(1.0)
    assert BudgetManager().reserve == 0.10
    assert BudgetManager(window=1000).available() == 900


def test_max_tokens_overrides_the_window() -> None:
    alloc = BudgetManager(window=200_000).allocate(1000)
    assert alloc.total == 1000
    assert alloc.share("tools") == 150
    assert alloc.share("unknown_source") == 0


def test_floors_and_ceilings_clamp_shares() -> None:
    bm = BudgetManager(window=10_000, limits={"tools": Limit(ceiling=200),
                                              "agent_output": Limit(floor=1_000),
                                              "extra": Limit(floor=50)})
    alloc = bm.allocate()
    assert alloc.share("tools") == 200  # 15% of 9000 = 1350, capped
    assert alloc.share("agent_output") == 1000  # 5% of 9000 = 450, raised to the floor
    assert alloc.share("extra") == 50  # a source with no ratio still gets its floor
    assert alloc.ceilings["tools"] == 200
    assert alloc.ceilings["agent_output"] is None


def test_floors_above_the_budget_are_a_config_error() -> None:
    bm = BudgetManager(limits={"a": Limit(floor=600), "b": Limit(floor=600)})
    with pytest.raises(ConfigError, match="floors need 1200"):
        bm.allocate(1000)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ratios": {"tools": 1.2}},
        {"ratios": {"tools": -0.1}},
        {"ratios": {"tools": math.nan}},
        {"ratios": {"a": 0.7, "b": 0.4}},
        {"reserve": 1.0},
        {"reserve": -0.1},
        {"window": 0},
        {"window": -5},
    ],
)
def test_invalid_budget_options_raise_config_error(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        BudgetManager(**kwargs)


def test_invalid_limits_and_budgets_raise_config_error() -> None:
    with pytest.raises(ConfigError, match="floor"):
        Limit(floor=-1)
    with pytest.raises(ConfigError, match="ceiling"):
        Limit(floor=10, ceiling=5)
    with pytest.raises(ConfigError, match="no budget"):
        BudgetManager().allocate()
    with pytest.raises(ConfigError):
        BudgetManager(window=100).allocate(0)
    with pytest.raises(ConfigError):
        AdaptiveBudgetManager(boost=0.5)
    with pytest.raises(ConfigError):
        AdaptiveBudgetManager(user_ratios={"tools": 2.0})
    with pytest.raises(ConfigError, match="unknown phase"):
        AdaptiveBudgetManager().ratios_for("midnight")


def test_plain_manager_ignores_the_phase() -> None:
    bm = BudgetManager(window=10_000)
    assert bm.allocate(phase="early") == bm.allocate(phase="late") == bm.allocate()


@pytest.mark.parametrize("phase", PHASES)
def test_adaptive_phase_favours_its_sources(phase: str) -> None:
    am = AdaptiveBudgetManager()
    base = am.ratios_for(None)
    shifted = am.ratios_for(phase)
    assert sum(shifted.values()) == pytest.approx(sum(base.values()))
    for name in base:
        if name in PHASE_BOOST[phase]:
            assert shifted[name] > base[name]
        else:
            assert shifted[name] <= base[name]
    alloc = am.allocate(10_000, phase=phase)
    for name in PHASE_BOOST[phase]:
        assert alloc.share(name) > BudgetManager().allocate(10_000).share(name)


def test_adaptive_phases_differ_in_the_expected_direction() -> None:
    am = AdaptiveBudgetManager()
    early, middle, late = (am.ratios_for(p) for p in PHASES)
    assert early["RAG_knowledge"] > middle["RAG_knowledge"]
    assert middle["L1_recent"] > early["L1_recent"]
    assert middle["L1_recent"] > late["L1_recent"]
    assert late["L2_important"] > early["L2_important"]


ratio = st.floats(0.0, 0.3, allow_nan=False)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(user=st.dictionaries(st.sampled_from(sorted(DEFAULT_RATIOS)), ratio, max_size=4),
       phase=st.sampled_from((None, *PHASES)), boost=st.floats(1.0, 3.0))
def test_adaptive_keeps_user_ratios_and_the_sum(user: dict[str, float], phase: str | None,
                                                boost: float) -> None:
    if sum(user.values()) > 1:
        return
    am = AdaptiveBudgetManager(user_ratios=user, boost=boost)
    out = am.ratios_for(phase)
    for name, r in user.items():
        assert out[name] == r  # never moved
    # a phase moves share between sources, never adds or removes any
    assert sum(out.values()) == pytest.approx(sum(am.ratios_for(None).values()))
    if sum(user.values()) >= sum(DEFAULT_RATIOS[k] for k in user):
        assert sum(out.values()) == pytest.approx(1.0)  # the defaults sum to 1
    assert all(v >= 0 for v in out.values())
    assert set(out) == set(DEFAULT_RATIOS)
    alloc = am.allocate(50_000, phase=phase)
    assert sum(alloc.shares.values()) <= alloc.total


@settings(max_examples=80, deadline=None, derandomize=True)
@given(window=st.integers(1, 2_000_000), reserve=st.floats(0.0, 0.95))
def test_shares_never_exceed_the_total(window: int, reserve: float) -> None:
    alloc = BudgetManager(window=window, reserve=reserve).allocate()
    assert alloc.total == int(window * (1 - reserve))
    assert sum(alloc.shares.values()) <= alloc.total


def test_adaptive_refills_a_share_the_user_lowered() -> None:
    out = AdaptiveBudgetManager(user_ratios={"L1_recent": 0.0}).ratios_for("early")
    assert out["L1_recent"] == 0.0
    assert sum(out.values()) == pytest.approx(1.0)


def test_max_tokens_past_the_window_is_refused_naming_both_numbers() -> None:
    manager = BudgetManager(window=128_000)
    with pytest.raises(ConfigError) as info:
        manager.allocate(500_000)
    assert "500000" in str(info.value) and "128000" in str(info.value)
    assert manager.allocate(128_000).total == 128_000  # the whole window is still allowed
    assert BudgetManager().allocate(500_000).total == 500_000  # unknown window: no cap


def test_the_builder_caps_max_tokens_by_the_model_window() -> None:
    builder = ContextBuilder([UserInputSource()], options=BuildOptions(model="gpt-4"))
    with pytest.raises(ConfigError, match="context window of 8192"):
        builder.build_sync("hi", max_tokens=8193)
    assert builder.build_sync("hi", max_tokens=8192).tokens <= 8192


@pytest.mark.parametrize("huge", [MAX_TOKENS + 1, 10**400, 10**5000],
                         ids=["one-past", "400-digits", "5000-digits"])
def test_absurd_windows_and_budgets_are_config_errors(huge: int) -> None:
    with pytest.raises(ConfigError, match="window must be"):
        BudgetManager(window=huge)
    with pytest.raises(ConfigError, match="max_tokens must be"):
        BudgetManager().allocate(huge)
