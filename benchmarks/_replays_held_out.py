"""Cache replays nothing was tuned on: four seeded agent conversations of other shapes.

``bench_cache.py``'s first replays (``_replays.py``) are the ones the turn window's constants
were chosen on. These four are generated the same way (``random.Random(seed)``, nothing read or
downloaded) but differ in what makes a prompt cache hard:

- ``scan logs``: a freight desk agent whose tool returns carrier scan logs of 10-120 lines, and a
  user who keeps asking about the same few shipments (is it still held, what was the last scan);
- ``long outputs``: a warehouse agent reading manifests and stock reports of 30-110 lines, and a
  user who refers back to lines, pallets and bays of earlier outputs;
- ``mixed``: a travel and errands assistant whose user asks, requests and states by turns ("Book
  the same hotel as last time", "My sister lands at 9:40.", "What time is the Lyon train?");
- ``no past``: a utility assistant given a self-contained task every turn (convert, rewrite,
  compute, check a snippet) that never refers to an earlier one.

Each plants facts in its early turns (user messages, short) and asks about them after the
replay, worded differently, so the same run measures recall; ``no past`` has none to ask.
"""

from __future__ import annotations

from collections.abc import Callable

from _replays import Replay
from _replays_assistant import mixed, no_past
from _replays_desk import long_outputs, scan_logs

HELD_OUT: dict[str, Callable[..., Replay]] = {
    "scan logs": scan_logs, "long outputs": long_outputs, "mixed": mixed, "no past": no_past}
"""The replays by name, each called as ``make(turns, seed=seed)``."""

__all__ = ["HELD_OUT", "long_outputs", "mixed", "no_past", "scan_logs"]
