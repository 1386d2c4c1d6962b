"""What the held-out cache replays share: a seeded stream, a clock, ids, calls and their
results, and facts planted in early user turns (``_replays_held_out.py`` lists the replays)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from _replays import START, Question, Replay

HUBS = ["HAM-03", "LYS-01", "RTM-07", "ANR-02", "GDN-04", "VLC-01", "BSL-02", "VIE-05"]
SCANS = ["ARRIVAL", "DEPARTURE", "SORTED", "LOADED", "UNLOADED", "WEIGHED", "HELD-CUSTOMS",
         "RELEASED", "HANDOVER", "EXCEPTION", "DOCS-RECEIVED", "OUT-FOR-DELIVERY"]
GOODS = ["pump housings", "ceramic tiles", "LED panels", "coffee beans", "bicycle frames",
         "solar inverters", "paper rolls", "wine cases", "steel brackets", "office chairs"]
CITIES = ["Lyon", "Hamburg", "Milano", "Rotterdam", "Antwerp", "Gdansk", "Valencia", "Basel"]
Fact = tuple[str, str]
"""A statement planted in an early user turn and the question asked about it later."""


class ReplayWriter:
    """What every replay needs: a seeded stream, a clock, ids, and calls answered by tools."""

    def __init__(self, seed: int, prefix: str) -> None:
        self.rng = random.Random(seed)
        self.prefix = prefix
        self.clock = START

    def add(self, msgs: list[dict[str, Any]], turn: int, msg: dict[str, Any]) -> str:
        self.clock += self.rng.randint(15, 120)
        mid = f"{self.prefix}{turn:02d}-{len(msgs)}"
        msgs.append({**msg, "id": mid, "timestamp": self.clock})
        return mid

    def step(self, msgs: list[dict[str, Any]], turn: int,
             calls: list[tuple[str, dict[str, Any]]],
             result: Callable[[str, dict[str, Any]], str]) -> None:
        """One model step that calls tools, and their results."""
        tool_calls = [{"id": f"call_{self.prefix}{turn}_{len(msgs)}_{k}", "type": "function",
                       "function": {"name": n, "arguments": json.dumps(a)}}
                      for k, (n, a) in enumerate(calls)]
        self.add(msgs, turn, {"role": "assistant", "content": None, "tool_calls": tool_calls})
        for call, (n, a) in zip(tool_calls, calls, strict=True):
            self.add(msgs, turn, {"role": "tool", "tool_call_id": call["id"],
                                  "content": result(n, a)})

    def replay(self, name: str, prompt: str, tools: list[dict[str, Any]], turns: int,
               facts: list[Fact],
               turn: Callable[[int], list[dict[str, Any]]]) -> Replay:
        """``turns`` turns of ``turn(t)`` (its messages, the user's first); the facts go in
        front of the user text of turns drawn from 1-19, so a shorter replay is the head of
        the same conversation."""
        at = dict(zip(sorted(self.rng.sample(range(1, 20), len(facts))), facts, strict=True))
        out: list[list[dict[str, Any]]] = []
        questions: list[Question] = []
        for t in range(max(turns, 20)):
            msgs = turn(t)
            if t in at:
                statement, question = at[t]
                msgs[0]["content"] = statement + " " + msgs[0]["content"]
                questions.append(Question(question, (msgs[0]["id"],)))
            out.append(msgs)
        return Replay(name, prompt, tools, out, questions).head(turns)


__all__ = ["CITIES", "GOODS", "HUBS", "SCANS", "Fact", "ReplayWriter"]
