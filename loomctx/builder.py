"""The build: Budget → Gather → Select → Compress → Structure → Verify → Report.

:class:`ContextBuilder` holds the sources and options; each ``build`` (async) or ``build_sync``
call produces a :class:`BuildResult`: the rendered payload, its exact token count and the report.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from loomctx._sync import run_sync
from loomctx.budget.manager import BudgetManager
from loomctx.compress.summarize import ExtractiveSummarizer, Summarizer
from loomctx.compress.truncate import truncate_item
from loomctx.errors import BudgetError, ConfigError
from loomctx.items import ContextItem
from loomctx.render.chat import AnthropicRenderer, OpenAIRenderer
from loomctx.render.protocol import Layout, Rendered, Renderer
from loomctx.render.text import TemplateRenderer, TextRenderer
from loomctx.report import BuildReport, SourceReport
from loomctx.select.packer import Unit, make_units, pack
from loomctx.select.scoring import SelectOptions, mmr_order, recency, score
from loomctx.sources.protocol import ContextSource, SourceRequest
from loomctx.text.lexical import tokenize
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import ModelTokenizer, counter_for_model

Format = Literal["openai", "anthropic", "text", "minimal", "template"]
FORMATS = ("openai", "anthropic", "text", "minimal", "template")
MIN_BUDGET = 16
SUMMARY_SCAN = 8
COST_CACHE_MAX = 500_000


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    """How a builder renders and selects."""

    model: str = "gpt-4o"
    """Target model: decides the tokenizer and the context window."""
    format: Format | None = None
    """Output format; None picks the model's provider (openai / anthropic)."""
    fallback_encoding: str | None = None
    """Encoding to use when ``model`` is unknown (explicit opt-in, e.g. "cl100k_base")."""
    template: str | None = None
    """Template text for ``format="template"``."""
    text_order: Literal["cache", "gssc"] = "cache"
    """Section order of the text format."""
    output_instructions: str = ""
    """Text for the [Output] part (stable)."""
    source_timeout: float = 5.0
    """Seconds each source may take before it is reported as timed out."""
    select: SelectOptions = field(default_factory=SelectOptions)
    """Scoring, filtering and diversity options."""
    summarize_history: bool = True
    """Summarize dropped older history into the leftover budget."""
    min_fragment: int = 64
    """Smallest useful truncated fragment, in tokens."""

    def __post_init__(self) -> None:
        if self.format is not None and self.format not in FORMATS:
            raise ConfigError(f"format must be one of {list(FORMATS)!r}, got {self.format!r}")
        if self.format == "template" and not self.template:
            raise ConfigError("format='template' needs template='... {{task}} ...'")
        if self.source_timeout <= 0:
            raise ConfigError(f"source_timeout must be > 0, got {self.source_timeout!r}")
        if self.min_fragment < 1:
            raise ConfigError(f"min_fragment must be >= 1, got {self.min_fragment!r}")


@dataclass(frozen=True)
class BuildResult:
    """A built context: what to send, its exact size, and the report."""

    rendered: Rendered
    report: BuildReport
    originals: Mapping[str, ContextItem]
    """Full originals of items that were truncated or summarized, by id."""

    @property
    def tokens(self) -> int:
        return self.rendered.tokens

    @property
    def payload(self) -> dict[str, Any]:
        return self.rendered.payload

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.rendered.payload.get("messages", [])

    @property
    def text(self) -> str:
        return self.rendered.payload.get("text", "")

    def to_dict(self) -> dict[str, Any]:
        return {**self.rendered.payload, "tokens": self.tokens, "report": self.report.to_dict()}


def _renderer(tok: ModelTokenizer, options: BuildOptions) -> Renderer:
    fmt = options.format or ("anthropic" if tok.provider == "anthropic" else "openai")
    if fmt in ("openai", "anthropic"):
        chat = ChatCounter(tok.counter, fmt)
        return OpenAIRenderer(chat) if fmt == "openai" else AnthropicRenderer(chat)
    if fmt == "template":
        return TemplateRenderer(options.template or "", tok.counter)
    return TextRenderer(tok.counter, order=options.text_order, headers=fmt == "text")


class ContextBuilder:
    """Builds context windows from sources under one budget (the seeds' ContextOrchestrator)."""

    def __init__(
        self,
        sources: Sequence[ContextSource],
        *,
        options: BuildOptions | None = None,
        budget: BudgetManager | None = None,
        summarizer: Summarizer | None = None,
        tail_sources: Sequence[str] = ("L1_recent",),
    ) -> None:
        self.options = options or BuildOptions()
        names = [s.name for s in sources]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ConfigError(f"source names must be unique, got duplicates {dup!r}")
        self.sources = list(sources)
        self.tokenizer = counter_for_model(self.options.model,
                                           fallback=self.options.fallback_encoding)
        self.budget = budget or BudgetManager(window=self.tokenizer.context_window)
        self.summarizer = summarizer if summarizer is not None else ExtractiveSummarizer()
        self.tail_sources = frozenset(tail_sources)
        self.renderer = _renderer(self.tokenizer, self.options)
        self._costs: dict[int, tuple[ContextItem, int]] = {}

    # -- measure -------------------------------------------------------------------------
    def _cost(self, item: ContextItem) -> int:
        if item.kind != "message":
            item.tokens = self.renderer.cost(item)
            return item.tokens
        hit = self._costs.get(id(item))
        if hit is not None and hit[0] is item:
            item.tokens = hit[1]
            return hit[1]
        c = self.renderer.cost(item)
        item.tokens = c
        if len(self._costs) >= COST_CACHE_MAX:  # items evicted elsewhere stay referenced here
            self._costs.clear()
        self._costs[id(item)] = (item, c)
        return c

    # -- gather --------------------------------------------------------------------------
    async def _gather(self, requests: Mapping[str, SourceRequest]) -> dict[str, Any]:
        async def one(src: ContextSource) -> tuple[Sequence[ContextItem] | None, str | None,
                                                   float]:
            t = time.perf_counter()
            try:
                items = await asyncio.wait_for(src.collect(requests[src.name]),
                                               self.options.source_timeout)
                return list(items), None, (time.perf_counter() - t) * 1000
            except asyncio.TimeoutError:
                return None, f"timed out after {self.options.source_timeout}s", (
                    time.perf_counter() - t) * 1000
            except Exception as exc:  # a source must never fail the build: report it
                return None, f"{type(exc).__name__}: {exc}", (time.perf_counter() - t) * 1000

        results = await asyncio.gather(*(one(s) for s in self.sources))
        return {s.name: r for s, r in zip(self.sources, results, strict=True)}

    # -- build ---------------------------------------------------------------------------
    async def build(
        self, query: str = "", *, max_tokens: int | None = None, phase: str | None = None,
        now: float | None = None, context: Mapping[str, Any] | None = None,
    ) -> BuildResult:
        """Build one context window for ``query``; see the module docstring for the stages."""
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        if max_tokens is not None and (not isinstance(max_tokens, int) or
                                       max_tokens < MIN_BUDGET):
            raise ConfigError(f"max_tokens must be an int >= {MIN_BUDGET}, got {max_tokens!r}")
        alloc = self.budget.allocate(max_tokens, phase=phase)
        now = time.time() if now is None else now
        requests = {
            s.name: SourceRequest(query=query, now=now, counter=self.tokenizer.counter,
                                  budget=alloc.share(s.name), total=alloc.total,
                                  phase=phase,
                                  context=dict(context or {}))
            for s in self.sources
        }
        timings["budget"] = (time.perf_counter() - t0) * 1000

        t = time.perf_counter()
        gathered = await self._gather(requests)
        timings["gather"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        present = frozenset(
            sec for name, res in gathered.items() if res[0]
            for sec in ({"context"} if name in self.tail_sources
                        else {it.section for it in res[0]}))
        if self.options.summarize_history and self.tail_sources:
            present |= {"state"}
        overhead = self.renderer.overhead(present)
        available = alloc.total - overhead
        if available <= 0:
            raise BudgetError(
                f"the budget of {alloc.total} tokens does not cover the format's fixed framing "
                f"({overhead} tokens): raise max_tokens", required=overhead,
                available=alloc.total)
        reasons: dict[str, str] = {}
        unmeasured: dict[str, int] = {}
        ordered: dict[str, list[Unit]] = {}
        to_rank: dict[str, list[ContextItem]] = {}
        candidates: dict[str, list[ContextItem]] = {}
        seen: set[str] = set()
        for src in self.sources:
            items = gathered[src.name][0] or []
            candidates[src.name] = items
            if src.name in self.tail_sources:
                ordered[src.name], unmeasured[src.name] = self._tail_units(
                    items, available, query, now)
                continue
            kept = []
            for it in items:
                if self.options.select.dedup and it.kind != "message":
                    fp = it.fingerprint
                    if fp in seen:
                        reasons[it.id] = "duplicate"
                        continue
                    seen.add(fp)
                kept.append(it)
            to_rank[src.name] = kept
        score([it for its in to_rank.values() for it in its], query, now, self.options.select)
        for name, kept_items in to_rank.items():
            ordered[name] = self._rank_units(kept_items, query, reasons)
        timings["select"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        result = pack(
            ordered, allocation=alloc, available=available, tail_sources=self.tail_sources,
            # uncached cost: cut copies are new objects every build and must not pile up
            truncate=lambda it, n: truncate_item(it, n, self.tokenizer.counter,
                                                 self.renderer.cost),
            min_fragment=self.options.min_fragment,
        )
        reasons.update(result.reasons)
        originals: dict[str, ContextItem] = dict(result.truncated)
        included = list(result.included)
        summary, failure = await self._summarize(candidates, included, available - result.spent)
        if failure:
            reasons["summary:history"] = failure
        if summary is not None:
            included.append(summary)
            reasons[summary.id] = "summary"
        timings["compress"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        rendered, included = self._render_within(included, alloc.total, reasons)
        timings["render"] = (time.perf_counter() - t) * 1000
        timings["total"] = (time.perf_counter() - t0) * 1000

        report = self._report(alloc, gathered, candidates, included, reasons, rendered, timings,
                              summary, unmeasured)
        return BuildResult(rendered=rendered, report=report, originals=originals)

    def build_sync(self, query: str = "", **kwargs: Any) -> BuildResult:
        """The same as :meth:`build`, for synchronous callers (not inside a running loop)."""
        return run_sync(self.build(query, **kwargs), name="build")

    # -- helpers -------------------------------------------------------------------------
    def _tail_units(self, items: Sequence[ContextItem], available: int, query: str,
                    now: float) -> tuple[list[Unit], int]:
        """Newest-first units; stops measuring once they cannot fit any budget.

        Within its own share the tail is packed by position; beyond it, its units compete for
        the leftover with a GSSC composite (relevance to the query and recency) like any other
        candidate.
        """
        measured: list[ContextItem] = []
        spent = 0
        i = len(items) - 1
        while i >= 0 and spent <= available:
            it = items[i]
            spent += self._cost(it)
            measured.append(it)
            i -= 1
        if i >= 0 and items[i].group is not None:  # finish the group that straddles the cut
            while i >= 0 and items[i].group == measured[-1].group:
                measured.append(items[i])
                self._cost(items[i])
                i -= 1
        opts = self.options.select
        q_terms = set(tokenize(query, drop_stopwords=True))
        for it in measured:
            # Query-term overlap: cheap (tokenization is memoised) and bounded by the budget.
            r = (len(q_terms.intersection(tokenize(it.content, drop_stopwords=True)))
                 / len(q_terms)) if q_terms else 0.0
            rec = recency(it.timestamp, now, opts.recency_tau)
            it.scores["relevance"] = r
            it.scores["recency"] = rec
            it.scores["composite"] = (opts.relevance_weight * r + opts.recency_weight * rec) * (
                0.5 + 0.5 * it.priority)
        units = make_units(list(reversed(measured)), self._cost)
        units.reverse()
        if i >= 0:  # the rest cannot fit: one unmeasured unit stands for them in the queue
            rest = list(items[: i + 1])
            units.append(Unit(rest, items[0].source, available + 1, 0.0, int(items[0].tier)))
        return units, i + 1

    def _rank_units(self, items: list[ContextItem], query: str,
                    reasons: dict[str, str]) -> list[Unit]:
        opts = self.options.select
        kept = []
        for it in items:
            if (it.kind == "evidence" and query.strip() and not it.pinned
                    and it.scores.get("relevance", 0.0) < opts.min_relevance):
                reasons[it.id] = "low_relevance"
                it.tokens = it.tokens if it.tokens is not None else self._cost(it)
            else:
                kept.append(it)
        if kept and kept[0].kind == "evidence":
            terms = {it.id: frozenset(tokenize(it.content, drop_stopwords=True)) for it in kept}
            kept = mmr_order(kept, opts.mmr_lambda, terms)
        else:
            kept.sort(key=lambda it: (-it.scores.get("composite", it.priority), it.seq))
        return make_units(kept, self._cost)

    async def _summarize(self, candidates: Mapping[str, list[ContextItem]],
                         included: Sequence[ContextItem], room: int,
                         ) -> tuple[ContextItem | None, str]:
        """Summarize the dropped history just before the kept tail into the leftover room.

        Reads at most ``SUMMARY_SCAN`` × room tokens of the newest dropped messages: what is
        older stays archived (and retrievable by id), not summarized on every build.
        """
        if not self.options.summarize_history or room < self.options.min_fragment:
            return None, ""
        kept = {it.id for it in included}
        dropped: list[ContextItem] = []
        for name in self.tail_sources:
            scanned = 0
            for it in reversed(candidates.get(name, [])):
                if it.id in kept:
                    continue
                dropped.append(it)
                scanned += len(it.content) // 4 + 1
                if scanned > SUMMARY_SCAN * room:
                    break
        if not dropped:
            return None, ""
        dropped.reverse()
        head = f"Summary of {len(dropped)} earlier messages (not shown in full):\n"
        overhead = self.renderer.cost(ContextItem(id="summary:history", source="summary",
                                                  content=head, kind="state"))
        try:
            text = await self.summarizer.summarize(dropped, room - overhead - 2,
                                                   self.tokenizer.counter)
        except Exception as exc:  # a failed summary never replaces content
            return None, f"summary failed: {type(exc).__name__}: {exc}"
        if not text.strip():
            return None, ""
        item = ContextItem(id="summary:history", source="summary", content=head + text,
                           kind="state", metadata={"summarizes": [it.id for it in dropped]})
        if self._cost(item) > room:
            return None, ""
        return item, ""

    def _layout(self, included: Sequence[ContextItem]) -> Layout:
        lay = Layout(output=self.options.output_instructions)
        for it in sorted(included, key=lambda i: (i.kind != "system", i.seq)):
            if it.kind in ("system", "skill"):
                lay.system.append(it)
            elif it.kind == "tool":
                lay.tools.append(it)
            elif it.kind == "message":
                lay.history.append(it)
            elif it.kind == "state":
                lay.state.append(it)
            elif it.kind == "input":
                lay.input.append(it)
            else:
                lay.evidence.append(it)
        lay.tools.sort(key=lambda i: i.seq)
        lay.history.sort(key=lambda i: i.seq)
        # Retrieved evidence: best first; custom components keep their insertion order.
        lay.evidence.sort(key=lambda i: (i.kind == "custom", 0.0 if i.kind == "custom"
                                         else -i.scores.get("composite", 0.0), i.seq))
        return lay

    def _render_within(self, included: list[ContextItem], total: int,
                       reasons: dict[str, str]) -> tuple[Rendered, list[ContextItem]]:
        """Render; while over budget, remove the weakest removable unit (verify step)."""
        included = list(included)
        while True:
            rendered = self.renderer.render(self._layout(included))
            if rendered.tokens <= total:
                return rendered, included
            victim = self._weakest(included)
            if victim is None:
                raise BudgetError(
                    f"rendered context is {rendered.tokens} tokens > budget {total} with only "
                    "pinned items left: raise max_tokens", required=rendered.tokens,
                    available=total)
            gone = {it.id for it in victim}
            included = [it for it in included if it.id not in gone]
            reasons.update(dict.fromkeys(gone, "overflow"))

    def _weakest(self, included: Sequence[ContextItem]) -> list[ContextItem] | None:
        movable = [it for it in included if not it.pinned]
        if not movable:
            return None
        history = sorted((it for it in movable if it.kind == "message"), key=lambda i: i.seq)
        pool = [it for it in movable if it.kind != "message"]
        if history:
            pool.append(history[0])  # only the oldest message may go: the tail stays whole
        victim = min(pool, key=lambda it: (it.scores.get("composite", it.priority), -it.seq))
        if victim.group is not None:
            return [it for it in movable if it.group == victim.group
                    and it.source == victim.source]
        return [victim]

    def _report(self, alloc: Any, gathered: Mapping[str, Any],
                candidates: Mapping[str, list[ContextItem]], included: Sequence[ContextItem],
                reasons: Mapping[str, str], rendered: Rendered, timings: dict[str, float],
                summary: ContextItem | None, unmeasured: Mapping[str, int]) -> BuildReport:
        """Per-source totals now; item rows on first access (a 100k history costs nothing
        until someone reads them). Mutable per-build values are snapshotted here."""
        position = {it.id: n for n, it in enumerate(self._ordered_for_report(included))}
        kept = {it.id: it for it in included}
        used: dict[str, int] = {}
        counts: dict[str, int] = {}
        for it in included:
            used[it.source] = used.get(it.source, 0) + (it.tokens or 0)
            counts[it.source] = counts.get(it.source, 0) + 1
        lists = {name: list(items) for name, items in candidates.items()}
        snap = {id(it): (it.tokens, it.scores.get("composite"))
                for name, items in lists.items()
                for it in items[unmeasured.get(name, 0):]}
        summarized = set(summary.metadata["summarizes"]) if summary is not None else set()
        failed = reasons.get("summary:history", "")
        reasons = dict(reasons)

        def rows() -> list[tuple[Any, ...]]:
            out: list[tuple[Any, ...]] = []
            for name, items in lists.items():
                skip = unmeasured.get(name, 0)
                for k, it in enumerate(items):
                    summ = "summary:history" if it.id in summarized else None
                    if k < skip:  # the oldest history: never measured, could not fit
                        out.append((it.id, it.source, it.kind, int(it.tier), False, "budget",
                                    None, None, None, summ))
                        continue
                    live = kept.get(it.id)
                    inc = live is not None and live.source == it.source
                    tokens, sc = ((live.tokens, live.scores.get("composite")) if inc and live
                                  else snap.get(id(it), (None, None)))
                    reason = reasons.get(it.id, "budget")
                    if not inc and live is not None:
                        reason = "duplicate"  # the same id is in the context via another source
                    out.append((it.id, it.source, it.kind, int(it.tier), inc, reason, tokens, sc,
                                position.get(it.id) if inc else None, summ))
            if summary is not None:
                out.append((summary.id, summary.source, summary.kind, int(summary.tier), True,
                            "summary", summary.tokens, None, position.get(summary.id), None))
            elif failed.startswith("summary failed"):  # say so, never silently
                out.append(("summary:history", "summary", "state", 3, False, failed, None, None,
                            None, None))
            return out

        sources = [
            SourceReport(name=s.name, allocated=alloc.share(s.name), used=used.get(s.name, 0),
                         candidates=len(candidates.get(s.name, [])),
                         included=counts.get(s.name, 0), elapsed_ms=gathered[s.name][2],
                         error=gathered[s.name][1])
            for s in self.sources
        ]
        return BuildReport(
            format=rendered.format, model=self.tokenizer.model, counter=self.tokenizer.counter.name,
            exact=self.tokenizer.counter.exact, budget=alloc.total, tokens=rendered.tokens,
            prefix_tokens=rendered.prefix_tokens, prefix_hash=rendered.prefix_hash,
            sources=sources, timings_ms={k: round(v, 3) for k, v in timings.items()},
            _rows=rows,
        )

    def _ordered_for_report(self, included: Sequence[ContextItem]) -> list[ContextItem]:
        lay = self._layout(included)
        return [*lay.tools, *lay.system, *lay.history, *lay.state, *lay.evidence, *lay.input]




__all__ = ["FORMATS", "BuildOptions", "BuildResult", "ContextBuilder"]
