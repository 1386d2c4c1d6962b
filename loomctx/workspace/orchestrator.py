"""The orchestrator's context — deep and strategic: quota, material status, the whole timeline.

The rules: a command quota of 12 plus 3 for each orchestrator call after the first, shown
as executed / max / remaining; the notes classified as materials, hitpoints and writings, each
marked used when an instruction of the execution log references it (hitpoint actions use
materials; writing actions use hitpoints and materials); the full timeline, observe/think in
full, each action as a ``<call .../>`` line with its created notes previewed in 100 characters
right after it.

Layout for the prompt cache: the timeline of earlier calls does not change any more, so it sits
in the stable prefix after the instructions; the status overview and the current call's rounds
change every round and follow; the task comes last. Under a tight budget the oldest rounds are
collapsed to one-line previews first, then the note previews shorten.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.builder import BuildResult
from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Kind, Tier
from loomctx.render.placement import Placement
from loomctx.workspace._build import Items, build_adaptive, one_line, preview, priority_by_age
from loomctx.workspace.conversation import ActionRecord, ConversationManager
from loomctx.workspace.notes import WorkSpace, parse_refs
from loomctx.workspace.options import NoteTypes, RoleOptions

ROLE = "orchestrator"
LEVELS: tuple[tuple[int | None, float], ...] = (
    (None, 1.0), (8, 1.0), (4, 0.6), (2, 0.4), (1, 0.2), (0, 0.0))
"""Per detail level: how many of the newest rounds stay in full (None: all) and the note
preview length as a fraction of its ``Previews`` length (0: ``Previews.min_chars``)."""


LogEntry = ActionRecord | Mapping[str, Any]
"""An executed action: an :class:`ActionRecord`, or a plain dict with ``action`` and
``instruction``."""


def as_action(entry: LogEntry) -> ActionRecord:
    """An :class:`ActionRecord` from either form of a log entry."""
    if isinstance(entry, ActionRecord):
        return entry
    if isinstance(entry, Mapping):
        agent = entry.get("action", entry.get("agent"))
        if isinstance(agent, str):
            return ActionRecord(agent=agent, instruction=str(entry.get("instruction", "")),
                                notes_created=tuple(entry.get("notes_created", ())))
    raise ConfigError(f"an execution-log entry must be an ActionRecord or a dict with "
                      f"'action' and 'instruction', got {entry!r}")


def material_status(workspace: WorkSpace, execution_log: Sequence[LogEntry],
                    types: NoteTypes | None = None,
                    ) -> dict[str, dict[str, bool]]:
    """``{"material"|"hitpoint"|"writing": {note_id: used}}`` from the log's ``@refs``."""
    t = types or NoteTypes()
    groups: dict[str, dict[str, bool]] = {"material": {}, "hitpoint": {}, "writing": {}}
    for note in workspace:
        cls = t.classify(note.type)
        if cls is not None:
            groups[cls][note.id] = False
    for entry in map(as_action, execution_log):
        refs = parse_refs(entry.instruction)
        if entry.agent in t.hitpoint_actions:
            usable: tuple[str, ...] = ("material",)
        elif entry.agent in t.writing_actions:
            usable = ("hitpoint", "material")
        else:
            continue
        for ref in refs:
            for cls in usable:
                if ref in groups[cls]:
                    groups[cls][ref] = True
    return groups


def orchestrator_items(task_message: str, workspace: WorkSpace,
                       conversation: ConversationManager,
                       execution_log: Sequence[LogEntry] | None = None, *, level: int = 0,
                       options: RoleOptions | None = None,
                       instructions: str = "") -> list[ContextItem]:
    """The orchestrator's items at a detail level (0: everything in full)."""
    o = options or RoleOptions()
    lb = o.labels
    log = (conversation.execution_log() if execution_log is None
           else [as_action(e) for e in execution_log])
    full_rounds, share = LEVELS[level]
    pv = o.previews
    note_chars = (max(pv.min_chars, int(pv.orchestrator_note * share)) if share
                  else min(pv.min_chars, pv.orchestrator_note))
    tag = "" if level == 0 else f"~{note_chars}"
    out = Items(ROLE)
    out.add("instructions", instructions, kind="system", tier=Tier.P0, priority=1.0)

    calls = conversation.recent_orchestrator_calls(limit=None)
    total_rounds = sum(len(c.execution_records) for c in calls)
    keep_full = total_rounds if full_rounds is None else full_rounds
    overview_at = len(calls) - 1  # the latest call is volatile: the overview goes before it
    k = 0
    for i, call in enumerate(calls, start=1):
        if i - 1 == overview_at:
            _overview(out, workspace, conversation, log, o)
        kind: Kind = "skill" if i - 1 < overview_at else "state"
        out.add(f"call:{i}", f"# {lb.user_message}{i}: {call.message}", kind=kind,
                tier=Tier.P1)
        for r in call.execution_records:
            k += 1
            prio = priority_by_age(k, total_rounds)
            rid = f"round:{i}.{r.round}"
            if k <= total_rounds - keep_full:  # an older round: one line
                acts = ", ".join(f"{a.agent}→{' '.join('@' + n for n in a.notes_created)}"
                                 if a.notes_created else a.agent for a in r.actions)
                line = (f"## Round{r.round}: {lb.observe}: "
                        f"{preview(r.observe, pv.concierge_round)} | {lb.think}: "
                        f"{preview(r.think, pv.concierge_round)} | ⚡ {acts}")
                out.add(f"{rid}~line", line, kind=kind, tier=Tier.P2, priority=prio)
                continue
            tier = Tier.P1 if i == len(calls) else Tier.P2
            lines = [f"## Round{r.round}:"]
            if r.observe:
                lines.append(f"{lb.observe}: {one_line(r.observe)}")
            if r.think:
                lines.append(f"{lb.think}: {one_line(r.think)}")
            out.add(rid, "\n".join(lines), kind=kind, tier=tier, priority=prio)
            for j, a in enumerate(r.actions, start=1):
                out.add(f"{rid}.{j}", f"⚡ <call agent={a.agent} instruction={a.instruction}/>",
                        kind=kind, tier=tier, priority=prio)
                for nid in a.notes_created:
                    note = workspace.get_note(nid)
                    if note is not None:
                        out.add(f"{rid}.{j}:{nid}{tag}",
                                f"   {lb.produced} @{nid}: {preview(note.content, note_chars)}",
                                kind=kind, tier=Tier.P3, priority=prio)
    if not calls:
        _overview(out, workspace, conversation, log, o)
    out.add("input", task_message, kind="input", tier=Tier.P0, priority=1.0)
    return out.items


def _overview(out: Items, workspace: WorkSpace, conversation: ConversationManager,
              log: Sequence[ActionRecord], o: RoleOptions) -> None:
    """The working-state overview: the quota (P0), tactics and material status (P1).

    The quota counts ``log`` (this call's actions); a note counts as used when any call's
    actions referenced it, not only this call's: a material used for an earlier
    hitpoint is still used."""
    calls = len(conversation.calls)
    lb = o.labels
    mx = o.quota.max_commands(calls)
    out.add("quota", lb.quota.format(executed=len(log), max=mx, remaining=mx - len(log)),
            kind="state", tier=Tier.P0, priority=1.0)
    if workspace.tactics:
        out.add("tactics", f"{lb.tactics}\n{workspace.tactics}", kind="state", tier=Tier.P1)
    earlier = [a for c in conversation.calls[:-1] for a in c.actions()]
    status = material_status(workspace, [*earlier, *log], o.types)
    for cls, label in (("material", lb.materials), ("hitpoint", lb.hitpoints),
                       ("writing", lb.writings)):
        if status[cls]:
            marks = ", ".join(f"@{nid} ({lb.used if used else lb.unused})"
                              for nid, used in status[cls].items())
            out.add(f"status:{cls}", f"{label}: {marks}", kind="state", tier=Tier.P1)


def build_orchestrator_context(task_message: str, workspace: WorkSpace,
                               conversation: ConversationManager,
                               execution_log: Sequence[LogEntry] | None = None, *,
                               budget: int, model: str = "gpt-4o", format: str = "text",
                               options: RoleOptions | None = None,
                               instructions: str = "",
                               placement: Placement | None = None) -> BuildResult:
    """The orchestrator's context within ``budget`` tokens of ``model``.

    ``execution_log`` is the actions executed so far in the current call (default: the latest
    call's actions in ``conversation``); ``placement``: where a chat format puts the working
    state (:attr:`~loomctx.options.BuildOptions.placement`)."""
    return build_adaptive(
        ROLE, lambda level: orchestrator_items(task_message, workspace, conversation,
                                               execution_log, level=level, options=options,
                                               instructions=instructions),
        len(LEVELS), budget=budget, model=model, format=format, placement=placement)


__all__ = ["LogEntry", "as_action", "build_orchestrator_context", "material_status",
           "orchestrator_items"]
