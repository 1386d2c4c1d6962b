"""Workspace notes of a session over HTTP: typed notes (``persona2``) that ``@refs`` expand.

Each session of the service has one :class:`~loomctx.workspace.notes.WorkSpace`, saved in the
service's store under the session's tenant (agent ``workspace``, apart from the session's own
memory, so notes never turn up as retrieved history). Routes under
``/v1/loomctx/sessions/{session_id}/notes``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import Field

from loomctx.service.api import PREFIX, Checked, conversation, tenant
from loomctx.service.core import Service
from loomctx.service.web import ServiceError
from loomctx.stores.protocol import Scope
from loomctx.workspace.notes import WorkSpace

AGENT = "workspace"


class NewNote(Checked):
    """A note to add; its id is the type plus the next number of that type."""

    type: str = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z_]+$")
    content: str
    source: str = ""


class Expand(Checked):
    """Text whose ``@refs`` to expand with the notes' whole content."""

    text: str


async def _workspace(request: Request, who: str, session_id: str,
                     ) -> tuple[WorkSpace, Scope]:
    service: Service = request.app.state.service
    await conversation(service, who, session_id)
    scope = Scope(tenant=who, agent=AGENT, session=session_id)
    return WorkSpace.load(service.store, scope), scope


def router() -> APIRouter:
    r = APIRouter(prefix=PREFIX + "/sessions/{session_id}", tags=["workspace"])

    @r.post("/notes", status_code=201)
    async def add_note(session_id: str, spec: NewNote, request: Request,
                       who: str = Depends(tenant)) -> dict[str, Any]:
        ws, scope = await _workspace(request, who, session_id)
        note = ws.add_note(spec.type, spec.content, source=spec.source)
        ws.save(request.app.state.service.store, scope)
        return asdict(note)

    @r.get("/notes")
    async def list_notes(session_id: str, request: Request,
                         who: str = Depends(tenant)) -> dict[str, Any]:
        ws, _ = await _workspace(request, who, session_id)
        return {"notes": [asdict(n) for n in ws]}

    @r.get("/notes/{note_id}")
    async def get_note(session_id: str, note_id: str, request: Request,
                       who: str = Depends(tenant)) -> dict[str, Any]:
        ws, _ = await _workspace(request, who, session_id)
        note = ws.get_note(note_id)
        if note is None:
            raise ServiceError(404, f"no note {note_id!r}")
        return asdict(note)

    @r.post("/notes/expand")
    async def expand(session_id: str, spec: Expand, request: Request,
                     who: str = Depends(tenant)) -> dict[str, Any]:
        ws, _ = await _workspace(request, who, session_id)
        return {"text": ws.expand(spec.text)}

    return r


__all__ = ["router"]
