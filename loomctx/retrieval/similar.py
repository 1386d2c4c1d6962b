"""Each memory's similarity to the question, and its exchange's, worked out once per build.

The dense search over the whole session is recall's slowest step and runs on a worker thread;
the lexical lists are ready well before it ends. Their memories' similarities and exchanges are
worked out in that wait (:meth:`Similarities.add`), so once the dense list arrives only the
memories new in it are left to do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from loomctx.memory.tiers import TieredMemory
from loomctx.retrieval.reranker import Candidate
from loomctx.stores.protocol import MemoryRecord


class Similarities:
    """One build's cosines to the question (``qvec``) of a session's own memories, and the
    exchange each short one is judged with (``short``; none when ``context`` is 0)."""

    def __init__(self, memory: TieredMemory, qvec: np.ndarray, *, context: float,
                 short: Callable[[str], bool]) -> None:
        self._memory = memory
        self._qvec = qvec
        self._context = context
        self._short = short
        self._cos: dict[str, float] = {}
        self._near: dict[str, list[MemoryRecord]] = {}

    def _cosines(self, records: Iterable[MemoryRecord]) -> None:
        new = list({r.id: r for r in records if r.id not in self._cos}.values())
        if new:  # one dot product each: a memory's value never depends on the others asked
            q = self._qvec
            for r, v in zip(new, self._memory.vectors(new), strict=True):
                self._cos[r.id] = float(v @ q)

    def add(self, records: Iterable[MemoryRecord], *, cosines: bool = True) -> None:
        """Work out what the records will need: their exchanges, their neighbours' cosines and
        (with ``cosines``) their own. A record added again costs nothing."""
        records = list(records)
        if cosines:
            self._cosines(records)
        if not self._context:
            return
        near = self._near
        rest = []
        for r in records:
            if r.id not in near:
                rs = near[r.id] = self._memory.adjacent(r.id) if self._short(r.content) else []
                rest.extend(rs)
        self._cosines(rest)

    def cosine(self, record: MemoryRecord) -> float:
        """The record's cosine to the question (one dot product, kept)."""
        self._cosines((record,))
        return self._cos[record.id]

    def blend(self, cands: Sequence[Candidate]) -> None:
        """Blend each own memory's similarity with its exchange's: ``(own + context · their
        mean) / (1 + context)``. A neighbour that is a candidate counts with its own score."""
        own = [c for c in cands if isinstance(c.payload, MemoryRecord) and c.id == c.payload.id]
        self.add((c.payload for c in own), cosines=False)  # type: ignore[misc]
        sims = {c.id: c.vector for c in own}  # before any is blended
        cos = self._cos
        w = self._context
        for c in own:
            rs = self._near[c.id]
            if rs:
                mean = sum(sims[r.id] if r.id in sims else cos[r.id] for r in rs) / len(rs)
                c.vector = (c.vector + w * mean) / (1.0 + w)


__all__ = ["Similarities"]
