"""A fuzz of the proxy's request boundary: bodies, headers, query parameters and upstream
replies. Whatever comes in, the answer is a success, a 4xx in the provider's error shape, or a
502/504 (or the upstream's own error) when the upstream failed — never a 500 or a dropped
connection — and a request answered without an upstream call leaves nothing stored."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from loomctx.service import RunningServer, ServiceOptions, serve_in_thread
from loomctx.testing import (
    ContextLength,
    Delay,
    FakeModelServer,
    HashingEmbedder,
    HttpError,
    Malformed,
    Raw,
    RecordedRequest,
    Reply,
    ToolCall,
)
from loomctx.testing.fake_script import Step

CHAT, MESSAGES = "/v1/chat/completions", "/v1/messages"
TIMEOUT = 0.2
"""The proxy's upstream timeout: short, so a hung upstream costs the fuzz little."""


class OneStep(FakeModelServer):
    """An upstream that answers every request with the step the example chose."""

    step: Step | str = "ok"

    def _next(self, request: RecordedRequest) -> Step | str | None:
        with self._lock:
            self.requests.append(request)
        return self.step


@pytest.fixture(scope="module")
def boundary() -> Iterator[tuple[RunningServer, OneStep, httpx.Client]]:
    with OneStep() as upstream, httpx.Client(timeout=30) as client:
        server = serve_in_thread(ServiceOptions(
            upstream=upstream.url + "/v1", embedder=HashingEmbedder(), max_body_bytes=50_000,
            max_messages=50, timeout=TIMEOUT))
        try:
            yield server, upstream, client
        finally:
            server.close()


# -- what comes in ------------------------------------------------------------------------------
def _nest(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


texts = st.text(max_size=12) | st.sampled_from(["gpt\udfff", "a\ud800b", "\x00", "", "ok"])
query_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
"""Any text a URL can carry (a lone surrogate has no UTF-8 to percent-encode)."""
numbers = (st.integers(-5, 10**6) | st.sampled_from([0, 10**30, -(10**30)])
           | st.floats(allow_nan=True, allow_infinity=True))
scalars = st.none() | st.booleans() | numbers | texts
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(texts, inner, max_size=3), max_leaves=12)
values = json_values | st.integers(0, 250).map(_nest)
openai_messages = st.lists(st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "developer", "bot"])},
    optional={"content": texts | values, "tool_calls": values, "tool_call_id": texts,
              "name": texts}), min_size=0, max_size=4)
anthropic_messages = st.lists(st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system"]),
     "content": texts | st.lists(st.fixed_dictionaries(
         {"type": st.sampled_from(["text", "tool_use", "tool_result", "image", "odd"])},
         optional={"text": texts | values, "id": texts, "name": texts, "input": values,
                   "tool_use_id": texts, "content": texts | values}), max_size=3)}),
    min_size=0, max_size=4)
good_user = st.just([{"role": "user", "content": "hi"}])
bodies = st.fixed_dictionaries({}, optional={
    "model": st.sampled_from(["gpt-4o", "claude-fake-1"]) | texts | values,
    "messages": good_user | openai_messages | anthropic_messages | values,
    "max_tokens": st.sampled_from([20, 100]) | numbers | values,
    "temperature": numbers, "top_p": numbers, "stream": st.booleans() | values,
    "stream_options": st.none() | st.just({"include_usage": True}) | values,
    "tools": st.none() | values, "system": texts | values, "metadata": values})
raw_bodies = (st.binary(max_size=60) | st.sampled_from([
    b"", b"{", b"[]", b"null", b'"x"', b'{"messages": NaN}', b"{" * 3000,
    b'{"model": "gpt-4o", "max_tokens": 1e999, "messages": [{"role": "user", "content": "x"}]}',
    b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "\\udfff"}]}']))
session_ids = st.none() | st.sampled_from(["fuzz-1", "fuzz.2", "a/b", "..", ".", "-x", "s" * 129,
                                           "a\x00b", "a\nb", "你好", "caf\u00e9"]) | query_text
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=255,
                                    blacklist_characters="\x7f"), max_size=20).map(str.strip)
"""What HTTP/1.1 lets a header value be (latin-1, no controls, no edge blanks)."""
headers = st.fixed_dictionaries({}, optional={
    "x-loomctx-session": header_text | st.sampled_from(["fuzz-1", "fuzz.2"]),
    "x-loomctx-budget": header_text | st.integers(-5, 10**9).map(str),
    "content-type": st.sampled_from(["application/json", "text/plain", "", "x/\u00e9"]),
    "anthropic-version": header_text, "accept": header_text})

# -- what the upstream answers ------------------------------------------------------------------
_good_chunk = 'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n'
_sse = st.lists(st.sampled_from([
    _good_chunk, "data: [DONE]\n\n", 'data: {"choices": ["x"]}\n\n', "data: {{{\n\n",
    'event: message_stop\ndata: {"type": "message_stop"}\n\n', "data: " + "[" * 3000 + "\n\n",
    ": comment\n\n", "\r\n\r\n", 'data: {"usage": [1], "choices": []}\n\n']), max_size=5)
steps: st.SearchStrategy[Step | str] = st.one_of(
    st.just("ok"), st.just(Reply(text="hello", tool_calls=[ToolCall("f", {"a": 1})])),
    st.builds(HttpError, st.sampled_from([400, 401, 404, 429, 500, 503, 529]), texts),
    st.just(ContextLength(limit=200, requested=5000)), st.just(Malformed()),
    st.builds(Raw, body=st.binary(max_size=40) | json_values.map(json.dumps)),
    st.builds(Raw, status=st.sampled_from([200, 400, 500]), body=st.sampled_from([
        "[" * 3000, '{"choices": [{"message": "hi"}]}', '{"content": "hi"}', "<html>"])),
    st.builds(Raw, chunks=_sse, cut=st.booleans()),
    st.just(Delay(TIMEOUT * 2, then=Reply(text="late"))),
    st.just(Raw(chunks=[_good_chunk, _good_chunk], pause=TIMEOUT * 2)))


# -- what must hold -----------------------------------------------------------------------------
def _snapshot(server: RunningServer, client: httpx.Client) -> list[tuple[str, int]]:
    resp = client.get(server.url + "/v1/loomctx/sessions")
    assert resp.status_code == 200, resp.text
    return sorted((s["id"], s["messages"]) for s in resp.json()["sessions"])


def _provider_error(path: str, resp: httpx.Response) -> None:
    assert resp.headers.get("content-type", "").startswith("application/json"), resp.text
    body = resp.json()
    if path == MESSAGES:
        assert body.get("type") == "error", body
    err = body["error"]
    assert isinstance(err, dict) and isinstance(err["message"], str) and err["message"], body
    assert "Traceback" not in err["message"]


def _send(server: RunningServer, client: httpx.Client, path: str, content: bytes,
          head: dict[str, str], query: dict[str, str]) -> tuple[httpx.Response, bytes]:
    """The answer and its whole body (a stream read to the end): a dropped connection or a
    stream cut without an end fails here."""
    request = httpx.Request("POST", server.url + path, content=content, params=query,
                            headers={k: v.encode("latin-1") for k, v in head.items()})
    resp = client.send(request, stream=True)
    try:
        body = b"".join(resp.iter_raw())
    finally:
        resp.close()
    return resp, body


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(path=st.sampled_from([CHAT, MESSAGES]),
       body=bodies.map(lambda b: json.dumps(b).encode()) | raw_bodies,
       head=headers, session=session_ids, budget=st.none() | query_text, step=steps)
def test_the_boundary_holds(boundary: tuple[RunningServer, OneStep, httpx.Client], path: str,
                            body: bytes,
                            head: dict[str, str], session: str | None, budget: str | None,
                            step: Step | str) -> None:
    server, upstream, client = boundary
    upstream.step = step
    query = {k: v for k, v in (("loomctx_session", session), ("loomctx_budget", budget))
             if v is not None}
    calls, before = len(upstream.requests), _snapshot(server, client)
    resp, raw = _send(server, client, path, body, head, query)
    status, called = resp.status_code, len(upstream.requests) > calls
    assert status != 500 and status < 600, raw[:300]
    if not called and resp.headers.get("x-loomctx-replayed") == "true":
        # the same request as a turn stored just before (an earlier example): the stored reply
        # is sent again (loomctx.service.replay), and nothing is stored twice
        assert status == 200, raw[:300]
        assert _snapshot(server, client) == before, raw[:300]
        return
    if not called:  # refused by the proxy: an error of its own, and nothing kept
        assert 400 <= status < 500, raw[:300]
        resp._content = raw
        _provider_error(path, resp)
        assert _snapshot(server, client) == before, raw[:300]
        return
    if status >= 400:
        resp._content = raw
        own = "x-loomctx-build" not in resp.headers  # the proxy's answer, not the upstream's
        if own or status in (502, 504):
            _provider_error(path, resp)
        if own and status < 500:  # refused after the upstream said "too long" twice
            assert isinstance(step, ContextLength), raw[:300]
        else:
            assert isinstance(json.loads(raw), dict)
        return
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        text = raw.decode("utf-8", "replace")
        assert not text or text.endswith(("\n\n", "\r\n\r\n", "\r\r")) or isinstance(
            step, Raw), text[-200:]
        if isinstance(step, Raw) and (step.cut or step.pause):
            last = text.rstrip().rsplit("\n", 1)[-1]
            assert last.startswith("data: ") and "error" in json.loads(last[6:]), text[-200:]


def test_the_fuzzed_values_include_what_json_cannot_carry() -> None:
    """The body strategy does produce NaN, infinities and lone surrogates (the fuzz would
    prove little if ``json.dumps`` quietly dropped them)."""
    dumped = json.dumps({"t": math.nan, "u": math.inf, "m": "gpt\udfff"})
    assert "NaN" in dumped and "Infinity" in dumped and "\\udfff" in dumped
