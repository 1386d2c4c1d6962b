"""Each memory's similarity to the question, and its exchange's, worked out once per build.

The dense search over the whole session is recall's slowest step and runs on a worker thread;
the lexical lists are ready well before it ends. Their memories' similarities and exchanges are
worked out in that wait (:meth:`Similarities.add`), so once the dense list arrives only the
memories new in it are left to do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from loomctx._blas import limited
from loomctx.memory.tiers import TieredMemory
from loomctx.retrieval.reranker import Candidate
from loomctx.stores.protocol import MemoryRecord


class Similarities:
    """One build's cosines to the question (``qvec``) of a session's own memories, and the
    exchange each one is judged with (none when ``context`` is 0; with ``short``, only for the
    messages it accepts)."""

    def __init__(self, memory: TieredMemory, qvec: np.ndarray, *, context: float,
                 short: Callable[[MemoryRecord], bool] | None = None) -> None:
        self._memory = memory
        self._qvec = qvec
        self._context = context
        self._short = short
        self._cos: dict[str, float] = {}
        self._near: dict[str, tuple[MemoryRecord, ...]] = {}

    def add(self, records: Iterable[MemoryRecord], *, cosines: bool = True) -> None:
        """Work out what the records will need: their exchanges, their neighbours' cosines and
        (with ``cosines``) their own. A record added again costs nothing."""
        cos, near, short = self._cos, self._near, self._short
        exchange = self._memory.exchange if self._context else None
        todo: dict[str, MemoryRecord] = {}
        for r in records:
            rid = r.id
            if cosines and rid not in cos:
                todo[rid] = r
            if exchange is not None and rid not in near:
                rs = near[rid] = exchange(rid) if short is None or short(r) else ()
                for x in rs:
                    if x.id not in cos:
                        todo[x.id] = x
        if todo:
            with limited(1):  # a thousand rows: a second BLAS thread only spins
                sims = self._memory.vectors(list(todo.values())) @ self._qvec
            cos.update(zip(todo, sims.tolist(), strict=True))

    def cosine(self, record: MemoryRecord) -> float:
        """The record's cosine to the question (kept)."""
        if record.id not in self._cos:
            self.add((record,))
        return self._cos[record.id]

    def blend(self, cands: Sequence[Candidate]) -> None:
        """Blend each own memory's similarity with its exchange's: ``(own + context · their
        mean) / (1 + context)``. A neighbour that is a candidate counts with its own score."""
        if not self._context:
            return
        pairs = [(c, r) for c in cands if isinstance(r := c.payload, MemoryRecord) and c.id == r.id]
        self.add([r for _, r in pairs], cosines=False)
        # A neighbour's score in one look-up: a candidate's own (before any is blended), else
        # its cosine.
        value = dict(self._cos)
        value.update({c.id: c.vector for c, _ in pairs})
        near, w = self._near, self._context
        for c, _ in pairs:
            rs = near[c.id]
            if not rs:
                continue
            # An exchange is a reply and what it replied to: one or two neighbours, summed as
            # sum() would (from 0) without a comprehension per candidate.
            total = 0.0 + value[rs[0].id]
            for r in rs[1:]:
                total += value[r.id]
            c.vector = (c.vector + w * (total / len(rs))) / (1.0 + w)


__all__ = ["Similarities"]
