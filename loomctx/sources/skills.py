"""Skills: named instruction sets activated on demand.

A skill is offered when the query names it (``/name`` or its name as a word) — then it is pinned
for this build (P1) — or when it is relevant to the query (scored like any other candidate).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest


@dataclass(frozen=True, kw_only=True)
class Skill:
    """One skill: a name, a one-line description and the instructions it adds."""

    name: str
    """Unique name; the query activates the skill by naming it."""
    description: str
    """What the skill is for (used for relevance)."""
    instructions: str
    """Text added to the context when the skill is active."""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[\w.-]+", self.name):
            raise ConfigError(f"skill name {self.name!r} must be one word (letters, digits, _.-)")


class SkillSource(BaseSource):
    """Offers skills; a named skill is P1, the others compete on relevance (P2)."""

    def __init__(self, skills: Sequence[Skill] = (), *, name: str = "skills") -> None:
        self.name = name
        self.skills = list(skills)
        if len({s.name for s in self.skills}) != len(self.skills):
            raise ConfigError("skill names must be unique")

    def _named(self, query: str, skill: Skill) -> bool:
        pattern = rf"(?<![\w-])/?{re.escape(skill.name)}(?![\w-])"
        return re.search(pattern, query, flags=re.IGNORECASE) is not None

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        out = []
        for i, s in enumerate(self.skills):
            named = self._named(request.query if request.message is None else request.message, s)
            out.append(ContextItem(
                id=f"skill:{s.name}", source=self.name,
                content=f"## Skill: {s.name}\n{s.instructions}", kind="skill",
                tier=Tier.P1 if named else Tier.P2, priority=1.0 if named else 0.5, seq=i,
                metadata={"description": s.description, "named": named},
            ))
        return out


__all__ = ["Skill", "SkillSource"]
