"""The stores' top-k: the best hits by score, ties by (id, agent, session), whatever the limit."""

import random

from loomctx.stores import MemoryRecord
from loomctx.stores._records import top


def _full_sort(pairs, limit):
    return sorted(pairs, key=lambda p: (-p[1], p[0].id, p[0].agent or "", p[0].session or ""))[
        :limit]


def test_top_is_the_full_sort_ties_included_for_every_limit():
    rng = random.Random(5)
    pairs = [(MemoryRecord(id=f"r{rng.randrange(6)}", content="x", agent=rng.choice(["a", "b"]),
                           session=rng.choice([None, "s1", "s2"])),
              rng.choice([0.5, 0.25, 0.125, 0.0]))  # few values: many ties
             for _ in range(60)]
    for limit in (0, 1, 5, 30, 59, 60, 61, 200):
        got = top(iter(pairs), limit)  # a generator, as the stores pass it
        want = _full_sort(pairs, limit)
        assert [(h.record, h.score) for h in got] == want


def test_top_without_ties_and_with_one_tie_is_the_full_sort():
    rng = random.Random(7)
    records = [MemoryRecord(id=f"r{k:03d}", content="x", agent=rng.choice(["a", "b"]))
               for k in range(80)]
    distinct = [(r, rng.random()) for r in records]  # no tie: ordered by score alone
    tied = [*distinct[:40], (distinct[40][0], distinct[3][1]), *distinct[41:]]  # one tie
    rng.shuffle(tied)
    for pairs in (distinct, tied):
        for limit in (0, 1, 3, 40, 79, 80, 81):
            got = top(iter(pairs), limit)
            assert [(h.record, h.score) for h in got] == _full_sort(pairs, limit)
