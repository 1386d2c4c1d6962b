"""Feeding the provider's measured prompt tokens back to an estimating counter.

Claude's tokenizer is not public, so its budgets are counted by
:class:`~loomctx.tokens.estimate.EstimatingCounter`, which errs high on purpose. Every reply's
``usage.prompt_tokens`` is a measurement of what the estimate predicted; :class:`Calibration`
keeps those samples and refits the estimator's ratios after each one
(:meth:`EstimatingCounter.calibrate`).

A sample is ``(text, tokens)``: the request's text (every string the model reads, the tool
definitions as JSON) and the provider's count minus the framing the build itself added (the
build's count minus the estimate of that text), so the fit is over content, as the estimator
counts content.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from loomctx.tokens.cache import CachedCounter
from loomctx.tokens.estimate import EstimatingCounter
from loomctx.tokens.protocol import TokenCounter

_FRAMING_KEYS = frozenset({"role", "type", "id", "tool_call_id", "tool_use_id",
                           "cache_control", "media_type", "url"})
"""Payload keys whose values are structure, not text the estimator is asked to count."""


def payload_text(payload: Mapping[str, Any]) -> str:
    """The text of a request: string values in reading order, the tools as JSON."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, Mapping):
            for key, v in value.items():
                if key not in _FRAMING_KEYS:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for key, value in payload.items():
        if key == "tools":
            parts.append(json.dumps(value, ensure_ascii=False))
        elif key in ("system", "messages"):
            walk(value)
    return "\n".join(parts)


class Calibration:
    """Measured samples for one counter; ``calibrated`` is the latest fit (or None).

    Only an estimating counter is calibrated: an exact counter (a model with a public
    tokenizer) has nothing to learn, and ``add`` records nothing for it.
    """

    def __init__(self, counter: TokenCounter, *, keep: int = 64) -> None:
        inner = counter.inner if isinstance(counter, CachedCounter) else counter
        self.counter = counter
        self.estimator = inner if isinstance(inner, EstimatingCounter) else None
        self.keep = keep
        self.samples: list[tuple[str, int]] = []
        self.calibrated: EstimatingCounter | None = None

    def add(self, payload: Mapping[str, Any], *, predicted: int, prompt_tokens: int) -> bool:
        """Record one request and its measured size; True when the fit was updated."""
        if self.estimator is None or prompt_tokens <= 0:
            return False
        text = payload_text(payload)
        framing = max(0, predicted - self.counter.count(text))
        self.samples.append((text, max(0, prompt_tokens - framing)))
        del self.samples[:-self.keep]
        self.calibrated = self.estimator.calibrate(self.samples)
        return True


__all__ = ["Calibration", "payload_text"]
