"""Replies no provider should send, but upstreams do: every one is a ModelResponseError naming
it (the agent CLI prints one line and exits 2), never an AttributeError or a traceback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from loomctx.cli.main import main
from loomctx.errors import ModelResponseError
from loomctx.models.anthropic import AnthropicChatModel, parse_message
from loomctx.models.openai import OpenAIChatModel, parse_completion
from loomctx.testing import FakeModelServer, Raw

NESTED = "[" * 5000 + "]" * 5000

ODD_COMPLETIONS: list[Any] = [
    {"choices": [{"message": "hi"}]}, {"choices": "none"}, {"choices": [5]}, [],
    {"choices": [{"message": {"content": 5}}]},
    {"choices": [{"message": {"content": "x", "tool_calls": {"id": "c"}}}]},
    {"choices": [{"message": {"content": "x", "tool_calls": [{"id": 1, "function": {}}]}}]},
    {"choices": [{"message": {"content": "x", "tool_calls": [
        {"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}]}}]}]
ODD_MESSAGES: list[Any] = [
    {"content": "hi"}, {"content": [5]}, {"content": [{"type": "text", "text": None}]},
    {"content": [{"type": "tool_use", "id": 1, "name": "f"}]}, "text", None]


@pytest.mark.parametrize("raw", ODD_COMPLETIONS)
def test_odd_completions_are_model_response_errors(raw: Any) -> None:
    with pytest.raises(ModelResponseError, match="OpenAI-compatible API"):
        parse_completion(raw)


@pytest.mark.parametrize("raw", ODD_MESSAGES)
def test_odd_messages_are_model_response_errors(raw: Any) -> None:
    with pytest.raises(ModelResponseError, match="Anthropic API"):
        parse_message(raw)


def test_odd_usage_and_stop_reasons_are_ignored() -> None:
    reply = parse_completion({"choices": [{"message": {"content": "ok"}, "finish_reason": [1]}],
                              "usage": {"prompt_tokens": [3], "prompt_tokens_details": [1]}})
    assert reply.message["content"] == "ok" and reply.usage.prompt_tokens == 0
    assert reply.finish_reason is None
    reply = parse_message({"content": [{"type": "text", "text": "ok"}], "stop_reason": ["x"],
                           "usage": {"input_tokens": "many", "output_tokens": [2]}})
    assert reply.message["content"] == "ok" and reply.usage.completion_tokens == 0
    assert reply.finish_reason is None


async def _drain(model: OpenAIChatModel | AnthropicChatModel) -> None:
    async for _ in model.stream({"messages": [{"role": "user", "content": "hi"}]}):
        pass


async def _texts(model: AnthropicChatModel) -> str:
    out = ""
    async for event in model.stream({"messages": [{"role": "user", "content": "hi"}]}):
        out += event.text or ""
    return out


def _events(*data: Any) -> list[str]:
    return [f"data: {json.dumps(d)}\n\n" for d in data]


@pytest.mark.parametrize("chunks", [
    _events({"choices": ["x"]}), _events({"choices": [{"delta": "x"}]}),
    _events({"choices": [{"delta": {"tool_calls": [5]}}]}),
    _events({"choices": [{"delta": {"tool_calls": [{"index": "a"}]}}]}),
    _events({"choices": [{"delta": {"content": 7}}]}), ["data: " + NESTED + "\n\n"]])
def test_odd_openai_stream_chunks_are_model_response_errors(chunks: list[str]) -> None:
    with FakeModelServer([Raw(chunks=[*chunks, "data: [DONE]\n\n"])]) as server:
        model = OpenAIChatModel("m", base_url=server.url + "/v1", api_key="k", max_retries=0)
        with pytest.raises(ModelResponseError):
            asyncio.run(_drain(model))


@pytest.mark.parametrize("event", [
    {"type": "content_block_start", "index": "0", "content_block": {"type": "text"}},
    {"type": "content_block_start", "index": 0, "content_block": "text"},
    {"type": "content_block_delta", "index": 0, "delta": "x"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}}])
def test_odd_anthropic_stream_events_are_model_response_errors(event: dict[str, Any]) -> None:
    chunks = _events(event, {"type": "message_delta", "delta": "stop"},
                     {"type": "message_stop"})
    with FakeModelServer([Raw(chunks=chunks)]) as server:
        model = AnthropicChatModel("m", base_url=server.url, api_key="k", max_retries=0)
        with pytest.raises(ModelResponseError, match="Anthropic API"):
            asyncio.run(_drain(model))


def test_an_odd_anthropic_usage_or_stop_in_a_stream_is_ignored() -> None:
    chunks = _events({"type": "message_start", "message": "m"},
                     {"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": "ok"}},
                     {"type": "message_delta", "delta": "stop", "usage": [1]},
                     {"type": "message_stop"})
    with FakeModelServer([Raw(chunks=chunks)]) as server:
        model = AnthropicChatModel("m", base_url=server.url, api_key="k", max_retries=0)
        texts = asyncio.run(_texts(model))
    assert texts == "ok"


@pytest.mark.parametrize("body", [
    json.dumps({"choices": [{"message": "hi"}]}), json.dumps({"choices": [{"message": {
        "content": "x"}}], "usage": [1, 2]}).replace('"x"', "[1]"), NESTED, "<html>"])
def test_the_agent_cli_prints_one_line_for_an_odd_reply(
        body: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeModelServer([Raw(body=body)] * 5) as server:
        code = main(["agent", "--demo", "sql", "Total sales of the last 7 days", "--base-url",
                     server.url + "/v1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("loomctx: error: "), err
    assert "Traceback" not in err[0]


def test_an_upstream_error_nested_too_deep_is_a_model_error(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    deep = '{"error": ' * 3000 + "1" + "}" * 3000
    with FakeModelServer([Raw(status=400, body=deep)]) as server:
        code = main(["agent", "--demo", "sql", "Total sales of the last 7 days", "--base-url",
                     server.url + "/v1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "HTTP 400" in err[0], err
