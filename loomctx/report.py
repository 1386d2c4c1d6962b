"""The build report: every candidate item, in or out, why, its tokens and score.

Rendered as a terminal table (``table()``) or JSON (``to_dict()`` / ``to_json()``). Item rows are
materialised lazily: a build over 100k history messages stores compact tuples and only builds
row objects when asked.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from loomctx.render.layout import in_order

if TYPE_CHECKING:
    from loomctx.buildstate import BuildState
    from loomctx.items import ContextItem
    from loomctx.render.protocol import Layout, Rendered
    from loomctx.sources.protocol import ContextSource
    from loomctx.tokens.registry import ModelTokenizer

REASONS = {
    "pinned": "P0, always included",
    "required": "P1 (named skill / task state), included first",
    "selected": "fits its share or the leftover",
    "truncated": "cut to fit, marker added; original in result.originals",
    "summary": "summary of older dropped history",
    "budget": "did not fit the budget",
    "duplicate": "same content as an earlier candidate",
    "low_relevance": "relevance below min_relevance",
    "below_min_score": "recalled memory with a similarity to the query below "
                       "MemoryOptions.min_score (the seed's L4 min_score)",
    "below_min_relevance": "knowledge passage below its source's min_relevance (BM25 share "
                           "of the query's best; the seed's RAG min_relevance)",
    "overflow": "removed after rendering to stay within the budget",
    "section_cut": "in a section that text_overflow='sections' halved or deleted (the seed's "
                   "order, marked); still included when part of it is shown",
    "window": "in the append-only history window of a turn build",
    "recalled": "in the context inside a recall note: evidence an earlier turn recalled, kept "
                "in place in the history window",
    "unreferred": "the session's own memory, for a turn whose message refers to nothing said "
                  "before (a short statement about numbers of its own: text/need.py "
                  "refers_back)",
    "callable": "the session's own tool output, left out of a turn's evidence while tools are "
                "at work: the agent calls the tool again",
    "compacted": "older than the history window's compaction point; summarized and stored",
    "interrupted_call": "synthetic result for a tool call interrupted before it returned",
    "pending_tool_calls": "the agent is still waiting for these tool calls' results",
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


_ITEM_FIELDS = tuple(f.name for f in fields(ItemReport))
_ITEM_DEFAULTS = tuple(f.default for f in fields(ItemReport))
_SOURCE_FIELDS = tuple(f.name for f in fields(SourceReport))


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
    reused_prefix_tokens: int = 0
    """Tokens at the start of this request that repeat the previous build's request (what a
    provider's prompt cache can reuse); 0 for a builder's first build."""
    reused_prefix_parts: int = 0
    """The same prefix in the request's own parts (characters of a text format; the tools
    block, the system field and whole messages of a chat format, see
    :func:`loomctx.render.verify.reused_parts`): what a report page marks as cached."""
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
        """The report as plain values (what ``dataclasses.asdict`` would give): field by
        field, from the rows when the items were never made. ``asdict`` copied each value of
        each row recursively; a proxied request writes its report twice (its build record and
        its event), and that was the largest part of the request's Python time."""
        if self._items is None:
            rows = self._rows() if callable(self._rows) else self._rows
            self._rows = rows  # made once: :attr:`items` reads them too
            items = [dict(zip(_ITEM_FIELDS, row if len(row) == len(_ITEM_FIELDS) else
                              (*row, *_ITEM_DEFAULTS[len(row):]), strict=True))
                     for row in rows]
        else:
            items = [{f: getattr(r, f) for f in _ITEM_FIELDS} for r in self._items]
        return {
            "format": self.format, "model": self.model, "counter": self.counter,
            "exact": self.exact, "budget": self.budget, "tokens": self.tokens,
            "prefix_tokens": self.prefix_tokens, "prefix_hash": self.prefix_hash,
            "reused_prefix_tokens": self.reused_prefix_tokens,
            "reused_prefix_parts": self.reused_prefix_parts,
            "timings_ms": self.timings_ms,
            "sources": [{f: getattr(x, f) for f in _SOURCE_FIELDS} for x in self.sources],
            "items": items,
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)

    def table(self, *, max_rows: int = 60) -> str:
        """A readable summary: totals, per-source shares, then items (included first)."""
        lines = [
            f"budget {self.budget} · used {self.tokens} ({self.counter}"
            f"{'' if self.exact else ', estimated'}) · format {self.format} · "
            f"stable prefix {self.prefix_tokens} tokens #{self.prefix_hash[:12]} · "
            f"repeats previous {self.reused_prefix_tokens}",
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


def build_report(st: BuildState, sources: Sequence[ContextSource], rendered: Rendered,
                 tokenizer: ModelTokenizer, reused: int,
                 layout: Callable[[Sequence[ContextItem]], Layout], *,
                 reused_parts: int = 0) -> BuildReport:
    """The report of one build. Per-source totals now; item rows on first access (a 100k
    history costs nothing until someone reads them)."""
    position = {id(it): n for n, it in enumerate(in_order(layout(st.included)))}
    kept = {(it.source, it.id): it for it in st.included}
    views = dict(st.views)
    used: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for it in st.included:
        used[it.source] += it.tokens or 0
        counts[it.source] += 1
    lists = dict(st.candidates)  # a build replaces these lists, never changes them
    summary = st.summary
    summarized = set(summary.metadata["summarizes"]) if summary is not None else set()
    reasons = dict(st.reasons)
    failed = reasons.get("summary:history", "")
    ids_in = {it.id for it in st.included}
    noted = {member: note for member, note in st.noted.items() if note.id in ids_in}
    start = dict(st.window_start)
    unmeasured = dict(st.unmeasured)

    def rows() -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for name, items in lists.items():
            skip = unmeasured.get(name, 0)
            first = start.get(name, 0)
            for k, it in enumerate(items):
                summ = "summary:history" if it.id in summarized else None
                live = kept.get((name, it.id))
                view = live or views.get((name, it.id))
                reason = reasons.get(f"{name}\0{it.id}") or reasons.get(it.id, "budget")
                note = noted.get(it.id) if live is None and reason == "recalled" else None
                if note is not None:  # shown inside an earlier turn's recall note
                    out.append((it.id, name, it.kind, int(it.tier), True, reason,
                                view.tokens if view is not None else None,
                                view.scores.get("composite") if view is not None else None,
                                position.get(id(kept.get((note.source, note.id)))), summ))
                    continue
                if live is None and k < first and reason != "pending_tool_calls":
                    reason = "compacted"
                elif live is None and k < skip:
                    reason = "budget"  # the oldest history: never measured, could not fit
                elif live is None and it.id in ids_in:
                    reason = "duplicate"  # the same id is in the context via another source
                out.append((it.id, name, it.kind, int(it.tier), live is not None, reason,
                            view.tokens if view is not None else None,
                            view.scores.get("composite") if view is not None else None,
                            position.get(id(live)) if live is not None else None, summ))
        if summary is not None:
            out.append((summary.id, summary.source, summary.kind, int(summary.tier), True,
                        "summary", summary.tokens, None, position.get(id(summary)), None))
        elif failed.startswith("summary failed"):  # say so, never silently
            out.append(("summary:history", "summary", "state", 3, False, failed, None, None,
                        None, None))
        return out

    return BuildReport(
        format=rendered.format, model=tokenizer.model, counter=tokenizer.counter.name,
        exact=tokenizer.counter.exact, budget=st.allocation.total, tokens=rendered.tokens,
        prefix_tokens=rendered.prefix_tokens, prefix_hash=rendered.prefix_hash,
        sources=[SourceReport(name=s.name, allocated=st.allocation.share(s.name),
                              used=used.get(s.name, 0),
                              candidates=len(st.candidates.get(s.name, [])),
                              included=counts.get(s.name, 0),
                              elapsed_ms=st.gathered[s.name].elapsed_ms,
                              error=st.gathered[s.name].error) for s in sources],
        timings_ms={k: round(v, 3) for k, v in st.timings.items()},
        reused_prefix_tokens=reused, reused_prefix_parts=reused_parts, _rows=rows,
    )


__all__ = ["REASONS", "BuildReport", "ItemReport", "SourceReport", "build_report"]
