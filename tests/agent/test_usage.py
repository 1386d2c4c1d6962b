"""Reactive compaction on a context-length refusal; usage per call next to the prediction;
calibration of an estimating counter from measured prompt tokens."""

from __future__ import annotations

import json

import pytest

from loomctx import ContextLengthError, ModelResponse, Usage, check_request
from loomctx.agent import STEP_DOWN
from loomctx.tokens.estimate import DEFAULT_CHARS_PER_TOKEN


def _fill(agent, n: int = 60) -> None:
    """A long conversation so that a 2000-token build is full."""
    words = "the shipment left the depot and the carrier confirmed the scan at the gate"
    for i in range(n):
        agent.session.add_message_sync("user" if i % 2 == 0 else "assistant",
                                       f"message {i}: {words} {i}")


def _refusal(limit=None):
    return ContextLengthError("prompt is too long", status=400, limit=limit, requested=2100)


@pytest.mark.parametrize(("limit", "output_tokens", "expected", "how"), [
    (1500, 200, 1300, "the provider's limit 1500 minus the output reserve 200"),
    (1500, None, 1350, "the provider's limit 1500 minus the output reserve 150"),
    (None, 200, int(2000 * STEP_DOWN), "a step down to 75%"),
])
def test_a_context_length_error_rebuilds_smaller_and_retries_once(
        make_agent, limit, output_tokens, expected, how):
    agent, model, sink = make_agent([_refusal(limit), "short answer", "again"],
                                    output_tokens=output_tokens)
    _fill(agent)
    result = agent.run_sync("what happened at the gate?")
    assert result.stop == "final" and result.output == "short answer" and model.calls == 2
    rec = result.turns[0]
    assert (rec.refused_budget, rec.budget) == (2000, expected)
    assert how in rec.compaction and "retried" in rec.compaction
    assert result.compactions == [rec]
    rebuilt = sink.of("context_rebuilt")
    assert [(e.turn, e.reason, e.budget) for e in rebuilt] == [
        (0, "turn", 2000), (0, "context_length", expected)]
    assert rebuilt[1].tokens <= expected and rebuilt[1].tokens < rebuilt[0].tokens
    assert all(check_request("openai", p) == [] for p in model.requests)
    assert model.max_tokens == [output_tokens, output_tokens]
    # The provider's limit holds for the rest of the agent's life.
    assert agent.budget == expected
    assert agent.run_sync("and then?").turns[0].budget == expected


def test_a_second_refusal_is_a_clear_error(make_agent):
    agent, model, _ = make_agent([_refusal(1500), _refusal(1500)], output_tokens=200)
    _fill(agent)
    with pytest.raises(ContextLengthError, match=r"twice.*2000.*1300") as err:
        agent.run_sync("what happened?")
    assert err.value.limit == 1500 and model.calls == 2


def test_usage_is_recorded_next_to_the_predicted_reusable_prefix(make_agent):
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    first = ModelResponse(message={"role": "assistant", "content": None, "tool_calls": [
        {"id": "u1", "type": "function", "function": {"name": "lookup",
                                                      "arguments": '{"key": "a"}'}}]},
        usage=Usage(prompt_tokens=321, completion_tokens=12, cached_tokens=0))
    agent, _model, sink = make_agent([first, "the value is a"], tools=[lookup])
    result = agent.run_sync("what is a?")
    t0, t1 = result.turns
    assert t0.usage == Usage(prompt_tokens=321, completion_tokens=12, cached_tokens=0)
    assert t1.usage.cached_tokens > 0 and t1.reused_prefix_tokens > 0  # measured, predicted
    called = sink.of("model_called")
    rebuilt = sink.of("context_rebuilt")
    for rec, ev, rb in zip(result.turns, called, rebuilt, strict=True):
        assert (ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens) == (
            rec.usage.prompt_tokens, rec.usage.completion_tokens, rec.usage.cached_tokens)
        assert ev.predicted_tokens == rec.tokens == rb.tokens
        assert ev.predicted_reusable_tokens == rec.reused_prefix_tokens \
            == rb.reused_prefix_tokens
    assert result.usage.prompt_tokens == 321 + t1.usage.prompt_tokens


def test_an_estimating_counter_is_calibrated_from_measured_usage(make_agent):
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    def measured(message):
        """A provider that counts more than the estimate predicts (a dense language)."""
        def step(payload):
            return ModelResponse(message=message, usage=Usage(
                prompt_tokens=1000 + len(json.dumps(payload)) // 2, completion_tokens=5))
        return step

    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "k1", "type": "function", "function": {"name": "lookup",
                                                      "arguments": '{"key": "a"}'}}]}
    agent, model, _ = make_agent([measured(call), measured({"role": "assistant",
                                                            "content": "done"})],
                                 tools=[lookup], format="anthropic")
    result = agent.run_sync("what is a?")
    cal = agent.calibration
    assert cal.estimator is not None and len(cal.samples) == model.calls == 2
    assert all(check_request("anthropic", p) == [] for p in model.requests)
    assert all(t.usage.prompt_tokens > t.tokens for t in result.turns)
    # The provider counted more than predicted: the fit takes fewer characters per token,
    # and matches the measured samples better than the defaults.
    fitted = cal.calibrated
    assert fitted is not None and fitted.chars_per_token < DEFAULT_CHARS_PER_TOKEN

    def error(counter):
        return sum(abs(counter.count(text) - tokens) for text, tokens in cal.samples)

    assert error(fitted) < error(cal.estimator)


def test_an_exact_counter_is_not_calibrated(make_agent):
    agent, _, _ = make_agent(["hi"])
    agent.run_sync("hello")
    assert agent.calibration.estimator is None and agent.calibration.calibrated is None
