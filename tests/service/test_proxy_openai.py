"""The proxy on the OpenAI route, driven by the ``openai`` SDK over real HTTP."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from loomctx import check_request
from loomctx.service import RunningServer
from loomctx.testing import Delay, Reply, ToolCall
from loomctx.testing.fake_script import render
from loomctx.testing.windowed import WindowedFakeServer

FILLER = "the quarterly report lists revenue, churn and the hiring plan in detail. " * 12


def client(server: RunningServer, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0,
                         default_headers=headers or None)


def test_whole_conversation_mode_continues_one_session(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    upstream.add("first answer", "second answer", "third answer")
    c = client(proxy)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Answer briefly."}]
    sessions, builds = set(), []
    for question in ("What is loomctx?", "Why a budget?", "And the report?"):
        messages.append({"role": "user", "content": question})
        raw = c.chat.completions.with_raw_response.create(model="gpt-4o", messages=messages,
                                                          max_tokens=100)
        reply = raw.parse()
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
        sessions.add(raw.headers["x-loomctx-session"])
        builds.append(raw.headers["x-loomctx-build"])
    assert [m["content"] for m in messages[2::2]] == ["first answer", "second answer",
                                                      "third answer"]
    assert len(sessions) == 1  # the proxy found each request's prefix in the same session
    (sid,) = sessions
    info = httpx.get(f"{proxy.url}/v1/loomctx/sessions/{sid}").json()
    assert info["messages"] == 6 and info["builds"] == 3
    # The upstream saw the whole conversation each time, the system prompt once, first.
    last = upstream.requests[-1].body["messages"]
    assert last[0] == {"role": "system", "content": "Answer briefly."}
    assert [m["content"] for m in last[1:]] == [m["content"] for m in messages[1:-1]]
    record = httpx.get(f"{proxy.url}/v1/loomctx/builds/{builds[-1]}").json()
    assert record["usage"]["prompt_tokens"] == upstream.usage[-1][0]
    assert record["usage"]["cached_tokens"] == upstream.usage[-1][1] > 0
    assert record["reply_stored"] is True and record["report"]["tokens"] == record["tokens"]


def test_session_header_mode_sends_only_new_messages(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    c = client(proxy, **{"X-Loomctx-Session": "support-42"})
    c.chat.completions.create(model="gpt-4o", max_tokens=50, messages=[
        {"role": "system", "content": "You are support."},
        {"role": "user", "content": "My order A-7 is late."}])
    c.chat.completions.create(model="gpt-4o", max_tokens=50, messages=[
        {"role": "user", "content": "Can you check again?"}])
    seen = upstream.requests[-1].body["messages"]
    assert [m["role"] for m in seen] == ["system", "user", "assistant", "user"]
    assert seen[1]["content"] == "My order A-7 is late." and seen[2]["content"] == "ok"
    info = httpx.get(f"{proxy.url}/v1/loomctx/sessions/support-42").json()
    assert info["messages"] == 4


def _long_conversation(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You summarise reports."}]
    for i in range(turns):
        out += [{"role": "user", "content": f"Part {i}: {FILLER}"},
                {"role": "assistant", "content": f"Noted part {i}."}]
    return [*out, {"role": "user", "content": "What did part 0 say?"}]


def test_a_conversation_over_the_upstream_window_gets_through(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    conversation = _long_conversation(20)
    direct = openai.OpenAI(base_url=upstream.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="maximum context length"):
        direct.chat.completions.create(model="gpt-4o", messages=conversation, max_tokens=200)
    assert upstream.refused == 1
    raw = client(proxy).chat.completions.with_raw_response.create(
        model="gpt-4o", messages=conversation, max_tokens=200)
    assert raw.parse().choices[0].message.content == "ok"
    # The proxy assumed gpt-4o's 128k window, was refused once, rebuilt for the real one.
    assert upstream.refused == 2 and upstream.accepted == 1
    prompt, _ = upstream.usage[-1]
    assert prompt + 200 <= upstream.window
    sent = upstream.requests[-1].body
    assert sent["messages"][-1]["content"] == "What did part 0 say?"
    assert check_request("openai", {"messages": sent["messages"]}) == []
    record = httpx.get(f"{proxy.url}/v1/loomctx/builds/{raw.headers['x-loomctx-build']}").json()
    assert record["retried"] is True and record["budget"] <= upstream.window - 200


def test_a_known_window_needs_no_refusal(upstream: WindowedFakeServer,
                                         start: Callable[..., RunningServer]) -> None:
    server = start(upstream, window=upstream.window)
    reply = client(server).chat.completions.create(
        model="gpt-4o", messages=_long_conversation(20), max_tokens=200)
    assert reply.choices[0].message.content == "ok"
    assert upstream.refused == 0 and upstream.accepted == 1


def test_streams_pass_through_byte_for_byte(upstream: WindowedFakeServer,
                                            proxy: RunningServer) -> None:
    step = Reply(text="Streaming works, chunk by chunk.", chunk_chars=5)
    upstream.add(step)
    body = {"model": "gpt-4o", "stream": True, "max_tokens": 50,
            "messages": [{"role": "user", "content": "Stream something."}]}
    with httpx.stream("POST", proxy.url + "/v1/chat/completions", json=body) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        got = b"".join(resp.iter_raw())
        build = resp.headers["x-loomctx-build"]
    expected = render(step, "openai", model="gpt-4o", stream=True, include_usage=False)
    assert got == b"".join(expected.chunks)
    # The streamed reply joined the session's memory: the next turn continues it.
    upstream.add("second")
    follow = [*body["messages"], {"role": "assistant", "content": step.text},
              {"role": "user", "content": "And again?"}]
    reply = client(proxy).chat.completions.with_raw_response.create(
        model="gpt-4o", messages=follow, max_tokens=50)
    sid = reply.headers["x-loomctx-session"]
    first = httpx.get(f"{proxy.url}/v1/loomctx/builds/{build}").json()
    assert first["session"] == sid and first["reply_stored"] is True
    # The usage came although the client did not ask for it: the proxy asked, and hid it.
    assert upstream.requests[0].body["stream_options"] == {"include_usage": True}
    assert first["usage"]["prompt_tokens"] == upstream.usage[0][0]


def test_a_stream_that_asks_for_usage_gets_it(upstream: WindowedFakeServer,
                                              proxy: RunningServer) -> None:
    step = Reply(text="With usage.", chunk_chars=4)
    upstream.add(step)
    body = {"model": "gpt-4o", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "Stream with usage."}]}
    with httpx.stream("POST", proxy.url + "/v1/chat/completions", json=body) as resp:
        got = b"".join(resp.iter_raw())
    prompt, cached = upstream.usage[-1]
    expected = render(replace(step, prompt_tokens=prompt, cached_tokens=cached), "openai",
                      model="gpt-4o", stream=True, include_usage=True)
    assert got == b"".join(expected.chunks) and b'"usage"' in got


def test_sdk_streaming_and_tool_calls(upstream: WindowedFakeServer,
                                      proxy: RunningServer) -> None:
    tools = [{"type": "function", "function": {
        "name": "lookup", "description": "Look an order up.", "strict": True,
        "parameters": {"type": "object", "properties": {"order": {"type": "string"}},
                       "required": ["order"], "additionalProperties": False}}}]
    upstream.add(Reply(tool_calls=[ToolCall("lookup", {"order": "A-7"}, id="call_1")]),
                 Reply(text="A-7 ships Monday."))
    c = client(proxy)
    messages: list[Any] = [{"role": "user", "content": "Where is A-7?"}]
    stream = c.chat.completions.create(model="gpt-4o", messages=messages, tools=tools,
                                       max_tokens=100, stream=True)
    calls: dict[int, dict[str, str]] = {}
    for chunk in stream:
        for tc in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            call["id"] += tc.id or ""
            call["name"] += (tc.function.name or "") if tc.function else ""
            call["arguments"] += (tc.function.arguments or "") if tc.function else ""
    assert calls[0] == {"id": "call_1", "name": "lookup", "arguments": '{"order": "A-7"}'}
    messages += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "lookup", "arguments": calls[0]["arguments"]}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "shipping Monday"}]
    raw = c.chat.completions.with_raw_response.create(model="gpt-4o", messages=messages,
                                                      tools=tools, max_tokens=100)
    assert raw.parse().choices[0].message.content == "A-7 ships Monday."
    sent = upstream.requests[-1].body
    assert sent["tools"] == tools  # the client's definitions go as sent ("strict" included)
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "tool"]
    assert sent["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert check_request("openai", {"messages": sent["messages"], "tools": tools}) == []
    sessions = httpx.get(proxy.url + "/v1/loomctx/sessions").json()["sessions"]
    assert len(sessions) == 1 and sessions[0]["messages"] == 4


def test_images_reach_the_upstream(upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    client(proxy).chat.completions.create(model="gpt-4o", max_tokens=50, messages=[
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}])
    assert upstream.requests[-1].body["messages"][-1]["content"][1] == image


def test_upstream_errors_come_back_unchanged(upstream: WindowedFakeServer,
                                             proxy: RunningServer) -> None:
    from loomctx.testing import HttpError

    upstream.add(HttpError(429, "slow down", retry_after=7))
    resp = httpx.post(proxy.url + "/v1/chat/completions", json={
        "model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status_code == 429 and resp.headers["retry-after"] == "7"
    assert json.loads(resp.content)["error"]["message"] == "slow down"
    assert "x-loomctx-build" in resp.headers


def test_two_sessions_with_the_same_start_stay_apart(upstream: WindowedFakeServer,
                                                     proxy: RunningServer) -> None:
    """A whole-conversation client continues its own session even when a session-header
    client went through the very same messages first."""
    opening = [{"role": "user", "content": "Same opening"}]
    c = client(proxy)
    c.chat.completions.create(model="gpt-4o", max_tokens=20, messages=opening,
                              extra_headers={"X-Loomctx-Session": "header-one"})
    c.chat.completions.create(model="gpt-4o", max_tokens=20, extra_headers={
        "X-Loomctx-Session": "header-one"}, messages=[{"role": "user", "content": "Next"}])
    conversation: list[dict[str, Any]] = list(opening)
    sessions = set()
    for question in ("Next", "And then?", "Last one"):
        raw = c.chat.completions.with_raw_response.create(model="gpt-4o", max_tokens=20,
                                                          messages=conversation)
        sessions.add(raw.headers["x-loomctx-session"])
        conversation += [{"role": "assistant", "content": "ok"},
                         {"role": "user", "content": question}]
    assert len(sessions) == 1 and "header-one" not in sessions


def test_a_named_session_survives_a_restart_with_a_sqlite_store(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer],
        tmp_path: Path) -> None:
    store = str(tmp_path / "memory.db")
    first = start(upstream, store=store)
    c = client(first, **{"X-Loomctx-Session": "kept"})
    c.chat.completions.create(model="gpt-4o", max_tokens=20, messages=[
        {"role": "user", "content": "Remember the code word: heron."}])
    first.close()
    second = start(upstream, store=f"sqlite:///{store}")
    client(second, **{"X-Loomctx-Session": "kept"}).chat.completions.create(
        model="gpt-4o", max_tokens=20, messages=[{"role": "user", "content": "Code word?"}])
    seen = [m["content"] for m in upstream.requests[-1].body["messages"]]
    assert seen == ["Remember the code word: heron.", "ok", "Code word?"]


def test_a_stream_closed_at_its_last_byte_still_stores_the_reply_once(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    """The client closes the stream as soon as it has read ``[DONE]`` and at once sends the
    whole conversation again, tool result added: the reply is stored exactly once, whatever the
    timing, so the next request never repeats a tool call id."""
    rounds = 8
    messages: list[Any] = [{"role": "user", "content": "Track A-0."}]
    for i in range(rounds):
        upstream.add(Reply(tool_calls=[ToolCall("lookup", {"order": f"A-{i}"}, id=f"call_{i}")]))
    upstream.add(Reply(text="All tracked."))
    for i in range(rounds):
        with httpx.stream("POST", proxy.url + "/v1/chat/completions", json={
                "model": "gpt-4o", "messages": messages, "max_tokens": 50,
                "stream": True}) as resp:
            assert resp.status_code == 200
            for line in resp.iter_lines():
                if line == "data: [DONE]":
                    break  # close at once, as an SDK does
        messages += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": "lookup", "arguments": json.dumps({"order": f"A-{i}"})}}]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": f"A-{i} is on its way"}]
    final = httpx.post(proxy.url + "/v1/chat/completions",
                       json={"model": "gpt-4o", "messages": messages, "max_tokens": 50})
    assert final.status_code == 200, final.text
    sessions = httpx.get(proxy.url + "/v1/loomctx/sessions").json()["sessions"]
    assert [s["messages"] for s in sessions] == [len(messages) + 1]


def test_a_client_gone_before_the_stream_starts_leaves_the_session_usable(
        upstream: WindowedFakeServer, proxy: RunningServer) -> None:
    """A client that sends a streaming request and hangs up while the upstream thinks: the
    session's lock is let go, so the session's next request is answered (not left waiting)."""
    upstream.add(Delay(1.0, then=Reply(text="late")), Reply(text="on time"))
    body = json.dumps({"model": "gpt-4o", "stream": True, "max_tokens": 20,
                       "messages": [{"role": "user", "content": "Slow one?"}]}).encode()
    host, port = proxy.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                    b"content-type: application/json\r\nx-loomctx-session: gone\r\n"
                    b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        deadline = time.monotonic() + 30
        while not upstream.requests and time.monotonic() < deadline:
            time.sleep(0.02)  # hang up once the upstream has the request, before any answer
    time.sleep(1.5)  # the upstream has answered into the void
    nxt = httpx.post(proxy.url + "/v1/chat/completions", timeout=10, headers={
        "x-loomctx-session": "gone"}, json={"model": "gpt-4o", "max_tokens": 20, "messages": [
            {"role": "user", "content": "Still there?"}]})
    assert nxt.status_code == 200 and nxt.json()["choices"][0]["message"]["content"] == "on time"


def test_idle_sessions_past_the_limit_are_unloaded_and_load_again(
        upstream: WindowedFakeServer, start: Callable[..., RunningServer]) -> None:
    server = start(upstream, max_sessions=2)

    def say(session: str, text: str) -> None:
        resp = httpx.post(server.url + "/v1/chat/completions", headers={
            "x-loomctx-session": session}, json={"model": "gpt-4o", "max_tokens": 20,
                                                 "messages": [{"role": "user", "content": text}]})
        assert resp.status_code == 200, resp.text

    say("first", "Parcel PX-7 left Lyon.")
    say("second", "Hello.")
    say("third", "Hello again.")
    loaded = httpx.get(server.url + "/v1/loomctx/sessions").json()["sessions"]
    assert sorted(s["id"] for s in loaded) == ["second", "third"]  # "first" was least recent
    say("first", "Where did PX-7 leave from?")
    sent = upstream.requests[-1].body["messages"]
    assert any("left Lyon" in str(m.get("content")) for m in sent)  # its memory came back
    loaded = httpx.get(server.url + "/v1/loomctx/sessions").json()["sessions"]
    assert sorted(s["id"] for s in loaded) == ["first", "third"]


def _chinese_chat(start: Callable[..., RunningServer], upstream: WindowedFakeServer,
                  turns: int) -> tuple[RunningServer, list[int]]:
    server = start(upstream, window=upstream.window)  # told the window, not how it counts
    messages: list[Any] = []
    budgets = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"第{i}号包裹从上海的仓库出发了，"
                         "预计在三天之内到达柏林的配送中心，请帮我查一下它现在的位置和状态。" * 3})
        resp = httpx.post(server.url + "/v1/chat/completions", json={
            "model": "gpt-4o", "messages": messages, "max_tokens": 50})
        assert resp.status_code == 200, resp.text
        messages.append(resp.json()["choices"][0]["message"])
        report = httpx.get(server.url + "/v1/loomctx/builds/"
                           + resp.headers["x-loomctx-build"]).json()["report"]
        budgets.append(report["budget"])
    return server, budgets


def test_budgets_shrink_for_an_upstream_that_counts_more(
        start: Callable[..., RunningServer]) -> None:
    """The upstream counts with cl100k, the proxy with gpt-4o's o200k: on Chinese text the
    upstream's usage says more tokens than the build counted. The proxy measures that on the
    first replies and shrinks later budgets, so the growing conversation is never refused."""
    with WindowedFakeServer(window=1500, model="gpt-4", default="好的。") as upstream:
        _, budgets = _chinese_chat(start, upstream, 12)
        assert upstream.refused == 0
        assert budgets[-1] < budgets[0]  # shrunk once the miscount was measured
        prompts = [p for p, _ in upstream.usage]
        assert max(prompts) + 50 <= 1500
    with WindowedFakeServer(window=1500, model="gpt-4o", default="好的。") as same:
        _, budgets = _chinese_chat(start, same, 3)
        assert budgets == [budgets[0]] * 3  # counted alike: nothing to shrink


def test_a_refusal_measures_the_miscount_and_the_retry_fits(
        start: Callable[..., RunningServer]) -> None:
    """The very first request is refused (nothing measured yet); the refusal's own numbers
    give the upstream's count, so the one retry fits instead of being refused again."""
    with WindowedFakeServer(window=1500, model="gpt-4", default="好的。") as upstream:
        server = start(upstream, window=upstream.window)
        history: list[Any] = []
        for i in range(60):  # Hindi: cl100k counts about three times what o200k does
            history += [{"role": "user", "content": f"पार्सल {i} शंघाई के गोदाम से निकल गया है "
                         "और तीन दिनों में बर्लिन पहुंचेगा।"},
                        {"role": "assistant", "content": f"ठीक है, पार्सल {i} दर्ज कर लिया।"}]
        history.append({"role": "user", "content": "पार्सल 7 अभी कहाँ है?"})
        resp = httpx.post(server.url + "/v1/chat/completions", json={
            "model": "gpt-4o", "messages": history, "max_tokens": 50})
        assert resp.status_code == 200, resp.text
        assert upstream.refused == 1 and upstream.accepted == 1
