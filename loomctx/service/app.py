"""``create_app``: the ASGI application of ``loomctx serve`` (FastAPI).

Routes: the proxy (``POST /v1/chat/completions``, ``POST /v1/messages``), the API under
``/v1/loomctx`` (:mod:`.api`), the HTML pages of builds and sessions (:mod:`.pages`) and the
browser's sign-in to them (:mod:`.login`), ``GET /health``, and FastAPI's ``/docs`` and
``/openapi.json``. Every route but those of :data:`PUBLIC` needs a tenant's key when the
service has keys (the pages also take the sign-in cookie).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loomctx import providers
from loomctx.errors import LoomctxError
from loomctx.service._net import UpstreamTransport
from loomctx.service.api import page_router, router, tenant
from loomctx.service.core import Service
from loomctx.service.heap import tune_gc
from loomctx.service.login import LoginRequired, login_redirect
from loomctx.service.login import router as login_router
from loomctx.service.notes import router as notes_router
from loomctx.service.options import FALLBACK_ENCODING, ServiceOptions
from loomctx.service.pages import Pages, default_pages
from loomctx.service.proxy import Proxy
from loomctx.service.shares import ReleaseShares, Shares, hold
from loomctx.service.slowbody import BodyTimeout
from loomctx.service.stream import EventHub
from loomctx.service.tenants import Unauthorized
from loomctx.service.throttle import Throttled, checked_tenant
from loomctx.service.urls import SecretFilter
from loomctx.service.web import ServiceError, error_response, status_of
from loomctx.tokens.registry import counter_for_model

PUBLIC = frozenset({"/health", "/docs", "/docs/oauth2-redirect", "/openapi.json", "/redoc",
                    "/login", "/logout"})
"""Routes that need no key (everything else is a tenant's)."""


class BodyLimit:
    """Refuses a body over ``limit`` bytes with 413 while it streams in (chunked too)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refuse(scope, receive, send, int(value))
                return
        if any(name == b"content-length" for name, _ in scope.get("headers", [])):
            await self.app(scope, receive, send)  # the server stops at the declared length
            return
        # No length declared (chunked): read the body within the limit, then replay it.
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = bool(message.get("more_body"))
            if size > self.limit:
                await self._refuse(scope, receive, send, size)
                return
        body, sent = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, size: int) -> None:
        response = error_response(Request(scope), 413, f"the body is {size}+ bytes; the limit "
                                                       f"is {self.limit}")
        await response(scope, receive, send)


def _proxy_route(fmt: str, label: str, tenant: Callable[..., Any]
                 ) -> Callable[..., Awaitable[Response]]:
    async def route(request: Request, who: str = Depends(tenant)) -> Response:
        shares: Shares = request.app.state.shares
        hold(request.scope, shares.admit(who, _body_size(request)))
        return await request.app.state.proxy.handle(fmt, request, who)  # type: ignore[no-any-return]

    route.__doc__ = f"{label}, through the context proxy."
    return route


def _body_size(request: Request) -> int:
    """The bytes a request's body counts for in its tenant's share: its ``Content-Length``, or
    the largest body accepted when it is chunked (read whole by :class:`BodyLimit`)."""
    declared = request.headers.get("content-length")
    limit: int = request.app.state.service.options.max_body_bytes
    return min(int(declared), limit) if declared is not None and declared.isdigit() else limit


def create_app(options: ServiceOptions, *, pages: Pages | None = None,
               service: Service | None = None, own_process: bool = False) -> FastAPI:
    """The service's app; ``pages`` renders the HTML pages (default: :func:`default_pages`).
    ``own_process``: the app is all its process serves (``loomctx serve``), so the garbage
    collector is set for a server's heap once it has started (:mod:`.heap`)."""
    service = service if service is not None else Service(options)
    hub = EventHub()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        hide = SecretFilter(options.upstream)
        logging.getLogger("httpx").addFilter(hide)
        timeout = httpx.Timeout(options.timeout, connect=min(30.0, options.timeout))
        limits = httpx.Limits(max_connections=options.max_requests,
                              max_keepalive_connections=min(64, options.max_requests))
        # One client serves every tenant: it keeps no cookie an upstream sets (a request is
        # built whole by the proxy, so none would be sent, but the jar would grow unbounded).
        jar = CookieJar(DefaultCookiePolicy(allowed_domains=()))
        async with httpx.AsyncClient(timeout=timeout, cookies=jar,
                                     transport=UpstreamTransport(limits=limits)) as client:
            app.state.proxy = Proxy(service, client)
            await service.start()
            await hub.attach(service.bus)
            # Load the tokenizer before the first request, off the event loop (~2 s once).
            await asyncio.to_thread(counter_for_model, options.model or "gpt-4o",
                                    fallback=FALLBACK_ENCODING)
            if own_process:
                tune_gc()
            try:
                yield
            finally:
                logging.getLogger("httpx").removeFilter(hide)
                try:
                    await hub.detach(service.bus)
                except LoomctxError as exc:  # Redis away: the group stays, said in the log
                    logging.getLogger("loomctx.service").warning(
                        "could not remove the event group of this process: %s", exc)
                await service.aclose()

    app = FastAPI(title="loomctx", lifespan=lifespan,
                  description="A context proxy for the OpenAI and Anthropic APIs, and the "
                              "loomctx HTTP API: sessions, builds and their reports, events.")
    app.state.service = service
    app.state.hub = hub
    app.state.pages = pages if pages is not None else default_pages()
    app.state.shares = Shares(max_requests=options.max_requests,
                              tenant_requests=options.tenant_requests,
                              max_request_bytes=options.max_request_bytes,
                              tenant_request_bytes=options.tenant_request_bytes)

    async def on_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, LoginRequired):
            return login_redirect(exc)
        if isinstance(exc, Unauthorized):
            return error_response(request, 401, str(exc))
        if isinstance(exc, Throttled):
            refused = error_response(request, 429, str(exc))
            refused.headers["retry-after"] = str(exc.retry_after)
            return refused
        if isinstance(exc, RequestValidationError):
            errors = exc.errors()
            if any(e.get("type") == "json_invalid" for e in errors):
                return error_response(request, 400, "the body is not valid JSON")
            problems = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}"
                        for e in errors[:3]]
            return error_response(request, 400, "; ".join(problems) or "invalid request")
        if isinstance(exc, HTTPException):
            return error_response(request, exc.status_code, str(exc.detail))
        status, message = status_of(exc)
        response = error_response(request, status, message)
        if isinstance(exc, ServiceError) and exc.retry_after is not None:
            response.headers["retry-after"] = str(exc.retry_after)
        return response

    # Specific kinds are answered by the exception middleware; plain ``Exception`` (a bug)
    # reaches the server-error middleware, which answers and then logs the trace.
    for kind in (Exception, HTTPException, RequestValidationError, Unauthorized, LoginRequired,
                 ServiceError, LoomctxError, ValueError, ClientDisconnect):
        app.add_exception_handler(kind, on_error)

    @app.get("/health", tags=["service"])
    async def health(request: Request) -> dict[str, Any]:
        """Whether the service is up; to a caller with a key (or on an open service) also
        where it forwards to, without the URL's credentials or query secrets."""
        try:
            checked_tenant(request, options.keys)
        except (Unauthorized, Throttled):
            return {"status": "ok"}
        return {"status": "ok", "upstream": options.upstream_shown}

    for wire in providers.registered():  # each wire format at its own route
        app.add_api_route(wire.path, _proxy_route(wire.name, wire.label, tenant),
                          methods=["POST"], tags=["proxy"], name=f"{wire.name}_route")
    app.include_router(router())
    app.include_router(notes_router())
    app.include_router(page_router())
    app.include_router(login_router())
    app.add_middleware(BodyLimit, limit=options.max_body_bytes)
    app.add_middleware(BodyTimeout, idle=options.body_timeout, total=options.body_deadline)
    app.add_middleware(ReleaseShares)
    return app


__all__ = ["PUBLIC", "BodyLimit", "create_app"]
