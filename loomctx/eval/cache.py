"""Prompt-cache reuse: how much of a request repeats the previous request from the start.

OpenAI's and Anthropic's prompt caches reuse the longest prefix a request shares with an earlier
one, so an agent pays full price only for what changed after the first difference. This module
measures that prefix between two consecutive requests of one conversation, in the model's tokens.

The definition, kept simple enough to check by hand:

- A payload is cut into *segments* in the order the provider reads them: each tool definition
  (``tools``), the system prompt (``system``: a string is one segment, a list of blocks one
  segment per block), then each message (``messages``); a text-format payload (``text``) is one
  segment. Other keys (model, temperature, ...) are not part of the prompt and are ignored.
- Each segment is written as canonical JSON (sorted keys, no spaces, non-ASCII kept), so two
  messages that differ only in the order of their keys, which the provider's template ignores,
  count as equal; any other change, one character included, makes them differ.
- ``reused`` = the tokens of the leading segments that are equal in both requests, plus, for the
  first segment that differs (same section in both), the tokens of the common character prefix of
  its two JSON texts. ``total`` = the tokens of every segment of the new request. Counting a
  cut-off prefix may be one token off at the cut; ``reused`` is clamped to ``total``.

The tokens are those of the JSON texts, not the provider's exact framing: the per-message
framing is a few tokens a message, equal in both requests, and does not move the share much.

:func:`reuse_ceiling` is the other side of the measure: the best mean share any window of a
conversation's newest messages could reach on the same requests, so a replay's reuse can be read
against what its messages allow, not only against another system's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any, NamedTuple

from loomctx.errors import ConfigError
from loomctx.text.messages import common_prefix_length
from loomctx.tokens.protocol import TokenCounter

SECTIONS: tuple[str, ...] = ("tools", "system", "messages", "text")
"""Payload keys that are part of the prompt, in the order the provider reads them."""


class PrefixReuse(NamedTuple):
    """Tokens of one request that repeat the previous request's prefix, and its whole size."""

    reused: int
    """Tokens at the start of the request equal to the previous request's start."""
    total: int
    """Tokens of the whole request (its segments' canonical JSON)."""

    @property
    def share(self) -> float:
        """``reused / total`` (1.0 for an empty request: nothing to pay for)."""
        return self.reused / self.total if self.total else 1.0


def canonical(value: Any) -> str:
    """The canonical JSON text of one segment (sorted keys, compact, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def segments(payload: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(section, canonical JSON)`` of every segment of ``payload``, in prompt order."""
    if not isinstance(payload, Mapping) or not any(k in payload for k in SECTIONS):
        raise ConfigError(
            f"a request payload needs one of the keys {list(SECTIONS)}, got {payload!r:.200}"
        )
    out: list[tuple[str, str]] = []
    for section in SECTIONS:
        value = payload.get(section)
        if value is None:
            continue
        if isinstance(value, list | tuple):
            out.extend((section, canonical(part)) for part in value)
        else:
            out.append((section, canonical(value)))
    return out


def prefix_reuse(
    previous: Mapping[str, Any] | None, payload: Mapping[str, Any], counter: TokenCounter
) -> PrefixReuse:
    """How many tokens of ``payload`` repeat ``previous`` from the start (module docstring).

    ``previous`` is None for the first request of a conversation: nothing is reused.
    """
    new = segments(payload)
    counts = counter.count_many([text for _, text in new])
    total = sum(counts)
    if previous is None:
        return PrefixReuse(0, total)
    old = segments(previous)
    reused = 0
    for index, (section, text) in enumerate(new):
        if index < len(old) and old[index] == (section, text):
            reused += counts[index]
            continue
        if index < len(old) and old[index][0] == section:
            common = text[: common_prefix_length(old[index][1], text)]
            if common:
                reused += min(counter.count(common), counts[index])
        break
    return PrefixReuse(min(reused, total), total)


def reuse_series(
    payloads: Iterable[Mapping[str, Any]], counter: TokenCounter
) -> list[PrefixReuse]:
    """:func:`prefix_reuse` of each request against the one before it (the first reuses 0)."""
    out: list[PrefixReuse] = []
    previous: Mapping[str, Any] | None = None
    for payload in payloads:
        out.append(prefix_reuse(previous, payload, counter))
        previous = payload
    return out


def summarize(series: Sequence[PrefixReuse]) -> dict[str, float | int]:
    """Mean and min share over every request but the first (which has nothing to reuse), and
    the token-weighted share (reused tokens over all tokens of those requests)."""
    rest = list(series[1:])
    if not rest:
        raise ConfigError("reuse needs at least two requests; replay more turns")
    shares = [r.share for r in rest]
    return {
        "requests": len(series),
        "mean": sum(shares) / len(shares),
        "min": min(shares),
        "weighted": sum(r.reused for r in rest) / max(1, sum(r.total for r in rest)),
    }


def reuse_ceiling(ends: Sequence[int], inputs: Sequence[int], room_tokens: Sequence[int],
                  reuse_tokens: Sequence[int], fixed: int, room: int,
                  starts: Sequence[bool] | None = None) -> float:
    """The best mean reuse (every request but the first, as :func:`summarize`) that a window of
    the newest messages can reach on a replay: request ``j`` shows messages ``start_j ..
    ends[j] - 1`` after a fixed part (tools, system prompt) that every request repeats, and the
    start only moves forward. While the start stays, a request repeats the previous one up to
    its last message; when it moves (a compaction), only the fixed part. No summary, no evidence
    and knowledge of every later message: any window that also sends those reaches less.

    - ``inputs[j]``: the newest message request ``j`` must show (the turn's user message);
    - ``room_tokens[i]``: what message ``i`` takes of ``room`` (the budget, less the fixed part);
    - ``reuse_tokens[i]``: its tokens as :func:`prefix_reuse` counts them; ``fixed`` likewise;
    - ``starts[i]``: whether a window may start at message ``i`` (not inside a tool call's
      results); every message may by default.

    An exact dynamic programme over (request, start): O(requests × messages). Raises
    ``ConfigError`` when the inputs disagree or some request's newest messages alone exceed
    ``room`` (no window holds them)."""
    n = len(room_tokens)
    if len(reuse_tokens) != n or (starts is not None and len(starts) != n):
        raise ConfigError(f"room_tokens, reuse_tokens and starts need one entry per message, "
                          f"got {n}, {len(reuse_tokens)} and "
                          f"{n if starts is None else len(starts)}")
    if len(ends) < 2 or len(inputs) != len(ends):
        raise ConfigError(f"a ceiling needs two requests or more and one input per request, got "
                          f"{len(ends)} requests and {len(inputs)} inputs")
    if any(not 0 <= inputs[j] < ends[j] <= n for j in range(len(ends))) or any(
            a > b for a, b in pairwise(ends)):
        raise ConfigError("each request needs 0 <= input < end <= messages, ends never going "
                          f"back; got ends {list(ends)[:8]}… and inputs {list(inputs)[:8]}…")
    room_at, reuse_at = [0], [0]
    for a, b in zip(room_tokens, reuse_tokens, strict=True):
        room_at.append(room_at[-1] + a)
        reuse_at.append(reuse_at[-1] + b)
    none = float("-inf")
    best: list[float] | None = None  # best summed share so far, by where the window starts
    for j, (end, last) in enumerate(zip(ends, inputs, strict=True)):
        now = [none] * n
        run = none  # the best of the previous request over the starts before this one
        for s in range(last + 1):
            before = best[s - 1] if best is not None and s else none
            run = max(run, before)
            if (starts is not None and not starts[s]) or room_at[end] - room_at[s] > room:
                continue
            if best is None:
                now[s] = 0.0
                continue
            total = fixed + reuse_at[end] - reuse_at[s]
            # the start stayed: the previous request repeats up to its last message
            kept = best[s] + (fixed + reuse_at[ends[j - 1]] - reuse_at[s]) / total \
                if best[s] > none else none
            now[s] = max(kept, run + fixed / total if run > none else none)
        if max(now, default=none) == none:
            raise ConfigError(f"request {j}: its newest messages (from {last} to {end - 1}) "
                              f"take more than the room of {room} tokens; no window holds them")
        best = now
    return max(best or [0.0]) / (len(ends) - 1)


__all__ = ["SECTIONS", "PrefixReuse", "canonical", "prefix_reuse", "reuse_ceiling",
           "reuse_series", "segments", "summarize"]
