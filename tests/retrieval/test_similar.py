"""Similarities: a build's cosines and exchanges, worked out in two steps or in one alike."""

from __future__ import annotations

import numpy as np
import pytest

from loomctx.embed.fake import HashingEmbedder
from loomctx.memory.tiers import MemoryOptions, TieredMemory
from loomctx.retrieval.reranker import Candidate
from loomctx.retrieval.similar import Similarities
from loomctx.stores.memory import InMemoryStore
from loomctx.stores.protocol import MemoryRecord
from loomctx.text.decoration import index_text
from loomctx.tokens.protocol import TokenCounter

T0 = 1_714_500_000.0
TEXTS = ["Any plans for the summer?", "Researching adoption agencies.", "That is lovely news.",
         "The train was late again today.", "Lunch was a sandwich.", "Pottery on Tuesdays."]
W = 0.5


@pytest.fixture
def memory(embedder: HashingEmbedder, counter: TokenCounter) -> TieredMemory:
    m = TieredMemory(InMemoryStore(), embedder, counter, session="s", agent="a",
                     options=MemoryOptions(l1_max_tokens=10**6))
    m.add([{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant", "content": text,
            "timestamp": T0 + i} for i, text in enumerate(TEXTS)], now=T0 + len(TEXTS))
    return m


def _qvec(embedder: HashingEmbedder) -> np.ndarray:
    return embedder.embed(["What is she researching for the summer?"])[0]


def _cos(embedder: HashingEmbedder, q: np.ndarray, text: str) -> float:
    return float(embedder.embed([index_text(text)])[0] @ q)


def _candidates(memory: TieredMemory, ids: list[str], sims: Similarities) -> list[Candidate]:
    out = []
    for i in ids:
        r = memory.records[i]
        out.append(Candidate(id=i, content=r.content, origin="memory:L1", role=r.role,
                             vector=sims.cosine(r), payload=r))
    return out


def test_a_memory_is_blended_with_the_cosines_of_its_exchange(
        memory: TieredMemory, embedder: HashingEmbedder) -> None:
    q = _qvec(embedder)
    sims = Similarities(memory, q, context=W)
    (c,) = _candidates(memory, ["m1"], sims)
    own = _cos(embedder, q, TEXTS[1])
    assert c.vector == pytest.approx(own, abs=1e-6)
    sims.blend([c])
    around = (_cos(embedder, q, TEXTS[2]) + _cos(embedder, q, TEXTS[0])) / 2  # after, before
    assert c.vector == pytest.approx((own + W * around) / (1 + W), abs=1e-6)


def test_the_first_and_last_messages_are_blended_with_their_one_neighbour(
        memory: TieredMemory, embedder: HashingEmbedder) -> None:
    q = _qvec(embedder)
    sims = Similarities(memory, q, context=W)
    first, last = _candidates(memory, ["m0", f"m{len(TEXTS) - 1}"], sims)
    own_first, own_last = first.vector, last.vector
    sims.blend([first, last])
    after_first = _cos(embedder, q, TEXTS[1])
    before_last = _cos(embedder, q, TEXTS[-2])
    assert first.vector == pytest.approx((own_first + W * after_first) / (1 + W), abs=1e-6)
    assert last.vector == pytest.approx((own_last + W * before_last) / (1 + W), abs=1e-6)


def test_a_neighbour_that_is_a_candidate_counts_with_its_own_score(
        memory: TieredMemory, embedder: HashingEmbedder) -> None:
    q = _qvec(embedder)
    sims = Similarities(memory, q, context=W)
    first, second = _candidates(memory, ["m0", "m1"], sims)
    first.vector = 0.9  # e.g. the dense search's score
    own = second.vector
    sims.blend([first, second])
    around = (_cos(embedder, q, TEXTS[2]) + 0.9) / 2
    assert second.vector == pytest.approx((own + W * around) / (1 + W), abs=1e-6)


def test_work_done_early_gives_the_values_of_work_done_at_once(
        memory: TieredMemory, embedder: HashingEmbedder) -> None:
    q = _qvec(embedder)
    ids = ["m1", "m3", "m4", "m0"]
    early = Similarities(memory, q, context=W)
    early.add(memory.records[i] for i in ids[:2])  # what the lexical lists found first
    at_once = Similarities(memory, q, context=W)
    a, b = _candidates(memory, ids, early), _candidates(memory, ids, at_once)
    early.blend(a)
    at_once.blend(b)
    assert [c.vector for c in a] == pytest.approx([c.vector for c in b], abs=1e-6)


def test_no_context_leaves_each_memory_its_own_cosine(
        memory: TieredMemory, embedder: HashingEmbedder) -> None:
    q = _qvec(embedder)
    sims = Similarities(memory, q, context=0.0)
    (c,) = _candidates(memory, ["m1"], sims)
    before = c.vector
    sims.blend([c])
    assert c.vector == before


def test_short_limits_which_messages_are_judged_with_their_exchange(
        memory: TieredMemory, embedder: HashingEmbedder) -> None:
    q = _qvec(embedder)
    sims = Similarities(memory, q, context=W, short=lambda r: "adoption" not in r.content)
    (c,) = _candidates(memory, ["m1"], sims)
    before = c.vector
    sims.blend([c])
    assert c.vector == before  # m1 is not "short": scored alone
    other = MemoryRecord(id="x", content="elsewhere", role="user", tenant="t", timestamp=T0)
    assert Similarities(memory, q, context=W).cosine(other) == pytest.approx(
        _cos(embedder, q, "elsewhere"), abs=1e-6)
