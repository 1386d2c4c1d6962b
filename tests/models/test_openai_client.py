"""OpenAIChatModel over real HTTP against the fake server: what it sends, what it reads back."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from model_helpers import SleepRecorder, make_client

from loomctx.errors import ContextLengthError, ModelError
from loomctx.models import ChatModel, ModelResponse, OpenAIChatModel, StreamEvent
from loomctx.testing import FakeModelServer, Reply, ToolCall

PAYLOAD: dict[str, Any] = {
    "messages": [{"role": "system", "content": "You answer about sales."},
                 {"role": "user", "content": "Total sales of the last 7 days?"}],
    "tools": [{"type": "function", "function": {"name": "run_sql", "parameters": {
        "type": "object", "properties": {"sql": {"type": "string"}}}}}],
}
ODD_ARGS = '{"sql":  "SELECT sum(amount) FROM sales",\n "limit": 5 }'
"""Arguments with odd spacing: they must come back byte for byte, not re-serialised."""


def _stream(model: ChatModel, payload: dict[str, Any], **kw: Any) -> list[StreamEvent]:
    async def collect() -> list[StreamEvent]:
        return [event async for event in model.stream(payload, **kw)]
    return asyncio.run(collect())


def test_it_is_a_chat_model_of_the_openai_format(server: FakeModelServer,
                                                 sleeps: SleepRecorder) -> None:
    model = make_client("openai", server, sleeps)
    assert isinstance(model, ChatModel)
    assert (model.format, model.model) == ("openai", "gpt-test")


def test_complete_posts_the_payload_as_given_and_reads_the_reply(
        server: FakeModelServer, sleeps: SleepRecorder) -> None:
    server.add(Reply("It was 1,234.", prompt_tokens=900, completion_tokens=6, cached_tokens=768))
    reply = asyncio.run(make_client("openai", server, sleeps).complete(PAYLOAD, max_tokens=50))
    assert reply.message == {"role": "assistant", "content": "It was 1,234."}
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens,
            reply.usage.cached_tokens) == (900, 6, 768)
    assert reply.finish_reason == "stop"
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {"model": "gpt-test", **PAYLOAD, "max_tokens": 50}
    assert request.headers["authorization"] == "Bearer test-key"


def test_max_tokens_is_left_out_unless_given_and_its_field_is_configurable(
        server: FakeModelServer, sleeps: SleepRecorder) -> None:
    server.add("a", "b")
    asyncio.run(make_client("openai", server, sleeps).complete(PAYLOAD))
    newer = make_client("openai", server, sleeps, max_tokens_field="max_completion_tokens")
    asyncio.run(newer.complete(PAYLOAD, max_tokens=9))
    assert "max_tokens" not in server.requests[0].body
    assert server.requests[1].body["max_completion_tokens"] == 9


def test_the_key_comes_from_the_environment_and_a_local_server_needs_none(
        server: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.add("with key", "without")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    asyncio.run(OpenAIChatModel("m", base_url=server.url + "/v1").complete(PAYLOAD))
    monkeypatch.delenv("OPENAI_API_KEY")
    asyncio.run(OpenAIChatModel("m", base_url=server.url + "/v1").complete(PAYLOAD))
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"
    assert "authorization" not in server.requests[1].headers


def test_tool_calls_keep_their_ids_names_and_argument_strings(
        server: FakeModelServer, sleeps: SleepRecorder) -> None:
    calls = [ToolCall("run_sql", ODD_ARGS, id="call_Xy9"), ToolCall("list_tables", {},
                                                                     id="call_2")]
    server.add(Reply(tool_calls=calls), Reply(tool_calls=calls, chunk_chars=3))
    model = make_client("openai", server, sleeps)
    whole = asyncio.run(model.complete(PAYLOAD))
    streamed = _stream(model, PAYLOAD)[-1].response
    assert streamed is not None
    expected = [{"id": "call_Xy9", "type": "function",
                 "function": {"name": "run_sql", "arguments": ODD_ARGS}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "list_tables", "arguments": "{}"}}]
    for reply in (whole, streamed):
        assert reply.message == {"role": "assistant", "content": None, "tool_calls": expected}
        assert reply.finish_reason == "tool_calls"


def test_stream_yields_text_deltas_then_the_same_reply_as_complete(
        server: FakeModelServer, sleeps: SleepRecorder) -> None:
    text = "Sales over the last seven days were 1,234 units."
    server.add(Reply(text, cached_tokens=64), Reply(text, cached_tokens=64, chunk_chars=5))
    model = make_client("openai", server, sleeps)
    whole = asyncio.run(model.complete(PAYLOAD, max_tokens=40))
    events = _stream(model, PAYLOAD, max_tokens=40)
    deltas = [e.text for e in events if e.kind == "text"]
    assert len(deltas) == -(-len(text) // 5) and "".join(deltas) == text
    assert [e.kind for e in events][-1] == "done"
    done = events[-1].response
    assert isinstance(done, ModelResponse)
    assert (done.message, done.usage, done.finish_reason) == (
        whole.message, whole.usage, whole.finish_reason)
    body = server.requests[1].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert {k: v for k, v in body.items() if k not in ("stream", "stream_options")} == (
        server.requests[0].body)


class _FakeSDKError(Exception):
    def __init__(self, status_code: int, body: dict[str, Any]) -> None:
        super().__init__(body["error"]["message"])
        self.status_code, self.body = status_code, body


class _FakeCompletions:
    """Quacks like ``openai.AsyncOpenAI().chat.completions`` (the SDK is not installed)."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers, self.calls = answers, list[dict[str, Any]]()

    async def create(self, **body: Any) -> Any:
        self.calls.append(body)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_an_sdk_client_is_used_instead_of_http_and_its_errors_are_mapped() -> None:
    reply = {"choices": [{"message": {"role": "assistant", "content": "via sdk"},
                          "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    too_long = _FakeSDKError(400, {"error": {
        "message": "This model's maximum context length is 8192 tokens. However, your "
                   "messages resulted in 9000 tokens.", "code": "context_length_exceeded"}})
    completions = _FakeCompletions([reply, too_long, _FakeSDKError(401, {"error": {
        "message": "Incorrect API key provided"}})])
    sdk = type("SDK", (), {"chat": type("Chat", (), {"completions": completions})()})()
    model = OpenAIChatModel("gpt-sdk", sdk_client=sdk, base_url="http://127.0.0.1:9")
    got = asyncio.run(model.complete(PAYLOAD, max_tokens=7))
    assert got.message["content"] == "via sdk" and got.usage.prompt_tokens == 3
    assert completions.calls[0] == {"model": "gpt-sdk", **PAYLOAD, "max_tokens": 7}
    with pytest.raises(ContextLengthError) as err:
        asyncio.run(model.complete(PAYLOAD))
    assert (err.value.limit, err.value.requested) == (8192, 9000)
    with pytest.raises(ModelError, match="Incorrect API key") as auth:
        asyncio.run(model.complete(PAYLOAD))
    assert auth.value.status == 401


def test_the_arguments_are_json_the_model_wrote(server: FakeModelServer,
                                                sleeps: SleepRecorder) -> None:
    server.add(Reply(tool_calls=[ToolCall("run_sql", {"sql": "SELECT 1"})]))
    reply = asyncio.run(make_client("openai", server, sleeps).complete(PAYLOAD))
    assert json.loads(reply.message["tool_calls"][0]["function"]["arguments"]) == {
        "sql": "SELECT 1"}


def test_stream_usage_can_be_turned_off_for_servers_that_reject_it(
        server: FakeModelServer, sleeps: SleepRecorder) -> None:
    server.add(Reply("no usage asked", cached_tokens=5))
    done = _stream(make_client("openai", server, sleeps, stream_usage=False), PAYLOAD)[-1]
    assert "stream_options" not in server.requests[0].body
    assert done.response is not None and done.response.usage.cached_tokens == 0


def test_a_given_httpx_client_carries_the_calls(server: FakeModelServer,
                                                sleeps: SleepRecorder) -> None:
    server.add("via your client", "again")

    async def two_calls() -> list[str | None]:
        async with httpx.AsyncClient(headers={"x-tenant": "acme"}) as client:
            model = make_client("openai", server, sleeps, client=client)
            replies = [await model.complete(PAYLOAD), await model.complete(PAYLOAD)]
            assert not client.is_closed  # the caller's client stays the caller's to close
        return [r.message["content"] for r in replies]

    assert asyncio.run(two_calls()) == ["via your client", "again"]
    assert [r.headers.get("x-tenant") for r in server.requests] == ["acme", "acme"]
