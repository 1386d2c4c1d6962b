"""The concierge's context — wide and shallow: the whole chat, a one-line timeline, every note.

The rules: the chat history numbered ``#n`` (the current message marked as new unless it
is already the last user entry); the orchestrator timeline with each user message and each
round's observe/think as an 80-character one-line preview; every note as ``@id:`` with a
50-character preview (newlines folded for the configured types). Here the previews shrink with
the budget (50/80 → 30/50 → 20/30 → the minimum) before anything is dropped.
"""

from __future__ import annotations

from loomctx.builder import BuildResult
from loomctx.items import ContextItem, Tier
from loomctx.render.placement import Placement
from loomctx.workspace._build import Items, build_adaptive, preview, priority_by_age
from loomctx.workspace.conversation import ConversationManager
from loomctx.workspace.notes import WorkSpace
from loomctx.workspace.options import RoleOptions

ROLE = "concierge"
_SHRINK = (1.0, 0.6, 0.4, 0.0)
"""Preview length per detail level, as a fraction of the ``Previews`` length (0: ``min_chars``)."""


def _chars(seed: int, level: int, minimum: int) -> int:
    return max(minimum, int(seed * _SHRINK[level])) if _SHRINK[level] else min(seed, minimum)


def concierge_items(user_msg: str, workspace: WorkSpace, conversation: ConversationManager,
                    *, level: int = 0, options: RoleOptions | None = None,
                    instructions: str = "", event: str | None = None) -> list[ContextItem]:
    """The concierge's items at a detail level (0: the ``Previews`` lengths).

    ``event``: the turn answers the orchestrator's outcome, not a user message; it is the
    input (under ``Labels.finished``) and the last user message is chat history."""
    o = options or RoleOptions()
    lb, pv = o.labels, o.previews
    note_chars = _chars(pv.concierge_note, level, pv.min_chars)
    round_chars = _chars(pv.concierge_round, level, pv.min_chars)
    tag = "" if level == 0 else f"~{note_chars}"
    rtag = "" if level == 0 else f"~{round_chars}"
    out = Items(ROLE)
    out.add("instructions", instructions, kind="system", tier=Tier.P0, priority=1.0)

    chat = conversation.recent_chat_history(limit=pv.chat_limit)
    is_new = event is not None or not (chat and chat[-1].type == "user"
                                       and chat[-1].content == user_msg)
    shown = chat if is_new else chat[:-1]
    if shown:
        out.add("chat", lb.chat, kind="skill", tier=Tier.P1)
    for n, e in enumerate(shown, start=1):
        text = e.original_response if e.original_response is not None else e.content
        who = lb.user if e.type == "user" else lb.assistant
        tier = Tier.P1 if n > len(shown) - 2 else Tier.P2
        out.add(f"chat:{n}", f"#{n} {who}: {text}", kind="skill", tier=tier,
                priority=priority_by_age(n, len(shown)))

    calls = conversation.recent_orchestrator_calls(limit=None)
    if calls:
        out.add("timeline", lb.timeline, kind="skill", tier=Tier.P1)
    rounds = sum(len(c.execution_records) for c in calls)
    k = 0
    for i, call in enumerate(calls, start=1):
        out.add(f"call:{i}", f"# {lb.user_message}{i}: {call.message}", kind="skill",
                tier=Tier.P2, priority=priority_by_age(i, len(calls)))
        for r in call.execution_records:
            k += 1
            lines = [f"## Round{r.round}:"]
            if r.observe:
                lines.append(f"{lb.observe}: {preview(r.observe, round_chars)}")
            if r.think:
                lines.append(f"{lb.think}: {preview(r.think, round_chars)}")
            out.add(f"round:{i}.{r.round}{rtag}", "\n".join(lines), kind="skill", tier=Tier.P3,
                    priority=priority_by_age(k, rounds))

    if len(workspace):
        out.add("notes", lb.notes, kind="skill", tier=Tier.P1)
    for j, note in enumerate(workspace, start=1):
        flat = note.type in o.types.flattened
        out.add(f"note:{note.id}{tag}",
                f"@{note.id}: {preview(note.content, note_chars, flatten=flat)}",
                kind="skill", tier=Tier.P3, priority=priority_by_age(j, len(workspace)))

    if conversation.running is not None and conversation.calls:
        running = conversation.calls[conversation.running]
        out.add("running", lb.running.format(task=preview(running.message, pv.concierge_round),
                                             executed=len(running.actions())),
                kind="state", tier=Tier.P1, priority=0.95)

    if event is not None:
        out.add("input", f"{lb.finished}\n{event}", kind="input", tier=Tier.P0, priority=1.0)
        return out.items
    n = len(shown) + 1
    mark = f" {lb.new_message}" if is_new else ""
    out.add("input", f"#{n} {lb.user}: {user_msg}{mark}", kind="input", tier=Tier.P0,
            priority=1.0)
    return out.items


def build_concierge_context(user_msg: str, workspace: WorkSpace,
                            conversation: ConversationManager, *, budget: int,
                            model: str = "gpt-4o", format: str = "text",
                            options: RoleOptions | None = None,
                            instructions: str = "", event: str | None = None,
                            placement: Placement | None = None) -> BuildResult:
    """The concierge's context for ``user_msg`` within ``budget`` tokens of ``model``
    (``event``: the orchestrator's outcome the turn answers instead, see
    :func:`concierge_items`; ``placement``: where a chat format puts the turn's state,
    :attr:`~loomctx.options.BuildOptions.placement`)."""
    return build_adaptive(
        ROLE, lambda level: concierge_items(user_msg, workspace, conversation, level=level,
                                            options=options, instructions=instructions,
                                            event=event),
        len(_SHRINK), budget=budget, model=model, format=format, placement=placement)


__all__ = ["build_concierge_context", "concierge_items"]
