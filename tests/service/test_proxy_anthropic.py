"""The proxy on the Anthropic route (``/v1/messages``), driven by the ``anthropic`` SDK."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import anthropic
import httpx

from loomctx import check_request
from loomctx.service import RunningServer
from loomctx.testing import Reply, ToolCall
from loomctx.testing.fake_script import render
from loomctx.testing.windowed import WindowedFakeServer

TOOLS = [{"name": "weather", "description": "Weather in a city.",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}}]


def client(server: RunningServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0)


def test_a_tool_round_in_the_messages_format(upstream: WindowedFakeServer,
                                             proxy: RunningServer) -> None:
    upstream.add(Reply(tool_calls=[ToolCall("weather", {"city": "Oslo"}, id="toolu_1")]),
                 Reply(text="Oslo: 4 degrees and rain."))
    c = client(proxy)
    messages: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    first = c.messages.create(model="claude-fake-1", max_tokens=200, system="Be exact.",
                              tools=TOOLS, messages=messages)
    assert first.content[0].type == "tool_use" and first.content[0].id == "toolu_1"
    messages += [{"role": "assistant", "content": [b.model_dump() for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                               "content": "4 degrees, rain"}]}]
    second = c.messages.with_raw_response.create(model="claude-fake-1", max_tokens=200,
                                                 system="Be exact.", tools=TOOLS,
                                                 messages=messages)
    assert second.parse().content[0].text == "Oslo: 4 degrees and rain."
    sent = upstream.requests[-1].body
    assert sent["system"][0]["text"] == "Be exact." and sent["tools"] == TOOLS
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][1]["content"][-1]["type"] == "tool_use"
    assert sent["messages"][2]["content"][0] == {"type": "tool_result",
                                                 "tool_use_id": "toolu_1",
                                                 "content": "4 degrees, rain"}
    payload = {k: sent[k] for k in ("system", "messages")}
    assert check_request("anthropic", payload) == []
    sid = second.headers["x-loomctx-session"]
    info = httpx.get(f"{proxy.url}/v1/loomctx/sessions/{sid}").json()
    assert info["format"] == "anthropic" and info["messages"] == 4  # one session throughout


def test_anthropic_streams_pass_through(upstream: WindowedFakeServer,
                                        proxy: RunningServer) -> None:
    step = Reply(text="Streamed the Anthropic way.", chunk_chars=6)
    upstream.add(step)
    body = {"model": "claude-fake-1", "max_tokens": 100, "stream": True,
            "messages": [{"role": "user", "content": "Stream please."}]}
    with httpx.stream("POST", proxy.url + "/v1/messages", json=body) as resp:
        got = b"".join(resp.iter_raw())
    prompt, cached = upstream.usage[-1]  # the fake reports what it counted
    expected = render(replace(step, prompt_tokens=prompt, cached_tokens=cached), "anthropic",
                      model="claude-fake-1", stream=True, include_usage=False)
    assert got == b"".join(expected.chunks)
    upstream.add("again")
    with client(proxy).messages.stream(model="claude-fake-1", max_tokens=100, messages=[
            *body["messages"], {"role": "assistant", "content": step.text},
            {"role": "user", "content": "Once more."}]) as stream:
        assert stream.get_final_text() == "again"
    sessions = httpx.get(proxy.url + "/v1/loomctx/sessions").json()["sessions"]
    assert [s["messages"] for s in sessions] == [4]


def test_images_stay_image_blocks(upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}
    client(proxy).messages.create(model="claude-fake-1", max_tokens=50, messages=[
        {"role": "user", "content": [{"type": "text", "text": "What is it?"}, image]}])
    content = upstream.requests[-1].body["messages"][-1]["content"]
    assert image in content


def test_max_tokens_is_required(proxy: RunningServer) -> None:
    resp = httpx.post(proxy.url + "/v1/messages", json={
        "model": "claude-fake-1", "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status_code == 400
    assert resp.json()["type"] == "error" and "max_tokens" in resp.json()["error"]["message"]
