"""Memory tiers L1 → L2 → L3 → L4 over one :class:`MemoryStore`, with no silent loss.

- L1: the session's recent window, bounded in tokens (the newest messages).
- L2: session-important: evicted L1 units whose importance > ``promote_threshold`` (0.6).
- L3: agent-level aggregates (session summaries written when a session ends).
- L4: everything else, persistent and searchable.

The history a build sees is the whole conversation (``history``): the builder decides what of it
is shown, so a budget that holds the whole conversation gets all of it. The tiers say where a
record lives in memory and how retrieval ranks it, not what a build may show.

Every message is written to the store when it is added (level L1) and only changes level later:
eviction from L1 moves it to L2 or L4, L2 overflow and TTL expiry move it to L4. Nothing is
deleted, so every message stays retrievable by id and by search.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from loomctx.embed.protocol import Embedder, embed_later
from loomctx.errors import ConfigError, TooLargeError
from loomctx.events import EventSink, MessageAdded, NullSink, TierMoved
from loomctx.items import ContextItem
from loomctx.memory.importance import HeuristicImportance, ImportanceScorer
from loomctx.sources.floors import check_floor
from loomctx.sources.history import HistorySource
from loomctx.sources.messages import message_text, provider_message
from loomctx.stores.migrate import check_embedder
from loomctx.stores.protocol import DEFAULT_TENANT, Hit, Level, MemoryRecord, MemoryStore, Scope
from loomctx.text.decoration import index_text
from loomctx.text.labels import label_terms
from loomctx.text.lexical import BM25Index
from loomctx.text.sample import sample
from loomctx.tokens.protocol import TokenCounter

SPEAKER_SHARE = 0.05
"""Share of a session's messages a label must carry to count as a speaker's
(:meth:`TieredMemory.speakers`)."""
VECTORS_MAX = 50_000
"""Record vectors a session keeps for recall (:meth:`TieredMemory.vectors`), as rows of one
matrix, and token counts (:meth:`TieredMemory.tokens`); past this many a memo starts over
(~100 MB of vectors at 512 dimensions)."""
MAX_MESSAGE_CHARS = 1_048_576
"""Default of :attr:`MemoryOptions.max_message_chars`: 1 Mi characters, some 250k tokens, more
than any model's window but the largest; 28 times the longest message of the evaluation sets."""


@dataclass(frozen=True, kw_only=True)
class MemoryOptions:
    """Sizes and thresholds of the tiers."""

    l1_max_tokens: int = 2000
    """Tokens the L1 recent window holds before the oldest units are evicted."""
    promote_threshold: float = 0.6
    """Importance above which an evicted unit goes to L2 instead of L4."""
    l2_max_items: int = 200
    """L2 capacity; the least important overflow goes to L4."""
    l2_ttl: float | None = None
    """Seconds an L2 item stays before it moves to L4 (None: no expiry)."""
    l2_shared: bool = True
    """Offer this session's L2 to the agent's other sessions and see theirs: what one session
    found important often matters to the agent's next (source ``L2_shared``, scope tenant +
    agent; :class:`~loomctx.retrieval.shared.SharedL2Source`)."""
    l2_shared_ttl: float | None = 6 * 3600.0
    """Seconds another session's L2 memory stays visible in the shared pool after it was
    said (L2 is medium-term memory: hours); None: until its session moves it out of L2."""
    agent_memory: bool = True
    """Recall the agent's memory from its other sessions in this session's builds: the
    summaries earlier sessions wrote when they ended and the agent's facts (L3), with their
    L4 copies (:class:`~loomctx.retrieval.agent_memory.AgentMemorySource`, source
    ``L3_agent``)."""
    agent_memory_l4: Literal["agent", "tenant", "off"] = "tenant"
    """Which persisted L4 copies of L3 records that recall reads: every agent's of the tenant
    (the default: L4 is the long-term store every agent of a deployment reads, as in the
    seed), only this agent's (``"agent"``: for agents of one tenant that must not share what
    they concluded), or none. Another tenant's never (guarantee 8)."""
    min_score: float | None = None
    """The seed's L4 ``min_score``: memories recalled with a cosine similarity to the question
    below this (by unified retrieval, and the agent's L3 / L4 records by ``L3_agent``) are left
    out of the build, reason ``below_min_score`` in the report (:mod:`loomctx.sources.floors`);
    None keeps them."""
    max_message_chars: int = MAX_MESSAGE_CHARS
    """Longest text one message may have, in characters (its content's text and its tool
    calls' arguments; an image counts as ``[image]``): a longer one is refused with a
    :class:`~loomctx.errors.TooLargeError`, before anything of its batch is kept. Analysis
    reads a bounded sample of a long message (:mod:`loomctx.text.sample`); this bounds what
    remains proportional to its length: storing, counting and rendering it."""

    def __post_init__(self) -> None:
        m = self.max_message_chars
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ConfigError(f"max_message_chars must be an int >= 1, got {m!r}")
        if self.l1_max_tokens < 1:
            raise ConfigError(f"l1_max_tokens must be >= 1, got {self.l1_max_tokens!r}")
        if not 0 <= self.promote_threshold <= 1:
            raise ConfigError(f"promote_threshold must be in [0, 1], got "
                              f"{self.promote_threshold!r}")
        if self.l2_max_items < 0:
            raise ConfigError(f"l2_max_items must be >= 0, got {self.l2_max_items!r}")
        if self.l2_ttl is not None and self.l2_ttl <= 0:
            raise ConfigError(f"l2_ttl must be > 0 seconds or None, got {self.l2_ttl!r}")
        if self.l2_shared_ttl is not None and not self.l2_shared_ttl > 0:
            raise ConfigError(f"l2_shared_ttl must be > 0 seconds or None, got "
                              f"{self.l2_shared_ttl!r}")
        check_floor("min_score", self.min_score, -1.0, 1.0)
        if self.agent_memory_l4 not in ("agent", "tenant", "off"):
            raise ConfigError(f"agent_memory_l4 must be 'agent', 'tenant' or 'off', got "
                              f"{self.agent_memory_l4!r}")


class TieredMemory:
    """One session's view of the tiers; the store is shared with other sessions and agents."""

    def __init__(
        self, store: MemoryStore, embedder: Embedder, counter: TokenCounter, *, session: str,
        agent: str, options: MemoryOptions | None = None,
        importance: ImportanceScorer | None = None, events: EventSink | None = None,
        tenant: str = DEFAULT_TENANT,
    ) -> None:
        check_embedder(store, embedder)  # a store left by another embedder fails here
        self.store = store
        self.scope = Scope(tenant=tenant, agent=agent, session=session)
        """The store scope of this session: every read and write of the tiers stays in it."""
        self.embedder = embedder
        self.counter = counter
        self.session = session
        self.agent = agent
        self.options = options or MemoryOptions()
        self.importance = importance or HeuristicImportance()
        self.tenant = tenant
        self.events = events if events is not None else NullSink()
        self.history = HistorySource(name="L1_recent", origin=f"session {session}")
        # The L1 window: (ids of one unit, its tokens), oldest first.
        self._l1: deque[tuple[list[str], int]] = deque()
        self._l1_tokens = 0
        self._lock = threading.Lock()
        self._l2: dict[str, tuple[float, float]] = {}  # id -> (importance, moved_at)
        # An in-process lexical index over this session's records: a session-scoped search
        # costs ~1 ms here against tens of ms through the store's full-text index.
        self._lex = BM25Index()
        # Its documents' records, by document (what ``records`` holds: a record changed in place
        # there changes here too), so a search's hits cost no look-up by id; ``_lex_doc`` is each
        # id's document. An id is indexed once: the history rejects a repeated one.
        self._lex_records: list[MemoryRecord] = []
        self._lex_doc: dict[str, int] = {}
        self.records: dict[str, MemoryRecord] = {}
        self._by_seq: dict[int, str] = {}  # a message's position in the session → its id
        self._labels: Counter[frozenset[str]] = Counter()  # label → messages that carry it
        self._speakers: tuple[int, float, frozenset[str]] = (-1, 0.0, frozenset())
        # Record id → (its text, its vector): recall blends the vectors of a thousand
        # neighbours per build, and hashing each text again for the embedder's cache cost more
        # than the blend itself.
        self._vectors: dict[str, tuple[str, int]] = {}  # id → (its text, its row below)
        self._vector_rows = np.empty((0, embedder.dim), dtype=np.float32)
        self._vector_count = 0  # rows of it in use (a changed text takes a new one)
        self._tokens: dict[str, tuple[str, int]] = {}  # id → (its text, its count)
        # Record id → its neighbours (:meth:`adjacent`), asked for hundreds of candidates per
        # build; dropped whenever a record is added or changes level.
        self._near: dict[str, tuple[MemoryRecord, ...]] = {}
        self._resume()

    def _resume(self) -> None:
        """Reload a session that the store already holds (e.g. after a restart)."""
        old = list(self.store.scan(scope=self.scope))
        if not old:
            return
        self._index(old)
        messages = sorted((r for r in old if r.level != "L3"), key=lambda r: r.seq)
        items = self.history.extend([
            {**(r.message or {"role": r.role or "user", "content": r.content}),
             "id": r.id, "timestamp": r.timestamp} for r in messages])
        levels = {r.id: r.level for r in messages}
        self._window([it for it in items if levels.get(it.id) == "L1"])
        # The store keeps levels, not importance: an L2 record was above the threshold.
        for r in old:
            if r.level == "L2":
                imp = max(r.importance, self.options.promote_threshold)
                self._l2[r.id] = (imp, r.timestamp)
                self._keep(replace(r, importance=imp))
        self._near.clear()

    def _index(self, records: Sequence[MemoryRecord]) -> None:
        self._lex.add([index_text(r.content) for r in records])
        start = len(self._lex_records)
        self._lex_records.extend(records)
        self._lex_doc.update(zip([r.id for r in records], range(start, start + len(records)),
                                 strict=True))
        self._near.clear()
        for r in records:
            self.records[r.id] = r
            if r.level != "L3":  # summaries are not messages of the conversation
                self._by_seq[r.seq] = r.id
                label = label_terms(r.content)
                if label:
                    self._labels[label] += 1

    def _set_level(self, ids: Sequence[str], level: Level,
                   importance: Mapping[str, float] | None = None) -> None:
        """Move records in the store and in this view (with their importance, when given)."""
        self.store.set_level(ids, level, scope=self.scope)
        self._near.clear()
        for i in ids:
            r = self.records.get(i)
            if r is not None:
                imp = r.importance if importance is None else importance.get(i, r.importance)
                self._keep(replace(r, level=level, importance=imp))

    def _keep(self, record: MemoryRecord) -> None:
        """``record`` in place of the indexed record with its id."""
        self.records[record.id] = record
        self._lex_records[self._lex_doc[record.id]] = record

    def search_lexical(self, query: str, limit: int) -> list[Hit]:
        """BM25 over this session's records (every tier), best first."""
        records = self._lex_records
        return [Hit(records[i], score) for i, score in self._lex.search(query, limit)]

    def vectors(self, records: Sequence[MemoryRecord]) -> np.ndarray:
        """The embeddings of ``records``' texts, one row each: what the embedder gives for their
        :func:`index_text` (as when they were stored), kept by record id from the first call."""
        kept = self._vectors
        rows = [hit[1] if (hit := kept.get(r.id)) is not None and hit[0] == r.content else -1
                for r in records]
        todo = [n for n, row in enumerate(rows) if row < 0]
        if not todo:  # the warm case: one gather of kept rows, in C
            return self._vector_rows[np.asarray(rows, dtype=np.intp)]
        out = np.empty((len(records), self.embedder.dim), dtype=np.float32)
        known = [n for n, row in enumerate(rows) if row >= 0]
        if known:
            out[known] = self._vector_rows[[rows[n] for n in known]]
        out[todo] = self.embedder.embed([index_text(records[n].content) for n in todo])
        start = self._vector_count
        if start + len(todo) > VECTORS_MAX:
            kept.clear()
            start = 0
        self._vector_count = start + len(todo)
        if start + len(todo) > len(self._vector_rows):  # grow by doubling, keeping the rows
            grown = np.empty((max(1024, 2 * (start + len(todo))), out.shape[1]),
                             dtype=np.float32)
            grown[:start] = self._vector_rows[:start]
            self._vector_rows = grown
        self._vector_rows[start:start + len(todo)] = out[todo]
        for k, n in enumerate(todo):
            kept[records[n].id] = (records[n].content, start + k)
        return out

    def tokens(self, record: MemoryRecord) -> int:
        """The session counter's count of ``record``'s text, kept by record id from the first
        call: a build counts a thousand recalled memories, most of them the last build's too."""
        kept = self._tokens.get(record.id)
        if kept is not None and kept[0] == record.content:
            return kept[1]
        if len(self._tokens) >= VECTORS_MAX:
            self._tokens.clear()
        n = self.counter.count(record.content)
        self._tokens[record.id] = (record.content, n)
        return n

    def adjacent(self, record_id: str) -> list[MemoryRecord]:
        """The messages right after and right before one (in that order) that have another role:
        the reply to it and what it replied to. Unknown ids have none."""
        return list(self.exchange(record_id))

    def exchange(self, record_id: str) -> tuple[MemoryRecord, ...]:
        """:meth:`adjacent` as kept until the next change (read-only: a build asks it of a
        thousand memories)."""
        known = self._near.get(record_id)
        if known is not None:
            return known
        r = self.records.get(record_id)
        if r is None or r.level == "L3":
            return ()
        out = []
        for seq in (r.seq + 1, r.seq - 1):
            other = self.records.get(self._by_seq.get(seq, ""))
            if other is not None and other.role != r.role:
                out.append(other)
        known = self._near[record_id] = tuple(out)
        return known

    def speakers(self, min_share: float = SPEAKER_SHARE) -> frozenset[str]:
        """The content terms of this session's speakers: labels (:func:`label_terms`) that at
        least ``min_share`` of its messages, and at least 3, carry. A title labels one passage
        or a few, a speaker many of a conversation's lines."""
        count, share, terms = self._speakers  # asked at every build: counted once per change
        if count != len(self._by_seq) or share != min_share:
            need = max(3.0, min_share * len(self._by_seq))
            terms = frozenset(t for label, n in self._labels.items() if n >= need for t in label)
            self._speakers = (len(self._by_seq), min_share, terms)
        return terms

    def _window(self, items: Sequence[ContextItem]) -> None:
        """Append items to the L1 window bookkeeping, one entry per unit."""
        for it in items:
            tokens = self.counter.count(it.content)
            if self._l1 and it.group is not None and self._l1[-1][0] and \
                    self.records.get(self._l1[-1][0][-1]) is not None and \
                    self.records[self._l1[-1][0][-1]].group == it.group:
                ids, t = self._l1.pop()
                self._l1.append(([*ids, it.id], t + tokens))
            else:
                self._l1.append(([it.id], tokens))
            self._l1_tokens += tokens

    def check(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Raise the :class:`~loomctx.errors.InputError` :meth:`add` would raise for
        ``messages`` (a malformed one, or a :class:`~loomctx.errors.TooLargeError`), changing
        nothing: a caller can refuse a batch before anything else of it happens."""
        checked = self.history.check(messages)
        self.check_sizes((m.get("role"), message_text(provider_message(m))) for m in checked)

    def check_sizes(self, texts: Iterable[tuple[str | None, str]]) -> None:
        """Raise :class:`~loomctx.errors.TooLargeError` for the first message, of these
        ``(role, text)``, whose text is longer than ``max_message_chars``."""
        limit = self.options.max_message_chars
        for role, text in texts:
            size = len(text)
            if size > limit:
                raise TooLargeError(
                    f"{_a(role or 'message')} message has {size:,} characters of text, over "
                    f"the limit of {limit:,} per message: send a shorter text (a file by "
                    f"reference, a log's relevant part), or raise the limit "
                    f"(MemoryOptions.max_message_chars; loomctx serve --max-message-chars)",
                    size=size, limit=limit, where=f"session {self.session}")

    def add(self, messages: Sequence[Mapping[str, Any]], *, now: float) -> list[str]:
        """Validate, store (L1) and window the messages; returns their ids.

        Thread-safe: the session's sync and async forms may add from different threads."""
        with self._lock:
            new = self.history.extend(messages)
            if not new:
                return []
            try:
                self.check_sizes((it.role, it.content) for it in new)
                vectors = self.embedder.embed([index_text(it.content) for it in new])
                records = [self._record(it, now) for it in new]
                self.store.put(records, vectors)
            except BaseException:
                # Keep the history consistent with the store: take the batch back, re-raise.
                self.history.undo_extend()
                raise
            self._index(records)
            self._window(new)
            self.events.emit(MessageAdded(tenant=self.tenant, session=self.session,
                                          ids=tuple(it.id for it in new), at=now))
            self._evict(now)
            return [it.id for it in new]

    def _record(self, it: ContextItem, now: float) -> MemoryRecord:
        return MemoryRecord(
            id=it.id, content=it.content, level="L1", role=it.role,
            timestamp=it.timestamp if it.timestamp is not None else now, session=self.session,
            agent=self.agent, tenant=self.scope.tenant, group=it.group, seq=it.seq,
            message=it.message,
        )

    def _evict(self, now: float) -> None:
        """Move the oldest units out of L1 until it fits; one store write per tier."""
        opts = self.options
        moved: dict[str, list[str]] = {"L2": [], "L4": []}
        scores: dict[str, float] = {}
        while self._l1_tokens > opts.l1_max_tokens and len(self._l1) > 1:
            ids, tokens = self._l1.popleft()
            self._l1_tokens -= tokens
            unit = [self.records[i] for i in ids if i in self.records]
            score = max((self.importance.score(r.content, role=r.role) for r in unit),
                        default=0.0)
            level = "L2" if score > opts.promote_threshold else "L4"
            for i in ids:
                moved[level].append(i)
                scores[i] = score
                if level == "L2":
                    self._l2[i] = (score, now)
        for level, ids in moved.items():
            if ids:
                self._set_level(ids, level, scores)  # type: ignore[arg-type]
                self.events.emit(TierMoved(tenant=self.tenant, session=self.session,
                                           ids=tuple(ids), level=level, at=now))
        self._expire(now)

    def _expire(self, now: float) -> None:
        opts = self.options
        out: list[str] = []
        if opts.l2_ttl is not None:
            out += [i for i, (_, t) in self._l2.items() if now - t > opts.l2_ttl]
        overflow = len(self._l2) - len(out) - opts.l2_max_items
        if overflow > 0:
            rest = sorted((v[0], v[1], i) for i, v in self._l2.items() if i not in out)
            out += [i for _, _, i in rest[:overflow]]
        if out:
            self._set_level(out, "L4")
            for i in out:
                self._l2.pop(i, None)
            self.events.emit(TierMoved(tenant=self.tenant, session=self.session,
                                       ids=tuple(out), level="L4", at=now))

    @property
    def l2_ids(self) -> list[str]:
        return list(self._l2)

    @property
    def l1_ids(self) -> list[str]:
        """Ids in the L1 window, oldest first."""
        return [i for ids, _ in self._l1 for i in ids]

    def recent_texts(self, n: int) -> list[str]:
        """The texts of the last ``n`` messages, as analysis reads them (a very long one's
        bounded :func:`~loomctx.text.sample.sample`): the query rewriter reads them at every
        build."""
        return [sample(it.content) for it in self.history.items[-n:]]

    def query_vector(self, text: str) -> np.ndarray:
        return self.embedder.embed([text])[0]

    def query_vector_later(self, text: str) -> Callable[[], np.ndarray]:
        """:meth:`query_vector` in two steps (:func:`~loomctx.embed.protocol.embed_later`)."""
        rest = embed_later(self.embedder, [text])
        return lambda: rest()[0]


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in ("a", "e", "i", "o", "u") else f"a {word}"


__all__ = ["MAX_MESSAGE_CHARS", "MemoryOptions", "TieredMemory"]
