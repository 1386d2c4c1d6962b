"""The HTTP API under ``/v1/loomctx``: sessions, their messages and builds, reports, events.

Every route takes the tenant from the caller's key (:func:`tenant`), and looks sessions and
builds up under that tenant only: another tenant's id is a 404, exactly like an unknown one.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from loomctx.service.checks import check_value
from loomctx.service.conversations import Conversation
from loomctx.service.core import Service
from loomctx.service.login import page_tenant
from loomctx.service.throttle import checked_tenant
from loomctx.service.web import ServiceError

PREFIX = "/v1/loomctx"


async def tenant(request: Request) -> str:
    """The tenant of the request's key (a dependency of every route but ``/health``). A
    coroutine though it never waits: FastAPI runs a plain function dependency in a worker
    thread, a thread hop on every request for a dictionary lookup."""
    service: Service = request.app.state.service
    return checked_tenant(request, service.options.keys)


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


async def conversation(service: Service, tenant_name: str, session_id: str) -> Conversation:
    conv = await service.session(tenant_name, session_id)
    if conv is None:
        raise ServiceError(404, f"no session {session_id!r}")
    return conv


class Checked(BaseModel):
    """A request body whose every string is valid Unicode and whose nesting is bounded (see
    :func:`~loomctx.service.checks.check_value`): what it carries can be stored and listed."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _boundary(cls, data: Any) -> Any:
        check_value(data, "body")
        return data


class NewSession(Checked):
    """A session to create."""

    id: str | None = Field(None, min_length=1, max_length=128, description="None: generated")
    model: str = Field("gpt-4o", min_length=1, description="counts tokens and sets the window")
    format: Literal["openai", "anthropic"] = "openai"
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list,
                                        description="OpenAI-shaped definitions, all pinned")


class NewMessages(Checked):
    """Messages to add, OpenAI-shaped (role, content, tool_calls, tool_call_id, name)."""

    messages: list[dict[str, Any]] = Field(min_length=1)


class BuildRequest(Checked):
    """A build of the session's context."""

    max_tokens: int | None = Field(None, ge=16, description="prompt budget; None: the window "
                                   "minus the output reserve")
    query: str | None = Field(None, description="None: a turn (the last user message is the "
                              "input); else a question that drives retrieval")


def router() -> APIRouter:
    r = APIRouter(prefix=PREFIX, tags=["loomctx"])

    @r.post("/sessions", status_code=201)
    async def create_session(spec: NewSession, request: Request,
                             who: str = Depends(tenant)) -> dict[str, Any]:
        service = _service(request)
        conv = service.open(who, spec.format, spec.model, session_id=spec.id,
                            system=spec.system_prompt)
        conv.tools.set(spec.tools)
        await service.publish(who, conv)
        return conv.info()

    @r.get("/sessions")
    async def list_sessions(request: Request, who: str = Depends(tenant)) -> dict[str, Any]:
        return {"sessions": await _service(request).session_infos(who)}

    @r.get("/sessions/{session_id}")
    async def get_session(session_id: str, request: Request,
                          who: str = Depends(tenant)) -> dict[str, Any]:
        info = await _service(request).session_info(who, session_id)
        if info is None:
            raise ServiceError(404, f"no session {session_id!r}")
        return info

    @r.post("/sessions/{session_id}/messages")
    async def add_messages(session_id: str, spec: NewMessages, request: Request,
                           who: str = Depends(tenant)) -> dict[str, Any]:
        service = _service(request)
        if len(spec.messages) > service.options.max_messages:
            raise ServiceError(413, f"{len(spec.messages)} messages exceed the limit of "
                                    f"{service.options.max_messages} per request")
        conv = await conversation(service, who, session_id)
        async with conv.lock:
            await service.store_messages(who, conv, spec.messages)
        return conv.info()

    @r.post("/sessions/{session_id}/build")
    async def build(session_id: str, spec: BuildRequest, request: Request,
                    who: str = Depends(tenant)) -> dict[str, Any]:
        service = _service(request)
        conv = await conversation(service, who, session_id)
        async with conv.lock:
            budget = spec.max_tokens or service.budget(conv, service.reserve(conv, None), None)
            record = await service.build(who, conv, budget, query=spec.query)
        return record.to_dict(payload=True)

    @r.post("/sessions/{session_id}/end")
    async def end_session(session_id: str, request: Request,
                          who: str = Depends(tenant)) -> dict[str, Any]:
        conv = await conversation(_service(request), who, session_id)
        async with conv.lock:
            summary = await conv.session.end()
        return {**conv.info(), "summary_id": summary}

    @r.get("/sessions/{session_id}/builds")
    async def session_builds(session_id: str, request: Request,
                             who: str = Depends(tenant)) -> dict[str, Any]:
        service = _service(request)
        await conversation(service, who, session_id)
        return {"builds": [b.to_dict() for b in await service.session_builds(who, session_id)]}

    @r.get("/builds/{build_id}")
    async def get_build(build_id: str, request: Request,
                        who: str = Depends(tenant)) -> dict[str, Any]:
        record = await _service(request).find_build(who, build_id)
        if record is None:
            raise ServiceError(404, f"no build {build_id!r}")
        return record.to_dict(payload=True)

    @r.get("/events", response_class=StreamingResponse)
    async def events(request: Request, who: str = Depends(tenant),
                     kinds: str | None = Query(None, description="comma-separated kinds"),
                     ) -> StreamingResponse:
        wanted = frozenset(k for k in kinds.split(",") if k) if kinds else None
        return StreamingResponse(request.app.state.hub.stream(who, wanted),
                                 media_type="text/event-stream",
                                 headers={"cache-control": "no-cache"})

    return r


def page_router() -> APIRouter:
    """``GET /builds/{id}`` and ``GET /sessions/{id}`` as HTML (see :mod:`.pages`); a browser
    signs in with a cookie (:mod:`.login`)."""
    r = APIRouter(tags=["pages"])

    @r.get("/builds/{build_id}", response_class=HTMLResponse)
    async def build_page(build_id: str, request: Request,
                         who: str = Depends(page_tenant)) -> HTMLResponse:
        record = await _service(request).find_build(who, build_id)
        if record is None:
            raise ServiceError(404, f"no build {build_id!r}")
        return HTMLResponse(request.app.state.pages.build_page(record))

    @r.get("/sessions/{session_id}", response_class=HTMLResponse)
    async def session_page(session_id: str, request: Request,
                           who: str = Depends(page_tenant)) -> HTMLResponse:
        service = _service(request)
        info = await service.session_info(who, session_id)
        if info is None:
            raise ServiceError(404, f"no session {session_id!r}")
        return HTMLResponse(request.app.state.pages.session_page(
            info, await service.session_builds(who, session_id)))

    return r


__all__ = ["PREFIX", "Checked", "conversation", "page_router", "router", "tenant"]
