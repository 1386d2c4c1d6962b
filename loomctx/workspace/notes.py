"""The workspace: typed notes keyed by type + number, passed between agents by ``@reference``.

A note's id is its type followed by a per-type counter (``persona2``, ``hitpoint3``): an
orchestrator writes ``@persona2`` in an instruction and the action agent receives that note's
whole content. The workspace is stored in the session's :class:`~loomctx.stores.MemoryStore`
scope, so it survives a restart and one session never sees another's notes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace

from loomctx.errors import ConfigError
from loomctx.stores import MemoryRecord, MemoryStore, Scope

REF_RE = re.compile(r"@([a-zA-Z_]+\d+)")
"""An ``@reference`` in an instruction: a note type (letters, ``_``) and its number."""
_TYPE_RE = re.compile(r"[a-zA-Z_]+")
NOTE_KIND = "workspace_note"
STATE_KIND = "workspace_state"
_PREFIX = "workspace:"


@dataclass(frozen=True, kw_only=True)
class Note:
    """One note: what an action produced (or the user supplied), under its type + number id."""

    id: str
    """``type`` + number, e.g. ``persona2``."""
    type: str
    """The note type (``persona``, ``hitpoint``, ``material``...)."""
    content: str
    """The whole text an action receives when it references the note."""
    source: str = ""
    """Who produced it (an action name, ``user``...)."""
    review_status: str | None = None
    """Optional review state (e.g. ``pending``, ``approved``)."""
    referenceable: bool = True
    """False: an ``@ref`` to it is answered as not referenceable."""
    seq: int = 0
    """Creation order across the workspace."""


def parse_refs(text: str) -> list[str]:
    """The ``@refs`` of ``text`` in first-seen order, each once."""
    return list(dict.fromkeys(REF_RE.findall(text)))


class WorkSpace:
    """Notes numbered per type, the orchestrator's ``tactics`` memo, and their persistence."""

    def __init__(self) -> None:
        self.notes: dict[str, Note] = {}
        self.tactics: str | None = None
        self._counters: dict[str, int] = {}

    def __iter__(self) -> Iterator[Note]:
        return iter(self.notes.values())

    def __len__(self) -> int:
        return len(self.notes)

    def add_note(self, type: str, content: str, *, source: str = "",
                 review_status: str | None = None, referenceable: bool = True) -> Note:
        """Store a new note as ``type`` + the next number of that type; returns it."""
        if not isinstance(type, str) or not _TYPE_RE.fullmatch(type):
            raise ConfigError(f"note type must be letters or '_' (so @refs parse), got {type!r}")
        if not isinstance(content, str):
            raise ConfigError(f"note content must be a str, got {content!r}")
        n = self._counters.get(type, 0) + 1
        self._counters[type] = n
        note = Note(id=f"{type}{n}", type=type, content=content, source=source,
                    review_status=review_status, referenceable=referenceable,
                    seq=len(self.notes))
        self.notes[note.id] = note
        return note

    def get_note(self, note_id: str) -> Note | None:
        return self.notes.get(note_id)

    def update_note(self, note_id: str, *, content: str | None = None,
                    review_status: str | None = None,
                    referenceable: bool | None = None) -> Note:
        """Change a note in place (same id); unknown ids are refused."""
        note = self.notes.get(note_id)
        if note is None:
            raise ConfigError(f"no note {note_id!r}; known: {sorted(self.notes)!r}")
        changes: dict[str, object] = {}
        if content is not None:
            changes["content"] = content
        if review_status is not None:
            changes["review_status"] = review_status
        if referenceable is not None:
            changes["referenceable"] = referenceable
        self.notes[note_id] = new = replace(note, **changes)  # type: ignore[arg-type]
        return new

    def referenceable_notes(self) -> dict[str, Note]:
        """The notes an ``@ref`` may expand, in creation order."""
        return {k: n for k, n in self.notes.items() if n.referenceable}

    def resolve(self, text: str) -> list[tuple[str, Note | None]]:
        """Each ``@ref`` of ``text`` once, with its note (None: missing or not referenceable)."""
        notes = self.referenceable_notes()
        return [(ref, notes.get(ref)) for ref in parse_refs(text)]

    def expand(self, text: str, missing: str = "[not found or not referenceable]") -> str:
        """``text`` followed by each referenced note's whole content (``@id:`` then content)."""
        parts = [text]
        for ref, note in self.resolve(text):
            parts.append(f"@{ref}:\n{note.content}" if note else f"@{ref}: {missing}")
        return "\n\n".join(parts)

    # -- persistence ---------------------------------------------------------------------
    def save(self, store: MemoryStore, scope: Scope) -> None:
        """Write every note and the workspace state into ``scope`` (one atomic ``put``)."""
        t, a, s = scope.tenant, scope.agent, scope.session
        records = [MemoryRecord(id=f"{_PREFIX}note:{n.id}", content=n.content, level="L2",
                                seq=n.seq, metadata={"kind": NOTE_KIND, **asdict(n)},
                                tenant=t, agent=a, session=s)
                   for n in self.notes.values()]
        records.append(MemoryRecord(
            id=f"{_PREFIX}state", content=self.tactics or "", level="L2",
            metadata={"kind": STATE_KIND, "tactics": self.tactics,
                      "counters": dict(self._counters)}, tenant=t, agent=a, session=s))
        store.put(records)

    @classmethod
    def load(cls, store: MemoryStore, scope: Scope) -> WorkSpace:
        """The workspace saved in ``scope`` (empty when none was)."""
        ws = cls()
        notes: list[Note] = []
        for rec in store.scan(scope=scope, level="L2"):
            kind = rec.metadata.get("kind")
            if kind == NOTE_KIND:
                m = rec.metadata
                notes.append(Note(id=m["id"], type=m["type"], content=m["content"],
                                  source=m.get("source", ""),
                                  review_status=m.get("review_status"),
                                  referenceable=bool(m.get("referenceable", True)),
                                  seq=int(m.get("seq", 0))))
            elif kind == STATE_KIND:
                ws.tactics = rec.metadata.get("tactics")
                ws._counters.update({str(k): int(v) for k, v in
                                     dict(rec.metadata.get("counters") or {}).items()})
        for n in sorted(notes, key=lambda n: n.seq):
            ws.notes[n.id] = n
            num = int(n.id[len(n.type):]) if n.id[len(n.type):].isdigit() else 0
            ws._counters[n.type] = max(ws._counters.get(n.type, 0), num)
        return ws


__all__ = ["NOTE_KIND", "REF_RE", "STATE_KIND", "Note", "WorkSpace", "parse_refs"]
