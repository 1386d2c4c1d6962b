"""What every route shares: reading a JSON body within limits, and errors as one line.

Every failure a caller can cause is a 4xx whose body is one JSON line with the reason — in the
OpenAI error shape on the OpenAI route and the API, in the Anthropic shape on ``/v1/messages``,
so SDKs raise their usual errors. An unexpected exception is a 500 with a one-line message and
no trace; the trace goes to the log: a ``ValueError`` that is not a :class:`ConfigError` is the
service's own fault, never the client's (everything a client can get wrong is checked before
the upstream is called). A store that fails (PostgreSQL restarting, a locked SQLite file) is a
503 with ``Retry-After``: nothing of the request was stored, and the SDKs send it again.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from loomctx.errors import BudgetError, ConfigError, ModelError, StoreError, TooLargeError
from loomctx.service.checks import loads

log = logging.getLogger("loomctx.service")


class ServiceError(Exception):
    """A request the service answers with ``status`` and a one-line reason."""

    retry_after: int | None = None
    """Seconds to send as ``Retry-After`` (a refusal for want of room), if any."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ClientGone(ServiceError):
    """The client hung up (mid-upload, or while the upstream was answering): logged as one
    line, and answered with 499 for the record (nobody reads it)."""

    def __init__(self, message: str) -> None:
        super().__init__(499, message)


RETRY_AFTER = 2
"""Seconds a 503 asks the client to wait (``Retry-After``) before it sends the request again:
about what a PostgreSQL restart takes; the OpenAI and Anthropic SDKs honour the header."""


def one_line(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
          409: "invalid_request_error", 413: "request_too_large", 422: "invalid_request_error",
          429: "rate_limit_error",
          499: "invalid_request_error", 502: "api_error", 504: "timeout_error",
          500: "api_error"}


UNAVAILABLE = {"openai": "server_error", "anthropic": "overloaded_error"}
"""The error type each provider gives a temporary outage: OpenAI's 5xx bodies say
``server_error``, Anthropic's ``overloaded_error`` (retried by both SDKs)."""


def error_response(request: Request, status: int, message: str) -> JSONResponse:
    """``status`` with ``message`` in the shape the route's clients read; a 503 in the
    provider's outage type, with ``Retry-After``."""
    anthropic = request.url.path.endswith("/v1/messages")
    type_ = _TYPES.get(status, "invalid_request_error")
    code: str | None = None
    headers: dict[str, str] | None = None
    if status == 503:
        type_ = UNAVAILABLE["anthropic" if anthropic else "openai"]
        code, headers = "service_unavailable", {"retry-after": str(RETRY_AFTER)}
    message = one_line(message)
    if anthropic:
        body: dict[str, Any] = {"type": "error", "error": {"type": type_, "message": message}}
    else:
        body = {"error": {"message": message, "type": type_, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


def status_of(exc: Exception) -> tuple[int, str]:
    """The status and message for an exception a route raised."""
    if isinstance(exc, ClientDisconnect):
        exc = ClientGone("the client hung up before its request was read")
    if isinstance(exc, ClientGone):
        log.warning("%s", one_line(str(exc)))
        return exc.status, str(exc)
    if isinstance(exc, ServiceError):
        return exc.status, str(exc)
    if isinstance(exc, TooLargeError):
        return 413, str(exc)
    if isinstance(exc, BudgetError):
        return 400, f"the request cannot fit its budget: {exc}"
    if isinstance(exc, StoreError):
        log.warning("the store failed: %s", one_line(str(exc)))
        return 503, (f"the memory store failed ({exc}); nothing of this request was stored: "
                     f"send it again in {RETRY_AFTER} s")
    if isinstance(exc, ConfigError):
        return 400, str(exc)
    if isinstance(exc, ModelError):
        return 502, str(exc)
    log.exception("unexpected error on %s", type(exc).__name__)
    return 500, f"internal error ({type(exc).__name__}); the server log has the details"


async def json_body(request: Request, limit: int) -> dict[str, Any]:
    """The request's JSON object, refusing bodies over ``limit`` bytes before reading them,
    and JSON the upstream could not take (see :func:`loomctx.service.checks.loads`)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ServiceError(413, f"the body is {declared} bytes; the limit is {limit}")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ServiceError(413, f"the body exceeds the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientGone(f"the client hung up after {size} bytes of its request body on "
                         f"{request.url.path}") from None
    body = loads(b"".join(chunks))
    if not isinstance(body, dict):
        raise ServiceError(400, f"the body must be a JSON object, got {type(body).__name__}")
    return body


__all__ = ["RETRY_AFTER", "UNAVAILABLE", "ClientGone", "ServiceError", "error_response",
           "json_body", "one_line", "status_of"]
