"""UnifiedRetrievalSource and L2ImportantSource: what memory and knowledge hand the builder."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.embed.fake import HashingEmbedder
from loomctx.errors import ConfigError
from loomctx.items import RAW_RELEVANCE, ContextItem, Tier
from loomctx.memory.tiers import MemoryOptions, TieredMemory
from loomctx.retrieval import source as source_module
from loomctx.retrieval.reranker import RerankWeights, UnifiedReranker
from loomctx.retrieval.rewriter import QueryRewriter
from loomctx.retrieval.source import (
    MAX_RECALL,
    L2ImportantSource,
    UnifiedRetrievalSource,
    fused_best,
)
from loomctx.sources.knowledge import Document, KnowledgeSource
from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import Hit, MemoryRecord
from loomctx.tokens.protocol import TokenCounter

Collect = Callable[..., Sequence[ContextItem]]
T0 = 1_714_500_000.0
FILLER = ["We talked about the weather in spring.", "The train was late again today.",
          "Lunch was a sandwich and an apple.", "The meeting moved to Thursday afternoon."]


class ByKeyword:
    """Importance 0.9 for messages that say "remember", 0.1 otherwise."""

    def score(self, text: str, *, role: str | None = None) -> float:
        return 0.9 if "remember" in text.lower() else 0.1


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def make_memory(store: InMemoryStore, embedder: HashingEmbedder,
                counter: TokenCounter) -> Callable[..., TieredMemory]:
    def make(session: str = "s1", **options: object) -> TieredMemory:
        return TieredMemory(store, embedder, counter, session=session, agent="agent",
                            options=MemoryOptions(**options),  # type: ignore[arg-type]
                            importance=ByKeyword())
    return make


def add(memory: TieredMemory, texts: Sequence[str], *, prefix: str) -> list[str]:
    msgs = [{"id": f"{prefix}{i}", "role": "user" if i % 2 == 0 else "assistant",
             "content": text, "timestamp": T0 + i} for i, text in enumerate(texts)]
    return memory.add(msgs, now=T0 + len(texts))


def test_returns_ranked_evidence_items_that_keep_their_stored_ids(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory()
    add(memory, [*FILLER, "My dog is called Biscuit and he is seven.", *FILLER], prefix="m")
    items = collect(UnifiedRetrievalSource(memory), "What is my dog called?", total=2000)
    assert items[0].id == "m4"  # the id it was added with, ranked first
    dog = items[0]
    assert (dog.kind, dog.source, dog.tier, dog.role) == ("evidence", "L4_semantic", Tier.P2,
                                                          "user")
    assert dog.content == "My dog is called Biscuit and he is seven."
    assert dog.timestamp == T0 + 4
    assert dog.metadata == {"origin": "memory:L1", "level": "L1", "session": "s1"}
    # every other field: the item is built positionally
    assert (dog.priority, dog.group, dog.message, dog.tokens) == (0.5, None, None, None)
    assert dog.seq == memory.records["m4"].seq
    assert set(dog.scores) >= {RAW_RELEVANCE, "vector", "overlap", "fusion"}
    scores = [it.scores[RAW_RELEVANCE] for it in items]
    assert scores == sorted(scores, reverse=True)
    assert {it.id for it in items} <= {f"m{i}" for i in range(9)}
    assert len({it.id for it in items}) == len(items)


def test_each_collect_makes_its_own_items(make_memory: Callable[..., TieredMemory],
                                          collect: Collect) -> None:
    """The source says it is ``fresh``: the builder scores its items in place, so no two
    builds may share an item, nor an item's scores or metadata."""
    memory = make_memory()
    add(memory, [*FILLER, "My dog is called Biscuit and he is seven."], prefix="m")
    source = UnifiedRetrievalSource(memory)
    first = collect(source, "What is my dog called?", total=2000)
    second = collect(source, "What is my dog called?", total=2000)
    assert source.fresh and [it.id for it in first] == [it.id for it in second]
    for a, b in zip(first, second, strict=True):
        assert a is not b and a.scores is not b.scores and a.metadata is not b.metadata


def test_an_empty_query_recalls_nothing(make_memory: Callable[..., TieredMemory],
                                        collect: Collect) -> None:
    memory = make_memory()
    add(memory, FILLER, prefix="m")
    kb = KnowledgeSource([Document("a.md", "The weather in spring is mild.")])
    src = UnifiedRetrievalSource(memory, [kb])
    assert collect(src, "", total=2000) == []
    assert collect(src, "  \n\t", total=2000) == []
    assert collect(src, "weather", total=2000) != []


def test_session_scope_reads_only_this_session_global_reads_all(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    mine, other = make_memory("s1"), make_memory("s2")
    add(mine, FILLER, prefix="a")
    add(other, ["The vault code is 4417, remember it.", *FILLER], prefix="b")
    query = "What is the vault code?"
    scoped = collect(UnifiedRetrievalSource(mine), query, total=2000)
    assert scoped and {it.metadata["session"] for it in scoped} == {"s1"}
    everywhere = collect(UnifiedRetrievalSource(mine, scope="global"), query, total=2000)
    assert everywhere[0].id == "agent/s2/b0"  # another session's record keeps its scope
    assert {it.metadata["session"] for it in everywhere} == {"s1", "s2"}


def test_knowledge_bases_are_merged_with_memory_on_one_ranking(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory()
    add(memory, [*FILLER, "The customer in Lyon asked about a refund for the customs hold."],
        prefix="m")
    policies = KnowledgeSource([
        Document("refunds.md", "Refunds for customs holds: a goodwill credit of 5% after five "
                               "working days."),
        Document("pets.md", "Pets travel in the cabin only on short flights.")], name="policies")
    hubs = KnowledgeSource([Document("lyon.md", "The Lyon hub clears customs holds within two "
                                                "days.")], name="hubs")
    items = collect(UnifiedRetrievalSource(memory, [policies, hubs]),
                    "refund for a customs hold in Lyon", total=2000)
    by_id = {it.id: it for it in items}
    assert by_id["refunds.md#0"].metadata["origin"] == "knowledge:policies"
    assert by_id["lyon.md#0"].metadata["origin"] == "knowledge:hubs"
    assert by_id["m4"].metadata["origin"] == "memory:L1"
    assert "pets.md#0" not in by_id  # the knowledge base's own recall found no match
    assert all(it.source == "L4_semantic" and it.kind == "evidence" for it in items)
    top3 = {it.id for it in items[:3]}
    assert top3 == {"refunds.md#0", "lyon.md#0", "m4"}
    scores = [it.scores[RAW_RELEVANCE] for it in items]
    assert scores == sorted(scores, reverse=True)


def test_the_same_text_in_memory_and_knowledge_comes_back_once(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory()
    text = "Customs holds at Lyon are cleared within two days."
    add(memory, [*FILLER, text], prefix="m")
    kb = KnowledgeSource([Document("lyon.md", text)], name="hubs")
    items = collect(UnifiedRetrievalSource(memory, [kb]), "Lyon customs holds", total=2000)
    assert sum(it.content == text for it in items) == 1


@pytest.mark.parametrize(("cap", "total", "low", "high"), [
    (MAX_RECALL, 0, 5, 10),  # recall_limit per list (lexical + dense)
    (MAX_RECALL, 16 * 40, 40, 80),  # ~16 tokens a memory: 40 per list
    (MAX_RECALL, 16 * 10_000, 150, 150),  # a big build takes every match there is
    (20, 16 * 10_000, 20, 40),  # but never more than the cap per list
])
def test_recall_size_follows_the_build_total(
        make_memory: Callable[..., TieredMemory], collect: Collect,
        monkeypatch: pytest.MonkeyPatch, cap: int, total: int, low: int, high: int) -> None:
    monkeypatch.setattr(source_module, "MAX_RECALL", cap)
    memory = make_memory(l1_max_tokens=10**6)
    add(memory, [f"Tide note {i}: the tide turned at {i % 12} o'clock." for i in range(150)],
        prefix="t")
    # The lexical and dense lists only (neighbours of the best matches are one more list).
    src = UnifiedRetrievalSource(memory, recall_limit=5, rewriter=QueryRewriter(top_k=0),
                                 adjacent=0)
    items = collect(src, "tide", total=total)
    assert low <= len(items) <= high


def test_retrieval_options_are_validated(make_memory: Callable[..., TieredMemory]) -> None:
    with pytest.raises(ConfigError, match="0"):
        UnifiedRetrievalSource(make_memory(), recall_limit=0)
    with pytest.raises(ConfigError, match="'agent'"):
        UnifiedRetrievalSource(make_memory(), scope="agent")
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(ConfigError, match="adjacent must be an int >= 0"):
            UnifiedRetrievalSource(make_memory(), adjacent=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="bridge_terms must be an int >= 0"):
            UnifiedRetrievalSource(make_memory(), bridge_terms=bad)  # type: ignore[arg-type]


def test_l2_source_gives_important_memories_only_without_a_question(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=30)
    src = L2ImportantSource(memory)
    assert collect(src) == []  # nothing promoted yet
    add(memory, ["Please remember: the gate code is 1234.", *FILLER,
                 "Remember that Ana prefers email.", *FILLER, *FILLER], prefix="m")
    assert set(memory.l2_ids) == {"m0", "m5"}
    items = collect(src)
    assert [it.id for it in items] == ["m0", "m5"]  # in promotion order
    for it in items:
        assert (it.kind, it.source, it.tier, it.priority) == ("evidence", "L2_important",
                                                              Tier.P2, 0.9)
        assert it.metadata == {"origin": "memory:L2", "level": "L2"}
    assert items[0].content == "Please remember: the gate code is 1234."
    assert collect(src, "what is the gate code?") == []  # unified retrieval ranks it instead
    unified = collect(UnifiedRetrievalSource(memory), "what is the gate code?", total=2000)
    assert unified[0].id == "m0" and unified[0].metadata["origin"] == "memory:L2"


def test_the_same_id_in_two_sessions_is_two_candidates(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    mine, other = make_memory("s1"), make_memory("s2")
    add(mine, ["The vault code is 1234."], prefix="m")
    add(other, ["The vault code is 4417."], prefix="m")
    items = collect(UnifiedRetrievalSource(mine, scope="global"), "vault code", total=2000)
    assert sorted(it.id for it in items) == ["agent/s2/m0", "m0"]
    assert {it.content for it in items} == {"The vault code is 1234.",
                                            "The vault code is 4417."}


class _Broken:
    name = "broken_kb"

    async def collect(self, request: object) -> list[ContextItem]:
        raise OSError("index offline")


def test_a_failing_knowledge_base_costs_only_its_own_results(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    from loomctx import BuildOptions, ContextBuilder

    memory = make_memory()
    add(memory, ["My dog is called Biscuit."], prefix="m")
    kb = KnowledgeSource([Document("dogs.md", "Dogs like walks; Biscuit is a dog's name.")])
    src = UnifiedRetrievalSource(memory, [_Broken(), kb])  # type: ignore[list-item]
    ids = {it.id for it in collect(src, "dog Biscuit", total=2000)}
    assert {"m0", "dogs.md#0"} <= ids
    report = ContextBuilder([src], options=BuildOptions(format="text")).build_sync(
        "dog Biscuit", max_tokens=500).report
    row = next(r for r in report.sources if r.name == "L4_semantic")
    assert row.error == "partial: broken_kb failed: OSError: index offline"
    assert row.included >= 1


def test_a_question_naming_a_month_prefers_what_was_said_then(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory()
    day = 86_400.0
    june, august = 1_685_577_600.0, 1_690_848_000.0  # 2023-06-01, 2023-08-01 (UTC)
    texts = [("We went hiking by the lake, lovely day.", august + i * day) for i in range(30)]
    texts.insert(3, ("We went hiking by the lake, lovely day too.", june + 9 * day))
    msgs = [{"id": f"h{i}", "role": "user", "content": t, "timestamp": ts}
            for i, (t, ts) in enumerate(texts)]
    memory.add(msgs, now=august + 40 * day)
    question = "Where did we go hiking in June?"
    dated = collect(UnifiedRetrievalSource(memory), question, now=august + 40 * day, total=512)
    plain = collect(UnifiedRetrievalSource(memory, time_cues=False), question,
                    now=august + 40 * day, total=512)
    assert dated[0].id == "h3"
    assert plain[0].id != "h3"  # the lexical tie goes elsewhere without the date cue


def test_a_period_the_question_names_is_searched_on_its_own(
        make_memory: Callable[..., TieredMemory], collect: Collect,
        monkeypatch: pytest.MonkeyPatch) -> None:
    memory = make_memory()
    day = 86_400.0
    now = T0 + 100 * day
    # Sixty messages long before the period fill both session-wide lists; the one message of
    # the period shares no word with the question.
    msgs = [{"id": f"o{i}", "role": "user", "timestamp": T0 + i * 3600,
             "content": f"Gardening activity note {i}: I watered the garden beds."}
            for i in range(60)]
    msgs.append({"id": "then", "role": "user", "timestamp": now - 14 * day,
                 "content": "Planted twelve tomato saplings this morning."})
    memory.add(msgs, now=now)
    question = "What gardening activity did I do two weeks ago?"
    dated = collect(UnifiedRetrievalSource(memory), question, now=now, total=512)
    plain = collect(UnifiedRetrievalSource(memory, time_cues=False), question, now=now,
                    total=512)
    assert "then" in [it.id for it in dated]
    assert "then" not in [it.id for it in plain]
    # A period too large to rank on its own (its vectors might need embedding again) is read
    # from the session-wide lists, where this message is below the cut.
    monkeypatch.setattr(source_module, "PERIOD_RANKED", 0)
    large = collect(UnifiedRetrievalSource(memory), question, now=now, total=512)
    assert "then" not in [it.id for it in large]


@pytest.mark.parametrize("failing", ["search_vector", "search_lexical"])
def test_a_store_that_fails_mid_recall_fails_the_source_with_one_error(
        make_memory: Callable[..., TieredMemory], store: InMemoryStore, collect: Collect,
        monkeypatch: pytest.MonkeyPatch, failing: str) -> None:
    from loomctx.errors import SourceError, StoreError

    memory = make_memory()
    add(memory, ["My dog is called Biscuit."], prefix="m")

    def down(*args: object, **kwargs: object) -> None:
        raise StoreError("connection refused")

    monkeypatch.setattr(store, failing, down)
    # Tenant-wide recall asks the store for both lists (session recall reads its own index).
    src = UnifiedRetrievalSource(memory, scope="global")
    with pytest.raises(SourceError, match="memory store unavailable: connection refused"):
        collect(src, "dog Biscuit", total=2000)


def test_the_question_is_embedded_once_on_a_worker_thread(
        make_memory: Callable[..., TieredMemory], embedder: HashingEmbedder,
        collect: Collect, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    memory = make_memory()
    add(memory, [*FILLER, "My dog is called Biscuit."], prefix="m")
    seen: list[tuple[list[str], bool]] = []
    real = embedder.embed

    def spy(texts: Sequence[str]) -> object:
        seen.append((list(texts), threading.current_thread() is threading.main_thread()))
        return real(texts)

    monkeypatch.setattr(embedder, "embed", spy)
    items = collect(UnifiedRetrievalSource(memory), "What is my dog called?", total=2000)
    assert items[0].id == "m4"
    question = [on_main for texts, on_main in seen if texts == ["What is my dog called?"]]
    assert question == [False]  # once, and off the event loop's thread


def _exchange(memory: TieredMemory, *, reply_role: str = "assistant",
              asked: str = "What did you take up this spring?",
              reply: str = "Pottery, on Tuesday nights.") -> None:
    """Thirty filler lines, a message about a hobby and a reply that shares no word with the
    question below, then thirty more filler lines (none shares a word with it either)."""
    filler = [f"{FILLER[1 + i % 3]} (note {i})" for i in range(60)]
    texts = [*filler[:30], asked, reply, *filler[30:]]
    roles = ["user" if i % 2 == 0 else "assistant" for i in range(len(texts))]
    roles[31] = reply_role  # the reply follows roles[30] == "user"
    memory.add([{"id": f"m{i}", "role": role, "content": text, "timestamp": T0 + i}
                for i, (text, role) in enumerate(zip(texts, roles, strict=True))],
               now=T0 + len(texts))


QUESTION = "Which hobby did they take up this spring?"


def test_the_answer_to_a_matching_question_is_recalled_beside_it(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    _exchange(memory)
    # Three memories per list: the reply matches neither the question's words nor its vector.
    near = collect(UnifiedRetrievalSource(memory, recall_limit=3), QUESTION, total=32)
    alone = collect(UnifiedRetrievalSource(memory, recall_limit=3, adjacent=0), QUESTION,
                    total=32)
    assert near[0].id == alone[0].id == "m30"
    assert "m31" not in [it.id for it in alone]
    ids = [it.id for it in near]
    assert ids.index("m31") <= 2  # among the first few, ahead of most filler
    reply = near[ids.index("m31")]
    assert reply.content == "Pottery, on Tuesday nights."
    assert reply.metadata["adjacent_to"] == "m30"  # the report says why it is there
    assert "adjacent_to" not in near[0].metadata
    assert "m29" not in ids  # what came before the question answers nothing


def test_the_question_a_matching_answer_replied_to_comes_along(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    _exchange(memory, asked="What is new with you?",
              reply="I took up pottery this spring, on Tuesday nights.")
    items = collect(UnifiedRetrievalSource(memory, recall_limit=3), QUESTION, total=32)
    alone = collect(UnifiedRetrievalSource(memory, recall_limit=3, adjacent=0), QUESTION,
                    total=32)
    assert "m30" not in [it.id for it in alone]  # no list of its own recalls the question
    ids = [it.id for it in items]
    assert ids[0] == "m31"
    assert items[ids.index("m30")].metadata["adjacent_to"] == "m31"


def test_the_message_after_a_statement_is_not_brought_in(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    _exchange(memory, asked="I took up pottery this spring.", reply="Nice, enjoy it.")
    items = collect(UnifiedRetrievalSource(memory, recall_limit=3), QUESTION, total=32)
    alone = collect(UnifiedRetrievalSource(memory, recall_limit=3, adjacent=0), QUESTION,
                    total=32)
    assert items[0].id == "m30"
    assert [(it.id, it.scores) for it in items] == [(it.id, it.scores) for it in alone]
    assert not any("adjacent_to" in it.metadata for it in items)


def test_a_neighbour_of_the_same_role_is_not_a_reply(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    _exchange(memory, reply_role="user")
    items = collect(UnifiedRetrievalSource(memory, recall_limit=3), QUESTION, total=32)
    assert items[0].id == "m30"
    assert "m31" not in [it.id for it in items]
    assert memory.adjacent("m30") == [memory.records["m29"]]  # only the one before


def test_global_recall_brings_no_neighbours(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    _exchange(memory)
    items = collect(UnifiedRetrievalSource(memory, recall_limit=3, scope="global"), QUESTION,
                    total=32)
    assert items[0].id == "m30"
    assert "m31" not in [it.id for it in items]
def test_neighbours_are_the_reply_then_the_message_replied_to(
        make_memory: Callable[..., TieredMemory], store: InMemoryStore,
        embedder: HashingEmbedder, counter: TokenCounter) -> None:
    memory = make_memory(l1_max_tokens=20)  # most of the conversation leaves L1
    add(memory, [f"Line {i} about nothing much at all." for i in range(12)], prefix="m")
    assert [r.id for r in memory.adjacent("m5")] == ["m6", "m4"]
    assert [r.id for r in memory.adjacent("m0")] == ["m1"]
    assert [r.id for r in memory.adjacent("m11")] == ["m10"]
    assert memory.adjacent("nope") == []
    # A restarted session finds the same neighbours in the store, whatever their tier now.
    again = TieredMemory(store, embedder, counter, session="s1", agent="agent")
    assert [r.id for r in again.adjacent("m5")] == ["m6", "m4"]
    assert {r.level for r in again.adjacent("m5")} <= {"L2", "L4"}


def test_a_match_stored_by_another_view_of_the_session_brings_no_neighbours(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    mine = make_memory(l1_max_tokens=10**6)
    add(mine, FILLER[1:], prefix="m")
    other = make_memory(l1_max_tokens=10**6)  # the same session, e.g. in another process
    other.add([{"id": "x1", "role": "user", "content": "What did you take up this spring?"},
               {"id": "x2", "role": "assistant", "content": "Pottery, on Tuesday nights."}],
              now=T0 + 10)
    items = collect(UnifiedRetrievalSource(mine), QUESTION, total=2000)
    ids = [it.id for it in items]
    assert "x1" in ids  # found by the store's dense search, unknown to this view
    assert not any("adjacent_to" in it.metadata for it in items)


TWO_HOP = "The director of the romantic comedy Big Stone Gap is based in what city?"


def _passages(memory: TieredMemory, first: str, second: str) -> None:
    """Forty filler passages with the two hops among them, every one from the same role."""
    filler = [f"{FILLER[1 + i % 3]} (note {i})" for i in range(40)]
    texts = [*filler[:20], first, *filler[20:30], second, *filler[30:]]
    memory.add([{"id": f"p{i}", "role": "user", "content": text, "timestamp": T0 + i}
                for i, text in enumerate(texts)], now=T0 + len(texts))


def test_the_names_the_best_match_adds_find_the_second_hop(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    _passages(memory, "Big Stone Gap is a romantic comedy directed by Adriana Trigiani.",
              "Adriana Trigiani lives and writes in Greenwich Village.")
    bridged = [it.id for it in collect(UnifiedRetrievalSource(memory, recall_limit=3),
                                       TWO_HOP, total=32)]
    alone = [it.id for it in collect(UnifiedRetrievalSource(memory, recall_limit=3,
                                                            bridge_terms=0), TWO_HOP, total=32)]
    assert bridged[0] == alone[0] == "p20"  # the first hop
    assert "p31" not in alone  # the second shares no word with the question
    assert bridged.index("p31") <= 2
    # Global recall searches the store, not this session's index: no bridge there.
    wide = [collect(UnifiedRetrievalSource(memory, recall_limit=3, scope="global",
                                           bridge_terms=n), TWO_HOP, total=32) for n in (8, 0)]
    assert [(it.id, it.scores) for it in wide[0]] == [(it.id, it.scores) for it in wide[1]]


def _unexpanded(memory: TieredMemory) -> UnifiedRetrievalSource:
    """Recall without the rewritten query's list: the lists searched are the question's own and
    the bridge's."""
    return UnifiedRetrievalSource(memory, recall_limit=3, follow_up_terms=1)


def _guessing(memory: TieredMemory, monkeypatch: pytest.MonkeyPatch,
              early: str) -> list[str]:
    """Make the early guess of the best match ``early`` (the fused one stays as it is) and
    record every lexical search's query in the list returned."""
    real_matches, real_search = UnifiedRetrievalSource._matches, memory.search_lexical
    searched: list[str] = []

    def search(query: str, limit: int) -> list:
        searched.append(query)
        return real_search(query, limit)

    def guess(self: UnifiedRetrievalSource, lexical: list, dense: list) -> list:
        return real_matches(self, lexical, dense) if dense else [memory.records[early]]

    monkeypatch.setattr(memory, "search_lexical", search)
    monkeypatch.setattr(UnifiedRetrievalSource, "_matches", guess)
    return searched


def test_the_bridge_follows_the_best_match_whatever_was_guessed_early(
        make_memory: Callable[..., TieredMemory], collect: Collect,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The bridge list is searched while the dense search runs, on the best lexical match; when
    the fused best match adds other names it is searched again, so only time is lost."""
    memory = make_memory(l1_max_tokens=10**6)
    _passages(memory, "Big Stone Gap is a romantic comedy directed by Adriana Trigiani.",
              "Adriana Trigiani lives and writes in Greenwich Village.")
    want = collect(_unexpanded(memory), TWO_HOP, total=32)
    with monkeypatch.context() as patch:
        searched = _guessing(memory, patch, "p5")  # a filler passage, guessed early
        got = collect(_unexpanded(memory), TWO_HOP, total=32)
    filler = UnifiedRetrievalSource(memory)._bridge_query(TWO_HOP, [memory.records["p5"]])
    # the question's own list aside: the guess, then the best match
    assert [q for q in searched if q != TWO_HOP] == [filler, f"{TWO_HOP} Adriana Trigiani"]
    assert [it.id for it in got] == [it.id for it in want] and "p31" in [it.id for it in got]
    for a, b in zip(got, want, strict=True):
        assert a.scores == pytest.approx(b.scores, abs=1e-6)
    with monkeypatch.context() as patch:
        searched = _guessing(memory, patch, "p20")  # the best match itself
        collect(_unexpanded(memory), TWO_HOP, total=32)
    assert [q for q in searched if q != TWO_HOP] == [f"{TWO_HOP} Adriana Trigiani"]  # once


def test_a_wrong_guess_that_adds_the_same_names_is_not_searched_again(
        make_memory: Callable[..., TieredMemory], collect: Collect,
        monkeypatch: pytest.MonkeyPatch) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    _passages(memory, "Big Stone Gap is a romantic comedy directed by Adriana Trigiani.",
              "Adriana Trigiani lives and writes in Greenwich Village.")
    memory.add([{"id": "twin", "role": "user", "timestamp": T0 + 99,
                 "content": "A film by Adriana Trigiani."}], now=T0 + 100)
    want = collect(_unexpanded(memory), TWO_HOP, total=32)
    searched = _guessing(memory, monkeypatch, "twin")  # another memory, the same names
    got = collect(_unexpanded(memory), TWO_HOP, total=32)
    assert [q for q in searched if q != TWO_HOP] == [f"{TWO_HOP} Adriana Trigiani"]
    assert [(it.id, it.scores) for it in got] == [(it.id, it.scores) for it in want]


@pytest.mark.parametrize("adjacent", [0, 1, 3])
def test_the_best_matches_of_one_list_are_its_own_order(
        make_memory: Callable[..., TieredMemory], adjacent: int) -> None:
    """With the dense list not yet there, the early guess takes the lexical list's order: the
    order rank fusion gives one list, ties by id included (a zero lexical weight ties them all)."""
    memory = make_memory(l1_max_tokens=10**6)
    _passages(memory, "Big Stone Gap is a romantic comedy directed by Adriana Trigiani.",
              "Adriana Trigiani lives and writes in Greenwich Village.")
    hits = memory.search_lexical("Adriana Trigiani comedy Village passage", 20)
    hits = [*hits[3:], *hits[:3]]  # not in id order
    for weights in (None, RerankWeights(list_weights={"lexical": 0.0, "dense": 1.0})):
        source = UnifiedRetrievalSource(memory, adjacent=adjacent,
                                        reranker=UnifiedReranker(weights))
        fused = {h.record.id: source.reranker.fusion_credit({"lexical": r})
                 for r, h in enumerate(hits)}
        want = sorted(fused, key=lambda i: (-fused[i], i))[:max(1, adjacent)]
        assert [r.id for r in source._matches(hits, [])] == want
    assert want != [h.record.id for h in hits[:max(1, adjacent)]]  # the zero weight: by id


@settings(max_examples=200, deadline=None, derandomize=True)
@given(lexical=st.lists(st.integers(0, 90), max_size=300),
       dense=st.lists(st.integers(0, 90), max_size=300), want=st.integers(1, 40),
       weights=st.sampled_from([None, {"lexical": 0.0, "dense": 1.0}, {"lexical": 2.5},
                                {"lexical": 0.0, "dense": 0.0}]))
def test_the_fused_best_are_those_of_every_rank(lexical: list[int], dense: list[int],
                                               want: int, weights: dict | None) -> None:
    """fused_best scores only the lists' heads: it must give what fusing every rank gives,
    duplicates within a list, ties and zero weights included."""
    reranker = UnifiedReranker(None if weights is None else RerankWeights(list_weights=weights))

    def hits(ids: list[int]) -> list[Hit]:
        return [Hit(MemoryRecord(id=f"r{i:03d}", content="x"), 0.0) for i in ids]

    ranks: dict[str, dict[str, int]] = {}
    for kind, ids in (("lexical", lexical), ("dense", dense)):
        for rank, i in enumerate(ids):
            ranks.setdefault(f"r{i:03d}", {}).setdefault(kind, rank)
    fused = {i: reranker.fusion_credit(r) for i, r in ranks.items()}
    every = sorted(fused, key=lambda i: (-fused[i], i))[:want]
    assert fused_best(hits(lexical), hits(dense), want, reranker) == every


def test_a_match_below_the_heads_of_both_lists_is_found() -> None:
    """An id at rank 32 of both lists (credit 2/42) ties the heads' 23rd best (1/21, rank 11
    of one list) and comes first by id: fused_best must look past the heads to find it."""
    lexical = [*(f"l{r:02d}" for r in range(32)), "a"]
    dense = [*(f"d{r:02d}" for r in range(32)), "a"]

    def hits(ids: list[str]) -> list[Hit]:
        return [Hit(MemoryRecord(id=i, content="x"), 0.0) for i in ids]

    best = fused_best(hits(lexical), hits(dense), 23, UnifiedReranker())
    assert best[-1] == "a"
    assert sorted(best[:22]) == sorted(f"{side}{r:02d}" for side in "ld" for r in range(11))


def test_names_the_question_has_or_that_start_a_sentence_are_no_bridge(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    # "Big", "Stone", "Gap" are in the question; "Then" and "Lunch" start sentences.
    _passages(memory, "Big Stone Gap is a romantic comedy. Then it rained. Lunch was late.",
              "Greenwich Village is in lower Manhattan.")
    with_bridge = collect(UnifiedRetrievalSource(memory, recall_limit=3), TWO_HOP, total=32)
    without = collect(UnifiedRetrievalSource(memory, recall_limit=3, bridge_terms=0), TWO_HOP,
                      total=32)
    assert with_bridge[0].id == "p20"
    assert [(it.id, it.scores) for it in with_bridge] == [(it.id, it.scores) for it in without]


def _chat(memory: TieredMemory, lines: Sequence[str]) -> None:
    """Lines said in turn by Caroline (user) and Melanie (assistant), labelled with their names."""
    memory.add([{"id": f"c{i}", "role": "user" if i % 2 == 0 else "assistant",
                 "content": f"{'Caroline' if i % 2 == 0 else 'Melanie'}: {text}",
                 "timestamp": T0 + i} for i, text in enumerate(lines)],
               now=T0 + len(lines))


def test_speakers_are_labels_that_many_messages_carry(
        make_memory: Callable[..., TieredMemory], store: InMemoryStore,
        embedder: HashingEmbedder, counter: TokenCounter) -> None:
    memory = make_memory(l1_max_tokens=20)
    _chat(memory, [f"line {i} of our chat" for i in range(40)])
    memory.add([{"id": "p", "role": "user", "content": "Big Stone Gap (film): a 2014 comedy.",
                 "timestamp": T0 + 50}], now=T0 + 51)
    assert memory.speakers() == {"caroline", "melanie"}  # a title labels one passage
    assert memory.speakers(min_share=0.6) == frozenset()  # each speaker has half the lines
    # A restarted session counts the same labels from the store.
    again = TieredMemory(store, embedder, counter, session="s1", agent="agent")
    assert again.speakers() == {"caroline", "melanie"}
    # Fewer than 3 messages with a label are no speaker's, whatever their share.
    few = make_memory(session="s2")
    _chat(few, ["hello", "hi"])
    assert few.speakers() == frozenset()
    # Counted again once the session grows.
    few.add([{"id": f"x{i}", "role": "user", "content": f"Nate: more news {i}",
              "timestamp": T0 + 10 + i} for i in range(3)], now=T0 + 20)
    assert few.speakers() == {"nate"}


def test_the_question_is_embedded_without_the_speakers_names(
        make_memory: Callable[..., TieredMemory], embedder: HashingEmbedder,
        collect: Collect, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = make_memory()
    _chat(memory, [f"line {i} of our chat" for i in range(10)])
    seen: list[str] = []
    real = embedder.embed

    def spy(texts: Sequence[str]) -> object:
        seen.extend(texts)
        return real(texts)

    monkeypatch.setattr(embedder, "embed", spy)
    question = "What are Melanie's hobbies?"
    items = collect(UnifiedRetrievalSource(memory), question, total=2000)
    assert items and "What are hobbies?" in seen and question not in seen
    seen.clear()
    collect(UnifiedRetrievalSource(memory, unnamed_query=False), question, total=2000)
    assert question in seen and "What are hobbies?" not in seen


def test_a_reply_is_scored_with_the_context_it_was_said_in(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    # The reply (m31) shares no word with the question; the line before it shares them all.
    _exchange(memory, asked="I took up pottery this spring, on Tuesday nights.",
              reply="Wow, that sounds wonderful.")
    question = "Which hobby did they take up this spring?"

    def vector(context: float) -> float:
        src = UnifiedRetrievalSource(memory, context=context, adjacent=0, recall_limit=64)
        by_id = {it.id: it for it in collect(src, question, total=2000)}
        return by_id["m31"].scores["vector"] / by_id["m30"].scores["vector"]

    # Scored alone the reply is nearly unrelated; in its context it takes a share of the match.
    alone, in_context = vector(0.0), vector(0.6)
    assert in_context > alone + 0.1


def test_context_weight_is_validated(make_memory: Callable[..., TieredMemory]) -> None:
    for bad in (-0.1, float("nan"), float("inf"), True, "0.6"):
        with pytest.raises(ConfigError, match="context must be a finite number >= 0"):
            UnifiedRetrievalSource(make_memory(), context=bad)  # type: ignore[arg-type]


LONG_REPLY = "Pottery, on Tuesday nights. " + " ".join(
    f"Clay number {i} was shaped, glazed and fired in the kiln." for i in range(12))


def test_a_long_reply_is_judged_on_its_own_words(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    """A long answer inherits no credit from the question it follows; a short one does."""
    memory = make_memory(l1_max_tokens=10**6)
    _exchange(memory, reply=LONG_REPLY)
    assert memory.counter.count(LONG_REPLY) >= 96
    judged = collect(UnifiedRetrievalSource(memory, recall_limit=3, own_words=96), QUESTION,
                     total=32)
    inherits = collect(UnifiedRetrievalSource(memory, recall_limit=3, own_words=None),
                       QUESTION, total=32)
    assert "m31" in [it.id for it in inherits]
    assert "m31" not in [it.id for it in judged]
    short = collect(UnifiedRetrievalSource(memory, recall_limit=3, own_words=10**6), QUESTION,
                    total=32)
    assert "m31" in [it.id for it in short]


def test_a_long_message_is_not_blended_with_its_exchange(
        make_memory: Callable[..., TieredMemory], collect: Collect) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    _exchange(memory, asked="I took up pottery this spring, on Tuesday nights.",
              reply="Wow, that sounds wonderful. " + LONG_REPLY[28:])

    def vector(own_words: int | None) -> float:
        src = UnifiedRetrievalSource(memory, context=0.6, adjacent=0, recall_limit=64,
                                     own_words=own_words)
        return {it.id: it for it in collect(src, QUESTION, total=2000)}["m31"].scores["vector"]

    assert vector(96) < vector(None)


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "96"])
def test_own_words_is_validated(make_memory: Callable[..., TieredMemory], bad: object) -> None:
    with pytest.raises(ConfigError, match="own_words must be an int >= 1 or None"):
        UnifiedRetrievalSource(make_memory(), own_words=bad)  # type: ignore[arg-type]


def test_only_a_follow_up_is_expanded_with_the_recent_turns(
        make_memory: Callable[..., TieredMemory], collect: Collect,
        monkeypatch: pytest.MonkeyPatch) -> None:
    memory = make_memory(l1_max_tokens=10**6)
    add(memory, [*FILLER, "My dog Biscuit loves the beach.", "Biscuit swims every morning."],
        prefix="m")
    searched: list[str] = []
    real = memory.search_lexical

    def spy(text: str, limit: int) -> list:  # type: ignore[type-arg]
        searched.append(text)
        return real(text, limit)

    monkeypatch.setattr(memory, "search_lexical", spy)
    follow_up = UnifiedRetrievalSource(memory, bridge_terms=0, follow_up_terms=2)
    collect(follow_up, "And the second one?", total=2000)
    assert len(searched) == 2 and "biscuit" in searched[1].lower()  # asked, then expanded
    searched.clear()
    asked = "Which train was late on the Thursday meeting day?"
    collect(UnifiedRetrievalSource(memory, bridge_terms=0, follow_up_terms=2), asked, total=2000)
    assert searched == [asked]  # names its own subject: searched as asked
    searched.clear()
    collect(UnifiedRetrievalSource(memory, bridge_terms=0), asked, total=2000)  # the default
    assert len(searched) == 2 and searched[0] == asked
