"""The windowed fake upstream refuses what exceeds its window and reports the repeated prefix
as cached, as a provider's prompt cache would."""

from __future__ import annotations

import openai
import pytest

from loomctx.testing.windowed import WindowedFakeServer
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import counter_for_model


def test_window_refusals_and_cached_prefix() -> None:
    chat = ChatCounter(counter_for_model("gpt-4o").counter, "openai")
    with WindowedFakeServer(window=300, default="ok") as up:
        c = openai.OpenAI(base_url=up.url + "/v1", api_key="k", max_retries=0)
        first = [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": "hello there"}]
        r1 = c.chat.completions.create(model="gpt-4o", messages=first, max_tokens=50)
        assert r1.usage is not None and r1.usage.prompt_tokens == chat.messages(first)
        second = [*first, {"role": "assistant", "content": "ok"},
                  {"role": "user", "content": "more"}]
        r2 = c.chat.completions.create(model="gpt-4o", messages=second, max_tokens=50)
        assert r2.usage is not None and r2.usage.prompt_tokens_details is not None
        cached = r2.usage.prompt_tokens_details.cached_tokens
        assert cached == chat.reply_priming + sum(chat.message(m) for m in first)
        with pytest.raises(openai.BadRequestError, match="maximum context length is 300"):
            c.chat.completions.create(model="gpt-4o", max_tokens=50, messages=[
                {"role": "user", "content": "word " * 400}])
        assert (up.accepted, up.refused) == (2, 1)
