"""An agent over a fast session: the hashing embedder, a fixed session clock, a recording sink."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from loomctx import Agent, RecordingSink
from loomctx.testing import HashingEmbedder, ScriptedModel

MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}


@pytest.fixture
def make_agent() -> Callable[..., tuple[Agent, ScriptedModel, RecordingSink]]:
    """``make_agent(steps, tools=[...], format="openai", **agent_kwargs)``: an agent over a new
    session, the scripted model it calls and the sink of the session's events."""

    def make(steps: list[Any], *, format: str = "openai", **kw: Any,
             ) -> tuple[Agent, ScriptedModel, RecordingSink]:
        sink = RecordingSink()
        model = ScriptedModel(steps, format=format, model=MODELS[format])
        kw.setdefault("budget", 2000)
        agent = Agent(model, embedder=HashingEmbedder(dim=64), events=sink,
                      clock=lambda: 1_700_000_000.0,
                      system_prompt="You are the operations assistant.", **kw)
        return agent, model, sink

    return make

