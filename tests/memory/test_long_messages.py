"""One huge message costs a session a bounded amount: what it embeds, indexes and re-reads at
every build is a bounded sample of it, and a message over ``MemoryOptions.max_message_chars``
is refused with a :class:`TooLargeError` that names the limit and the option, storing nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from loomctx import ConfigError, InputError, MemoryOptions, Session, TooLargeError
from loomctx.memory.tiers import MAX_MESSAGE_CHARS
from loomctx.testing import HashingEmbedder
from loomctx.text.sample import ANALYSIS_CHARS


class _Recording(HashingEmbedder):
    """Records the length of every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.lengths: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.lengths.extend(len(t) for t in texts)
        return super().embed(texts)


def _log(chars: int) -> str:
    line = "2026-11-29T05:00:00Z ERROR svc-7/queue retry id=5f3a backoff took 120ms\n"
    return (line * (chars // len(line) + 1))[:chars - 12] + " tail-marker"


def test_what_a_huge_message_costs_each_pass_is_bounded() -> None:
    embedder = _Recording()
    s = Session("long", embedder=embedder)
    s.add_message_sync("user", "hello")
    s.add_message_sync("user", _log(600_000))
    s.add_message_sync("assistant", "noted")
    s.add_message_sync("user", "what failed?")
    s.build_sync(max_tokens=200)
    assert embedder.lengths and max(embedder.lengths) <= ANALYSIS_CHARS
    assert max(len(t) for t in s.memory.recent_texts(5)) <= ANALYSIS_CHARS
    hits = s.memory.search_lexical("tail-marker", 3)
    assert hits and len(hits[0].record.content) == 600_000  # stored whole, its tail indexed


def test_a_message_over_the_limit_is_refused_and_nothing_is_stored() -> None:
    s = Session("big", embedder=HashingEmbedder(),
                memory=MemoryOptions(max_message_chars=1_000))
    s.add_message_sync("user", "x" * 1_000)  # at the limit: kept
    with pytest.raises(TooLargeError) as info:
        s.add_messages_sync([{"role": "user", "content": "fine"},
                             {"role": "assistant", "content": "y" * 1_001}])
    err = info.value
    assert isinstance(err, InputError)
    assert (err.size, err.limit) == (1_001, 1_000)
    assert "max_message_chars" in str(err) and "--max-message-chars" in str(err)
    assert "1,001" in str(err) and "1,000" in str(err)
    assert [it.content for it in s.memory.history.items] == ["x" * 1_000]
    assert len(list(s.store.scan(scope=s.memory.scope))) == 1
    s.add_message_sync("user", "still usable")


def test_tool_call_arguments_count_and_images_do_not() -> None:
    s = Session("parts", embedder=HashingEmbedder(),
                memory=MemoryOptions(max_message_chars=500))
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5_000}}
    s.add_message_sync("user", [{"type": "text", "text": "what is this?"}, image])
    with pytest.raises(TooLargeError):
        s.add_message_sync("assistant", None, tool_calls=[{
            "id": "c1", "type": "function",
            "function": {"name": "write", "arguments": '{"text": "' + "z" * 600 + '"}'}}])


def test_staging_refuses_the_same_and_changes_nothing() -> None:
    s = Session("staged", embedder=HashingEmbedder(),
                memory=MemoryOptions(max_message_chars=100))
    with pytest.raises(TooLargeError):
        s.memory.check([{"role": "user", "content": "q" * 101}])
    with pytest.raises(TooLargeError):
        s.stage([{"role": "user", "content": "q" * 101}])
    assert len(s.memory.history) == 0
    s.stage([{"role": "user", "content": "short"}])  # nothing was left staged
    s.unstage()


def test_the_default_limit_refuses_a_20_mb_reply() -> None:
    s = Session("default", embedder=HashingEmbedder())
    assert s.memory.options.max_message_chars == MAX_MESSAGE_CHARS >= 64 * 1024
    with pytest.raises(TooLargeError):
        s.add_message_sync("assistant", "r" * (20 * 2**20))
    assert len(s.memory.history) == 0


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_the_limit_is_checked_on_construction(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_message_chars"):
        MemoryOptions(max_message_chars=bad)  # type: ignore[arg-type]
