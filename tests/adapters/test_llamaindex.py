"""The LlamaIndex adapter, offline: LlamaIndex's recording mock LLM, a hashing embedder."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
from llama_index.core.memory.types import BaseMemory

from loomctx import ConfigError, Session
from loomctx.adapters.llamaindex import LoomctxMemory
from loomctx.testing import HashingEmbedder


def _session(**kw: Any) -> Session:
    return Session(system_prompt="Answer briefly.", embedder=HashingEmbedder(), **kw)


def test_a_chat_engine_gets_a_budgeted_build() -> None:
    memory = LoomctxMemory(_session(), max_tokens=300)
    assert isinstance(memory, BaseMemory)
    llm = MockLLMWithChatMemoryOfLastCall()
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for n in range(12):
        engine.chat(f"question {n}: " + "tell me more about shipping " * 5)
    sent = llm.last_chat_messages
    assert sent is not None
    assert sent[0].role == MessageRole.SYSTEM and sent[0].content == "Answer briefly."
    assert sent[-1].role == MessageRole.USER and sent[-1].content.startswith("question 11:")
    assert len(sent) < 1 + 2 * 12  # the budget kept only part of the conversation
    build = memory.last_build
    assert build is not None and build.tokens <= 300
    assert [m.content for m in sent] == [m["content"] for m in build.messages]  # as built
    assert len(memory.get_all()) == 24  # every question and every answer is stored


def test_get_with_another_input_is_a_question_build() -> None:
    memory = LoomctxMemory.from_defaults(session=_session(), max_tokens=400, chat_history=[
        ChatMessage(role="user", content="My order SHP-1 is late."),
        ChatMessage(role="assistant", content="It is on customs hold in Lyon.")])
    got = memory.get("Where is my order held?")
    assert got[-1].content == "Where is my order held?"
    assert "It is on customs hold in Lyon." in [m.content for m in got]
    assert len(memory.get_all()) == 2  # the question was not stored
    turn = asyncio.run(memory.aget(initial_token_count=100))
    assert turn[-1].content == "It is on customs hold in Lyon."
    assert memory.last_build is not None and memory.last_build.tokens <= 300


def test_tool_calls_round_trip() -> None:
    memory = LoomctxMemory(_session(), max_tokens=400)
    call = {"id": "c1", "type": "function",
            "function": {"name": "track", "arguments": "{\"id\": \"SHP-1\"}"}}
    memory.put_messages([
        ChatMessage(role="user", content="Where is SHP-1?"),
        ChatMessage(role="assistant", content=None, additional_kwargs={"tool_calls": [call]}),
        ChatMessage(role="tool", content="customs hold",
                    additional_kwargs={"tool_call_id": "c1"})])
    roles = [m.role.value for m in memory.get()]
    assert roles == ["system", "user", "assistant", "tool"]
    back = memory.get_all()
    assert back[1].additional_kwargs["tool_calls"] == [call]
    with pytest.raises(ConfigError, match="tool_call_id"):
        memory.put(ChatMessage(role="tool", content="orphan"))


def test_set_only_extends_and_reset_needs_a_factory() -> None:
    memory = LoomctxMemory(_session())
    first = [ChatMessage(role="user", content="a")]
    memory.set(first)
    memory.set([*first, ChatMessage(role="assistant", content="b")])
    assert [m.content for m in memory.get_all()] == ["a", "b"]
    with pytest.raises(ConfigError, match="append-only"):
        memory.set([ChatMessage(role="user", content="other")])
    with pytest.raises(ConfigError, match="append-only"):
        memory.reset()
    old = memory.session
    memory = LoomctxMemory(old, new_session=_session)
    memory.reset()
    assert memory.get_all() == [] and memory.session is not old
