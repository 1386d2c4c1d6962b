"""The team's model calls as saved records: which role made each, what it saw, how it measured.

Each role sees a different context, and that is what a reader of a run wants to check. A saved
workspace keeps, beside its notes and timeline, one summary per model call — role (and action),
wire format, budget and tokens (and whether they are exact or estimated), the build report's
summary (items shown whole, shortened, dropped), the notes its context expanded (``@refs``), the
settings notes (what the provider could not take), and the context itself as text — so
``loomctx workspace show --contexts`` can print them after the run.

The calls of one :class:`~loomctx.workflow.Team` carry its ``run`` id; saving again replaces that
run's calls and keeps earlier runs' in the same scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loomctx.stores import MemoryRecord, MemoryStore, Scope
from loomctx.text.messages import content_text
from loomctx.workflow.calls import RoleCall

CALLS_KIND = "workspace_calls"
_RECORD_ID = "workspace:calls"


def context_text(payload: dict[str, Any], format: str) -> str:
    """A request's context as text: the system prompt, then each message under its role."""
    parts = []
    system = payload.get("system")
    if system:  # only a Messages payload has one
        parts.append(f"[system]\n{content_text(system)}")
    for m in payload.get("messages", []):
        text = content_text(m.get("content"))
        calls = m.get("tool_calls") or ()
        text += "".join(f"\n-> {c['function']['name']}({c['function']['arguments']})"
                        for c in calls)
        parts.append(f"[{m.get('role')}]\n{text}")
    return "\n\n".join(parts)


def call_summary(call: RoleCall, run: str, index: int) -> dict[str, Any]:
    """One call as a JSON-able summary (see the module docstring)."""
    items = call.build.report.items
    shortened = [r.id for r in items if r.included and ("~" in r.id or r.reason == "truncated")]
    return {
        "run": run, "index": index, "role": call.role, "action": call.action,
        "format": call.format, "budget": call.budget, "tokens": call.tokens,
        "settings": {"temperature": call.settings.temperature,
                     "max_output_tokens": call.settings.max_output_tokens,
                     "thinking_budget": call.settings.thinking_budget},
        "notes": list(call.notes), "expanded": call.expanded,
        "report": {"items": len(items), "included": sum(r.included for r in items),
                   "shortened": shortened,
                   "dropped": [r.id for r in items if not r.included],
                   "context_tokens": call.build.report.tokens,
                   "exact": call.build.report.exact},
        "context": context_text(call.payload, call.format),
        "reply": content_text(call.reply.get("content")) + "".join(
            f"\n-> {c['function']['name']}({c['function']['arguments']})"
            for c in call.reply.get("tool_calls") or ()),
    }


def load_calls(store: MemoryStore, scope: Scope) -> list[dict[str, Any]]:
    """The call summaries saved in ``scope``, oldest run first ([] when none were)."""
    for rec in store.get([_RECORD_ID], scope=scope):
        if rec.metadata.get("kind") == CALLS_KIND:
            return [dict(c) for c in rec.metadata.get("calls", [])]
    return []


def save_calls(calls: Sequence[RoleCall], store: MemoryStore, scope: Scope, *,
               run: str) -> None:
    """Save ``calls`` as run ``run`` into ``scope``, keeping other runs' calls."""
    kept = [c for c in load_calls(store, scope) if c.get("run") != run]
    mine = [call_summary(c, run, i) for i, c in enumerate(calls)]
    store.put([MemoryRecord(id=_RECORD_ID, content="", level="L2", tenant=scope.tenant,
                            agent=scope.agent, session=scope.session,
                            metadata={"kind": CALLS_KIND, "calls": [*kept, *mine]})])


__all__ = ["CALLS_KIND", "call_summary", "context_text", "load_calls", "save_calls"]
