"""A request body must keep arriving: a client cannot hold a connection with half a body.

uvicorn times out idle keep-alive connections but not a request whose body stops halfway, so
any client (with a valid key, or without one on an open service) could hold connections and
their buffers forever. :class:`BodyTimeout` wraps the ASGI ``receive`` of each request: a body
that pauses longer than ``idle`` seconds between two chunks, or takes longer than ``total``
seconds in all, is answered 408 in the route's error shape with ``Connection: close``, and the
server closes the connection. Once the body is complete ``receive`` is left alone (a streaming
reply waits on it for the client's disconnect).
"""

from __future__ import annotations

import asyncio
import time

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loomctx.service.web import error_response


class SlowBody(HTTPException):
    """The request body stopped arriving (HTTP 408); an ``HTTPException`` so that the routes'
    own body parsing passes it on unchanged."""

    def __init__(self, seconds: float, what: str) -> None:
        super().__init__(408, f"the request body {what} {seconds:g} seconds: send the whole "
                              "body without pausing")


class BodyTimeout:
    """ASGI middleware: 408 and a closed connection for a body that stalls (see the module)."""

    def __init__(self, app: ASGIApp, idle: float, total: float) -> None:
        self.app, self.idle, self.total = app, idle, total

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = time.monotonic() + self.total
        done = timed_out = started = False

        async def guarded_receive() -> Message:
            nonlocal done, timed_out
            if done:
                return await receive()
            left = deadline - time.monotonic()
            wait, what = ((self.idle, "paused for more than") if self.idle < left
                          else (max(left, 0.0), "took more than"))
            try:
                message = await asyncio.wait_for(receive(), timeout=wait)
            except asyncio.TimeoutError:
                timed_out = True
                raise SlowBody(self.idle if what.startswith("paused") else self.total,
                               what) from None
            if message["type"] != "http.request" or not message.get("more_body"):
                done = True
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if timed_out:  # the rest of the body is never read: the connection must go
                    headers = [(k, v) for k, v in message.get("headers", [])
                               if k.lower() != b"connection"]
                    message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except SlowBody as exc:  # raised where no route answers it (a middleware reading)
            if started:
                return
            response = error_response(Request(scope), 408, str(exc.detail))
            await response(scope, guarded_receive, guarded_send)


__all__ = ["BodyTimeout", "SlowBody"]
