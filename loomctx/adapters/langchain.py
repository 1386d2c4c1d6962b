"""LangChain: a chat message history backed by a loomctx session, and runnables around a model.

Two ways in, for two kinds of LangChain code:

- :class:`LoomctxChatMessageHistory` for code built on ``RunnableWithMessageHistory``: messages
  are stored in the session's memory tiers (and so found by its retrieval later).
- :func:`build_context` and :func:`remember_reply` for a chain that should send the model a
  budgeted context instead of the whole history::

      chain = build_context(session, max_tokens=8000) | chat_model | remember_reply(session)
      reply = chain.invoke("Where is my order?")

  ``build_context`` adds the new messages to the session and returns the built turn (system
  prompt, the history window, retrieved memory, the input last) as LangChain messages; tools
  the session was given are in the build's payload, to bind to the model (``bind_tools``).

Needs ``langchain-core`` (``pip install 'loomctx[langchain]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langchain_core.runnables import Runnable, RunnableLambda

from loomctx.adapters._convert import as_openai, fresh, stored
from loomctx.errors import ConfigError
from loomctx.session import Session


def to_openai(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI chat messages (tool calls and tool results kept)."""
    out = convert_to_openai_messages(list(messages))
    return [dict(m) for m in out]


def from_openai(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """OpenAI chat messages as LangChain messages (loomctx's ``id`` field dropped)."""
    return convert_to_messages([{k: v for k, v in m.items() if k != "id"} for m in messages])


class LoomctxChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history whose messages live in a loomctx :class:`Session`.

    ``messages`` is the whole stored conversation (not a build: use :func:`build_context` for
    the budgeted context). ``clear()`` ends the session, whose memories move to the archive
    tier, and starts the one ``new_session()`` returns; without ``new_session`` it raises
    :class:`~loomctx.errors.ConfigError`, since a session's history is append-only.
    """

    def __init__(self, session: Session, *,
                 new_session: Callable[[], Session] | None = None) -> None:
        self.session = session
        self.new_session = new_session

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return from_openai(stored(self.session))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.session.add_messages_sync(to_openai(messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await self.session.add_messages(to_openai(messages))

    async def aget_messages(self) -> list[BaseMessage]:
        return self.messages

    def clear(self) -> None:
        self.session = fresh(self.session, self.new_session, "clear()")


def _new_messages(value: Any) -> list[BaseMessage]:
    """A chain's input as messages: text is one user message; a dict takes its ``input``."""
    if isinstance(value, dict):
        if "input" not in value:
            raise ConfigError(f"build_context got a dict without 'input': {sorted(value)!r}; "
                              "pass text, a message, a list of messages or {'input': ...}")
        value = value["input"]
    if isinstance(value, str):
        return [HumanMessage(value)]
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, (list, tuple)):
        return convert_to_messages(list(value))
    raise ConfigError(f"build_context cannot take a {type(value).__name__}: pass text, a "
                      "message, a list of messages or {'input': ...}")


def build_context(session: Session, *, max_tokens: int | None = None,
                  phase: str | None = None) -> Runnable[Any, list[BaseMessage]]:
    """A runnable: add the input messages to ``session``, build a turn, return its messages.

    The input is text (one user message), a message, a list of messages, or a dict with an
    ``input`` key (as ``RunnableWithMessageHistory`` passes). The output is the built request
    as LangChain messages, to pipe into a chat model. An input that is empty (no new messages)
    rebuilds the current turn, e.g. after a tool result was added.
    """
    def prepare(value: Any) -> list[dict[str, Any]]:
        return to_openai(_new_messages(value)) if value not in (None, [], ()) else []

    def run(value: Any) -> list[BaseMessage]:
        new = prepare(value)
        if new:
            session.add_messages_sync(new)
        return from_openai(as_openai(session.build_sync(max_tokens=max_tokens, phase=phase)))

    async def arun(value: Any) -> list[BaseMessage]:
        new = prepare(value)
        if new:
            await session.add_messages(new)
        built = await session.build(max_tokens=max_tokens, phase=phase)
        return from_openai(as_openai(built))

    return RunnableLambda(run, afunc=arun, name="loomctx_build_context")


def remember_reply(session: Session) -> Runnable[BaseMessage, BaseMessage]:
    """A runnable that adds the model's reply to ``session`` and passes it on unchanged."""
    def run(reply: BaseMessage) -> BaseMessage:
        session.add_messages_sync(to_openai([reply]))
        return reply

    async def arun(reply: BaseMessage) -> BaseMessage:
        await session.add_messages(to_openai([reply]))
        return reply

    return RunnableLambda(run, afunc=arun, name="loomctx_remember_reply")


__all__ = ["LoomctxChatMessageHistory", "build_context", "from_openai", "remember_reply",
           "to_openai"]
