"""An action's context — narrow and deep: the task background, the instruction, its references.

The rules: a task background (every orchestrator message in order: the first is the
requirement, later ones supplements) unless the action needs none (``websearch``, ``knowledge``,
``resonant``); the instruction; every ``@ref`` in it expanded with the note's whole content,
each once; writing actions also get every ``material`` note; a ref that is missing or not
referenceable says so in place.

Tiers: the instruction is pinned; the requirement and the notes the instruction names are P1;
supplements and the automatic materials are P2. Under a tight budget the automatic materials
are shown as previews first (200, then 50 characters); what still does not fit is cut or
dropped by the build and named in its report.
"""

from __future__ import annotations

from loomctx.builder import BuildResult
from loomctx.items import ContextItem, Tier
from loomctx.render.placement import Placement
from loomctx.workspace._build import Items, build_adaptive, preview, priority_by_age
from loomctx.workspace.conversation import ConversationManager
from loomctx.workspace.notes import WorkSpace, parse_refs
from loomctx.workspace.options import ModelSettings, RoleOptions

ROLE = "action"
AUTO_PREVIEW: tuple[int | None, ...] = (None, 200, 50)
"""Characters of each automatic material per detail level (None: the whole note)."""


def action_refs(action: str, instruction: str, workspace: WorkSpace,
                options: RoleOptions | None = None) -> tuple[list[str], list[str]]:
    """(the refs the instruction names, the material notes a writing action gets besides)."""
    t = (options or RoleOptions()).types
    named = parse_refs(instruction)
    auto: list[str] = []
    if action in t.writing_actions:
        auto = [nid for nid, n in workspace.referenceable_notes().items()
                if n.type == t.auto_material_type and nid not in named]
    return named, auto


def action_items(action: str, instruction: str, workspace: WorkSpace,
                 conversation: ConversationManager, *, level: int = 0,
                 options: RoleOptions | None = None,
                 instructions: str = "", found: str = "") -> list[ContextItem]:
    """The action's items at a detail level (0: every note whole).

    ``found``: what the action's own lookup returned (a search, a knowledge folder), shown
    under ``Labels.results`` before the instruction, P1."""
    o = options or RoleOptions()
    lb = o.labels
    out = Items(ROLE)
    out.add("instructions", instructions, kind="system", tier=Tier.P0, priority=1.0)
    if action not in o.types.no_background_actions:
        calls = conversation.recent_orchestrator_calls(limit=None)
        if calls:
            out.add("background", lb.background, kind="skill", tier=Tier.P1)
        for i, call in enumerate(calls, start=1):
            text = call.message if i == 1 else f"{lb.supplement}: {call.message}"
            out.add(f"background:{i}", text, kind="skill", tier=Tier.P1 if i == 1 else Tier.P2,
                    priority=priority_by_age(i, len(calls)))

    named, auto = action_refs(action, instruction, workspace, o)
    notes = workspace.referenceable_notes()
    if named or auto:
        out.add("references", lb.references, kind="custom", tier=Tier.P1)
    for ref in named:
        note = notes.get(ref)
        text = f"@{ref}:\n{note.content}" if note else f"@{ref}: {lb.missing_ref}"
        out.add(f"ref:{ref}", text, kind="custom", tier=Tier.P1, priority=0.9)
    chars = AUTO_PREVIEW[level]
    for j, ref in enumerate(auto, start=1):
        body = notes[ref].content if chars is None else preview(notes[ref].content, chars)
        out.add(f"ref:{ref}" + ("" if chars is None else f"~{chars}"), f"@{ref}:\n{body}",
                kind="custom", tier=Tier.P2, priority=priority_by_age(j, len(auto)))
    if found:
        out.add("results", f"{lb.results}\n{found}", kind="evidence", tier=Tier.P1,
                priority=0.8)
    out.add("input", f"{lb.instruction}\n{instruction}", kind="input", tier=Tier.P0,
            priority=1.0)
    return out.items


def build_action_context(action: str, instruction: str, workspace: WorkSpace,
                         conversation: ConversationManager, *, budget: int,
                         model: str = "gpt-4o", format: str = "text",
                         options: RoleOptions | None = None,
                         instructions: str = "", found: str = "",
                         placement: Placement | None = None) -> BuildResult:
    """The context of one ``action`` (its type) told ``instruction``, within ``budget``
    (``found``: its lookup's result, see :func:`action_items`; ``placement``: where a chat
    format puts it, :attr:`~loomctx.options.BuildOptions.placement`)."""
    return build_adaptive(
        ROLE, lambda level: action_items(action, instruction, workspace, conversation,
                                         level=level, options=options,
                                         instructions=instructions, found=found),
        len(AUTO_PREVIEW), budget=budget, model=model, format=format, placement=placement)


def action_model_settings(action: str, options: RoleOptions | None = None) -> ModelSettings:
    """How to call the model for ``action`` (``ActionModels`` by default)."""
    o = options or RoleOptions()
    return o.actions.for_action(action, o.types)


__all__ = ["action_items", "action_model_settings", "action_refs", "build_action_context"]
