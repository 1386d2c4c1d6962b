"""The one retry policy: how long to wait before each new attempt of something that failed.

Every loop that tries again (a model call on a 429, 5xx or timeout; a bus handler that raised;
a Redis command while the server is away; an event emitted while the bus reconnects) asks a
:class:`Backoff` for its next wait: ``min(max, base * 2**attempt)``, fully jittered for calls
many clients make at once (model APIs), exact where a test or an operator reads the schedule
(the bus). When to give up is each loop's own: a number of attempts, a deadline, or never.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from loomctx.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """How long to wait before each retry: ``min(max, base * 2**attempt)``, jittered."""

    base: float = 0.5
    """Seconds of the first wait's ceiling; each later attempt doubles it."""
    max: float = 30.0
    """Ceiling of one wait, a server's ``Retry-After`` included (``math.inf``: none)."""
    jitter: bool = True
    """Full jitter (a uniform wait in ``[0, ceiling]``) so many clients do not retry in step."""

    def __post_init__(self) -> None:
        if self.base < 0 or self.max < 0:
            raise ConfigError(f"Backoff needs base >= 0 and max >= 0, got base={self.base!r}, "
                              f"max={self.max!r}")

    def delay(self, attempt: int, rnd: Callable[[], float] = random.random,
              retry_after: float | None = None) -> float:
        """Seconds before retry number ``attempt`` (0 for the first retry)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max)
        ceiling = self.max if attempt >= 1024 else min(self.max, self.base * 2 ** attempt)
        return rnd() * ceiling if self.jitter else ceiling


DEFAULT_BACKOFF = Backoff()
"""0.5 s doubling up to 30 s, fully jittered: model calls."""
RECONNECT = Backoff(base=0.05, max=1.0, jitter=False)
"""50 ms doubling up to 1 s: reconnecting to a local service (a bus's Redis)."""


def exact(base: float, ceiling: float = math.inf) -> Backoff:
    """``base`` doubling up to ``ceiling``, unjittered."""
    return Backoff(base=base, max=ceiling, jitter=False)


__all__ = ["DEFAULT_BACKOFF", "RECONNECT", "Backoff", "exact"]
