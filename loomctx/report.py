"""The build report: every candidate item, in or out, why, its tokens and score.

Rendered as a terminal table (``table()``) or JSON (``to_dict()`` / ``to_json()``). Item rows are
materialised lazily: a build over 100k history messages stores compact tuples and only builds
row objects when asked.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

REASONS = {
    "pinned": "P0, always included",
    "required": "P1 (named skill / task state), included first",
    "selected": "fits its share or the leftover",
    "truncated": "cut to fit, marker added; original in result.originals",
    "summary": "summary of older dropped history",
    "budget": "did not fit the budget",
    "duplicate": "same content as an earlier candidate",
    "low_relevance": "relevance below min_relevance",
    "overflow": "removed after rendering to stay within the budget",
}


@dataclass(frozen=True)
class ItemReport:
    """One candidate's fate."""

    id: str
    source: str
    kind: str
    tier: int
    included: bool
    reason: str
    tokens: int | None
    score: float | None
    position: int | None
    summarized_in: str | None = None


@dataclass(frozen=True)
class SourceReport:
    """One source: its share, what it used, how it went."""

    name: str
    allocated: int
    used: int
    candidates: int
    included: int
    elapsed_ms: float
    error: str | None = None


@dataclass
class BuildReport:
    """Everything about one build."""

    format: str
    model: str
    counter: str
    exact: bool
    budget: int
    tokens: int
    prefix_tokens: int
    prefix_hash: str
    sources: list[SourceReport]
    timings_ms: dict[str, float]
    _rows: Sequence[tuple[Any, ...]] | Callable[[], Sequence[tuple[Any, ...]]] = field(
        repr=False, default=())
    _items: list[ItemReport] | None = field(default=None, repr=False)

    @property
    def items(self) -> list[ItemReport]:
        if self._items is None:
            rows = self._rows() if callable(self._rows) else self._rows
            self._items = [ItemReport(*row) for row in rows]
        return self._items

    def item(self, item_id: str) -> ItemReport:
        for row in self.items:
            if row.id == item_id:
                return row
        raise KeyError(item_id)

    @property
    def included_ids(self) -> list[str]:
        return [r.id for r in self.items if r.included]

    @property
    def failed_sources(self) -> list[SourceReport]:
        return [s for s in self.sources if s.error]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format, "model": self.model, "counter": self.counter,
            "exact": self.exact, "budget": self.budget, "tokens": self.tokens,
            "prefix_tokens": self.prefix_tokens, "prefix_hash": self.prefix_hash,
            "timings_ms": self.timings_ms,
            "sources": [asdict(s) for s in self.sources],
            "items": [asdict(r) for r in self.items],
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)

    def table(self, *, max_rows: int = 60) -> str:
        """A readable summary: totals, per-source shares, then items (included first)."""
        lines = [
            f"budget {self.budget} · used {self.tokens} ({self.counter}"
            f"{'' if self.exact else ', estimated'}) · format {self.format} · "
            f"stable prefix {self.prefix_tokens} tokens #{self.prefix_hash[:12]}",
            "timings " + " ".join(f"{k}={v:.1f}ms" for k, v in self.timings_ms.items()),
            "",
            f"{'source':<16}{'allocated':>10}{'used':>8}{'items':>12}  status",
        ]
        for s in self.sources:
            status = f"FAILED: {s.error}" if s.error else "ok"
            lines.append(f"{s.name:<16}{s.allocated:>10}{s.used:>8}"
                         f"{f'{s.included}/{s.candidates}':>12}  {status}")
        rows = sorted(self.items, key=lambda r: (not r.included,
                                                 r.position if r.position is not None else 0))
        counts = Counter(r.reason for r in self.items if not r.included)
        lines += ["", f"{'':2}{'id':<28}{'source':<16}{'tokens':>7}{'score':>7}  reason"]
        for r in rows[:max_rows]:
            mark = "+" if r.included else "-"
            score = f"{r.score:.2f}" if r.score is not None else ""
            tokens = "" if r.tokens is None else str(r.tokens)
            why = f"{r.reason} → in {r.summarized_in}" if r.summarized_in else r.reason
            lines.append(f"{mark} {r.id[:27]:<28}{r.source[:15]:<16}{tokens:>7}{score:>7}"
                         f"  {why}")
        if len(rows) > max_rows:
            lines.append(f"… {len(rows) - max_rows} more rows (use --report json for all)")
        if counts:
            lines.append("dropped: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
        return "\n".join(lines)


__all__ = ["REASONS", "BuildReport", "ItemReport", "SourceReport"]
