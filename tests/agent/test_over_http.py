"""The agent against real HTTP: the OpenAI and Anthropic clients on the loopback fake server,
a tool round, a 429 retried, and a context-length refusal recovered by a smaller rebuild."""

from __future__ import annotations

import pytest

from loomctx import Agent, AnthropicChatModel, OpenAIChatModel, check_request
from loomctx.models import Backoff
from loomctx.testing import (
    ContextLength,
    FakeModelServer,
    HashingEmbedder,
    HttpError,
    Reply,
    ToolCall,
)


def lookup(order_id: str) -> str:
    """Status of an order.

    Args:
        order_id: the order number.
    """
    return f"{order_id}: shipped on Monday"


async def _no_wait(_: float) -> None:
    return None


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_tool_round_a_retry_and_a_context_length_recovery(provider: str) -> None:
    script = [
        HttpError(429, retry_after=0),
        Reply(tool_calls=[ToolCall("lookup", {"order_id": "A-1"}, id="call_1")]),
        ContextLength(limit=3000, requested=5200),
        Reply(text="A-1 shipped on Monday."),
    ]
    with FakeModelServer(script) as server:
        kw = {"api_key": "k", "backoff": Backoff(base=0.0, max=0.0, jitter=False),
              "sleep": _no_wait}
        model = (OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", **kw)
                 if provider == "openai" else
                 AnthropicChatModel("claude-sonnet-4-5", base_url=server.url, **kw))
        agent = Agent(model, tools=[lookup], budget=6000, output_tokens=500,
                      embedder=HashingEmbedder(), system_prompt="You track orders.")
        result = agent.run_sync("Where is order A-1?")
        bodies = [r.body for r in server.requests]
    assert result.stop == "final" and result.output == "A-1 shipped on Monday."
    assert len(bodies) == 4  # the 429, the tool call, the refused request, its retry
    refused, retried = bodies[2], bodies[3]
    # The retry was rebuilt smaller: the limit the error reported minus the output reserve.
    assert agent.budget <= 3000 - 500
    assert len(str(retried)) <= len(str(refused))
    assert result.compactions and result.turns[-1].compaction
    for body in bodies[1:]:
        payload = {k: v for k, v in body.items() if k in ("messages", "tools", "system")}
        assert check_request(provider, payload) == []
    # The tool call's id and name reached the model unchanged in the follow-up request.
    follow = str(bodies[2])
    assert "call_1" in follow and "lookup" in follow and "shipped on Monday" in follow
