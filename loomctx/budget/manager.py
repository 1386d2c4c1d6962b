"""Token budget: one exact total, split across sources by ratios with floors and ceilings.

The total is the window minus the output reserve (or an explicit ``max_tokens``). Each source gets
``ratio × total`` clamped to its floor and ceiling. Pinned (P0) content is charged to its own
source first; a share a source does not use flows, during packing, to the sources that still have
candidates (see :mod:`loomctx.select.packer`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from loomctx._jsonl import short
from loomctx.errors import ConfigError

# Default shares of the available budget, the design's starting split (docs/seed-differences.md).
# Keys are the built-in source names.
DEFAULT_RATIOS: Mapping[str, float] = {
    "system_prompt": 0.12,
    "user_input": 0.12,
    "tools": 0.15,
    "skills": 0.10,
    "L1_recent": 0.18,
    "L2_important": 0.12,
    "L4_semantic": 0.06,
    "RAG_knowledge": 0.10,
    "agent_output": 0.05,
}
DEFAULT_RESERVE = 0.10
MAX_TOKENS = 1_000_000_000
"""Largest window or max_tokens accepted (far past any model; keeps the arithmetic exact)."""

PHASES = ("early", "middle", "late")
PHASE_BOOST: Mapping[str, tuple[str, ...]] = {
    "early": ("RAG_knowledge", "L4_semantic"),
    "middle": ("L1_recent", "tools"),
    "late": ("L2_important", "agent_output"),
}
"""Which sources a phase favours (as the agent loop sees a task): early, the first calls,
gather the task's background (knowledge and recalled memory); middle, tool results coming in,
keep the recent exchange and the tool definitions; late, many steps in, keep what proved
important and what the agent already produced."""


@dataclass(frozen=True, kw_only=True)
class Limit:
    """Floor and ceiling of one source's share, in tokens."""

    floor: int = 0
    """Tokens the source is guaranteed when it has candidates."""
    ceiling: int | None = None
    """Tokens the source may never exceed (None: no cap)."""

    def __post_init__(self) -> None:
        if self.floor < 0:
            raise ConfigError(f"floor must be >= 0, got {self.floor!r}")
        if self.ceiling is not None and self.ceiling < self.floor:
            raise ConfigError(
                f"ceiling {self.ceiling!r} is below floor {self.floor!r}: raise the ceiling"
            )


@dataclass(frozen=True)
class Allocation:
    """The result of allocating: total available tokens and each source's share."""

    total: int
    """Tokens available for the rendered input context."""
    shares: Mapping[str, int]
    """Tokens allocated to each source (before unused shares flow)."""
    ceilings: Mapping[str, int | None] = field(default_factory=dict)
    """Hard caps per source, carried to the packer."""

    def share(self, source: str) -> int:
        return self.shares.get(source, 0)


def _check_ratios(ratios: Mapping[str, float]) -> None:
    for name, r in ratios.items():
        if not (isinstance(r, (int, float)) and 0 <= r <= 1 and math.isfinite(r)):
            raise ConfigError(f"ratio for {name!r} must be in [0, 1], got {r!r}")
    total = sum(ratios.values())
    if total > 1.0 + 1e-9:
        raise ConfigError(
            f"allocation ratios sum to {total:.3f} > 1: lower some of {dict(ratios)!r}"
        )


@dataclass(frozen=True, kw_only=True)
class BudgetManager:
    """Splits a window into per-source shares."""

    window: int | None = None
    """Model context window in tokens (None when unknown; then ``allocate`` needs
    ``max_tokens``). When known, a ``max_tokens`` above it is refused."""
    reserve: float = DEFAULT_RESERVE
    """Share of the window kept for the model's output, 0 <= reserve < 1."""
    ratios: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_RATIOS))
    """Share of the available budget per source name; may sum to less than 1."""
    limits: Mapping[str, Limit] = field(default_factory=dict)
    """Floors and ceilings per source name."""

    def __post_init__(self) -> None:
        if self.window is not None and (isinstance(self.window, bool)
                                        or not isinstance(self.window, int)
                                        or not 0 < self.window <= MAX_TOKENS):
            raise ConfigError(f"window must be a positive int <= {MAX_TOKENS}, got "
                              f"{short(self.window)}")
        if isinstance(self.reserve, bool) or not (
                isinstance(self.reserve, (int, float)) and 0 <= self.reserve < 1):
            raise ConfigError(f"reserve must be in [0, 1), got {self.reserve!r}")
        _check_ratios(self.ratios)

    def available(self, max_tokens: int | None = None) -> int:
        """Tokens for the input context: ``max_tokens`` or window × (1 − reserve).

        A ``max_tokens`` past the known window raises :class:`ConfigError`: a request that big
        would be refused by the provider, so it is refused here, naming both numbers.
        """
        if max_tokens is not None:
            if (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                    or not 0 < max_tokens <= MAX_TOKENS):
                raise ConfigError(f"max_tokens must be a positive int <= {MAX_TOKENS}, got "
                                  f"{short(max_tokens)}")
            if self.window is not None and max_tokens > self.window:
                raise ConfigError(
                    f"max_tokens {max_tokens} is larger than the model's context window of "
                    f"{self.window} tokens: pass max_tokens <= {self.window} (leaving room "
                    "for the reply), or build with the window and a reserve instead"
                )
            return max_tokens
        if self.window is None:
            raise ConfigError("no budget: pass max_tokens=N or set BudgetManager(window=N)")
        return int(self.window * (1 - self.reserve))

    def ratios_for(self, phase: str | None = None) -> Mapping[str, float]:
        """The ratios in force (the plain manager ignores the phase)."""
        return self.ratios

    def allocate(self, max_tokens: int | None = None, *, phase: str | None = None) -> Allocation:
        """Shares per source: ratio × available, clamped to floor and ceiling."""
        total = self.available(max_tokens)
        ratios = self.ratios_for(phase)
        shares: dict[str, int] = {}
        ceilings: dict[str, int | None] = {}
        for name in sorted(set(ratios) | set(self.limits)):
            limit = self.limits.get(name, Limit())
            share = int(ratios.get(name, 0.0) * total)
            share = max(share, limit.floor)
            if limit.ceiling is not None:
                share = min(share, limit.ceiling)
            shares[name] = share
            ceilings[name] = limit.ceiling
        floors = sum(lim.floor for lim in self.limits.values())
        if floors > total:
            raise ConfigError(
                f"source floors need {floors} tokens but only {total} are available: "
                "lower the floors or raise the budget"
            )
        return Allocation(total=total, shares=shares, ceilings=ceilings)


@dataclass(frozen=True, kw_only=True)
class AdaptiveBudgetManager(BudgetManager):
    """Shifts ratios by task phase: early → retrieval, middle → recent, late → important memory.

    Only ratios the user did not set explicitly move; ``user_ratios`` stay as given. The moved
    share comes proportionally out of the other non-user sources, so the sum is unchanged.
    """

    user_ratios: Mapping[str, float] = field(default_factory=dict)
    """Ratios the caller fixed; they override the defaults and never shift."""
    boost: float = 1.5
    """Multiplier applied to the favoured sources' ratios in a phase."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.boost < 1:
            raise ConfigError(f"boost must be >= 1, got {self.boost!r}")
        _check_ratios(self.user_ratios)

    def _merged(self) -> dict[str, float]:
        """User ratios as given; the others scaled to fill what the user left."""
        rest = {k: v for k, v in self.ratios.items() if k not in self.user_ratios}
        room = max(0.0, sum(self.ratios.values()) - sum(self.user_ratios.values()))
        rest_total = sum(rest.values())
        scale = room / rest_total if rest_total else 0.0
        return {**{k: v * scale for k, v in rest.items()}, **self.user_ratios}

    def ratios_for(self, phase: str | None = None) -> Mapping[str, float]:
        base = self._merged()
        if phase is None:
            return base
        if phase not in PHASE_BOOST:
            raise ConfigError(f"unknown phase {phase!r}: use one of {list(PHASES)!r}")
        movable = [k for k in base if k not in self.user_ratios]
        favoured = [k for k in PHASE_BOOST[phase] if k in movable]
        others = [k for k in movable if k not in favoured]
        gain = sum(base[k] * (self.boost - 1) for k in favoured)
        pool = sum(base[k] for k in others)
        if not favoured or pool <= 0:
            return base
        gain = min(gain, pool * 0.5)  # never take more than half of the others' share
        scale = (pool - gain) / pool
        fav_total = sum(base[k] for k in favoured)
        out = dict(base)
        for k in favoured:
            out[k] = base[k] + gain * (base[k] / fav_total)
        for k in others:
            out[k] = base[k] * scale
        return out


__all__ = [
    "DEFAULT_RATIOS",
    "DEFAULT_RESERVE",
    "MAX_TOKENS",
    "PHASES",
    "AdaptiveBudgetManager",
    "Allocation",
    "BudgetManager",
    "Limit",
]
