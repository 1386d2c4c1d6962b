"""ScriptedModel: a ChatModel that replays a script and records what it was shown."""

from __future__ import annotations

import asyncio
import json

import pytest

from loomctx import ChatModel, ModelError
from loomctx.testing import ScriptedModel, ToolCall

PAYLOAD = {"messages": [{"role": "user", "content": "hi"}]}


def test_it_is_a_chat_model_that_records_each_request():
    model = ScriptedModel(["hello", ToolCall(name="f", arguments={"a": 1})])
    assert isinstance(model, ChatModel)
    first = asyncio.run(model.complete(PAYLOAD, max_tokens=50))
    assert first.message == {"role": "assistant", "content": "hello"}
    assert first.finish_reason == "stop"
    PAYLOAD["messages"].append({"role": "assistant", "content": "hello"})
    second = asyncio.run(model.complete(PAYLOAD))
    call = second.message["tool_calls"][0]
    assert (call["id"], call["function"]) == ("call_1", {"name": "f", "arguments": '{"a": 1}'})
    assert second.finish_reason == "tool_calls"
    assert len(model.requests[0]["messages"]) == 1  # copied when it arrived
    assert model.max_tokens == [50, None]
    # Made-up usage: the second request repeats the first one's opening characters.
    assert 0 < second.usage.cached_tokens < second.usage.prompt_tokens
    assert second.usage.prompt_tokens == -(-len(json.dumps(PAYLOAD)) // 4)
    PAYLOAD["messages"].pop()


def test_errors_callables_and_an_exhausted_script():
    async def later(payload):
        await asyncio.sleep(0)
        return f"you said {payload['messages'][-1]['content']}"

    model = ScriptedModel([ModelError("boom", status=500), later])
    with pytest.raises(ModelError, match="boom"):
        asyncio.run(model.complete(PAYLOAD))
    assert asyncio.run(model.complete(PAYLOAD)).message["content"] == "you said hi"
    with pytest.raises(AssertionError, match="2 steps but was called 3 times"):
        asyncio.run(model.complete(PAYLOAD))
    with pytest.raises(TypeError, match="script step"):
        asyncio.run(ScriptedModel([42]).complete(PAYLOAD))


def test_stream_ends_with_the_whole_reply():
    async def collect():
        return [e async for e in ScriptedModel(["a fairly long reply text"]).stream(PAYLOAD)]

    events = asyncio.run(collect())
    assert "".join(e.text for e in events if e.kind == "text") == "a fairly long reply text"
    assert events[-1].kind == "done" and events[-1].response is not None
    assert events[-1].response.message["content"] == "a fairly long reply text"
