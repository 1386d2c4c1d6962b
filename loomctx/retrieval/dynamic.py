"""Per-turn dynamic context: retrieval re-run before every model call.

An agent loop builds a context before every model call. What the model needs changes inside one
task: a tool lists a table nobody asked about, a query fails on a column. So the retrieval query
is re-derived on every build from the task and the newest step of the conversation (the model's
last message with its tool calls, and the tool results and errors that answered it), and the
retrieved documents are assembled by priority under the source's own budget:

- constraints: CRITICAL (P0, always in);
- the top ``high`` documents: HIGH (P1);
- the other documents: MEDIUM (P2);
- rules: LOW (P3).

The items are ``state``: they sit after the history, in the volatile tail, so the cached prefix
survives a change of retrieved documents. Each keeps the document's id, so the build report
names what was retrieved. The static part of the task lives in
:class:`loomctx.retrieval.task.TaskContextSource`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from loomctx.errors import ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest
from loomctx.text.messages import message_text

DocKind = Literal["constraint", "document", "rule"]


@dataclass(frozen=True, kw_only=True)
class RetrievedDocument:
    """One document a :class:`ContextRetriever` found (a table schema, a rule...)."""

    id: str
    """Stable id (e.g. ``"schema:orders"``): the item id in the build report."""
    text: str
    """The document's text."""
    score: float = 0.0
    """Retrieval score (higher is better); constraints may leave it 0."""
    kind: DocKind = "document"
    """``constraint`` (CRITICAL), ``document`` (HIGH/MEDIUM by rank) or ``rule`` (LOW)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free-form data carried to the item (e.g. the table name)."""


@runtime_checkable
class ContextRetriever(Protocol):
    """Finds the documents a model call needs.

    Contract:
    - ``retrieve_for_query`` returns at most ``top_k`` documents of kind ``document`` or
      ``rule``, best first, plus any ``constraint`` documents that always apply; the same query
      gives the same documents in the same order. It may be a coroutine function or a plain
      function (the source awaits what is awaitable).
    - ``format_documents`` renders documents as the text the model reads; it is deterministic
      (the same documents give the same bytes), so unchanged documents cost no cache churn.
    """

    def retrieve_for_query(self, query: str, top_k: int,
                           ) -> Sequence[RetrievedDocument] | Awaitable[
                               Sequence[RetrievedDocument]]: ...

    def format_documents(self, documents: Sequence[RetrievedDocument]) -> str: ...


@dataclass(frozen=True, kw_only=True)
class DynamicOptions:
    """How the per-turn block is retrieved and assembled."""

    top_k: int = 8
    """Documents retrieved per build (constraints come on top)."""
    high: int = 3
    """How many of the best documents are HIGH (P1); the rest are MEDIUM (P2)."""
    share: float = 0.25
    """Budget share of the block (4,000 of a 16,000-token build: a quarter for what this step
    needs, the rest for the stable task and history). In turn builds the builder's
    ``volatile_share`` caps all per-turn content together: raise it to this share too."""
    max_tokens: int | None = None
    """Hard cap on the block in tokens, below the share (None: the share alone)."""
    step_chars: int = 1_000
    """Characters of each message of the newest step that go into the query."""

    def __post_init__(self) -> None:
        if self.top_k < 1 or self.high < 0:
            raise ConfigError(f"top_k must be >= 1 and high >= 0, got top_k={self.top_k!r}, "
                              f"high={self.high!r}")
        if not 0.0 < self.share <= 1.0:
            raise ConfigError(f"share must be in (0, 1], got {self.share!r}; 0.25 is the default")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1 or None, got {self.max_tokens!r}")
        if self.step_chars < 0:
            raise ConfigError(f"step_chars must be >= 0, got {self.step_chars!r}")


@dataclass(frozen=True)
class Assembly:
    """What one build of the dynamic block did: for tests, logs and the curious."""

    query: str
    """The retrieval query this build derived."""
    budget: int
    """Tokens the block could use."""
    tiers: Mapping[str, Tier]
    """Document id → the tier it was given, in block order."""
    kept: tuple[str, ...]
    """Ids handed to the builder (fit the block's budget)."""
    dropped: tuple[str, ...]
    """Ids left out because the block's budget was spent."""
    tokens: int
    """Tokens of the kept documents (as counted by the build's counter)."""


Messages = Callable[[], Sequence[Any]]


def _as_messages(history: Any) -> Messages | None:
    if history is None or callable(history):
        return history
    if hasattr(history, "items"):  # a HistorySource (e.g. ``session.memory.history``)
        return lambda: history.items
    raise ConfigError(f"history must be a callable returning messages or an object with "
                      f".items (e.g. session.memory.history), got {history!r:.80}")


def _role_text(m: Any) -> tuple[str, str]:
    """(role, searchable text) of a history item or an OpenAI-style message dict; the text
    holds the content and ``name(arguments)`` per tool call."""
    if isinstance(m, ContextItem):
        return m.role or "", m.content
    if isinstance(m, Mapping):
        return str(m.get("role", "")), message_text(m)
    raise ConfigError(f"a history message must be a ContextItem or a dict, got {m!r:.80}")


def newest_step(messages: Sequence[Any]) -> list[Any]:
    """What changed since the previous model call: the model's last message and the tool
    results after it. Empty when the conversation ends with a user message (a new task)."""
    if not messages or _role_text(messages[-1])[0] == "user":
        return []
    k = len(messages) - 1
    while k > 0 and _role_text(messages[k])[0] != "assistant":
        k -= 1
    return list(messages[k:])


def step_text(messages: Sequence[Any], limit: int) -> str:
    """The step as query text: the model's words and tool calls, then each tool result and
    error, every message cut to ``limit`` characters."""
    texts = (_role_text(m)[1][:limit] for m in messages)
    return "\n".join(t for t in texts if t.strip())


class DynamicContextSource(BaseSource):
    """The per-turn retrieved block, re-derived on every build.

    ``history`` gives the conversation the query is derived from: a callable returning
    messages, or an object with ``.items`` such as ``session.memory.history``. A Session is
    built with its sources, so the usual order is ``s = Session(sources=[dyn, ...])`` then
    ``dyn.attach(s.memory.history)``; a ``"history"`` entry in the build's request context,
    when given, is used instead.
    """

    def __init__(self, retriever: ContextRetriever, *, name: str = "dynamic_context",
                 options: DynamicOptions | None = None, history: Any = None) -> None:
        if not isinstance(retriever, ContextRetriever):
            raise ConfigError(f"retriever must have retrieve_for_query(query, top_k) and "
                              f"format_documents(docs), got {retriever!r:.80}")
        self.name = name
        self.retriever = retriever
        self.options = options or DynamicOptions()
        self.share: float | None = self.options.share
        """Budget ratio the builder gives this source."""
        self._history = _as_messages(history)
        self.last: Assembly | None = None
        """The last build's :class:`Assembly` (None before the first and after a failed one)."""

    def attach(self, history: Any) -> None:
        """Read the conversation from ``history`` (see the class docstring)."""
        self._history = _as_messages(history)

    def query_for(self, question: str, messages: Sequence[Any]) -> str:
        """The retrieval query: the task's question, then the newest step."""
        step = step_text(newest_step(messages), self.options.step_chars)
        return f"{question}\n{step}".strip() if step else question.strip()

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        self.last = None  # a failed collect leaves no stale assembly behind
        given = request.context.get("history")
        messages = given if given is not None else (self._history() if self._history else ())
        query = self.query_for(request.query, messages)
        if not query:
            self.last = Assembly(query="", budget=0, tiers={}, kept=(), dropped=(), tokens=0)
            return []
        found = self.retriever.retrieve_for_query(query, self.options.top_k)
        docs = list(await found if inspect.isawaitable(found) else found)
        return self._assemble(query, docs, request)

    def _assemble(self, query: str, docs: list[RetrievedDocument],
                  request: SourceRequest) -> list[ContextItem]:
        """Tier the documents, keep what fits the block's budget, constraints always."""
        opts = self.options
        budget = request.budget if opts.max_tokens is None else min(request.budget,
                                                                      opts.max_tokens)
        constraints = [d for d in docs if d.kind == "constraint"]
        documents = [d for d in docs if d.kind == "document"]
        rule_docs = [d for d in docs if d.kind == "rule"]
        ordered = [(d, Tier.P0) for d in constraints]
        ordered += [(d, Tier.P1 if i < opts.high else Tier.P2) for i, d in enumerate(documents)]
        ordered += [(d, Tier.P3) for d in rule_docs]
        top = max((d.score for d in docs), default=0.0) or 1.0
        texts = {d.id: self.retriever.format_documents([d]) for d, _ in ordered}
        spent, kept, dropped = 0, [], []
        for d, tier in sorted(ordered, key=lambda p: p[1]):  # spend by tier, then rank
            cost = request.counter.count(texts[d.id])
            if tier == Tier.P0 or spent + cost <= budget:
                spent += cost
                kept.append(d.id)
            else:
                dropped.append(d.id)
        weight = {Tier.P0: 1.0, Tier.P1: 1.0, Tier.P2: 0.6, Tier.P3: 0.2}
        items = [
            ContextItem(id=d.id, source=self.name, content=texts[d.id], kind="state",
                        tier=tier, priority=weight[tier], seq=pos,
                        scores={RAW_RELEVANCE: top if d.kind == "constraint" else d.score},
                        metadata={**d.metadata, "origin": "dynamic", "doc_kind": d.kind})
            for pos, (d, tier) in enumerate(ordered) if d.id in kept
        ]
        self.last = Assembly(query=query, budget=budget,
                             tiers={d.id: tier for d, tier in ordered},
                             kept=tuple(i.id for i in items), dropped=tuple(dropped),
                             tokens=spent)
        return items


__all__ = ["Assembly", "ContextRetriever", "DynamicContextSource", "DynamicOptions",
           "RetrievedDocument", "newest_step", "step_text"]
