"""The HTTP API under /v1/loomctx: a session's life, its builds and reports, the event stream,
the pages and the OpenAPI document."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx

from loomctx.service import RunningServer
from loomctx.testing.windowed import WindowedFakeServer

API = "/v1/loomctx"


def test_a_session_from_creation_to_end(proxy: RunningServer) -> None:
    url = proxy.url + API
    created = httpx.post(url + "/sessions", json={
        "id": "notes-1", "system_prompt": "You keep notes.", "tools": [
            {"type": "function", "function": {"name": "save", "parameters": {
                "type": "object", "properties": {"text": {"type": "string"}}}}}]})
    assert created.status_code == 201 and created.json()["id"] == "notes-1"
    assert httpx.post(url + "/sessions", json={"id": "notes-1"}).status_code == 400
    added = httpx.post(url + "/sessions/notes-1/messages", json={"messages": [
        {"role": "user", "content": "Remember: the launch is on May 4."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "When is the launch?"}]})
    assert added.status_code == 200 and added.json()["messages"] == 3
    built = httpx.post(url + "/sessions/notes-1/build", json={"max_tokens": 2000}).json()
    messages = built["payload"]["messages"]
    assert messages[0] == {"role": "system", "content": "You keep notes."}
    assert messages[-1]["content"] == "When is the launch?"
    assert built["payload"]["tools"][0]["function"]["name"] == "save"
    assert built["budget"] == 2000 and built["tokens"] <= 2000
    assert {i["source"] for i in built["report"]["items"] if i["included"]} >= {"tools"}
    builds = httpx.get(url + "/sessions/notes-1/builds").json()["builds"]
    assert [b["id"] for b in builds] == [built["id"]]
    again = httpx.get(f"{url}/builds/{built['id']}").json()
    assert again["report"] == built["report"]
    ended = httpx.post(url + "/sessions/notes-1/end").json()
    assert ended["state"] == "ended" and ended["summary_id"]
    refused = httpx.post(url + "/sessions/notes-1/messages",
                         json={"messages": [{"role": "user", "content": "more"}]})
    assert refused.status_code == 400 and "ended" in refused.json()["error"]["message"]


def test_workspace_notes(proxy: RunningServer) -> None:
    url = proxy.url + API + "/sessions/team-1"
    assert httpx.post(proxy.url + API + "/sessions", json={"id": "team-1"}).status_code == 201
    first = httpx.post(url + "/notes", json={"type": "persona", "content": "Busy CFO."}).json()
    second = httpx.post(url + "/notes", json={"type": "persona", "content": "New hire."}).json()
    assert (first["id"], second["id"]) == ("persona1", "persona2")
    assert httpx.get(url + "/notes/persona2").json()["content"] == "New hire."
    assert [n["id"] for n in httpx.get(url + "/notes").json()["notes"]] == ["persona1",
                                                                            "persona2"]
    text = httpx.post(url + "/notes/expand", json={"text": "Write for @persona1"}).json()["text"]
    assert text.endswith("@persona1:\nBusy CFO.")
    bad = httpx.post(url + "/notes", json={"type": "per sona", "content": "x"})
    assert bad.status_code == 400
    assert httpx.get(url + "/notes/persona9").status_code == 404


def test_the_event_stream_carries_the_tenants_events(upstream: WindowedFakeServer,
                                                     proxy: RunningServer) -> None:
    got: list[dict[str, Any]] = []
    ready = threading.Event()

    def read() -> None:
        with httpx.stream("GET", proxy.url + API + "/events",
                          params={"kinds": "build_completed,model_called"}, timeout=20) as r:
            for line in r.iter_lines():
                ready.set()
                if line.startswith("data: "):
                    got.append(json.loads(line[6:]))
                    if got[-1]["kind"] == "model_called":
                        return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    assert ready.wait(10)
    resp = httpx.post(proxy.url + "/v1/chat/completions", json={
        "model": "gpt-4o", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]})
    t.join(20)
    assert [e["kind"] for e in got] == ["build_completed", "model_called"]
    build, call = got
    assert build["data"]["session"] == resp.headers["x-loomctx-session"]
    assert build["data"]["report"]["tokens"] == build["data"]["tokens"]
    assert call["data"]["prompt_tokens"] == upstream.usage[-1][0]


def test_pages_and_openapi(proxy: RunningServer) -> None:
    resp = httpx.post(proxy.url + "/v1/chat/completions", json={
        "model": "gpt-4o", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]})
    build, session = resp.headers["x-loomctx-build"], resp.headers["x-loomctx-session"]
    page = httpx.get(f"{proxy.url}/builds/{build}")
    assert page.headers["content-type"].startswith("text/html") and "budget" in page.text
    listing = httpx.get(f"{proxy.url}/sessions/{session}").text
    assert build in listing
    spec = httpx.get(proxy.url + "/openapi.json").json()
    assert {"/v1/chat/completions", "/v1/messages", API + "/sessions",
            API + "/builds/{build_id}", API + "/events"} <= set(spec["paths"])
    assert httpx.get(proxy.url + "/docs").status_code == 200
