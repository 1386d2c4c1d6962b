"""Memory sources for the builder: L2 important memories and unified retrieval (L4 + knowledge).

Unified retrieval (the passive channel: run before every LLM call, unasked): rewrite the query from
the recent turns, recall lexically and densely from the store and from each knowledge base in
parallel (plus the memories of a period the question names, the answers to matching questions
and the questions matching answers replied to, and a search with the names the best match
adds), rerank everything with one :class:`UnifiedReranker`, and hand the builder ranked evidence
items that keep the ids they were stored with.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, get_args

import numpy as np

from loomctx._blas import limited
from loomctx.errors import ConfigError, SourceError, StoreError
from loomctx.items import RAW_RELEVANCE, ContextItem, Tier
from loomctx.memory.tiers import TieredMemory
from loomctx.retrieval.reranker import Candidate, UnifiedReranker
from loomctx.retrieval.rewriter import QueryRewriter
from loomctx.retrieval.similar import Similarities
from loomctx.retrieval.timecues import time_window
from loomctx.sources.floors import SIMILARITY, mark_memory
from loomctx.sources.knowledge import KnowledgeSource
from loomctx.sources.protocol import BaseSource, SourceRequest
from loomctx.stores.protocol import Hit, Level, MemoryRecord, Scope
from loomctx.text.decoration import index_text
from loomctx.text.labels import without_terms
from loomctx.text.lexical import tokenize
from loomctx.tokens.protocol import TokenCounter

MAX_RECALL = 256
TURN_SHARE = 0.05
"""The most of a turn's budget L2's standing memories take, however many there are."""
STANDING = re.compile(
    r"(?:^|[.!?]\s+)(?:please\s+)?(?:remember|note)(?:\s+that\b|\s*:)|\bdon'?t forget\b"
    r"|\bkeep in mind\b|\bfrom now on\b|\bfor the record\b|记住|别忘了|以后都", re.IGNORECASE)
"""A user's message that asks to be kept for later: "Please remember: ...", "Note that ...",
"From now on ...", "For the record ..." (not "Remember when ...": a chat recalls, it does not
instruct; decisions and preferences are found by retrieval when a message is about them)."""
STANDING_KEY = "standing"
"""Metadata key of what the user asked to be kept, shown in a turn whatever it asks: not found
by the message, so it says nothing about what the message needs from outside the window."""
_ORIGIN = {level: f"memory:{level}" for level in get_args(Level)}  # one string per tier
PERIOD_RANKED = 1024
"""The most memories a period a question names may hold and still be ranked on its own
(:meth:`UnifiedRetrievalSource._dated`): their vectors may have to be embedded again (a reopened
session keeps none in memory), so a larger period is read from the session-wide lists instead."""


# A capitalised word not right after the end of a sentence (a name, a title, a place).
_NAME = re.compile(r"(?<![.!?] )\b[A-Z][A-Za-z'-]+")


def _asks(text: str) -> bool:
    """Whether a message asks something (an ASCII or a full-width question mark)."""
    return "?" in text or "\uff1f" in text


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark a worker's outcome as seen (a recall that failed elsewhere drops it)."""
    if not future.cancelled():
        future.exception()


def fused_best(lexical: list[Hit], dense: list[Hit], want: int,
               reranker: UnifiedReranker) -> list[str]:
    """The ``want`` record ids with the most fusion credit from their first ranks in the two
    lists (``lexical``, ``dense``), most first, ties by id.

    Only the heads of the lists are scored: an id first seen at rank ``depth`` or deeper in
    both has at most ``Σ weight / (rrf_k + depth)`` over the lists longer than ``depth`` (list
    weights are never negative), so once the ``want``-th best credit of the heads is above
    that, nothing deeper can reach it. The head doubles until it is, or is the whole lists. One
    list alone (the dense one not there yet) mostly stops at the first head: its credit falls
    with rank.
    """
    ids = {"lexical": [h.record.id for h in lexical], "dense": [h.record.id for h in dense]}
    # first ranks, in C: a later (deeper) duplicate is overwritten by the earlier one
    first = {kind: dict(zip(reversed(v), range(len(v) - 1, -1, -1), strict=True))
             for kind, v in ids.items()}
    weights, k = reranker.weights.list_weights, reranker.weights.rrf_k
    longest = max(len(v) for v in ids.values())
    credit: dict[str, float] = {}
    depth = 32
    while True:
        for kind in ids:
            for i in ids[kind][:depth]:
                if i not in credit:  # the same ranks, in the same order, as rerank's
                    credit[i] = reranker.fusion_credit(
                        {name: rank[i] for name, rank in first.items() if i in rank})
        best = sorted(credit, key=lambda i: (-credit[i], i))[:want]
        if depth >= longest:
            return best
        deeper = sum(weights.get(kind, 1.0) / (k + depth) for kind, v in ids.items()
                     if len(v) > depth)
        if len(best) == want and credit[best[-1]] > deeper:
            return best
        depth *= 2


class L2ImportantSource(BaseSource):
    """The session's L2 (important) memories, by importance, for turn builds and builds without
    a question.

    A turn is the agent loop: what the user asked to be kept (:data:`STANDING`) must reach
    every later turn, not only the turns whose words happen to match it (seed 001 gives L2 its
    own share for this; here at most :data:`TURN_SHARE`). Those the window still shows are
    dropped as shown, so they cost room only once they are out of view."""

    def __init__(self, memory: TieredMemory, *, name: str = "L2_important") -> None:
        self.name = name
        self.memory = memory

    eager = True  # waits on threads only

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        ids = self.memory.l2_ids
        if not ids:
            return []
        if request.query.strip() and not request.context.get("turn"):
            # With a question, unified retrieval (which searches L2 as well as L4) ranks every
            # memory on one scale; a second, L2-only ranking would crowd it out.
            return []
        records = [self.memory.records[i] for i in ids if i in self.memory.records]
        turn = bool(request.query.strip())
        if turn:  # a turn: the most important first, newest first among equals
            records = self._turn_share(records, request)
        # In a turn they are ranked by importance, whatever the message says: the importance is
        # their relevance (a question build has no turn and goes through unified retrieval).
        return [
            ContextItem(id=r.id, source=self.name, content=r.content, kind="evidence",
                        role=r.role, tier=Tier.P2, priority=r.importance,
                        timestamp=r.timestamp, seq=r.seq,
                        scores={RAW_RELEVANCE: r.importance} if turn else {},
                        metadata={"origin": "memory:L2", "level": r.level,
                                  **({STANDING_KEY: True} if turn else {})})
            for r in records
        ]


    def _turn_share(self, records: list[MemoryRecord], request: SourceRequest,
                     ) -> list[MemoryRecord]:
        """What the user asked to be kept (:data:`STANDING`), most important first, within
        ``TURN_SHARE`` of the budget (and the source's own share). Not all of L2: in a long chat
        most messages name a date or a number and reach it, and all of them, ranked as evidence,
        took the room of what the message asks for (LongMemEval turn recall 0.917 -> 0.208 on
        six development questions; the rest of L2 is found by retrieval when it is relevant)."""
        room = min(request.budget, int(TURN_SHARE * request.total))
        out: list[MemoryRecord] = []
        standing = [r for r in records if r.role == "user" and STANDING.search(r.content)]
        for r in sorted(standing, key=lambda r: (-r.importance, -r.seq, r.id)):
            cost = self.memory.tokens(r) if request.counter is self.memory.counter \
                else request.counter.count(r.content)
            if cost <= room:
                out.append(r)
                room -= cost
        return out


class UnifiedRetrievalSource(BaseSource):
    """Hybrid recall (lexical + dense) from memory and knowledge, one reranker.

    ``scope="session"`` recalls this session's memories; ``"global"`` every session's of the
    session's tenant (never another tenant's).
    """

    fresh = True  # every collect makes its items: the builder scores them without a copy

    def __init__(
        self, memory: TieredMemory, knowledge: Sequence[KnowledgeSource] = (), *,
        name: str = "L4_semantic", recall_limit: int = 20, rewriter: QueryRewriter | None = None,
        reranker: UnifiedReranker | None = None, scope: str = "session",
        time_cues: bool = True, adjacent: int = 16, bridge_terms: int = 8,
        context: float = 0.2, unnamed_query: bool = True, own_words: int | None = None,
        follow_up_terms: int | None = None,
    ) -> None:
        if recall_limit < 1:
            raise ConfigError(f"recall_limit must be >= 1, got {recall_limit!r}")
        for option, value in (("adjacent", adjacent), ("bridge_terms", bridge_terms)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{option} must be an int >= 0, got {value!r}")
        if not (isinstance(context, int | float) and not isinstance(context, bool)
                and math.isfinite(context) and context >= 0):
            raise ConfigError(f"context must be a finite number >= 0, got {context!r}")
        if scope not in ("session", "global"):
            raise ConfigError(f"scope must be 'session' or 'global', got {scope!r}")
        for option, limit in (("own_words", own_words), ("follow_up_terms", follow_up_terms)):
            if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                                      or limit < 1):
                raise ConfigError(f"{option} must be an int >= 1 or None, got {limit!r}")
        self.name = name
        self.memory = memory
        self.knowledge = list(knowledge)
        self.recall_limit = recall_limit
        self.rewriter = rewriter or QueryRewriter()
        self.reranker = reranker or UnifiedReranker()
        self.scope = scope
        self.time_cues = time_cues
        """Recall what was said when the question names a time (session scope only)."""
        self.adjacent = adjacent
        """How many of the best lexical and dense matches bring their conversation neighbour
        across a question and its answer (the reply to a matching question, the question a
        matching message answers); 0 turns this off. Session scope only."""
        self.bridge_terms = bridge_terms
        """How many names from the best match that the question does not name go into one
        more lexical search (the bridge of a two-hop question); 0 turns it off. Session scope
        only."""
        self.context = float(context)
        """Weight of a memory's exchange (the messages right before and after it that another
        role wrote: what it replied to and the reply, :meth:`TieredMemory.adjacent`) in its
        similarity to the question: the vector signal is ``(own + context · their mean) /
        (1 + context)``, so a short reply ("Tomorrow's gonna be an awesome night") is scored
        with what it answers. Documents added by one role have no exchange and keep their own
        similarity. 0 turns this off. Session scope only."""
        self.unnamed_query = unnamed_query
        """Embed the question without the names of the session's speakers
        (:meth:`TieredMemory.speakers`): "What are Melanie's hobbies?" is matched by meaning
        as "What are hobbies?", since every line of Melanie's carries her name as its label and
        the reranker's ``named`` bonus already prefers them. The lexical lists keep the name."""
        self.own_words = own_words
        """Tokens from which a message is judged on its own words alone: it neither inherits its
        neighbour's credit (``adjacent``) nor has its similarity blended with its exchange
        (``context``). Both levers exist for short turns ("Tomorrow's gonna be an awesome
        night"), whose few words cannot match a question; a long message (an assistant's
        800-token answer) is found by its own words when it holds the answer, and when it
        does not, the inherited credit ranked it above the short message that did and its
        length then took the room of several such messages. None (the default): every
        message, whatever its length, inherits and blends. A cut (96) helps conversations of
        long assistant answers (LongMemEval) and costs a little on chat and passage sets
        (LoCoMo, HotpotQA), so it is an option, not the default (benchmarks/README.md,
        evidence recall)."""
        self.follow_up_terms = follow_up_terms
        """The most content terms a question may have and still be read as a follow-up, the
        only kind the rewriter expands with the recent turns ("and the second one?" needs
        them). A question that names its own subject ("What type of car am I working on?")
        is searched as asked: after a long history the last turns are about something else,
        and their words, searched as one more list, put their topic's memories in the place
        of the question's. None (the default): every question is expanded. A limit (2) helps
        long chats but hurts where the latest text is the question's own material (HotpotQA's
        pools end with its passages), so it is opt-in (``benchmarks/HISTORY.md``)."""

    eager = True  # waits on threads only

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        if not request.query.strip():
            return []
        if (request.context.get("history_in_view") or request.context.get("own_past") is False) \
                and self.scope == "session" and not self.knowledge:
            # the turn shows the whole session (its recall would find only that), or its
            # message refers to nothing said before
            return []
        query = request.query
        expanded = self.rewriter.rewrite(query, self.memory.recent_texts(self.rewriter.last_n)) \
            if self._follow_up(query) else query
        store = self.memory.store
        tenant_wide = Scope(tenant=self.memory.scope.tenant)
        where = self.memory.scope if self.scope == "session" else tenant_wide
        # Recall enough to fill the whole build if retrieval wins the leftover (~16 tokens a
        # memory at least), never fewer than recall_limit.
        limit = max(self.recall_limit, min(MAX_RECALL, request.total // 16))
        # The question's embedding is the slowest step of recall: its Python work (cache look-up,
        # tokens) is done here, then its model passes and the dense search that needs them run
        # on one worker thread (one hand-off, not two) while the lexical lists and the knowledge
        # bases are searched. Done on the worker, that Python work would take turns at the
        # interpreter lock with the lexical lists.
        embedded = self.memory.query_vector_later(
            without_terms(query, self.memory.speakers()) if self.unnamed_query else query)

        embedding: concurrent.futures.Future[np.ndarray] = concurrent.futures.Future()

        def dense_search() -> tuple[np.ndarray, list[Hit]]:
            try:
                vector = embedded()
            except BaseException as exc:
                embedding.set_exception(exc)
                raise
            embedding.set_result(vector)  # the main thread works on the lexical lists with it
            return vector, store.search_vector(vector, limit=limit, scope=where)

        loop = asyncio.get_running_loop()
        dense_recall = loop.run_in_executor(None, contextvars.copy_context().run, dense_search)
        # The question itself drives recall; the rewritten query (recent-turn terms appended)
        # is one more lexical list, so a follow-up finds its topic without the expansion
        # drowning a self-contained question.
        texts = (query,) if expanded == query else (query, expanded)

        async def lexical_recall() -> list[list[Hit]]:
            if self.scope == "session":  # this session's in-process index: no thread needed
                return [self.memory.search_lexical(text, limit) for text in texts]
            return list(await asyncio.gather(*(
                asyncio.to_thread(store.search_lexical, text, limit=limit, scope=where)
                for text in texts)))

        # One failing knowledge base costs its own results, never memory recall or the others;
        # each failure is recorded on this build's request (``request.failed``) for the report.
        knowledge_recall = asyncio.gather(*(k.collect(request) for k in self.knowledge),
                                          return_exceptions=True)
        cands: dict[str, Candidate] = {}
        counter, memory = request.counter, self.memory
        mine = counter is memory.counter  # this session's records: their counts are kept
        try:
            lexical_lists, kb = await asyncio.gather(lexical_recall(), knowledge_recall)
            # The lexical list's candidates are made in the wait for the dense list: they come
            # first in the candidates' order, so the order is the one made after it would be.
            self._add_hits(cands, "lexical", lexical_lists[0])
            self._count(cands.values(), counter, mine)
            similar, guess, early = None, None, []
            if self.scope == "session":  # the lexical lists' share of the work, in the wait
                similar = Similarities(self.memory, await asyncio.wrap_future(embedding),
                                       context=self.context,
                                       short=None if self.own_words is None else self._short)
                similar.add(h.record for hits in lexical_lists for h in hits)
                for c in cands.values():
                    if isinstance(r := c.payload, MemoryRecord) and c.id == r.id:
                        c.vector = similar.cosine(r)  # a dense hit's own score replaces it
                # The bridge list follows the best match, most often the best lexical one:
                # searched now on that guess, it is kept if the best match adds the same names.
                guess = self._bridge_query(query, self._matches(lexical_lists[0], []))
                early = self.memory.search_lexical(guess, limit) if guess else []
                similar.add(h.record for h in early)
            qvec, dense = await dense_recall
            dated = self._dated(query, request.now, limit, qvec, dense)
            matches = self._matches(lexical_lists[0], dense)
            near = self._adjacent(matches)
            bridge = self._bridge_query(query, matches)
            if bridge == guess:  # the same question: the early list is the bridge list
                bridged = early
            else:
                bridged = self.memory.search_lexical(bridge, limit) if bridge else []
        except StoreError as exc:  # the store is down: this source fails, the build goes on
            raise SourceError(f"memory store unavailable: {exc}", source=self.name) from exc
        finally:  # after a failure elsewhere the thread's result (or error) is dropped
            dense_recall.add_done_callback(_retrieved)
        extra = lexical_lists[1] if len(lexical_lists) > 1 else []
        for k, answer in zip(self.knowledge, kb, strict=True):
            if isinstance(answer, BaseException):
                request.failed(k.name, answer)
        for kind, hits in (("dense", dense), ("expanded", extra), ("time", dated),
                           ("bridge", bridged)):
            self._add_hits(cands, kind, hits)
        for r, match in near:  # session scope: the record's id is its key
            c = cands.setdefault(r.id, Candidate(id=r.id, content=r.content, role=r.role,
                                                 origin=f"memory:{r.level}", payload=r))
            c.adjacent_to = (*c.adjacent_to, match)
        for source_items in kb:
            if isinstance(source_items, BaseException):
                continue
            for rank, it in enumerate(source_items):
                c = cands.setdefault(it.id, Candidate(id=it.id, content=it.content,
                                                      origin=f"knowledge:{it.source}",
                                                      payload=it))
                c.ranks["lexical"] = rank
        if not cands:
            return []
        missing = [c for c in cands.values() if c.vector == 0.0]
        own = {c.id: c.payload for c in missing
               if isinstance(c.payload, MemoryRecord) and c.id == c.payload.id}
        other = [c for c in missing if c.id not in own]
        if own:  # this session's records: their vectors are kept by id
            if similar is None:
                similar = Similarities(self.memory, qvec, context=0.0)
            similar.add(own.values())
            for i, r in own.items():
                cands[i].vector = similar.cosine(r)
        if other:
            vecs = self.memory.embedder.embed([index_text(c.content) for c in other])
            for c, v in zip(other, vecs, strict=True):
                c.vector = float(v @ qvec)
        if self.context and self.scope == "session" and similar is not None:
            similar.blend(list(cands.values()))
        self._count(cands.values(), counter, mine)
        ranked = self.reranker.rerank(query, list(cands.values()))
        return mark_memory([self._item(c) for c in ranked], self.memory.options.min_score)

    def _dated(self, query: str, now: float, limit: int, qvec: np.ndarray,
               dense_hits: list[Hit]) -> list[Hit]:
        """A fourth recall list when the question names a time ("in June", "two weeks ago"):
        this session's memories from then, ranked by rank fusion of their lexical and dense
        ranks among that period's memories. The period is searched on its own: a memory said
        then is often worded apart from the question ("I planted tomato saplings" for "what
        gardening did I do?") and ranks below the cut of the session-wide lists."""
        if not self.time_cues or self.scope != "session":
            return []
        window = time_window(query, now)
        if window is None:
            return []
        start, end = window
        then = [r for r in self.memory.records.values() if start <= r.timestamp < end]
        if not then:
            return []
        ids = {r.id for r in then}
        wide = self.memory.search_lexical(query, limit * 4)
        if len(then) > PERIOD_RANKED:  # lexical matches first, then dense ones, of that period
            seen: set[str] = set()
            out = []
            for h in (*wide, *dense_hits):
                if h.record.id in ids and h.record.id not in seen:
                    seen.add(h.record.id)
                    out.append(h)
            return out[:limit]
        lexical = [h.record.id for h in wide if h.record.id in ids]
        with limited(1):
            sims = (self.memory.vectors(then) @ qvec).tolist()
        dense = sorted(range(len(then)), key=lambda i: (-sims[i], then[i].id))
        credit = dict.fromkeys(ids, 0.0)
        for rank, i in enumerate(dense):
            credit[then[i].id] += self.reranker.fusion_credit({"dense": rank})
        for rank, rid in enumerate(lexical):
            credit[rid] += self.reranker.fusion_credit({"lexical": rank})
        best = sorted(then, key=lambda r: (-credit[r.id], r.id))[:limit]
        return [Hit(r, credit[r.id]) for r in best]

    def _matches(self, lexical: list[Hit], dense: list[Hit]) -> list[MemoryRecord]:
        """This session's best memories by rank fusion of the lexical and dense lists, as many
        as the larger of ``adjacent`` and 1 (ties by id). Empty for global scope."""
        if self.scope != "session" or not (self.adjacent or self.bridge_terms):
            return []
        best = fused_best(lexical, dense, max(1, self.adjacent), self.reranker)
        # A match another view of the session stored since this one loaded is not known here.
        return [self.memory.records[i] for i in best if i in self.memory.records]

    def _adjacent(self, matches: list[MemoryRecord]) -> list[tuple[MemoryRecord, str]]:
        """Questions and answers next to the best matches, each with the match it neighbours.

        A question's words often sit in one message and its answer in the reply ("Any fun plans
        for the summer?" / "Researching adoption agencies"), or the other way round. Of the best
        ``adjacent`` matches, one that asks something brings the reply (another role, right
        after it), and one that answers a question brings that question. The reranker gives
        each a share of its match's fusion credit (``RerankWeights.adjacent``). Only question
        and answer: the message after a statement is as often small talk, which at a small
        budget takes the place of evidence (both choices measured in
        ``benchmarks/HISTORY.md``).
        """
        out = []
        for match in matches[:self.adjacent]:
            for r in self.memory.adjacent(match.id):
                if _asks((match if r.seq > match.seq else r).content) and self._short(r):
                    out.append((r, match.id))  # a question, answered
        return out

    def _follow_up(self, query: str) -> bool:
        """Whether ``query`` is short enough to be a follow-up (``follow_up_terms``)."""
        return (self.follow_up_terms is None
                or len(set(tokenize(query, drop_stopwords=True))) <= self.follow_up_terms)

    def _short(self, record: MemoryRecord) -> bool:
        """Whether a message is short enough to be judged with its exchange (``own_words``)."""
        return self.own_words is None or self.memory.tokens(record) < self.own_words

    def _bridge_query(self, query: str, matches: list[MemoryRecord]) -> str | None:
        """The bridge list's query: the question with the names its best match adds (None:
        no list).

        One more list: the question searched again with the names its best match adds.

        A two-hop question ("The director of the film Big Stone Gap is based in what city?")
        finds the first hop (the film, naming its director) but not the second (the director's
        own page), which shares no word with the question. The names the best match mentions
        and the question does not (capitalised words that do not start a sentence, up to
        ``bridge_terms`` in order of appearance) lead there.
        """
        if not self.bridge_terms or not matches:
            return None
        asked = set(tokenize(query, drop_stopwords=True))
        names: list[str] = []
        for word in _NAME.findall(index_text(matches[0].content)):
            terms = tokenize(word, drop_stopwords=True)
            if terms and word not in names and not asked.intersection(terms):
                names.append(word)
        return f"{query} {' '.join(names[:self.bridge_terms])}" if names else None

    def _add_hits(self, cands: dict[str, Candidate], kind: str, hits: list[Hit]) -> None:
        agent, session = self.memory.scope.agent, self.memory.session
        dense = kind == "dense"
        mine = self.scope == "session"  # every hit is this session's (the search's scope)
        for rank, h in enumerate(hits):
            r = h.record
            # Another session's record may reuse an id of this one: keep them apart.
            key = r.id if mine or (r.session == session and r.agent == agent) \
                else f"{r.agent}/{r.session}/{r.id}"
            c = cands.get(key)
            if c is None:  # positional, its rank in: twice as fast as keywords (~800 a build)
                c = cands[key] = Candidate(
                    key, r.content, _ORIGIN.get(r.level) or f"memory:{r.level}",
                    h.score if dense else 0.0, {kind: rank}, (), r.role, 0, 0.0, {}, r)
                continue
            c.ranks[kind] = rank
            if dense:
                c.vector = h.score

    def _count(self, cands: Iterable[Candidate], counter: TokenCounter, mine: bool) -> None:
        """Each candidate's tokens, unless counted already (``mine``: ``counter`` is the
        session's own, whose counts of its records are kept)."""
        memory = self.memory
        for c in cands:
            if c.tokens:
                continue
            kept = c.payload
            c.tokens = memory.tokens(kept) if mine and isinstance(kept, MemoryRecord) \
                and kept.content is c.content else counter.count(c.content)

    def _item(self, c: Candidate) -> ContextItem:
        if isinstance(c.payload, ContextItem):
            it = c.payload
            return ContextItem(id=it.id, source=self.name, content=it.content, kind="evidence",
                               tier=Tier.P2, seq=it.seq, scores=_scores(c),
                               metadata={**it.metadata, "origin": c.origin})
        r = c.payload
        assert isinstance(r, MemoryRecord)
        metadata = {"origin": c.origin, "level": r.level, "session": r.session}
        if c.adjacent_to and not c.ranks:  # recalled only as a neighbour: say of what
            metadata["adjacent_to"] = c.adjacent_to[0]
        # Positional, as per_build: half the cost of keywords for every recalled memory
        # (test_returns_ranked_evidence_items_that_keep_their_stored_ids checks each field)
        return ContextItem(c.id, self.name, r.content, "evidence", r.role, Tier.P2, 0.5,
                           r.timestamp, None, None, metadata,
                           _scores(c), None, r.seq)


def _scores(c: Candidate) -> dict[str, float]:
    """The item's scores: the reranker's signals, made for this candidate alone, become them
    (no copy of a thousand small dictionaries), with the reranker's score as the raw
    relevance the selector normalises."""
    scores = c.signals
    scores[RAW_RELEVANCE] = c.score
    scores[SIMILARITY] = c.vector
    return scores


__all__ = ["L2ImportantSource", "UnifiedRetrievalSource", "fused_best"]
