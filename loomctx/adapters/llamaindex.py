"""LlamaIndex: a memory whose ``get()`` is a loomctx build.

:class:`LoomctxMemory` is a ``BaseMemory`` of ``llama-index-core``, so chat engines and agents
take it where they take a ``ChatMemoryBuffer``::

    memory = LoomctxMemory(Session(system_prompt="..."), max_tokens=8000)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)

``put()`` stores a message in the session's memory tiers; ``get()`` builds the context for the
next call (the system prompt, the history window, retrieved memory, the input last) within the
budget, in place of the buffer's "most recent messages that fit". No LlamaIndex tokenizer or
setting is used: the session counts with its own model's tokenizer, offline.

Needs ``llama-index-core`` (``pip install 'loomctx[llamaindex]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.types import BaseMemory

from loomctx.adapters._convert import as_openai, fresh, last_user_text, stored
from loomctx.builder import BuildResult
from loomctx.errors import ConfigError
from loomctx.session import Session

ROLES = {"developer": "system", "chatbot": "assistant", "model": "assistant",
         "function": "tool"}
"""LlamaIndex roles that OpenAI messages spell differently."""


def to_openai(message: ChatMessage) -> dict[str, Any]:
    """A LlamaIndex message as an OpenAI chat message (tool calls and their ids kept)."""
    role = ROLES.get(message.role.value, message.role.value)
    out: dict[str, Any] = {"role": role, "content": message.content}
    extra = message.additional_kwargs
    calls = extra.get("tool_calls")
    if calls:
        out["tool_calls"] = [c.model_dump() if hasattr(c, "model_dump") else dict(c)
                             for c in calls]
    for key in ("tool_call_id", "name"):
        if extra.get(key):
            out[key] = extra[key]
    if role == "tool" and "tool_call_id" not in out:
        raise ConfigError(f"a tool message needs additional_kwargs['tool_call_id'], got "
                          f"{dict(extra)!r}: set it to the id of the call it answers")
    return out


def from_openai(message: Mapping[str, Any]) -> ChatMessage:
    """An OpenAI chat message as a LlamaIndex one (text parts joined; images stay in loomctx's
    payload)."""
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(p.get("text", "") for p in content
                            if isinstance(p, Mapping) and p.get("type") == "text")
    extra = {k: message[k] for k in ("tool_calls", "tool_call_id", "name") if message.get(k)}
    return ChatMessage(role=MessageRole(message["role"]), content=content,
                       additional_kwargs=extra)


class LoomctxMemory(BaseMemory):
    """A LlamaIndex memory over a loomctx :class:`Session`: ``get()`` is a build.

    ``get(input)`` builds a turn when ``input`` is None or is the text of the last user message
    already ``put`` (as chat engines do); any other ``input`` is a question that is not in the
    history (it becomes the build's input and drives retrieval). An ``initial_token_count``
    keyword (the tokens a chat engine spends on its own prefix messages) comes off
    ``max_tokens``. ``reset()`` ends the session and starts the one ``new_session()`` returns;
    without ``new_session`` it raises :class:`~loomctx.errors.ConfigError` (a session's history
    is append-only). The last build stays in :attr:`last_build`, report included.
    """

    max_tokens: int | None = Field(
        default=None, description="The build's budget; None uses the session's budget manager.")
    phase: str | None = Field(default=None, description="early | middle | late, or None.")
    _session: Session = PrivateAttr()
    _new_session: Callable[[], Session] | None = PrivateAttr(default=None)
    _last: BuildResult | None = PrivateAttr(default=None)

    def __init__(self, session: Session, *, max_tokens: int | None = None,
                 phase: str | None = None, new_session: Callable[[], Session] | None = None,
                 **data: Any) -> None:
        super().__init__(max_tokens=max_tokens, phase=phase, **data)  # type: ignore[call-arg]
        self._session = session
        self._new_session = new_session

    @classmethod
    def class_name(cls) -> str:
        return "LoomctxMemory"

    @classmethod
    def from_defaults(cls, session: Session | None = None,  # type: ignore[override]
                      chat_history: Sequence[ChatMessage] | None = None, llm: Any = None, *,
                      max_tokens: int | None = None,
                      new_session: Callable[[], Session] | None = None,
                      **session_options: Any) -> LoomctxMemory:
        """A memory over ``session`` (or a new ``Session(**session_options)``), holding
        ``chat_history``; ``llm`` is accepted for LlamaIndex's call convention and unused."""
        memory = cls(session if session is not None else Session(**session_options),
                     max_tokens=max_tokens, new_session=new_session)
        if chat_history:
            memory.put_messages(list(chat_history))
        return memory

    @property
    def session(self) -> Session:
        return self._session

    @property
    def last_build(self) -> BuildResult | None:
        return self._last

    # -- reading ---------------------------------------------------------------------------
    def _args(self, input: str | None, kwargs: Mapping[str, Any]) -> tuple[str | None, int | None]:
        query = None if input is None or input == last_user_text(self._session) else input
        budget = self.max_tokens
        spent = int(kwargs.get("initial_token_count") or 0)
        if budget is not None and spent:
            if spent >= budget:
                raise ConfigError(f"initial_token_count {spent} leaves nothing of max_tokens "
                                  f"{budget}: raise max_tokens or shorten the prefix messages")
            budget -= spent
        return query, budget

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        query, budget = self._args(input, kwargs)
        self._last = self._session.build_sync(query, max_tokens=budget, phase=self.phase)
        return [from_openai(m) for m in as_openai(self._last)]

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        query, budget = self._args(input, kwargs)
        self._last = await self._session.build(query, max_tokens=budget, phase=self.phase)
        return [from_openai(m) for m in as_openai(self._last)]

    def get_all(self) -> list[ChatMessage]:
        """The whole stored conversation (not a build)."""
        return [from_openai(m) for m in stored(self._session)]

    # -- writing ---------------------------------------------------------------------------
    def put(self, message: ChatMessage) -> None:
        self._session.add_messages_sync([to_openai(message)])

    async def aput(self, message: ChatMessage) -> None:
        await self._session.add_messages([to_openai(message)])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        self._session.add_messages_sync([to_openai(m) for m in messages])

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        await self._session.add_messages([to_openai(m) for m in messages])

    def set(self, messages: list[ChatMessage]) -> None:
        """Make the history ``messages``: allowed when they extend what is stored (the new
        tail is added); anything else would rewrite an append-only history."""
        have = [(m["role"], m.get("content")) for m in stored(self._session)]
        want = [to_openai(m) for m in messages]
        if [(m["role"], m.get("content")) for m in want[:len(have)]] != have:
            raise ConfigError(f"set() with {len(want)} messages that do not extend the "
                              f"{len(have)} stored: a session's history is append-only; "
                              "reset() first (with new_session=...) to start over")
        if want[len(have):]:
            self._session.add_messages_sync(want[len(have):])

    def reset(self) -> None:
        self._session = fresh(self._session, self._new_session, "reset()")
        self._last = None


__all__ = ["LoomctxMemory", "from_openai", "to_openai"]
