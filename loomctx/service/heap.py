"""The garbage collector's settings for a process that ``loomctx serve`` owns.

Why: a request allocates thousands of short-lived objects (a build's per-build item copies,
its report rows, the JSON of the body), and CPython's defaults collect the youngest generation
every 700 net allocations and, every so often, walk *every* tracked object: the tokenizer's
tables and each loaded session's messages, items and records. Measured with
``benchmarks/bench_proxy.py`` (a session of 1,000 messages), the collector took 3.7 ms of CPU
per request, 15–20 % of the proxy's; 0.3 ms at the throughput benchmark's small sessions.

So, once the service has started: what startup made (the tokenizer above all) is moved out of
the collector's sight (:func:`gc.freeze`: it lives as long as the process anyway), and the
youngest generation is collected every :data:`YOUNG_THRESHOLD` allocations instead of 700. A
request's garbage is then mostly freed by reference counting before a collection sees it, and
the full walks become rare. Nothing else changes: cyclic garbage is still collected, a little
later. Only a process the service owns is tuned (``loomctx serve``, each ``--workers``
process), never an application that embeds the service (:func:`serve_in_thread`).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000
"""Net allocations of container objects between collections of the youngest generation
(CPython's default: 700). A collection then walks at most this many young objects: a pause of
about a millisecond, a few times a second under load."""


def tune_gc() -> None:
    """Freeze what the process holds now and collect the youngest generation less often (the
    older generations keep their default thresholds, relative to it)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


__all__ = ["YOUNG_THRESHOLD", "tune_gc"]
