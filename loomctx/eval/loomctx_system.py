"""loomctx's own system for ``loomctx eval``: a :class:`~loomctx.session.Session` per history.

Each history gets a session that is given every turn (ids and timestamps kept); each question is
one ``build`` at the budget, rendered as sectioned text and counted with cl100k. Builds do not
change a session's memory, so the session of a conversation is reused across its questions: the
result is the same as a fresh session per question, without re-embedding the same turns.
"""

from __future__ import annotations

from typing import Any

from loomctx.builder import BuildOptions
from loomctx.embed.cache import CachedEmbedder
from loomctx.embed.default import default_embedder
from loomctx.embed.protocol import Embedder
from loomctx.eval.baselines import EvalOutput
from loomctx.eval.records import EvalQuestion, Turn
from loomctx.session import Session


class LoomctxSystem:
    """Session + unified retrieval, the library's default pipeline."""

    name = "loomctx"

    def __init__(self, embedder: Embedder | None = None, *, model: str = "cl100k_base") -> None:
        self.embedder = embedder
        self.model = model
        self._sessions: dict[int, tuple[tuple[Turn, ...], Session]] = {}

    def _session(self, history: tuple[Turn, ...]) -> Session:
        hit = self._sessions.get(id(history))
        if hit is not None and hit[0] is history:
            return hit[1]
        if self.embedder is None:  # memoised, as the other systems' embedders are
            self.embedder = CachedEmbedder(default_embedder())
        session = Session(
            embedder=self.embedder, model=self.model,
            options=BuildOptions(model=self.model, format="text"),  # library defaults
            clock=lambda: 0.0,
        )
        messages: list[dict[str, Any]] = [
            {"id": t.id, "role": t.role if t.role in ("user", "assistant") else "user",
             "content": t.content, "timestamp": t.timestamp}
            for t in history
        ]
        session.add_messages_sync(messages)
        self._sessions = {id(history): (history, session)}  # one conversation at a time
        return session

    def prepare(self, history: tuple[Turn, ...]) -> None:
        """Ingest a conversation (timed apart from the builds by the runner)."""
        self._session(history)

    def run(self, q: EvalQuestion, budget: int) -> EvalOutput:
        session = self._session(q.history)
        last = max((t.timestamp for t in q.history if t.timestamp is not None), default=0.0)
        now = q.question_time if q.question_time is not None else last
        result = session.build_sync(q.question, max_tokens=budget, now=now)
        ids = tuple(r.id for r in result.report.items if r.included)
        return EvalOutput(context=result.text, tokens=result.tokens, included_ids=ids)


__all__ = ["LoomctxSystem"]
