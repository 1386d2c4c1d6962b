"""The retry policy: loomctx's Backoff against tenacity, on schedule and on per-call cost.

Why: every retrying loop (model calls, the bus) waits by :class:`loomctx.retry.Backoff`; a
well-kept library (tenacity) does the same, so ours stays only if it is measurably as good.
Measured: the cost a successful call pays for being retryable (an async no-op called 20,000
times, median of 5) and the wait schedule both draw from the same random numbers. tenacity is
not a dependency: install it to compare (``pip install tenacity``).

    python benchmarks/bench_retry.py
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable, Coroutine
from typing import Any

import tenacity

from loomctx.retry import DEFAULT_BACKOFF


async def ok() -> int:
    return 1


async def ours(n: int) -> None:
    for _ in range(n):
        for attempt in range(4):
            try:
                await ok()
                break
            except OSError:
                await asyncio.sleep(DEFAULT_BACKOFF.delay(attempt))


async def ten(n: int) -> None:
    for _ in range(n):
        async for a in tenacity.AsyncRetrying(
                stop=tenacity.stop_after_attempt(4),
                wait=tenacity.wait_random_exponential(multiplier=0.5, max=30),
                retry=tenacity.retry_if_exception_type(OSError)):
            with a:
                await ok()


def per_call_us(f: Callable[[int], Coroutine[Any, Any, None]], n: int = 20_000) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        asyncio.run(f(n))
        times.append(time.perf_counter() - start)
    return statistics.median(times) / n * 1e6


class _State:
    def __init__(self, attempt_number: int) -> None:
        self.attempt_number = attempt_number


def main() -> None:
    print(f"successful call: loomctx {per_call_us(ours):.2f} us, "
          f"tenacity AsyncRetrying {per_call_us(ten):.2f} us")
    wait = tenacity.wait_random_exponential(multiplier=0.5, max=30)
    random.seed(1)
    theirs = [round(wait(_State(n + 1)), 3) for n in range(8)]  # type: ignore[arg-type]
    random.seed(1)
    mine = [round(DEFAULT_BACKOFF.delay(n), 3) for n in range(8)]
    print(f"waits, same random draws: loomctx {mine}\n                          "
          f"tenacity {theirs}")


if __name__ == "__main__":
    main()
