"""The fake model server: loopback only, one script step per request, every request kept."""

from __future__ import annotations

import json

import httpx

from loomctx.testing import FakeModelServer, HttpError, Reply


def test_it_listens_on_loopback_on_a_free_port() -> None:
    with FakeModelServer() as a, FakeModelServer() as b:
        assert a.url.startswith("http://127.0.0.1:")
        assert a.port != b.port and a.port > 0


def test_it_records_each_request_and_replays_the_script_in_order() -> None:
    with FakeModelServer(["first", HttpError(503)]) as server:
        one = httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "n": 1},
                         headers={"X-Probe": "yes"})
        two = httpx.post(server.url + "/v1/messages", json={"model": "m", "n": 2})
        assert server.remaining == 0
    assert one.status_code == 200
    assert one.json()["choices"][0]["message"]["content"] == "first"
    assert two.status_code == 503 and two.json()["type"] == "error"
    assert [r.path for r in server.requests] == ["/v1/chat/completions", "/v1/messages"]
    assert [r.body["n"] for r in server.requests] == [1, 2]
    assert server.requests[0].headers["x-probe"] == "yes"


def test_a_body_that_is_not_json_is_recorded_raw() -> None:
    with FakeModelServer(["ok"]) as server:
        httpx.post(server.url + "/v1/messages", content=b"not json")
    assert (server.requests[0].body, server.requests[0].raw) == (None, b"not json")


def test_running_out_of_script_is_a_loud_400() -> None:
    with FakeModelServer(["only"]) as server:
        httpx.post(server.url + "/v1/chat/completions", json={})
        extra = httpx.post(server.url + "/v1/chat/completions", json={})
    assert extra.status_code == 400
    assert "script exhausted after 1 steps" in extra.json()["error"]["message"]


def test_openai_streams_usage_only_when_asked() -> None:
    def usage_chunks(body: dict[str, object]) -> list[dict[str, object]]:
        with FakeModelServer([Reply("hi", cached_tokens=7)]) as server:
            text = httpx.post(server.url + "/v1/chat/completions", json=body).text
        chunks = [json.loads(line[6:]) for line in text.splitlines()
                  if line.startswith("data: {")]
        return [c for c in chunks if c.get("usage")]

    assert usage_chunks({"stream": True}) == []
    asked = usage_chunks({"stream": True, "stream_options": {"include_usage": True}})
    assert [c["usage"]["prompt_tokens_details"]["cached_tokens"] for c in asked] == [7]


def test_steps_can_be_added_while_it_runs() -> None:
    with FakeModelServer() as server:
        server.add(Reply("late addition"))
        reply = httpx.post(server.url + "/v1/messages", json={}).json()
    assert reply["content"] == [{"type": "text", "text": "late addition"}]


def test_many_clients_connecting_at_once_all_get_in() -> None:
    """The listen backlog holds a burst of connections (socketserver's default of 5 drops
    the rest's SYNs: a 1 s stall each, which the proxy's throughput benchmark measured)."""
    import socket

    server = FakeModelServer()  # listening, not accepting yet: the backlog holds them all
    socks = []
    try:
        for _ in range(24):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=3)
            socks.append(s)
        assert len(socks) == 24
    finally:
        for s in socks:
            s.close()
        server.close()
