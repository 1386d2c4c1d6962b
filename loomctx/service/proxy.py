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
import contextlib
import json
import math
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from loomctx import providers
from loomctx.agent.loop import STEP_DOWN
from loomctx.errors import InputError, TooLargeError
from loomctx.events import ModelCalled
from loomctx.providers.errors import context_length
from loomctx.providers.sse import Decoder
from loomctx.service import replay
from loomctx.service.checks import check_session_id, read_upstream
from loomctx.service.conversations import BuildRecord, Conversation, Usage
from loomctx.service.core import MIN_BUDGET, Service
from loomctx.service.replay import REPLAYED
from loomctx.service.replies import Format, ReplyReader, read_body
from loomctx.service.urls import redact, redact_in
from loomctx.service.web import (
    RETRY_AFTER,
    UNAVAILABLE,
    ClientGone,
    ServiceError,
    json_body,
    log,
    one_line,
)

PATHS: Mapping[Format, str] = {p.name: p.path for p in providers.registered()}
"""The route each built-in wire format is served at."""
_DROP = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection",
                   "keep-alive", "date", "server"})
_ROUTE_TRIES = 3


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


def _retry(request: Request) -> bool | None:
    """Whether the client says the request is a retry: the OpenAI and Anthropic SDKs send
    ``x-stainless-retry-count`` (0 on the first attempt); None when it says nothing."""
    raw = request.headers.get("x-stainless-retry-count")
    return None if raw is None or not raw.strip().isdigit() else int(raw) > 0


def _output_tokens(fmt: Format, body: Mapping[str, Any]) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{key} must be a positive integer, got {value!r}", where=key)
            return value
    if providers.get(fmt).requires_max_tokens:
        raise InputError(f"max_tokens is required by the {providers.get(fmt).label}",
                         where="max_tokens")
    return None


def _tools(fmt: Format, body: Mapping[str, Any]) -> list[Any]:
    """The request's tool definitions in the OpenAI shape loomctx counts."""
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise InputError(f"tools must be a list, got {type(tools).__name__}", where="tools")
    return providers.get(fmt).request_tools(tools)


def _session_id(request: Request) -> str | None:
    """The session the request names (header, else query), checked before anything else."""
    value = (request.headers.get("x-loomctx-session")
             or request.query_params.get("loomctx_session"))
    return None if value is None else check_session_id(value)


_BODIES: weakref.WeakKeyDictionary[httpx.Response, bytes] = weakref.WeakKeyDictionary()
"""The bodies :func:`_read` has read, by response (a refusal's body is read twice)."""


async def _read(resp: httpx.Response, limit: int) -> bytes:
    """An upstream response's whole body (the response closed after it, or on failure); a
    502 as soon as it passes ``limit`` bytes (``max_body_bytes``): a reply that could never be
    stored is not held in memory either."""
    if resp in _BODIES:
        return _BODIES[resp]
    try:
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ServiceError(502, f"the upstream's reply is {int(declared):,} bytes, over the "
                                    f"limit of {limit:,} bytes (serve --max-body-mb): not "
                                    "read, nothing of the turn was stored")
        chunks, size = [], 0
        async for chunk in resp.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise ServiceError(502, f"the upstream's reply passed the limit of {limit:,} "
                                        "bytes (serve --max-body-mb): not read further, "
                                        "nothing of the turn was stored")
            chunks.append(chunk)
        body = _BODIES[resp] = b"".join(chunks)
        return body
    finally:
        await resp.aclose()


async def _hung_up(request: Request) -> None:
    """Returns when the client disconnects (its body has been read: nothing else comes)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


_PASSED = frozenset({502, 503, 504, 529})
"""Upstream 5xx statuses passed on as they are (retryable and meaningful to SDKs); any other
5xx becomes a 502: the proxy's own 500 means a bug in the proxy, nothing else."""


def _error_status(status: int, content: bytes, url: str) -> int:
    """The status an upstream error goes back with. A body that is not a JSON object (an HTML
    page, text, JSON nested too deep) is no provider's error, and a 5xx whose object holds no
    ``error`` object gives SDKs nothing to read: each is a 502 of the proxy's own saying what
    came. A 4xx object passes as it is (the upstream's own refusal, its status meaningful)."""
    body = read_upstream(content)
    if not isinstance(body, dict) or (status >= 500 and not isinstance(body.get("error"), dict)):
        shown = content[:120].decode("utf-8", "replace")
        raise ServiceError(502, f"the upstream {url!r} answered HTTP {status} with a body that "
                                f"is not a JSON error: {shown!r}")
    return status if status < 500 or status in _PASSED else 502


_T = TypeVar("_T")

UNDERCOUNT_SLACK = 1.02
"""Measured prompts up to 2 % over the build's count are framing noise, not a miscount."""
MAX_UNDERCOUNT = 4.0
"""The most a conversation's budgets shrink for an upstream that counts more than loomctx."""


class _Before:
    """What a turn may change before it is stored, to take back if it never is.

    A turn is stored whole or not at all: the request's new messages are only *staged*
    (:meth:`~loomctx.session.Session.stage`: the builds see them, no store, tier, index or
    chain hash holds them) until the upstream's reply is read, then the messages and the reply
    are stored together (one store write; on a shared store their hashes first, as every turn
    is: :mod:`loomctx.service.shared`). An upstream that fails, times out, answers an error
    or something unreadable, a client that hangs up and a stream cut before its end all leave
    the session as it was: :meth:`restore` unstages the messages, puts back the system prompt
    and tool definitions the request set, and forgets a session the request created. The
    client's retry of the same request is then new, and is stored once. Only the build
    records stay (each says what became of its request)."""

    def __init__(self, conv: Conversation, fresh: bool) -> None:
        self.conv, self.fresh = conv, fresh
        self.messages = len(conv.chain)
        self.system = conv.session.system_prompt
        self.tools = conv.tools.given

    def restore(self, service: Service, tenant: str) -> None:
        """Take the turn back unless it was stored (its messages are in the chain); the
        request is :meth:`~Service.done` with the session either way."""
        conv = self.conv
        conv.session.unstage()
        service.done(tenant, conv)
        if len(conv.chain) != self.messages:
            return
        conv.session.system_prompt = self.system
        conv.tools.set(self.tools)
        if self.fresh and not conv.chain:
            service.forget(tenant, conv)


class Proxy:
    """Forwards built requests to the upstream for a :class:`Service`."""

    def __init__(self, service: Service, client: httpx.AsyncClient) -> None:
        self.service = service
        self.client = client
        self._finishing: set[asyncio.Task[None]] = set()
        """Streams being wound up (reply stored, session unlocked) apart from their request."""

    def _headers(self, fmt: Format, request: Request) -> dict[bytes, bytes]:
        """The headers the upstream gets: the client's own forwarded as the bytes they came
        as (a header with a non-ASCII byte is passed on, not a failure after storing)."""
        opts = self.service.options
        out = {"content-type": "application/json", "accept": request.headers.get(
            "accept", "application/json")}
        wire = providers.get(fmt)
        for name in (h for p in providers.registered() for h in p.forward_headers):
            if name in request.headers:
                out[name] = request.headers[name]
        for name, value in wire.default_headers.items():
            out.setdefault(name, value)
        if opts.upstream_api_key:
            out.update(wire.auth_headers(opts.upstream_api_key))
        elif not opts.keys:
            for name in ("authorization", "x-api-key"):
                if name in request.headers:
                    out[name] = request.headers[name]
        return {k.encode(): v.encode("latin-1", "replace") for k, v in out.items()}

    async def handle(self, fmt: Format, request: Request, tenant: str) -> Response:
        opts = self.service.options
        body = await json_body(request, opts.max_body_bytes)
        # Everything a request can be refused for is checked before it is stored or sent.
        session_id = _session_id(request)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise InputError("messages must be a non-empty list", where="messages")
        if len(messages) > opts.max_messages:
            raise ServiceError(413, f"{len(messages)} messages exceed the limit of "
                                    f"{opts.max_messages} per request")
        system, conversation = providers.get(fmt).read_request(body)
        asked_out = _output_tokens(fmt, body)
        asked = _int_header(request, "x-loomctx-budget", "loomctx_budget")
        tools = _tools(fmt, body)
        for _ in range(_ROUTE_TRIES):
            conv, new, seen, fresh = await self.service.route(
                tenant, fmt, str(body.get("model") or ""), system, conversation, session_id)
            try:
                await conv.lock.acquire()
            except BaseException:
                self.service.done(tenant, conv)
                raise
            if seen is None or conv.head == seen:
                break
            conv.lock.release()  # a reply landed while this request waited: look again
            self.service.done(tenant, conv)
        else:
            raise ServiceError(409, "the conversation changed while this request waited "
                                    f"{_ROUTE_TRIES} times; send it again")
        release = True
        before = _Before(conv, fresh)
        try:
            replayed = None if fmt not in REPLAYED else \
                self.service.stored_reply(conv, conversation, new, seen, _retry(request))
            if replayed is not None:  # a retry of a turn stored already: see loomctx.service.replay
                return self._replay(fmt, conv, body, replayed)
            conv.tools.set(tools)
            out = self.service.reserve(conv, asked_out)
            budget = self.service.budget(conv, out, asked)
            if conv.cap is not None:
                budget = min(budget, conv.cap)
            if seen is None:
                new = self.service.unseen(conv, new)
            conv.session.memory.check(new)
            prompt = system if system is not None else conv.session.system_prompt
            if not new and not conv.chain and not prompt.strip():
                raise InputError("the request has nothing to send: its only messages are empty "
                                 "system messages; add a user message", where="messages")
            self.service.check_fits(conv, budget, prompt, new)
            if fresh:  # nothing refused it: the session is the tenant's from here on
                self.service.adopt(tenant, conv)
            if system is not None and seen is None:
                conv.session.system_prompt = system
            staged = conv.session.stage(new)  # stored with the reply: see _Before
            record = await self.service.build(tenant, conv, budget)
            resp, deadline = await self._send(fmt, request, body, record)
            refusal = await self._refusal(request, resp, deadline)
            if refusal is not None:
                self._measure(conv, record, refusal[1], out)
                smaller = self._smaller(record.report.budget, refusal, out, conv.undercount)
                record.note = f"refused by the upstream as too long; rebuilt at {smaller}"
                conv.cap = smaller
                record = await self.service.build(tenant, conv, smaller, retried=True)
                resp, deadline = await self._send(fmt, request, body, record)
            headers = {k: v for k, v in resp.headers.items() if k.lower() not in _DROP}
            headers.update({"x-loomctx-build": record.id, "x-loomctx-session": conv.session.id})
            if resp.status_code < 400 and body.get("stream"):
                release = False
                relay = self._relay(fmt, tenant, conv, record, resp, body, staged, before,
                                    strip_usage=providers.get(fmt).usage_fields(body) is not None)
                return StreamingResponse(relay, status_code=resp.status_code, headers=headers)
            content = await self._upstream(request, _read(resp, opts.max_body_bytes), deadline)
            if resp.status_code >= 400:
                return Response(content, status_code=_error_status(resp.status_code, content,
                                                                   redact(self._url(fmt))),
                                headers=headers)
            reply, why = read_body(fmt, content)
            if reply is None:
                record.reply_stored, record.note = False, one_line(f"unreadable reply: {why}")
                raise ServiceError(502, f"the upstream {redact(self._url(fmt))!r} answered "
                                        f"{resp.status_code} with a reply that cannot be read "
                                        f"({why}); nothing of it was stored")
            await self._remember(fmt, tenant, conv, record, reply, body, staged)
            return Response(content, status_code=resp.status_code, headers=headers)
        finally:
            if release:
                before.restore(self.service, tenant)
                conv.lock.release()

    @staticmethod
    def _replay(fmt: Format, conv: Conversation, body: Mapping[str, Any],
                message: Mapping[str, Any]) -> Response:
        """The stored reply ``message`` again, as the upstream would have sent it."""
        model = str(body.get("model") or conv.session.model)
        headers = {"x-loomctx-session": conv.session.id, "x-loomctx-replayed": "true"}
        if conv.builds:
            headers["x-loomctx-build"] = conv.builds[-1]
        log.info("session %s: a retry of its last turn; the stored reply is sent again",
                 conv.session.id)
        if body.get("stream"):
            options = body.get("stream_options")
            usage = isinstance(options, dict) and options.get("include_usage") is True
            return StreamingResponse(iter(replay.stream(fmt, message, model, usage=usage)),
                                     media_type="text/event-stream", headers=headers)
        return JSONResponse(replay.body(fmt, message, model), headers=headers)

    def _url(self, fmt: Format) -> str:
        """Where a request goes (credentials and query kept: never shown, see ``redact``)."""
        return self.service.options.upstream_url(providers.get(fmt).path)

    async def _send(self, fmt: Format, request: Request, body: Mapping[str, Any],
                    record: BuildRecord) -> tuple[httpx.Response, float]:
        """The upstream's response (its body not read yet), and the loop time by which a
        JSON answer must have come whole."""
        payload = dict(record.payload)
        payload.pop("tools", None)  # the client's own definitions go as sent
        usage = providers.get(fmt).usage_fields(body)
        if usage is not None:  # ask for the usage; _relay hides it again
            payload.update(usage)
        url = self._url(fmt)
        upstream = httpx.Request("POST", url, headers=self._headers(fmt, request),
                                 content=json.dumps({**body, **payload},
                                                    allow_nan=False).encode())
        deadline = asyncio.get_running_loop().time() + self.service.options.timeout
        try:
            resp = await self._upstream(request, self.client.send(upstream, stream=True),
                                        deadline)
        except httpx.TimeoutException as exc:
            raise ServiceError(504, f"the upstream {redact(url)!r} did not answer in time "
                                    f"({type(exc).__name__}; serve --upstream-timeout)") from exc
        except httpx.HTTPError as exc:
            raise ServiceError(502, f"the upstream {redact(url)!r} could not be reached: "
                                    f"{type(exc).__name__}: {redact_in(str(exc), url)}"
                               ) from exc
        return resp, deadline

    async def _upstream(self, request: Request, call: Awaitable[_T], deadline: float) -> _T:
        """``call`` (a step of an upstream call), cancelled when the client hangs up or at
        ``deadline`` (loop time): a session's lock is never held for a client that left or
        an upstream that hangs."""
        task = asyncio.ensure_future(call)
        gone = asyncio.ensure_future(_hung_up(request))
        timeout = self.service.options.timeout
        try:
            left = max(0.0, deadline - asyncio.get_running_loop().time())
            done, _ = await asyncio.wait({task, gone}, timeout=left,
                                         return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            gone.cancel()
        if task in done:
            return task.result()
        task.cancel()
        late: object = None
        with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
            late = await task
        if isinstance(late, httpx.Response):  # it came as the wait ended: not to be leaked
            await late.aclose()
        if gone in done:
            raise ClientGone(f"the client hung up while {self.service.options.upstream_base!r} "
                             "was answering: the upstream call was cancelled")
        raise ServiceError(504, f"the upstream {self.service.options.upstream_base!r} did not "
                                f"answer within {timeout:g} s (serve --upstream-timeout)")

    async def _refusal(self, request: Request, resp: httpx.Response,
                       deadline: float) -> tuple[int | None, int | None] | None:
        """The upstream's (limit, requested) when it refused the request as too long."""
        if resp.status_code != 400:
            return None
        content = await self._upstream(request, _read(resp, self.service.options.max_body_bytes),
                                       deadline)
        parsed = read_upstream(content)
        return None if parsed is None else context_length(parsed)

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
                     resp: httpx.Response, body: Mapping[str, Any],
                     staged: Sequence[Mapping[str, Any]], before: _Before, *,
                     strip_usage: bool) -> AsyncIterator[bytes]:
        """The upstream's events as they come (with ``strip_usage``, less the usage chunk the
        client did not ask for); the last one once the reply is stored; an error event when
        the upstream breaks off.

        The stream is cut into whole events by the one SSE reader and each event's bytes pass
        on unchanged, so that what a client must not see too early or at all can be held back:
        the stream's last event (``data: [DONE]``, Anthropic's ``message_stop``: the provider's
        ``is_last``) waits until the reply is stored, so a client that has its whole reply
        knows the session holds it too; a usage chunk the client did not ask for is dropped;
        and when the upstream breaks off mid-stream, the client gets one error event in its
        provider's shape after the last whole event, never half an event."""
        wire, decoder = providers.get(fmt), Decoder()
        reader = ReplyReader(fmt, max_chars=self.service.options.max_body_bytes)
        held: list[bytes] = []
        """The reply's last event and what follows it: sent once the reply is stored."""
        stored: asyncio.Task[None] | None = None
        try:
            broke: httpx.HTTPError | None = None
            try:
                async for chunk in resp.aiter_bytes():
                    out: list[bytes] = []
                    for event in decoder.feed(chunk):
                        reader.add(event)
                        if strip_usage and wire.is_usage_only(event):
                            continue
                        (held if held or wire.is_last(event) else out).append(event.raw)
                    if out:
                        yield b"".join(out)
            except httpx.HTTPError as exc:
                broke = exc
            if broke is not None and not held:
                why = (f"the upstream stream broke off: {type(broke).__name__}: {broke}"
                       if not isinstance(broke, httpx.TimeoutException) else
                       "the upstream sent nothing for longer than the upstream timeout "
                       "(serve --upstream-timeout)")
                log.warning("session %s: %s; the reply was not stored", conv.session.id,
                            one_line(why))
                yield wire.error_event(one_line(why), "timeout_error" if isinstance(
                    broke, httpx.TimeoutException) else "api_error")
                return
            rest = decoder.close()
            if rest is not None:
                reader.add(rest)
                if not (strip_usage and wire.is_usage_only(rest)):
                    held.append(rest.raw)
            reply = reader.result()
            if reply is None:  # passed on whole, but nothing of it can be stored
                why = f"the upstream's stream could not be read ({reader.error or 'no reply'})"
                record.reply_stored, record.note = False, one_line(f"{why}: not stored")
                log.warning("session %s: %s", conv.session.id, record.note)
                yield wire.error_event(one_line(f"{why}; nothing of this turn was stored: "
                                                "send the request again"), "api_error")
                return
            # Stored before the last event goes out: a client that has its whole reply can
            # count on the session holding it, and one whose turn could not be stored gets an
            # error event instead, never the last event. A task of its own, so a client that
            # hangs up now cannot cut the storing off halfway.
            stored = asyncio.create_task(self._remember(fmt, tenant, conv, record, reply,
                                                        body, staged))
            try:
                await asyncio.shield(stored)
            except Exception as exc:  # _finish notes it on the build and logs it
                yield wire.error_event(
                    one_line(f"the reply could not be stored ({type(exc).__name__}: {exc}); "
                             f"nothing of this turn was stored: send the request again in "
                             f"{RETRY_AFTER} s"), UNAVAILABLE.get(fmt, "api_error"))
                return
            if held:
                yield b"".join(held)
        finally:
            task = asyncio.create_task(self._finish(conv, record, resp, stored,
                                                    lambda: before.restore(self.service, tenant)))
            self._finishing.add(task)
            task.add_done_callback(self._finishing.discard)

    @staticmethod
    async def _finish(conv: Conversation, record: BuildRecord, resp: httpx.Response,
                      stored: asyncio.Task[None] | None, restore: Callable[[], None]) -> None:
        """After a stream: close the upstream, wait for the reply's storing, take back a turn
        that was not stored (:class:`_Before`), unlock."""
        try:
            await resp.aclose()
            if stored is None:
                record.reply_stored = False
                record.note = record.note or ("the stream ended before the reply was "
                                              "complete: not stored")
                return
            try:
                await stored
            except Exception as exc:  # the store failed: said on the build and in the log
                record.reply_stored = False
                record.note = one_line(f"the reply could not be stored: "
                                       f"{type(exc).__name__}: {exc}")
                log.warning("session %s: %s", conv.session.id, record.note)
        finally:
            try:
                restore()
            finally:
                conv.lock.release()

    async def _remember(self, fmt: Format, tenant: str, conv: Conversation,
                        record: BuildRecord, reply: Any, body: Mapping[str, Any],
                        staged: Sequence[Mapping[str, Any]]) -> None:
        """Store the turn (the request's new messages, ``staged`` until now, and the reply)
        in the session, and the reply's usage in the build's record."""
        if reply is None:
            record.reply_stored = False
            record.note = record.note or "the reply could not be read: not stored"
            return
        u = reply.usage
        record.usage = Usage(prompt_tokens=u.prompt_tokens, cached_tokens=u.cached_tokens,
                             completion_tokens=u.completion_tokens)
        self._measure(conv, record, u.prompt_tokens)
        conv.session.unstage()
        turn, kept = [*staged, reply.message], True
        try:
            conv.session.memory.check(turn)
        except TooLargeError as exc:  # stores nothing of the turn: see _Before
            record.reply_stored = False
            record.note = one_line(f"the reply is too long to store: {exc}")
            raise ServiceError(502, f"the upstream's reply is too long to store ({exc.size:,} "
                                    f"characters, the limit per message is {exc.limit:,}: "
                                    "serve --max-message-chars); nothing of the turn was "
                                    "stored") from exc
        except InputError as exc:  # e.g. an empty reply: passed on, not remembered
            record.note = one_line(str(exc))
            turn, kept = list(staged), False  # the upstream answered: the user's turn stays
        await self.service.store_messages(tenant, conv, turn)
        record.reply_stored = kept
        s = conv.session
        s.events.emit(ModelCalled(
            tenant=tenant, session=s.id, turn=len(conv.builds) - 1, model=str(body.get("model")),
            prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens,
            cached_tokens=u.cached_tokens, predicted_tokens=record.report.tokens,
            predicted_reusable_tokens=record.report.reused_prefix_tokens,
            tool_calls=len(reply.message.get("tool_calls") or []),
            finish_reason=reply.finish_reason, at=s.clock()))


__all__ = ["PATHS", "Proxy"]
