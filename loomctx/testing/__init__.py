"""Test helpers that ship with loomctx so users can test their agents offline.

- :class:`HashingEmbedder`: a deterministic, fast fake embedder (no model).
- :func:`check_truncate`: the ``TokenCounter.truncate`` contract, for any counter.
- :class:`ScriptedModel`: an in-process chat model that replays a script (text,
  :class:`ToolCall` steps, errors) and records every request, to test an agent loop offline.
- :class:`WordCounter`: a fixed tokenizer (one token per whitespace-separated word) for tests
  whose numbers must be computable by hand.
- :class:`FakeModelServer`: a loopback HTTP server speaking the OpenAI and Anthropic wire
  formats (JSON and SSE) that replays a script of steps (:class:`Reply` with :class:`ToolCall`,
  :class:`HttpError`, :class:`ContextLength`, :class:`Malformed`, :class:`Raw`, :class:`Delay`)
  and records
  every request; with ``respond=ToolFollower()`` it answers by the tools each request offers.
- ``loomctx.testing.processes.wait_healthy``: wait for a server started in a child process
  (``loomctx serve``) to answer, failing at once if the process dies.
- ``loomctx.testing.store_conformance``: the contract suite every ``MemoryStore`` passes (needs
  pytest and hypothesis, so it is not imported here).
- ``loomctx.testing.bus_conformance``: the contract suite every ``EventBus`` passes (needs
  pytest, so it is not imported here).
"""

from __future__ import annotations

from collections.abc import Sequence

from loomctx.embed.fake import HashingEmbedder
from loomctx.models.scripted import ScriptedModel
from loomctx.testing.fake_script import (
    ContextLength,
    Delay,
    HttpError,
    Malformed,
    Raw,
    Reply,
    ToolCall,
)
from loomctx.testing.fake_server import FakeModelServer, RecordedRequest
from loomctx.testing.tool_follower import ToolFollower
from loomctx.tokens.protocol import TokenCounter


def check_truncate(counter: TokenCounter, text: str, max_tokens: int) -> str:
    """Assert ``counter.truncate(text, max_tokens)`` keeps its contract; return the cut.

    The cut is a prefix of ``text`` that fits, the whole text when it fits, and maximal:
    one more character would not fit.
    """
    cut = counter.truncate(text, max_tokens)
    if not text.startswith(cut):
        raise AssertionError(f"truncate returned a non-prefix: {cut!r}")
    if counter.count(cut) > max_tokens:
        raise AssertionError(f"truncate returned {counter.count(cut)} tokens > {max_tokens}")
    fits = counter.count(text) <= max_tokens
    if fits and cut != text:
        raise AssertionError("text that fits must come back whole")
    if not fits and counter.count(text[: len(cut) + 1]) <= max_tokens:
        raise AssertionError("the cut is not maximal: one more character still fits")
    return cut


class WordCounter:
    """One token per whitespace-separated word; exact by definition."""

    name = "words"
    exact = True

    def count(self, text: str) -> int:
        return len(text.split())

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix with at most ``max_tokens`` words: it ends just before the
        first character of word ``max_tokens + 1`` (trailing whitespace included)."""
        words = 0
        in_word = False
        for i, ch in enumerate(text):
            if ch.isspace():
                in_word = False
            elif not in_word:
                in_word = True
                words += 1
                if words > max_tokens:
                    return text[:i]
        return text


__all__ = ["ContextLength", "Delay", "FakeModelServer", "HashingEmbedder", "HttpError",
           "Malformed", "Raw", "RecordedRequest", "Reply", "ScriptedModel", "ToolCall",
           "ToolFollower", "WordCounter", "check_truncate"]
