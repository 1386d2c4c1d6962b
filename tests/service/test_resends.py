"""A resent conversation is hashed in time proportional to what it adds: :class:`Resends` reuses
the hashes of the longest prefix equal to a recent request's, with the same result as hashing
every message."""

from __future__ import annotations

from typing import Any

import pytest

from loomctx.service import conversations
from loomctx.service.conversations import Resends, hashes, seed


def _turns(n: int, tag: str = "") -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{tag}message {i}"}
            for i in range(n)]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = conversations.fingerprint

    def counting(message: Any) -> str:
        calls[0] += 1
        return real(message)

    monkeypatch.setattr(conversations, "fingerprint", counting)
    return calls


def test_a_resend_fingerprints_only_what_it_adds(counted: list[int]) -> None:
    memo, start = Resends(), seed("be brief")
    history = _turns(500)
    assert memo.hashes(start, history) == hashes(start, history)
    counted[0] = 0
    longer = [*history, {"role": "assistant", "content": "ok"},
              {"role": "user", "content": "and now?"}]
    assert memo.hashes(start, longer) == hashes(start, longer)
    assert counted[0] == 1 + 2 + len(longer)  # first message, the two new; then the check


def test_the_same_hashes_as_hashing_everything() -> None:
    memo, start = Resends(), seed(None)
    base = _turns(40)
    cases = [base, base[:10], [*base[:20], {"role": "user", "content": "a branch"}],
             _turns(40, "other "), [dict(m) for m in base], [*base, *_turns(3, "more ")],
             base[:1], [], [{"role": "user", "content": "message 0", "name": "x"}, *base[1:]]]
    for messages in cases:
        assert memo.hashes(start, messages) == hashes(start, messages)
    other = seed("another system prompt")  # the same messages under other instructions
    assert memo.hashes(other, base) == hashes(other, base) != hashes(start, base)


def test_conversations_that_begin_alike_keep_their_own_hashes() -> None:
    memo, start = Resends(), seed(None)
    a = [{"role": "user", "content": "hi"}, *_turns(30, "a ")]
    b = [{"role": "user", "content": "hi"}, *_turns(30, "b ")]
    for _ in range(3):
        a = [*a, {"role": "user", "content": f"a {len(a)}"}]
        b = [*b, {"role": "user", "content": f"b {len(b)}"}]
        assert memo.hashes(start, a) == hashes(start, a)
        assert memo.hashes(start, b) == hashes(start, b)


def test_only_a_few_requests_are_kept() -> None:
    memo, start = Resends(kept=2), seed(None)
    for k in range(5):
        memo.hashes(start, _turns(3, f"{k} "))
    assert len(memo._recent) == 2
