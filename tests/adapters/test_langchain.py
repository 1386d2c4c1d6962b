"""The LangChain adapter, offline: a recording fake chat model, a hashing embedder."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables.history import RunnableWithMessageHistory
from pydantic import Field

from loomctx import ConfigError, Session
from loomctx.adapters.langchain import (
    LoomctxChatMessageHistory,
    build_context,
    remember_reply,
)
from loomctx.testing import HashingEmbedder


class Recording(BaseChatModel):
    """Answers ``reply N`` and keeps every request it was sent."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        reply = AIMessage(f"reply {len(self.seen)}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _session(**kw: Any) -> Session:
    return Session(system_prompt="Answer briefly.", embedder=HashingEmbedder(), **kw)


def test_the_chain_sends_a_budgeted_context_and_remembers_the_reply() -> None:
    s, model = _session(), Recording(seen=[])
    chain = build_context(s, max_tokens=300) | model | remember_reply(s)
    for n in range(12):
        reply = chain.invoke(f"question {n}: " + "tell me more about shipping " * 5)
        assert reply.content == f"reply {n + 1}"
    sent = model.seen[-1]
    assert sent[0].type == "system" and sent[0].content == "Answer briefly."
    assert sent[-1].type == "human" and sent[-1].content.startswith("question 11:")
    assert len(sent) < 1 + 2 * 12  # the budget kept only part of the conversation
    stored = LoomctxChatMessageHistory(s).messages
    assert len(stored) == 24 and stored[-1] == AIMessage("reply 12")
    built = s.build_sync(max_tokens=300)
    assert built.tokens <= 300


def test_tool_calls_round_trip_through_the_session() -> None:
    s = _session()
    history = LoomctxChatMessageHistory(s)
    call = {"name": "track", "args": {"id": "SHP-1"}, "id": "c1", "type": "tool_call"}
    history.add_messages([HumanMessage("Where is SHP-1?"), AIMessage("", tool_calls=[call]),
                          ToolMessage("customs hold in Lyon", tool_call_id="c1")])
    back = history.messages
    assert isinstance(back[1], AIMessage) and back[1].tool_calls[0]["args"] == {"id": "SHP-1"}
    assert isinstance(back[2], ToolMessage) and back[2].tool_call_id == "c1"
    sent = asyncio.run(build_context(s, max_tokens=400).ainvoke("And now?"))
    assert [m.type for m in sent] == ["system", "human", "ai", "tool", "human"]


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_runnable_with_message_history_uses_the_session() -> None:
    sessions: dict[str, Session] = {}

    def history(sid: str) -> LoomctxChatMessageHistory:
        return LoomctxChatMessageHistory(sessions.setdefault(sid, _session(id=sid)))

    model = Recording(seen=[])
    chat = RunnableWithMessageHistory(model, history)
    chat.invoke("hello", config={"configurable": {"session_id": "a"}})
    chat.invoke("again", config={"configurable": {"session_id": "a"}})
    assert [m.content for m in model.seen[1]] == ["hello", "reply 1", "again"]
    assert [m["content"] for m in _stored(sessions["a"])] == ["hello", "reply 1", "again",
                                                              "reply 2"]


def _stored(s: Session) -> list[dict[str, Any]]:
    return [it.message or {} for it in s.memory.history.items]


def test_clear_starts_over_only_with_a_factory() -> None:
    s = _session()
    s.add_message_sync("user", "hi")
    with pytest.raises(ConfigError, match="append-only"):
        LoomctxChatMessageHistory(s).clear()
    history = LoomctxChatMessageHistory(s, new_session=_session)
    history.clear()
    assert history.messages == [] and history.session is not s
    assert s.state.value == "ended"


def test_bad_chain_input_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="without 'input'"):
        build_context(_session()).invoke({"question": "x"})
