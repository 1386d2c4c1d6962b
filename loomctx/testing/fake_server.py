"""A fake model server on loopback that speaks the OpenAI and Anthropic wire formats.

Tests of model clients and agents go through real HTTP (sockets, status codes, headers, SSE
framing) instead of mocks, yet never leave the machine. The server replays a script, one step
per request, whichever endpoint is hit, and records every request so a test can assert what the
model was shown::

    with FakeModelServer([Reply(text="hi"), HttpError(429, retry_after=1)]) as server:
        model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1")
        ...
        assert server.requests[0].body["messages"] == [...]

Endpoints: ``POST /v1/chat/completions`` (OpenAI; also ``/chat/completions``) and
``POST /v1/messages`` (Anthropic), each as JSON or, with ``"stream": true``, as SSE.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from loomctx.testing.fake_script import Format, Step, anthropic_error, openai_error, render
from loomctx.testing.strict_template import request_template_problems

__all__ = ["FakeModelServer", "RecordedRequest"]


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: Mapping[str, str]
    """Header names lower-cased."""
    body: Any
    """The JSON body, parsed (None when it was not JSON)."""
    raw: bytes = field(repr=False)


class FakeModelServer:
    """A scripted OpenAI/Anthropic server on ``127.0.0.1`` in a background thread.

    ``script`` holds the steps (:class:`~loomctx.testing.Reply`, ``HttpError``,
    ``ContextLength``, ``Malformed``, ``Raw``, ``Delay``, or a plain string for a text reply),
    consumed
    one per request; :meth:`add` appends more. When the script runs out the server answers 400
    "script exhausted", which clients do not retry, so a test that calls once too often fails
    loudly — unless ``respond`` answers from the request. Use it as a context manager, or
    :meth:`start` and :meth:`close`.
    """

    def __init__(self, script: Iterable[Step | str] = (), *, port: int = 0,
                 respond: Callable[[RecordedRequest], Step | str] | None = None,
                 strict_template: bool = False) -> None:
        self._script: list[Step | str] = list(script)
        self.strict_template = strict_template
        """Refuse (400, before taking a script step) a request a strict open-model chat
        template would refuse (:func:`loomctx.testing.strict_template.template_problems`); an
        Anthropic request is checked as the conversation such a server lays it out as
        (:func:`~loomctx.testing.strict_template.request_template_problems`)."""
        self.respond = respond
        """Answers each request past the end of the script from the request itself (e.g.
        :class:`~loomctx.testing.ToolFollower`); None: such a request is a 400."""
        self._lock = threading.Lock()
        self._served = 0
        self.requests: list[RecordedRequest] = []
        """Every request received, in order."""
        self.template_refusals: list[list[str]] = []
        """The template problems of each request refused under ``strict_template``."""
        self._httpd = _Server(("127.0.0.1", port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL without a path, e.g. ``http://127.0.0.1:54321``. OpenAI clients take
        ``url + "/v1"``; Anthropic clients take ``url``."""
        return f"http://127.0.0.1:{self.port}"

    def add(self, *steps: Step | str) -> None:
        """Append steps to the script."""
        with self._lock:
            self._script.extend(steps)

    @property
    def remaining(self) -> int:
        """Steps not yet served."""
        with self._lock:
            return len(self._script) - self._served

    def start(self) -> FakeModelServer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever,
                                            kwargs={"poll_interval": 0.02},
                                            name="FakeModelServer", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self, request: RecordedRequest) -> Step | str | None:
        with self._lock:
            self.requests.append(request)
            if self._served >= len(self._script):
                return None if self.respond is None else self.respond(request)
            step = self._script[self._served]
            self._served += 1
            return step


class _Server(ThreadingHTTPServer):
    request_queue_size = 128
    """The listen backlog (socketserver's default is 5): many clients connecting at once
    wait for their turn, as on a real API, instead of a dropped SYN's 1 s retry."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Silent when the client went away (a reset or closed connection is how clients end,
        and a test reading stderr must not see a traceback for it); anything else is printed."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _handler(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms stall

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: test output stays readable."""

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            request = RecordedRequest(method="POST", path=self.path, raw=raw, body=body,
                                      headers={k.lower(): v for k, v in self.headers.items()})
            path = self.path.split("?")[0]
            fmt: Format
            if path.endswith("/messages"):
                fmt = "anthropic"
            elif path.endswith("/chat/completions"):
                fmt = "openai"
            else:
                self._send(404, {}, json.dumps(openai_error(f"no route {path!r}",
                                                            "invalid_request_error")).encode())
                return
            if server.strict_template and isinstance(body, dict):
                problems = request_template_problems(fmt, body)
                if problems:
                    with server._lock:
                        server.requests.append(request)
                        server.template_refusals.append(problems)
                    text = "chat template error: " + "; ".join(problems)
                    err = (anthropic_error(text, "invalid_request_error") if fmt == "anthropic"
                           else openai_error(text, "BadRequestError"))
                    self._send(400, {}, json.dumps(err).encode())
                    return
            step = server._next(request)
            if step is None:
                message = f"FakeModelServer: script exhausted after {server._served} steps"
                err = (anthropic_error(message, "invalid_request_error") if fmt == "anthropic"
                       else openai_error(message, "invalid_request_error"))
                self._send(400, {}, json.dumps(err).encode())
                return
            stream = isinstance(body, dict) and bool(body.get("stream"))
            model = body.get("model", "fake") if isinstance(body, dict) else "fake"
            include_usage = isinstance(body, dict) and bool(
                (body.get("stream_options") or {}).get("include_usage"))
            out = render(step, fmt, model=str(model), stream=stream,
                         include_usage=include_usage)
            if out.delay:
                time.sleep(out.delay)
            if out.cut:
                self._cut(out.status, out.headers, out.body + b"".join(out.chunks))
                return
            self._send(out.status, out.headers, out.body, chunks=out.chunks, pause=out.pause)

        def _cut(self, status: int, headers: Mapping[str, str], sent: bytes) -> None:
            """Announce more than is sent, then close: a connection lost mid-body."""
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(sent) + 1000))
                self.end_headers()
                self.wfile.write(sent)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def _send(self, status: int, headers: Mapping[str, str], body: bytes,
                  chunks: Sequence[bytes] = (), pause: float = 0.0) -> None:
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if chunks:
                    if "content-type" not in {k.lower() for k in headers}:
                        self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    self.send_header("connection", "close")
                    self.end_headers()
                    for n, chunk in enumerate(chunks):
                        if pause and n:
                            time.sleep(pause)
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    self.close_connection = True
                    return
                if "content-type" not in {k.lower() for k in headers}:
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (a timeout test)

    return Handler
