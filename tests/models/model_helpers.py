"""Helpers of the model-client tests: a sleep that only records, and clients of either format
pointed at a fake server with instant, deterministic retries."""

from __future__ import annotations

from loomctx.models import AnthropicChatModel, Backoff, OpenAIChatModel
from loomctx.testing import FakeModelServer


class SleepRecorder:
    """An async sleep that returns at once and remembers each requested duration."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


BACKOFF = Backoff(base=0.25, max=8.0)
"""Ceilings 0.25, 0.5, 1, 2 ... s; with ``random=lambda: 0.5`` each wait is half of its
ceiling."""


def make_client(fmt: str, server: FakeModelServer, sleeps: SleepRecorder, **kwargs: object
                ) -> OpenAIChatModel | AnthropicChatModel:
    """A client of either format pointed at ``server``, with instant, deterministic retries."""
    options: dict[str, object] = {"api_key": "test-key", "sleep": sleeps, "random": lambda: 0.5,
                                  "backoff": BACKOFF, "timeout": 5.0, **kwargs}
    if fmt == "openai":
        return OpenAIChatModel("gpt-test", base_url=server.url + "/v1", **options)  # type: ignore[arg-type]
    return AnthropicChatModel("claude-test", base_url=server.url, **options)  # type: ignore[arg-type]
