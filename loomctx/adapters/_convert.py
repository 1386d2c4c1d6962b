"""What both adapters share: the build as OpenAI messages, and replacing a session.

Framework-free on purpose: each adapter turns these OpenAI-shaped dicts into its own message
type, so the build logic (which request, which kind of build) is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from loomctx.builder import BuildResult
from loomctx.errors import ConfigError
from loomctx.session import Session


def as_openai(result: BuildResult) -> list[dict[str, Any]]:
    """The built request as OpenAI chat messages, whatever format the session renders.

    An Anthropic request's ``system`` becomes a leading system message (its blocks' text
    joined); a text format's request becomes one user message.
    """
    payload = result.payload
    if "text" in payload:
        return [{"role": "user", "content": payload["text"]}]
    messages = [dict(m) for m in payload.get("messages", [])]
    system = payload.get("system")
    if system:
        text = system if isinstance(system, str) else "\n\n".join(
            b.get("text", "") for b in system if isinstance(b, Mapping))
        messages.insert(0, {"role": "system", "content": text})
    return messages


def stored(session: Session) -> list[dict[str, Any]]:
    """The session's history as given (OpenAI messages, oldest first, ids kept)."""
    return [{**(it.message or {"role": it.role or "user", "content": it.content}), "id": it.id}
            for it in session.memory.history.items]


def last_user_text(session: Session) -> str | None:
    """The text of the history's last message when it is a user message, else None."""
    items = session.memory.history.items
    if not items or items[-1].role != "user":
        return None
    return items[-1].content


def fresh(session: Session, factory: Callable[[], Session] | None, what: str) -> Session:
    """End ``session`` (its memories move to the archive tier) and return a new one."""
    if factory is None:
        raise ConfigError(f"{what}: a session's history is append-only; pass new_session=a "
                          "function returning a fresh Session to clear by starting over")
    session.end_sync()
    return factory()


__all__ = ["as_openai", "fresh", "last_user_text", "stored"]
