"""LoCoMo's first conversation in a default session: the setting of the paired benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def first_conversation(data: Path, *, budget: int = 512) -> tuple[Any, list[Any], float]:
    """A default :class:`~loomctx.session.Session` given every turn of LoCoMo's first
    conversation (one build at ``budget`` before, so nothing loads during a timed build), its
    questions, and the time of its last turn (every build's ``now``)."""
    from loomctx.builder import BuildOptions
    from loomctx.eval.datasets import iter_dataset
    from loomctx.session import Session

    questions: list[Any] = []
    for q in iter_dataset("locomo", data):
        if questions and q.history is not questions[0].history:
            break
        questions.append(q)
    history = questions[0].history
    session = Session(model="cl100k_base", options=BuildOptions(model="cl100k_base",
                                                                format="text"),
                      clock=lambda: 0.0)
    session.build_sync("warm up", max_tokens=budget)
    session.add_messages_sync([
        {"id": t.id, "role": t.role if t.role in ("user", "assistant") else "user",
         "content": t.content, "timestamp": t.timestamp} for t in history])
    now = max((t.timestamp for t in history if t.timestamp is not None), default=0.0)
    return session, questions, now
