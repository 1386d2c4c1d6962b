"""The context proxy: ``POST /v1/chat/completions`` and ``POST /v1/messages``.

A client keeps talking its provider's API, with its SDK's ``base_url`` pointed here. For each
request the proxy stores the new messages in the session's memory, builds the context for the
upstream's window (output reserve: the request's ``max_tokens``), forwards the request with the
built ``messages`` (and ``system``) in place of the client's, and passes the answer back
unchanged — bytes as they arrive when ``stream`` is true. The reply then joins the session's
memory and the upstream's usage joins the build's record (``X-Loomctx-Build`` names it).

Every other field of the request (model, temperature, tool choice, the client's own tool
definitions) goes upstream as sent. If the upstream still refuses the request as too long, the
proxy rebuilds with the limit the error names minus the output reserve (or 75% of the refused
budget), retries once and keeps the smaller budget for the session; only a second refusal
reaches the client.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from loomctx.agent.loop import STEP_DOWN
from loomctx.errors import InputError
from loomctx.events import ModelCalled
from loomctx.models._http import context_length
from loomctx.service.conversations import BuildRecord, Conversation, Usage
from loomctx.service.convert import anthropic_system, from_anthropic, split_openai
from loomctx.service.core import MIN_BUDGET, Service
from loomctx.service.replies import Format, ReplyReader, read_body
from loomctx.service.urls import redact, redact_in
from loomctx.service.web import ServiceError, json_body, one_line

PATHS: Mapping[Format, str] = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
_DROP = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection",
                   "keep-alive", "date", "server"})
_ROUTE_TRIES = 3
_FORWARD = ("anthropic-version", "anthropic-beta", "openai-organization", "openai-project")


def _int_header(request: Request, name: str, query: str) -> int | None:
    raw = request.headers.get(name) or request.query_params.get(query)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"{name} must be an integer, got {raw[:40]!r}", where=name) from None
    if value < MIN_BUDGET:
        raise InputError(f"{name} must be >= {MIN_BUDGET}, got {value}", where=name)
    return value


def _output_tokens(fmt: Format, body: Mapping[str, Any]) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{key} must be a positive integer, got {value!r}", where=key)
            return value
    if fmt == "anthropic":
        raise InputError("max_tokens is required by the Messages API", where="max_tokens")
    return None


def _tools(fmt: Format, body: Mapping[str, Any]) -> list[Any]:
    """The request's tool definitions in the OpenAI shape loomctx counts."""
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise InputError(f"tools must be a list, got {type(tools).__name__}", where="tools")
    if fmt == "openai":
        return tools
    return [{"name": t.get("name"), "description": t.get("description"),
             "parameters": t.get("input_schema") or {"type": "object"}}
            if isinstance(t, Mapping) and "input_schema" in t else t
            for t in tools if not (isinstance(t, Mapping) and t.get("type") not in
                                   (None, "custom"))]  # server tools: passed on, not counted


def _asks_usage(fmt: Format, body: Mapping[str, Any]) -> bool | None:
    """Whether an OpenAI streaming request asks for the usage chunk (None: not applicable)."""
    if fmt != "openai" or not body.get("stream"):
        return None
    options = body.get("stream_options")
    if options is not None and not isinstance(options, Mapping):
        return None  # not ours to fix: the upstream answers it
    return bool(options and options.get("include_usage"))


def _usage_only(event: bytes) -> bool:
    """An OpenAI stream event that carries only the usage (``choices`` empty)."""
    if not event.startswith(b"data: {"):
        return False
    try:
        data = json.loads(event[6:])
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("choices") == [] and "usage" in data


UNDERCOUNT_SLACK = 1.02
"""Measured prompts up to 2 % over the build's count are framing noise, not a miscount."""
MAX_UNDERCOUNT = 4.0
"""The most a conversation's budgets shrink for an upstream that counts more than loomctx."""


class Proxy:
    """Forwards built requests to the upstream for a :class:`Service`."""

    def __init__(self, service: Service, client: httpx.AsyncClient) -> None:
        self.service = service
        self.client = client
        self._finishing: set[asyncio.Task[None]] = set()
        """Streams being wound up (reply stored, session unlocked) apart from their request."""

    def _headers(self, fmt: Format, request: Request) -> dict[str, str]:
        opts = self.service.options
        out = {"content-type": "application/json", "accept": request.headers.get(
            "accept", "application/json")}
        for name in _FORWARD:
            if name in request.headers:
                out[name] = request.headers[name]
        if fmt == "anthropic":
            out.setdefault("anthropic-version", "2023-06-01")
        if opts.upstream_api_key:
            if fmt == "openai":
                out["authorization"] = f"Bearer {opts.upstream_api_key}"
            else:
                out["x-api-key"] = opts.upstream_api_key
        elif not opts.keys:
            for name in ("authorization", "x-api-key"):
                if name in request.headers:
                    out[name] = request.headers[name]
        return out

    async def handle(self, fmt: Format, request: Request, tenant: str) -> Response:
        opts = self.service.options
        body = await json_body(request, opts.max_body_bytes)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise InputError("messages must be a non-empty list", where="messages")
        if len(messages) > opts.max_messages:
            raise ServiceError(413, f"{len(messages)} messages exceed the limit of "
                                    f"{opts.max_messages} per request")
        if fmt == "openai":
            system, conversation = split_openai(messages)
        else:
            system, conversation = anthropic_system(body.get("system")), from_anthropic(messages)
        asked_out = _output_tokens(fmt, body)
        asked = _int_header(request, "x-loomctx-budget", "loomctx_budget")
        session_id = (request.headers.get("x-loomctx-session")
                      or request.query_params.get("loomctx_session"))
        tools = _tools(fmt, body)
        for _ in range(_ROUTE_TRIES):
            conv, new, seen = self.service.route(tenant, fmt, str(body.get("model") or ""),
                                                 system, conversation, session_id)
            await conv.lock.acquire()
            if seen is None or conv.head == seen:
                break
            conv.lock.release()  # a reply landed while this request waited: look again
        else:
            raise ServiceError(409, "the conversation changed while this request waited "
                                    f"{_ROUTE_TRIES} times; send it again")
        release = True
        try:
            conv.tools.set(tools)
            await self.service.store_messages(tenant, conv, new)
            out = self.service.reserve(conv, asked_out)
            budget = self.service.budget(conv, out, asked)
            if conv.cap is not None:
                budget = min(budget, conv.cap)
            record = await self.service.build(tenant, conv, budget)
            resp = await self._send(fmt, request, body, record)
            refusal = await self._refusal(resp)
            if refusal is not None:
                self._measure(conv, record, refusal[1], out)
                smaller = self._smaller(record.report.budget, refusal, out, conv.undercount)
                record.note = f"refused by the upstream as too long; rebuilt at {smaller}"
                conv.cap = smaller
                record = await self.service.build(tenant, conv, smaller, retried=True)
                resp = await self._send(fmt, request, body, record)
            headers = {k: v for k, v in resp.headers.items() if k.lower() not in _DROP}
            headers.update({"x-loomctx-build": record.id, "x-loomctx-session": conv.session.id})
            if resp.status_code < 400 and body.get("stream"):
                release = False
                relay = self._relay(fmt, tenant, conv, record, resp, body,
                                    strip_usage=_asks_usage(fmt, body) is False)
                return StreamingResponse(relay, status_code=resp.status_code, headers=headers)
            content = await resp.aread()
            await resp.aclose()
            if resp.status_code < 400:
                await self._remember(fmt, tenant, conv, record, read_body(fmt, content), body)
            return Response(content, status_code=resp.status_code, headers=headers)
        finally:
            if release:
                conv.lock.release()

    async def _send(self, fmt: Format, request: Request, body: Mapping[str, Any],
                    record: BuildRecord) -> httpx.Response:
        payload = dict(record.payload)
        payload.pop("tools", None)  # the client's own definitions go as sent
        if _asks_usage(fmt, body) is False:  # ask for the usage; _relay hides it again
            payload["stream_options"] = {**(body.get("stream_options") or {}),
                                         "include_usage": True}
        url = self.service.options.upstream_url(PATHS[fmt])
        upstream = httpx.Request("POST", url, headers=self._headers(fmt, request),
                                 content=json.dumps({**body, **payload}).encode())
        try:
            return await self.client.send(upstream, stream=True)
        except httpx.HTTPError as exc:
            raise ServiceError(502, f"the upstream {redact(url)!r} could not be reached: "
                                    f"{type(exc).__name__}: {redact_in(str(exc), url)}"
                               ) from exc

    @staticmethod
    async def _refusal(resp: httpx.Response) -> tuple[int | None, int | None] | None:
        """The upstream's (limit, requested) when it refused the request as too long."""
        if resp.status_code != 400:
            return None
        await resp.aread()
        await resp.aclose()
        try:
            return context_length(json.loads(resp.content))
        except ValueError:
            return None

    @staticmethod
    def _measure(conv: Conversation, record: BuildRecord, prompt: int | None,
                 out: int = 0) -> None:
        """The upstream counted ``prompt`` tokens (``out`` of them the output reserve, in a
        refusal) where the build counted its own: keep the conversation's largest ratio."""
        predicted = record.report.tokens
        if not prompt or not predicted:
            return
        ratio = (prompt - out) / predicted
        if ratio > UNDERCOUNT_SLACK:
            conv.undercount = min(MAX_UNDERCOUNT, max(conv.undercount, ratio))

    @staticmethod
    def _smaller(refused: int, numbers: tuple[int | None, int | None], out: int,
                 undercount: float = 1.0) -> int:
        limit = numbers[0]
        if limit is not None:
            fits = limit - out if undercount <= 1.0 else \
                math.floor((limit - out) / (undercount * UNDERCOUNT_SLACK))
            if MIN_BUDGET <= fits < refused:
                return fits
        smaller = math.floor(refused * STEP_DOWN)
        if smaller < MIN_BUDGET:
            raise ServiceError(400, f"the upstream refused {refused} tokens as too long and a "
                                    f"smaller budget would be under {MIN_BUDGET} tokens")
        return smaller

    async def _relay(self, fmt: Format, tenant: str, conv: Conversation, record: BuildRecord,
                     resp: httpx.Response, body: Mapping[str, Any], *, strip_usage: bool,
                     ) -> AsyncIterator[bytes]:
        """The upstream's bytes as they come; with ``strip_usage``, whole events, less the
        usage chunk the client did not ask for."""
        reader = ReplyReader(fmt)
        pending = b""
        complete = False
        try:
            async for chunk in resp.aiter_bytes():
                reader.feed(chunk)
                if not strip_usage:
                    yield chunk
                    continue
                *events, pending = (pending + chunk).split(b"\n\n")
                out = b"".join(e + b"\n\n" for e in events if not _usage_only(e))
                if out:
                    yield out
            complete = True
            if pending and not _usage_only(pending):
                yield pending
        finally:
            # A client that closes the stream at its last byte cancels this generator: storing
            # the reply here could be cut off halfway (the session holding a reply its
            # fingerprints do not know, so the client's next request would add it twice).
            # A task of its own stores it and only then unlocks the session.
            task = asyncio.create_task(self._finish(fmt, tenant, conv, record, resp,
                                                    reader if complete else None, body))
            self._finishing.add(task)
            task.add_done_callback(self._finishing.discard)

    async def _finish(self, fmt: Format, tenant: str, conv: Conversation, record: BuildRecord,
                      resp: httpx.Response, reader: ReplyReader | None,
                      body: Mapping[str, Any]) -> None:
        """After a stream: close the upstream, store the whole reply, unlock the session."""
        try:
            await resp.aclose()
            if reader is not None:
                await self._remember(fmt, tenant, conv, record, reader.result(), body)
            else:
                record.reply_stored = False
                record.note = "the stream ended before the reply was complete: not stored"
        finally:
            conv.lock.release()

    async def _remember(self, fmt: Format, tenant: str, conv: Conversation,
                        record: BuildRecord, reply: Any, body: Mapping[str, Any]) -> None:
        """Store the reply in the session and its usage in the build's record."""
        if reply is None:
            record.reply_stored = False
            return
        u = reply.usage
        record.usage = Usage(prompt_tokens=u.prompt_tokens, cached_tokens=u.cached_tokens,
                             completion_tokens=u.completion_tokens)
        self._measure(conv, record, u.prompt_tokens)
        try:
            await self.service.store_messages(tenant, conv, [reply.message])
            record.reply_stored = True
        except InputError as exc:  # e.g. an empty reply: passed on, not remembered
            record.reply_stored = False
            record.note = one_line(str(exc))
        s = conv.session
        s.events.emit(ModelCalled(
            tenant=tenant, session=s.id, turn=len(conv.builds) - 1, model=str(body.get("model")),
            prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens,
            cached_tokens=u.cached_tokens, predicted_tokens=record.report.tokens,
            predicted_reusable_tokens=record.report.reused_prefix_tokens,
            tool_calls=len(reply.message.get("tool_calls") or []),
            finish_reason=reply.finish_reason, at=s.clock()))


__all__ = ["PATHS", "Proxy"]
