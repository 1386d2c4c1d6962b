"""Role contexts for a team of agents over a workspace of notes (concierge, orchestrator, action).

:class:`WorkSpace` holds typed notes passed by ``@reference``; :class:`ConversationManager` the
linear history; the builders turn both into one budgeted, reported build per role.
"""

from loomctx.workspace.action import action_items, action_model_settings, build_action_context
from loomctx.workspace.concierge import build_concierge_context, concierge_items
from loomctx.workspace.conversation import (
    ActionRecord,
    ConversationManager,
    Entry,
    OrchestratorCall,
    RoundRecord,
)
from loomctx.workspace.notes import Note, WorkSpace, parse_refs
from loomctx.workspace.options import (
    ActionModels,
    Labels,
    ModelSettings,
    NoteTypes,
    Previews,
    Quota,
    RoleOptions,
    language_of,
)
from loomctx.workspace.orchestrator import (
    build_orchestrator_context,
    material_status,
    orchestrator_items,
)
from loomctx.workspace.source import RoleSource

__all__ = [
    "ActionModels",
    "ActionRecord",
    "ConversationManager",
    "Entry",
    "Labels",
    "ModelSettings",
    "Note",
    "NoteTypes",
    "OrchestratorCall",
    "Previews",
    "Quota",
    "RoleOptions",
    "RoleSource",
    "RoundRecord",
    "WorkSpace",
    "action_items",
    "action_model_settings",
    "build_action_context",
    "build_concierge_context",
    "build_orchestrator_context",
    "concierge_items",
    "language_of",
    "material_status",
    "orchestrator_items",
    "parse_refs",
]
