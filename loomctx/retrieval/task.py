"""The static part of a task: requirement, phase, task context — assembled once.

An agent's context has two parts. What the task *is* (the user's requirement, the
execution phase and mode, the task's own data) does not change while the agent works on it, so
it is assembled once per task and rendered in the system part: byte-identical on every model call
of the task, it stays in the provider's cached prefix. What the model needs *now* is rebuilt
every turn by :class:`loomctx.retrieval.dynamic.DynamicContextSource`, in the volatile tail.

Requirement and phase are CRITICAL (P0, pinned); the task context is HIGH (P1).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest
from loomctx.tokens.protocol import TokenCounter


class TaskContextSource(BaseSource):
    """The task's static items, built in ``__init__`` and returned unchanged by every collect.

    ``task_context`` may be text or JSON-able data (rendered as sorted, indented JSON, so the
    same data gives the same bytes). Ids: ``task:requirement``, ``task:phase``,
    ``task:context``.

    ``max_tokens`` is the static part's own cap (e.g. 12,000 of a 16,000-token build, leaving
    the per-turn block its 4,000): a static part
    above it is cut at collect time, the task context first, then the phase, then the
    requirement, each to the room the others leave, so a huge pasted requirement cannot eat
    the per-turn block's room. The cut is deterministic: the same text gives the same bytes
    on every call of the task, and the cached prefix holds.
    """

    def __init__(self, requirement: str, *, phase: str = "", mode: str = "",
                 task_context: str | Mapping[str, Any] | None = None,
                 name: str = "task_context", max_tokens: int | None = None) -> None:
        if max_tokens is not None and (isinstance(max_tokens, bool)
                                       or not isinstance(max_tokens, int) or max_tokens < 1):
            raise ConfigError(f"max_tokens must be an int >= 1 or None, got {max_tokens!r}; "
                              "e.g. 12000 of a 16000-token build")
        self.max_tokens = max_tokens
        if not isinstance(requirement, str) or not requirement.strip():
            raise ConfigError(f"requirement must be non-empty text (the user's task), got "
                              f"{requirement!r:.80}")
        self.name = name
        items = [ContextItem(id="task:requirement", source=name, kind="system",
                             content=f"### Requirement\n{requirement.strip()}",
                             tier=Tier.P0, priority=1.0, seq=1)]
        stage = [f"### Phase\n{phase.strip()}" if phase.strip() else "",
                 f"### Mode\n{mode.strip()}" if mode.strip() else ""]
        if any(stage):
            items.append(ContextItem(id="task:phase", source=name, kind="system",
                                     content="\n\n".join(p for p in stage if p),
                                     tier=Tier.P0, priority=1.0, seq=2))
        if task_context:
            items.append(ContextItem(id="task:context", source=name, kind="system",
                                     content=f"### Task context\n{_context_text(task_context)}",
                                     tier=Tier.P1, priority=1.0, seq=3))
        self._items: tuple[ContextItem, ...] = tuple(items)

    @property
    def items(self) -> Sequence[ContextItem]:
        return self._items

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        if self.max_tokens is None:
            return list(self._items)
        return _capped(self._items, self.max_tokens, request.counter)


CUT_NOTE = "\n[cut: the static part is capped at {cap} tokens]"


def _capped(items: Sequence[ContextItem], cap: int, counter: TokenCounter) -> list[ContextItem]:
    """``items`` within ``cap`` tokens: cut from the last (least important) item backwards."""
    costs = counter.count_many([i.content for i in items])
    if sum(costs) <= cap:
        return list(items)
    out = list(items)
    total = sum(costs)
    note = CUT_NOTE.format(cap=cap)
    for k in range(len(out) - 1, -1, -1):
        if total <= cap:
            break
        room = costs[k] - (total - cap) - counter.count(note)
        total -= costs[k]
        if room < 1:
            out[k] = replace(out[k], content="", tokens=None)
            continue
        text = counter.truncate(out[k].content, room) + note
        out[k] = replace(out[k], content=text, tokens=None)
        total += counter.count(text)
    return [i for i in out if i.content]


def _context_text(ctx: str | Mapping[str, Any]) -> str:
    if isinstance(ctx, str):
        return ctx.strip()
    try:
        body = json.dumps(ctx, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"task_context must be text or JSON-able data: {exc}") from exc
    return f"```json\n{body}\n```"


__all__ = ["TaskContextSource"]
