"""Retries, backoff and provider errors, for both clients, over real HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from email.utils import formatdate
from typing import Any

import httpx
import pytest
from model_helpers import SleepRecorder, make_client

from loomctx.errors import ContextLengthError, ModelError, ModelResponseError, RateLimitError
from loomctx.models import Backoff, ChatModel, ModelResponse
from loomctx.models._http import context_length, parse_retry_after
from loomctx.testing import ContextLength, Delay, FakeModelServer, HttpError, Malformed

FORMATS = ["openai", "anthropic"]
PAYLOAD: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}


def _call(model: ChatModel, stream: bool) -> ModelResponse:
    async def streamed() -> ModelResponse:
        events = [e async for e in model.stream(PAYLOAD)]
        assert events[-1].response is not None
        return events[-1].response
    return asyncio.run(streamed() if stream else model.complete(PAYLOAD))


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_429_waits_as_long_as_retry_after_says(fmt: str, stream: bool,
                                                 server: FakeModelServer,
                                                 sleeps: SleepRecorder) -> None:
    server.add(HttpError(429, retry_after=3), HttpError(429, retry_after=20), "finally")
    reply = _call(make_client(fmt, server, sleeps), stream)
    assert reply.message["content"] == "finally"
    assert sleeps.calls == [3.0, 8.0]  # the second is capped by Backoff.max
    assert len(server.requests) == 3


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_5xx_backs_off_exponentially_then_succeeds(fmt: str, stream: bool,
                                                   server: FakeModelServer,
                                                   sleeps: SleepRecorder) -> None:
    server.add(HttpError(503), HttpError(500), HttpError(529), "recovered")
    reply = _call(make_client(fmt, server, sleeps), stream)
    assert reply.message["content"] == "recovered"
    assert sleeps.calls == [0.125, 0.25, 0.5]  # random 0.5 × ceilings 0.25, 0.5, 1
    assert len({r.raw for r in server.requests}) == 1  # the same request each time


@pytest.mark.parametrize("fmt", FORMATS)
def test_rate_limited_past_the_retries_raises_rate_limit_error(fmt: str,
                                                               server: FakeModelServer,
                                                               sleeps: SleepRecorder) -> None:
    server.add(*[HttpError(429, message="slow down please")] * 3)
    with pytest.raises(RateLimitError, match="slow down please") as err:
        _call(make_client(fmt, server, sleeps, max_retries=2), False)
    assert err.value.status == 429
    assert (len(server.requests), len(sleeps.calls)) == (3, 2)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("fmt", "limit", "requested"),
                         [("openai", 128000, 130512), ("anthropic", 200000, 210000)])
def test_context_length_is_raised_at_once_with_the_numbers(fmt: str, limit: int,
                                                           requested: int, stream: bool,
                                                           server: FakeModelServer,
                                                           sleeps: SleepRecorder) -> None:
    server.add(ContextLength(), "never reached")
    with pytest.raises(ContextLengthError) as err:
        _call(make_client(fmt, server, sleeps), stream)
    assert (err.value.limit, err.value.requested, err.value.status) == (limit, requested, 400)
    assert (len(server.requests), sleeps.calls) == (1, [])


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_reply_that_is_not_json_raises_model_response_error(fmt: str, stream: bool,
                                                              server: FakeModelServer,
                                                              sleeps: SleepRecorder) -> None:
    server.add(Malformed())
    with pytest.raises(ModelResponseError, match="not JSON"):
        _call(make_client(fmt, server, sleeps), stream)
    assert len(server.requests) == 1


def _wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        time.sleep(0.01)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_timeout_is_retried_then_reported(fmt: str, stream: bool, server: FakeModelServer,
                                            sleeps: SleepRecorder) -> None:
    server.add(Delay(0.5), Delay(0.5), Delay(0.5, then="on time"), Delay(0.5))
    # Only the read is short: a connect on a loaded machine must not time out instead.
    model = make_client(fmt, server, sleeps, timeout=httpx.Timeout(5.0, read=0.1),
                        max_retries=1)
    with pytest.raises(ModelError, match="after 2 attempts: ReadTimeout") as err:
        _call(model, stream)
    assert type(err.value) is ModelError
    _wait_for(lambda: len(server.requests) >= 2)  # the server thread records as it reads
    assert len(server.requests) == 2 and len(sleeps.calls) == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_slow_answer_within_the_retries_succeeds(fmt: str, server: FakeModelServer,
                                                   sleeps: SleepRecorder) -> None:
    server.add(Delay(0.5), Delay(0.01, then="in time"))
    reply = _call(make_client(fmt, server, sleeps, timeout=httpx.Timeout(5.0, read=0.3)), False)
    assert reply.message["content"] == "in time" and len(server.requests) == 2


@pytest.mark.parametrize(("status", "hint"), [(401, "check the API key"),
                                              (404, "check base_url and the model name"),
                                              (400, "")])
@pytest.mark.parametrize("fmt", FORMATS)
def test_caller_errors_are_not_retried_and_show_the_provider_message(
        fmt: str, status: int, hint: str, server: FakeModelServer,
        sleeps: SleepRecorder) -> None:
    server.add(HttpError(status, message="the provider\nsays why"), "never reached")
    with pytest.raises(ModelError, match="the provider says why") as err:
        _call(make_client(fmt, server, sleeps), False)
    assert type(err.value) is ModelError and err.value.status == status
    assert hint in str(err.value) and "\n" not in str(err.value)
    assert len(server.requests) == 1


def test_retry_after_reads_seconds_milliseconds_and_http_dates() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": formatdate(now + 42, usegmt=True)}, now) == 42.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_an_http_date_retry_after_is_honoured_over_http(server: FakeModelServer,
                                                        sleeps: SleepRecorder) -> None:
    server.add(HttpError(503, retry_after=formatdate(0, usegmt=True)), "ok")
    _call(make_client("openai", server, sleeps), False)
    assert sleeps.calls == [0.0]  # a date in the past: retry now


def test_backoff_ceilings_double_up_to_the_cap_and_jitter_stays_under_them() -> None:
    plain = Backoff(base=1.0, max=5.0, jitter=False)
    assert [plain.delay(n, lambda: 0.0) for n in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    jittered = Backoff(base=1.0, max=5.0)
    assert [jittered.delay(n, lambda: 0.999) for n in range(4)] == pytest.approx(
        [0.999, 1.998, 3.996, 4.995])


def test_context_length_reads_the_local_servers_and_the_anthropic_sum_shape() -> None:
    vllm = {"error": {"message": "This model's maximum context length is 4096 tokens. "
                                 "However, you requested 5000 tokens (4000 in the messages, "
                                 "1000 in the completion).", "code": 400}}
    llama_cpp = {"error": {"code": 400, "message": "the request exceeds the available context "
                           "size, try increasing it", "type": "exceed_context_size_error",
                           "n_prompt_tokens": 9000, "n_ctx": 8192}}
    anthropic_sum = {"type": "error", "error": {"type": "invalid_request_error", "message":
                     "input length and `max_tokens` exceed context limit: 198000 + 8192 > "
                     "200000, decrease input length or `max_tokens` and try again"}}
    assert context_length(vllm) == (4096, 5000)
    assert context_length(llama_cpp) == (8192, 9000)
    assert context_length(anthropic_sum) == (200000, 206192)
    assert context_length({"error": {"message": "Invalid API key"}}) is None
