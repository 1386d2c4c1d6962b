"""Sign-ins ended before their time: what ``POST /logout`` records, so the cookie it ends no
longer opens a page even if it was copied before the browser dropped it.

A page cookie (:mod:`.login`) carries a random sign-in id. Logging out records that id until
the cookie would have expired anyway. One process keeps the record in memory; processes over a
shared PostgreSQL store (:mod:`.shared`) keep it in ``loomctx_proxy_signouts`` as well, so a
cookie ended on one process is refused by every other at its next page.

The in-memory record is bounded (:data:`MAX_LOCAL`): only a valid cookie can be ended, and each
entry leaves when its cookie would have expired; past the bound the entries closest to their
expiry are dropped first (the database keeps them all until then).
"""

from __future__ import annotations

import heapq
import time

from loomctx.service.shared import SharedSessions

MAX_LOCAL = 100_000
"""Ended sign-ins one process remembers in memory."""
PRUNE_EVERY = 256
"""Sign-outs recorded between two removals of expired rows from the shared table."""


class SignOuts:
    """The sign-ins ended by ``POST /logout`` and not expired yet."""

    def __init__(self, shared: SharedSessions | None, *, limit: int = MAX_LOCAL) -> None:
        self.shared = shared
        self.limit = limit
        self._ended: dict[str, float] = {}
        self._expiry: list[tuple[float, str]] = []
        self._recorded = 0

    async def end(self, signin: str, expires: float) -> None:
        """Record that the sign-in ``signin`` (valid until ``expires``, epoch seconds) ended."""
        self._forget_expired()
        if signin not in self._ended:
            self._ended[signin] = expires
            heapq.heappush(self._expiry, (expires, signin))
            while len(self._ended) > self.limit:
                _, gone = heapq.heappop(self._expiry)
                self._ended.pop(gone, None)
        if self.shared is not None:
            self._recorded += 1
            prune = self._recorded % PRUNE_EVERY == 0
            await self.shared.end_signin(signin, expires,
                                         prune_before=time.time() if prune else None)

    async def ended(self, signin: str) -> bool:
        """Whether ``signin`` was ended here or, over a shared store, by any process."""
        self._forget_expired()
        if signin in self._ended:
            return True
        return self.shared is not None and await self.shared.signin_ended(signin)

    def _forget_expired(self) -> None:
        now = time.time()
        while self._expiry and self._expiry[0][0] < now:
            _, gone = heapq.heappop(self._expiry)
            self._ended.pop(gone, None)


__all__ = ["MAX_LOCAL", "SignOuts"]
