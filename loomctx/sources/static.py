"""Sources of fixed text: the system prompt and the current user input (both pinned, P0)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest


@dataclass
class SystemPromptSource(BaseSource):
    """The system prompt: one pinned item, rendered once at the top."""

    text: str
    name: str = "system_prompt"

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        if not self.text.strip():
            return []
        return [ContextItem(id="system", source=self.name, content=self.text, kind="system",
                            role="system", tier=Tier.P0, priority=1.0)]


@dataclass
class UserInputSource(BaseSource):
    """The current user input (the task): pinned, rendered last."""

    name: str = "user_input"

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        text = request.query if request.message is None else request.message
        if not text.strip() or request.context.get("turn"):
            return []  # a turn build takes its input from the history
        item_id = str(request.context.get("input_id", "input"))
        return [ContextItem(id=item_id, source=self.name, content=text, kind="input",
                            role="user", tier=Tier.P0, priority=1.0, timestamp=request.now)]


__all__ = ["SystemPromptSource", "UserInputSource"]
