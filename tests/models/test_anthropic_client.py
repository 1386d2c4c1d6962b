"""AnthropicChatModel over real HTTP: the Messages request as given, the reply in OpenAI shape."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from model_helpers import SleepRecorder, make_client

from loomctx.models import AnthropicChatModel, ChatModel, StreamEvent
from loomctx.testing import FakeModelServer, Reply, ToolCall

PAYLOAD: dict[str, Any] = {
    "system": [{"type": "text", "text": "You answer about sales.",
                "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Return rate?"}]}],
    "tools": [{"name": "run_sql", "description": "Read-only SQL.",
               "input_schema": {"type": "object", "properties": {"sql": {"type": "string"}}}}],
}


def _stream(model: ChatModel, **kw: Any) -> list[StreamEvent]:
    async def collect() -> list[StreamEvent]:
        return [event async for event in model.stream(PAYLOAD, **kw)]
    return asyncio.run(collect())


def test_complete_sends_system_messages_and_tools_as_given(server: FakeModelServer,
                                                           sleeps: SleepRecorder) -> None:
    server.add("Fine.", "Fine.")
    model = make_client("anthropic", server, sleeps)
    assert isinstance(model, ChatModel) and model.format == "anthropic"
    asyncio.run(model.complete(PAYLOAD))
    asyncio.run(model.complete(PAYLOAD, max_tokens=77))
    first, second = server.requests
    assert first.path == "/v1/messages"
    assert first.body == {"model": "claude-test", "max_tokens": 1024, **PAYLOAD}
    assert second.body["max_tokens"] == 77
    assert first.headers["x-api-key"] == "test-key"
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in first.headers


def test_the_key_comes_from_the_environment(server: FakeModelServer,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    server.add("ok")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ant-from-env")
    asyncio.run(AnthropicChatModel("c", base_url=server.url).complete(PAYLOAD))
    assert server.requests[0].headers["x-api-key"] == "ant-from-env"


def test_usage_counts_cache_reads_inside_the_prompt(server: FakeModelServer,
                                                    sleeps: SleepRecorder) -> None:
    server.add(Reply("x", prompt_tokens=5000, completion_tokens=12, cached_tokens=4096))
    reply = asyncio.run(make_client("anthropic", server, sleeps).complete(PAYLOAD))
    raw_usage = reply.raw["usage"]
    assert (raw_usage["input_tokens"], raw_usage["cache_read_input_tokens"]) == (904, 4096)
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens,
            reply.usage.cached_tokens) == (5000, 12, 4096)


def test_tool_use_becomes_openai_tool_calls_with_the_same_ids_and_names(
        server: FakeModelServer, sleeps: SleepRecorder) -> None:
    calls = [ToolCall("run_sql", {"sql": "SELECT * FROM returns"}, id="toolu_01AbC"),
             ToolCall("describe_table", {"table": "returns"}, id="toolu_02dEf")]
    server.add(Reply("Let me look.", tool_calls=calls),
               Reply("Let me look.", tool_calls=calls, chunk_chars=3))
    model = make_client("anthropic", server, sleeps)
    whole = asyncio.run(model.complete(PAYLOAD))
    events = _stream(model)
    assert [e.kind for e in events].count("tool_call") == 2
    streamed = events[-1].response
    assert streamed is not None
    for reply in (whole, streamed):
        assert reply.message["content"] == "Let me look."
        got = [(c["id"], c["type"], c["function"]["name"], json.loads(c["function"]["arguments"]))
               for c in reply.message["tool_calls"]]
        assert got == [(c.id, "function", c.name, c.arguments) for c in calls]
        assert reply.finish_reason == "tool_calls"
    assert streamed.message == whole.message and streamed.usage == whole.usage


@pytest.mark.parametrize(("scripted", "mapped"), [("stop", "stop"), ("length", "length")])
def test_stop_reasons_map_to_openai_finish_reasons(server: FakeModelServer,
                                                   sleeps: SleepRecorder, scripted: str,
                                                   mapped: str) -> None:
    server.add(Reply("cut", finish_reason=scripted), Reply("cut", finish_reason=scripted))
    model = make_client("anthropic", server, sleeps)
    whole = asyncio.run(model.complete(PAYLOAD))
    assert whole.raw["stop_reason"] == {"stop": "end_turn", "length": "max_tokens"}[scripted]
    streamed = _stream(model)[-1].response
    assert streamed is not None
    assert whole.finish_reason == streamed.finish_reason == mapped


def test_stream_yields_text_deltas_and_sends_stream_true(server: FakeModelServer,
                                                         sleeps: SleepRecorder) -> None:
    text = "The return rate was 4.2% last quarter."
    server.add(Reply(text, chunk_chars=6))
    events = _stream(make_client("anthropic", server, sleeps))
    deltas = [e.text for e in events if e.kind == "text"]
    assert "".join(deltas) == text and len(deltas) == -(-len(text) // 6)
    done = events[-1].response
    assert done is not None and done.message == {"role": "assistant", "content": text}
    assert server.requests[0].body == {"model": "claude-test", "max_tokens": 1024, **PAYLOAD,
                                       "stream": True}
