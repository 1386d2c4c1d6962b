"""A new wire format is one module and one registration: the proof.

This module defines ``toy``, a small JSON wire format none of loomctx knows (a request is
``{"turns": [{"who", "say"}], "tools"?}``, a reply ``{"answer": {"text", "calls"}, "used",
"why"}``, a stream ``event: piece`` / ``call`` / ``end`` SSE events), registers it, and uses it
through the public paths only: a :class:`~loomctx.session.Session` build in that format (its
renderer, its counting rules, its structural check in the builder's verify stage), a model
client calling it over real HTTP on loopback (whole and streamed replies, its too-long error),
and the proxy's reply readers. Nothing outside this file knows the format.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from loomctx import BuildOptions, Session, providers
from loomctx.errors import ContextLengthError, ModelResponseError
from loomctx.items import ContextItem
from loomctx.models.protocol import ModelResponse, Usage
from loomctx.models.wire import WireChatModel
from loomctx.providers.errors import context_length
from loomctx.providers.layout import Layout, Rendered, stable_hash
from loomctx.providers.sse import Event
from loomctx.render.validate import check
from loomctx.service.replies import ReplyReader, read_body
from loomctx.testing import WordCounter
from loomctx.tokens.chat import ChatCounter

WHO = {"system": "sys", "developer": "sys", "user": "user", "assistant": "bot", "tool": "tool"}
FRAME = 2
"""Tokens a toy turn costs beyond its words."""
_TOO_LONG = re.compile(r"toy: (\d+) tokens asked, (\d+) fit")


# -- the toy provider: everything loomctx needs to know about the format ----------------------

class ToyCounting:
    reply_priming = 1

    def tools_overhead(self, count: Any) -> int:
        return 5

    def message(self, msg: Mapping[str, Any], count: Any) -> int:
        say = msg.get("say", msg.get("content"))
        return FRAME + count(say if isinstance(say, str) else json.dumps(say))

    def system(self, system: Any, count: Any) -> int:
        return FRAME + count(system if isinstance(system, str) else json.dumps(system))

    def tool(self, tool_def: Mapping[str, Any], count: Any) -> int:
        return count(json.dumps(tool_def))


class ToyRenderer:
    format = "toy"

    def __init__(self, chat: Any) -> None:
        self.chat = chat

    def cost(self, item: ContextItem) -> int:
        if item.kind == "tool":
            return self.chat.tool(item.metadata["schema"])
        return self.chat.message({"say": item.content})

    def overhead(self, sections: frozenset[str] | None = None) -> int:
        return self.chat.reply_priming + 2 * FRAME + self.chat.tools_overhead

    def render(self, layout: Layout) -> Rendered:
        system = "\n\n".join([*(i.content for i in layout.system), *filter(None, [layout.output])])
        turns = [{"who": "sys", "say": system}] if system else []
        turns += [{"who": WHO.get(i.role, "user"), "say": i.content} for i in layout.history]
        turns += [{"who": "sys", "say": i.content} for i in (*layout.state, *layout.evidence)]
        turns += [{"who": "user", "say": i.content} for i in layout.input]
        tools = [i.metadata["schema"] for i in layout.tools]
        payload: dict[str, Any] = {"turns": turns, **({"tools": tools} if tools else {})}
        prefix = turns[:1] if system else []
        return Rendered(format=self.format, payload=payload,
                        tokens=self.chat.messages(turns, tools),
                        prefix_tokens=sum(self.chat.message(t) for t in prefix),
                        prefix_hash=stable_hash([tools, prefix]))


def _answer(raw: Any) -> ModelResponse:
    answer = raw.get("answer") if isinstance(raw, Mapping) else None
    if not isinstance(answer, Mapping) or not isinstance(answer.get("text"), str):
        raise ModelResponseError(f"toy reply has no answer text: {raw!r:.80}")
    return _response(answer["text"], answer.get("calls") or [], raw.get("used"),
                     raw.get("why"), raw)


def _response(text: str, calls: Sequence[Mapping[str, Any]], used: Any, why: Any,
              raw: Any) -> ModelResponse:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function", "function": {
            "name": c["name"], "arguments": json.dumps(c["args"])}} for c in calls]
    used = used if isinstance(used, Mapping) else {}
    return ModelResponse(message=message, finish_reason=why, raw=raw,
                         usage=Usage(prompt_tokens=used.get("in", 0),
                                     completion_tokens=used.get("out", 0)))


class ToyStream:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[Mapping[str, Any]] = []
        self.end: Mapping[str, Any] = {}

    def feed(self, event: str, data: str) -> tuple[str, bool]:
        return self.add({"kind": event, **json.loads(data)})

    def add(self, obj: Any) -> tuple[str, bool]:
        if obj["kind"] == "piece":
            self.text.append(obj["text"])
            return obj["text"], False
        if obj["kind"] == "call":
            self.calls.append(obj["call"])
            return "", True
        self.end = obj
        return "", False

    def response(self) -> ModelResponse:
        if not self.end:
            raise ModelResponseError("toy stream ended without its end event")
        return _response("".join(self.text), self.calls, self.end.get("used"),
                         self.end.get("why"), {"events": len(self.text)})


class ToyProvider:
    name = "toy"
    label = "Toy API"
    key_env = "TOY_API_KEY"
    path = "/v1/toy"
    counting = ToyCounting()
    default_placement = "system"
    variants: Mapping[str, str] = {}
    requires_max_tokens = False
    default_headers: Mapping[str, str] = {}
    forward_headers: tuple[str, ...] = ()

    def renderer(self, chat: Any, placement: str) -> ToyRenderer:
        return ToyRenderer(chat)

    def tools(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [dict(t) for t in tools]

    def check(self, payload: Mapping[str, Any]) -> list[str]:
        turns = payload.get("turns")
        if not isinstance(turns, list) or not turns:
            return ["turns: a toy request needs a non-empty list of turns"]
        problems = [f"turns[{i}]: who {t.get('who')!r} is not one of {sorted(set(WHO.values()))}"
                    for i, t in enumerate(turns) if t.get("who") not in WHO.values()]
        if turns[-1].get("who") != "user":
            problems.append("turns: the last turn must be the user's")
        return problems

    def parse_reply(self, raw: Any) -> ModelResponse:
        return _answer(raw)

    def stream_reply(self) -> ToyStream:
        return ToyStream()

    def context_length(self, body: Any) -> tuple[int | None, int | None] | None:
        message = str((body.get("error") or {}).get("message", "")) \
            if isinstance(body, Mapping) else ""
        m = _TOO_LONG.search(message)
        return (int(m.group(2)), int(m.group(1))) if m else None

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-toy-key": key}

    def read_request(self, body: Mapping[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
        roles = {v: k for k, v in WHO.items() if k != "developer"}
        return None, [{"role": roles[t["who"]], "content": t["say"]} for t in body["turns"]]

    def request_tools(self, tools: list[Any]) -> list[Any]:
        return tools

    def usage_fields(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        return None

    def is_usage_only(self, event: Event) -> bool:
        return False

    def is_last(self, event: Event) -> bool:
        return event.event == "end"

    def error_event(self, message: str, type_: str = "api_error") -> bytes:
        return f"event: error\ndata: {json.dumps({'message': message})}\n\n".encode()


@pytest.fixture(autouse=True)
def toy() -> Iterator[ToyProvider]:
    provider = ToyProvider()
    providers.register(provider)
    yield provider
    providers.unregister("toy")


# -- builds ------------------------------------------------------------------------------------

def _session() -> Session:
    s = Session(options=BuildOptions(model="gpt-4o", format="toy"), system_prompt="Be brief.")
    s.add_messages_sync([{"role": "user", "content": "what is a loom"},
                         {"role": "assistant", "content": "a frame for weaving"}])
    return s


def test_a_session_builds_in_the_new_format() -> None:
    r = _session().build_sync("and a shuttle", max_tokens=400)
    assert r.rendered.format == "toy"
    assert r.payload["turns"][0] == {"who": "sys", "say": "Be brief."}
    assert r.payload["turns"][-1] == {"who": "user", "say": "and a shuttle"}
    assert {"who": "bot", "say": "a frame for weaving"} in r.payload["turns"]
    assert check("toy", r.payload) == []


def test_the_build_is_counted_by_the_new_formats_rules() -> None:
    s = _session()
    r = s.build_sync("and a shuttle", max_tokens=400)
    chat = ChatCounter(s.builder.tokenizer.counter, "toy")
    expected = ToyCounting.reply_priming + sum(
        FRAME + s.builder.tokenizer.counter.count(t["say"]) for t in r.payload["turns"])
    assert r.rendered.tokens == chat.messages(r.payload["turns"]) == expected
    words = ChatCounter(WordCounter(), "toy")
    assert words.message({"who": "user", "say": "three small words"}) == FRAME + 3
    assert words.tools([{"name": "f"}]) == 5 + 2  # its tools overhead + the JSON's two words


def test_structural_rules_are_the_new_formats() -> None:
    assert check("toy", {"turns": [{"who": "robot", "say": "hi"}]}) == [
        "turns[0]: who 'robot' is not one of ['bot', 'sys', 'tool', 'user']",
        "turns: the last turn must be the user's"]
    assert check("toy", {"turns": []}) == ["turns: a toy request needs a non-empty list of turns"]


def test_the_builder_refuses_a_render_the_format_rejects(toy: ToyProvider,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The verify stage asks the provider: a payload its rules reject never leaves."""
    monkeypatch.setattr(toy, "check", lambda payload: ["turns: rejected by the toy rules"])
    with pytest.raises(Exception, match="rejected by the toy rules"):
        _session().build_sync("and a shuttle", max_tokens=400)


def test_an_unknown_format_names_the_registered_ones() -> None:
    with pytest.raises(Exception, match=r"unknown provider 'toyish'.*'toy'"):
        providers.get("toyish")


# -- a model client over real HTTP, and the proxy's readers -----------------------------------

REPLY = {"answer": {"text": "a shuttle carries the weft",
                    "calls": [{"id": "c1", "name": "look", "args": {"q": "weft"}}]},
         "used": {"in": 40, "out": 6}, "why": "done"}
STREAM = [b"event: piece\ndata: {\"text\": \"a shuttle \"}\n\n",
          b"event: piece\r\ndata: {\"text\": \"carries the weft\"}\r\n\r\n",
          b": keep-alive\n\nevent: call\ndata: {\"call\": {\"id\": \"c1\", \"name\": \"look\", ",
          b"\"args\": {\"q\": \"weft\"}}}\n\n",
          b"event: end\ndata: {\"used\": {\"in\": 40, \"out\": 6}, \"why\": \"done\"}\n\n"]


class _Server:
    """A toy-format server on loopback: JSON, a stream, or a too-long refusal."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, Mapping[str, str], Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append((self.path, {k.lower(): v for k, v in
                                                   self.headers.items()}, body))
                if len(body["turns"]) > 9:
                    self._send(400, b"application/json", [json.dumps({"error": {
                        "message": "toy: 900 tokens asked, 512 fit"}}).encode()])
                elif body.get("stream"):
                    self._send(200, b"text/event-stream", STREAM)
                else:
                    self._send(200, b"application/json", [json.dumps(REPLY).encode()])

            def _send(self, status: int, kind: bytes, chunks: list[bytes]) -> None:
                self.send_response(status)
                self.send_header("content-type", kind.decode())
                self.send_header("content-length", str(sum(map(len, chunks))))
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.http.shutdown()
    s.http.server_close()


def test_a_model_client_calls_the_new_format(server: _Server) -> None:
    model = WireChatModel("toy-1", provider="toy", base_url=server.url, api_key="k",
                          max_retries=0)
    payload = _session().build_sync("and a shuttle", max_tokens=400).payload
    reply = asyncio.run(model.complete(payload))
    assert reply.message["content"] == "a shuttle carries the weft"
    assert reply.message["tool_calls"][0]["function"] == {"name": "look",
                                                         "arguments": '{"q": "weft"}'}
    assert reply.usage.prompt_tokens == 40 and reply.finish_reason == "done"
    path, headers, body = server.requests[0]
    assert path == "/v1/toy" and headers["x-toy-key"] == "k" and body["turns"] == payload["turns"]

    async def stream() -> list[Any]:
        return [e async for e in model.stream(payload)]

    events = asyncio.run(stream())
    assert [e.text for e in events if e.kind == "text"] == ["a shuttle ", "carries the weft"]
    assert [e.kind for e in events].count("tool_call") == 1
    assert events[-1].response is not None
    assert events[-1].response.message == reply.message


def test_the_new_formats_too_long_error_is_a_context_length_error(server: _Server) -> None:
    model = WireChatModel("toy-1", provider="toy", base_url=server.url, max_retries=0)
    turns = [{"who": "user", "say": "x"}] * 10
    with pytest.raises(ContextLengthError) as caught:
        asyncio.run(model.complete({"turns": turns}))
    assert (caught.value.limit, caught.value.requested) == (512, 900)
    assert context_length({"error": {"message": "toy: 900 tokens asked, 512 fit"}}) == (512, 900)


def test_the_proxy_reads_the_new_formats_replies() -> None:
    whole, why = read_body("toy", json.dumps(REPLY).encode())
    assert why == "" and whole is not None
    reader = ReplyReader("toy")
    for chunk in STREAM:
        reader.feed(chunk)
    streamed = reader.result()
    assert streamed is not None and streamed.message == whole.message
    assert streamed.usage == whole.usage
    broken, why = read_body("toy", b'{"answer": 3}')
    assert broken is None and "no answer text" in why
