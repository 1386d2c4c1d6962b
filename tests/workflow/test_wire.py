"""What a role call adds to its context, in each wire format: tools, the exchange, settings."""

from __future__ import annotations

import pytest

from loomctx.errors import ConfigError
from loomctx.workflow.wire import exchange_for, settings_for, tools_for
from loomctx.workspace import ModelSettings

TOOL = {"type": "function", "function": {"name": "dispatch_task", "description": "Hand over.",
                                         "parameters": {"type": "object", "properties": {
                                             "task": {"type": "string"}}}}}
EXCHANGE = [
    {"role": "assistant", "content": "handing over", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "dispatch_task", "arguments": '{"task": "a"}'}},
        {"id": "c2", "type": "function",
         "function": {"name": "dispatch_task", "arguments": "not json"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "started"},
    {"role": "tool", "tool_call_id": "c2", "content": "not run"},
]


def test_openai_is_passed_through() -> None:
    assert tools_for("openai", [TOOL]) == [TOOL]
    assert exchange_for("openai", EXCHANGE) == EXCHANGE


def test_anthropic_tools_and_exchange() -> None:
    assert tools_for("anthropic", [TOOL]) == [{
        "name": "dispatch_task", "description": "Hand over.",
        "input_schema": TOOL["function"]["parameters"]}]  # type: ignore[index]
    assistant, user = exchange_for("anthropic", EXCHANGE)
    assert assistant == {"role": "assistant", "content": [
        {"type": "text", "text": "handing over"},
        {"type": "tool_use", "id": "c1", "name": "dispatch_task", "input": {"task": "a"}},
        {"type": "tool_use", "id": "c2", "name": "dispatch_task",
         "input": {"arguments": "not json"}}]}
    # both results in one user turn, as Anthropic requires
    assert user == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c1", "content": "started"},
        {"type": "tool_result", "tool_use_id": "c2", "content": "not run"}]}


@pytest.mark.parametrize("fmt, budget, fields, notes", [
    ("openai", None, {"temperature": 0.4}, []),
    ("openai", 500, {"temperature": 0.4},
     ["thinking_budget 500 not sent: Chat Completions has no thinking budget field"]),
    ("anthropic", None, {"temperature": 0.4}, []),
    ("anthropic", 1200, {"thinking": {"type": "enabled", "budget_tokens": 1200}},
     ["temperature 0.4 not sent: Anthropic takes no temperature but 1 while thinking"]),
    ("anthropic", 500, {"thinking": {"type": "enabled", "budget_tokens": 1024}},
     ["temperature 0.4 not sent: Anthropic takes no temperature but 1 while thinking",
      "thinking_budget 500 raised to 1024: Anthropic's minimum"]),
])
def test_settings_per_format(fmt: str, budget: int | None, fields: dict[str, object],
                             notes: list[str]) -> None:
    s = ModelSettings(temperature=0.4, max_output_tokens=8000, thinking_budget=budget)
    assert settings_for(fmt, s) == (fields, notes)


def test_a_thinking_budget_over_the_output_cap_is_refused() -> None:
    s = ModelSettings(temperature=0.4, max_output_tokens=1000, thinking_budget=500)
    with pytest.raises(ConfigError, match="below max_output_tokens 1000"):
        settings_for("anthropic", s)
