"""A turn built again with nothing added (a retry after a failed model call) sends the same
request, byte for byte, and leaves the next turns as they would have been without it.

Random conversations (seeded): user messages with and without a question mark, "Please
remember" facts, tool steps with scan logs of 1-60 lines, budgets from 600 to 4,000 tokens. They
reach the states where a retry used to differ: a recall note made by the first build shown by
the retry as history (a second "Context for this turn" block), and a window that yielded room
to the first build's evidence read by the retry as where it last started (it compacts further
and shows other evidence).
"""

from __future__ import annotations

import json
import random
from typing import Any

from loomctx import HashingEmbedder, Session

WORDS = ["parcel", "hotel", "Lyon", "Hamburg", "invoice", "customs", "pickup", "dock", "refund",
         "carrier", "order", "sister", "address", "warehouse", "pallet", "Basel", "permit",
         "shipment", "scan", "hold"]
SEEDS = range(8)


def _text(rng: random.Random, low: int = 4, high: int = 40) -> str:
    return " ".join(rng.choice(WORDS) + (str(rng.randint(1, 99)) if rng.random() < 0.2 else "")
                    for _ in range(rng.randint(low, high)))


def _conversation(seed: int) -> tuple[int, list[list[dict[str, Any]]]]:
    """A budget and the conversation's model steps: the messages added before each build."""
    rng = random.Random(seed)
    budget = rng.choice([600, 1000, 2000, 4000])
    steps: list[list[dict[str, Any]]] = []
    answer: list[dict[str, Any]] = []
    for turn in range(rng.randint(12, 36)):
        ask = _text(rng) + rng.choice(["?", ".", "", "? thanks"])
        if rng.random() < 0.1:
            ask = "Please remember: " + ask
        steps.append([*answer, {"role": "user", "content": ask}])
        for k in range(rng.choice([0, 0, 1, 2])):
            call = f"call_{turn}_{k}"
            log = "\n".join(_text(rng, 3, 12) for _ in range(rng.randint(1, 60)))
            steps.append([
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": call, "type": "function",
                     "function": {"name": "scan_log", "arguments": "{}"}}]},
                {"role": "tool", "content": log, "tool_call_id": call}])
        answer = [{"role": "assistant", "content": _text(rng)}]
    return budget, steps


def _session() -> Session:
    return Session("s", embedder=HashingEmbedder(dim=64), system_prompt="Be brief.",
                   clock=lambda: 1_700_000_000.0)


def _request(session: Session, budget: int) -> str:
    return json.dumps(session.build_sync(max_tokens=budget).payload, sort_keys=True)


def _first_difference(a: str, b: str) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
              min(len(a), len(b)))
    return f"at character {at}: {a[max(0, at - 80):at + 120]!r} vs {b[max(0, at - 80):at + 120]!r}"


def test_a_turn_built_again_with_nothing_added_sends_the_same_request() -> None:
    differing = []
    for seed in SEEDS:
        budget, steps = _conversation(seed)
        retried, plain = _session(), _session()
        retry = random.Random(seed + 1000)
        for n, added in enumerate(steps):
            for k, msg in enumerate(added):  # ids given: the two sessions' requests compare
                retried.add_message_sync(**msg, id=f"m{n}-{k}")
                plain.add_message_sync(**msg, id=f"m{n}-{k}")
            first = _request(retried, budget)
            assert first == _request(plain, budget), f"seed {seed}, step {n}: a retry earlier " \
                "changed this turn's request"
            if retry.random() < 0.4:
                again = _request(retried, budget)
                if again != first:
                    differing.append(f"seed {seed}, step {n} of {len(steps)}, budget {budget}: "
                                     + _first_difference(first, again))
    assert not differing, f"{len(differing)} retries differ; the first: {differing[0]}"
