"""The linear history of a team of agents: chat turns and orchestrator calls with their rounds.

The concierge talks to the user; each task it hands over is an *orchestrator call*, which runs
rounds (``Round1``, ``Round2``...) of observe → think → actions; each action names an agent, an
instruction and the notes it created. The role builders read this history at different depths.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from loomctx.errors import ConfigError
from loomctx.stores import MemoryRecord, MemoryStore, Scope

EntryType = Literal["user", "concierge", "orchestrator", "orchestrator_response"]
CONVERSATION_KIND = "workspace_conversation"
_RECORD_ID = "workspace:conversation"


@dataclass(frozen=True, kw_only=True)
class ActionRecord:
    """One dispatched action: which agent, what it was told, which notes it created."""

    agent: str
    """The action type (``websearch``, ``persona``, ``hitpoint``, ``xhs_post``...)."""
    instruction: str
    """The orchestrator's instruction, with ``@refs`` to notes."""
    notes_created: tuple[str, ...] = ()
    """Ids of the notes the action produced."""


@dataclass(frozen=True, kw_only=True)
class RoundRecord:
    """One orchestrator round (``RoundN`` in the timeline)."""

    round: int
    """1-based round number within its call."""
    observe: str = ""
    """What the orchestrator observed."""
    think: str = ""
    """What it concluded."""
    actions: tuple[ActionRecord, ...] = ()
    """The actions it dispatched, in order."""

    @property
    def step(self) -> str:
        return f"Round{self.round}:"


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One entry of the linear history."""

    type: EntryType
    """Who: the user, the concierge, a task to the orchestrator, the orchestrator's answer."""
    content: str
    """The text (for the concierge: what the user was shown)."""
    original_response: str | None = None
    """The concierge's whole reply before any post-processing (the timeline shows this one)."""
    notes_created: tuple[str, ...] = ()
    """Notes created with the entry (e.g. from the user's attachments)."""


@dataclass(frozen=True, kw_only=True)
class OrchestratorCall:
    """A task handed to the orchestrator, its response, and its rounds."""

    message: str
    """The task as the concierge wrote it."""
    response: str | None = None
    """The orchestrator's final answer (None while running)."""
    execution_records: tuple[RoundRecord, ...] = ()
    """The rounds, in order."""

    def actions(self) -> list[ActionRecord]:
        """Every action of every round, in order (the call's execution log)."""
        return [a for r in self.execution_records for a in r.actions]


@dataclass
class ConversationManager:
    """The full history plus quick access to the orchestrator calls."""

    history: list[Entry] = field(default_factory=list)
    calls: list[OrchestratorCall] = field(default_factory=list)
    running: int | None = field(default=None, compare=False)
    """The index of the orchestrator call running now, None when none is; set by whoever runs
    the orchestrator, not saved."""

    # -- chat ----------------------------------------------------------------------------
    def add_user_message(self, content: str, notes_created: tuple[str, ...] = ()) -> Entry:
        return self._add(Entry(type="user", content=content, notes_created=tuple(notes_created)))

    def add_concierge_response(self, content: str, original_response: str | None = None
                               ) -> Entry:
        return self._add(Entry(type="concierge", content=content,
                               original_response=original_response))

    def _add(self, entry: Entry) -> Entry:
        if not isinstance(entry.content, str):
            raise ConfigError(f"{entry.type} content must be a str, got {entry.content!r}")
        self.history.append(entry)
        return entry

    # -- orchestrator --------------------------------------------------------------------
    def start_orchestrator_call(self, message: str) -> int:
        """Record a task to the orchestrator; returns its index (the active call)."""
        self._add(Entry(type="orchestrator", content=message))
        self.calls.append(OrchestratorCall(message=message))
        return len(self.calls) - 1

    def _call_index(self, call: int | None) -> int:
        if not self.calls:
            raise ConfigError("no orchestrator call yet: call start_orchestrator_call first")
        i = len(self.calls) - 1 if call is None else call
        if not -len(self.calls) <= i < len(self.calls):
            raise ConfigError(f"no orchestrator call {call!r}; there are {len(self.calls)}")
        return i % len(self.calls)

    def add_round(self, observe: str = "", think: str = "", *, call: int | None = None
                  ) -> RoundRecord:
        """Open the next round of a call (the latest by default)."""
        i = self._call_index(call)
        c = self.calls[i]
        rnd = RoundRecord(round=len(c.execution_records) + 1, observe=observe, think=think)
        self.calls[i] = replace(c, execution_records=(*c.execution_records, rnd))
        return rnd

    def add_action(self, agent: str, instruction: str, notes_created: tuple[str, ...] = (),
                   *, call: int | None = None) -> ActionRecord:
        """Append an executed action to the last round of a call (opening Round1 if none)."""
        i = self._call_index(call)
        if not self.calls[i].execution_records:
            self.add_round(call=i)
        c = self.calls[i]
        act = ActionRecord(agent=agent, instruction=instruction,
                           notes_created=tuple(notes_created))
        last = c.execution_records[-1]
        rounds = (*c.execution_records[:-1], replace(last, actions=(*last.actions, act)))
        self.calls[i] = replace(c, execution_records=rounds)
        return act

    def finish_orchestrator_call(self, response: str, *, call: int | None = None) -> None:
        i = self._call_index(call)
        self._add(Entry(type="orchestrator_response", content=response))
        self.calls[i] = replace(self.calls[i], response=response)

    # -- access --------------------------------------------------------------------------
    def recent_chat_history(self, limit: int = 10) -> list[Entry]:
        """The last ``limit`` pairs of user and concierge entries, oldest first."""
        chat = [e for e in self.history if e.type in ("user", "concierge")]
        return chat[-limit * 2:] if limit > 0 else []

    def recent_orchestrator_calls(self, limit: int | None = 10) -> list[OrchestratorCall]:
        """The last ``limit`` calls (all when None), oldest first."""
        if limit is None:
            return list(self.calls)
        return list(self.calls[-limit:]) if limit > 0 else []

    def execution_log(self, call: int | None = None) -> list[ActionRecord]:
        """The actions executed so far in a call (the latest by default; [] when none)."""
        return self.calls[self._call_index(call)].actions() if self.calls else []

    # -- persistence ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        def rnd(r: RoundRecord) -> dict[str, Any]:
            return {"round": r.round, "observe": r.observe, "think": r.think,
                    "actions": [{"agent": a.agent, "instruction": a.instruction,
                                 "notes_created": list(a.notes_created)} for a in r.actions]}
        return {
            "history": [{"type": e.type, "content": e.content,
                         "original_response": e.original_response,
                         "notes_created": list(e.notes_created)} for e in self.history],
            "calls": [{"message": c.message, "response": c.response,
                       "execution_records": [rnd(r) for r in c.execution_records]}
                      for c in self.calls],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversationManager:
        cm = cls()
        for e in data.get("history", []):
            cm.history.append(Entry(type=e["type"], content=e["content"],
                                    original_response=e.get("original_response"),
                                    notes_created=tuple(e.get("notes_created", ()))))
        for c in data.get("calls", []):
            rounds = tuple(
                RoundRecord(round=int(r["round"]), observe=r.get("observe", ""),
                            think=r.get("think", ""),
                            actions=tuple(ActionRecord(agent=a["agent"],
                                                       instruction=a["instruction"],
                                                       notes_created=tuple(a["notes_created"]))
                                          for a in r.get("actions", ())))
                for r in c.get("execution_records", ()))
            cm.calls.append(OrchestratorCall(message=c["message"], response=c.get("response"),
                                             execution_records=rounds))
        return cm

    def save(self, store: MemoryStore, scope: Scope) -> None:
        """Write the whole history into ``scope`` as one record (replaced on every save)."""
        store.put([MemoryRecord(id=_RECORD_ID, content="", level="L2",
                                tenant=scope.tenant, agent=scope.agent, session=scope.session,
                                metadata={"kind": CONVERSATION_KIND, **self.to_dict()})])

    @classmethod
    def load(cls, store: MemoryStore, scope: Scope) -> ConversationManager:
        """The history saved in ``scope`` (empty when none was)."""
        for rec in store.get([_RECORD_ID], scope=scope):
            if rec.metadata.get("kind") == CONVERSATION_KIND:
                return cls.from_dict(dict(rec.metadata))
        return cls()


__all__ = ["CONVERSATION_KIND", "ActionRecord", "ConversationManager", "Entry", "EntryType",
           "OrchestratorCall", "RoundRecord"]
