"""An upper-bound token estimator for models without a public tokenizer (Claude).

Anthropic does not publish Claude's tokenizer, yet a budget must never be exceeded, so loomctx
estimates from character classes and errs high. CJK characters cost far more tokens per
character than Latin text, so they get their own ratio::

    count = ceil((other_chars / chars_per_token + cjk_chars / cjk_chars_per_token) * (1 + margin))

Default ratios, measured with cl100k_base on the mixed corpus in ``tests/tokens``: English prose
runs at about 5 characters per token, code and SQL at about 3.3, escaped JSON down to 2.6, and
Chinese at about 0.9 CJK characters per token (o200k_base ~1.4, qwen3 ~1.6). The defaults, 2.8
and 0.6 with a 10% margin, are chosen so that even dense JSON stays under the estimate: on that
corpus they over-estimate cl100k by about 2.0x on English prose, 1.3x on code/JSON (1.05x at
worst), 1.7x on Chinese and 1.6x on mixed text. That is a lot of unused budget for prose, so feed
real ``usage.input_tokens`` back through :meth:`EstimatingCounter.calibrate` to tighten them for
one model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from loomctx.errors import ConfigError
from loomctx.tokens._text import CJK_PATTERN, count_cjk

DEFAULT_CHARS_PER_TOKEN = 2.8
DEFAULT_CJK_CHARS_PER_TOKEN = 0.6


@dataclass(kw_only=True)
class EstimatingCounter:
    """Estimates tokens from character counts; ``exact`` is False and counts err high.

    A keyword-only dataclass validated on construction; treat it as immutable (``calibrate``
    returns a new one). It is not frozen only because :class:`TokenCounter` declares ``name`` and
    ``exact`` as plain attributes, which a frozen field does not satisfy for a type checker.
    """

    name: str = "estimate"
    """Shown in reports, e.g. ``"estimate:claude"``."""
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    """Non-CJK characters per token (lower = more tokens = safer)."""
    cjk_chars_per_token: float = DEFAULT_CJK_CHARS_PER_TOKEN
    """CJK characters per token (Han, kana, Hangul, full-width forms)."""
    margin: float = 0.1
    """Safety margin multiplied in after the ratios: 0.1 means +10%."""
    exact: bool = field(default=False, init=False)
    """Always False: an estimate, never the model's own count."""

    def __post_init__(self) -> None:
        for label, value in (
            ("chars_per_token", self.chars_per_token),
            ("cjk_chars_per_token", self.cjk_chars_per_token),
        ):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ConfigError(f"{label} must be a finite number > 0, got {value!r}")
        if not (isinstance(self.margin, (int, float)) and 0 <= self.margin <= 10):
            raise ConfigError(
                f"margin must be between 0 and 10 (e.g. 0.1 for +10%), got {self.margin!r}"
            )
        if not self.name:
            raise ConfigError(f"name must be a non-empty string, got {self.name!r}")

    def _tokens(self, other: int, cjk: int) -> int:
        scale = 1.0 + self.margin
        raw = (other / self.chars_per_token + cjk / self.cjk_chars_per_token) * scale
        # round() first so float noise such as 3.0000000000000004 does not add a token
        return math.ceil(round(raw, 9))

    def count(self, text: str) -> int:
        """Estimated token count of ``text`` (an upper bound for typical text)."""
        cjk = count_cjk(text)
        return self._tokens(len(text) - cjk, cjk)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """``[count(t) for t in texts]``."""
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        """Longest prefix of ``text`` whose estimated count is ``<= max_tokens``.

        The estimate only grows as characters are added, so a binary search over prefix lengths
        on cumulative class counts finds the longest prefix that fits.
        """
        if max_tokens < 0:
            raise ConfigError(f"max_tokens must be >= 0, got {max_tokens!r}")
        if self.count(text) <= max_tokens:
            return text
        is_cjk = np.zeros(len(text) + 1, dtype=np.int64)
        for m in CJK_PATTERN.finditer(text):
            is_cjk[m.start() + 1] = 1
        cjk_before = np.cumsum(is_cjk)  # cjk_before[i] = CJK chars in text[:i]
        lo, hi = 0, len(text)  # text[:lo] fits, text[:hi] does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            cjk = int(cjk_before[mid])
            if self._tokens(mid - cjk, cjk) <= max_tokens:
                lo = mid
            else:
                hi = mid
        return text[:lo]

    def calibrate(
        self, samples: Sequence[tuple[str, int]], *, margin: float | None = None
    ) -> EstimatingCounter:
        """A new counter whose ratios fit ``(text, provider_token_count)`` samples.

        Fits ``tokens ≈ a·other_chars + b·cjk_chars`` by non-negative least squares (two
        unknowns, so the constrained optimum is the unconstrained one or lies on an axis). A
        class absent from the samples (or fitted to zero) keeps this counter's ratio. ``margin``
        defaults to this counter's margin; feed back ``usage.input_tokens`` minus the known
        framing overhead for best results.
        """
        if not samples:
            raise ConfigError("calibrate needs at least one (text, token_count) sample, got none")
        rows: list[tuple[float, float]] = []
        targets: list[float] = []
        for text, tokens in samples:
            if not isinstance(tokens, int) or tokens < 0:
                raise ConfigError(f"sample token counts must be ints >= 0, got {tokens!r}")
            cjk = count_cjk(text)
            rows.append((float(len(text) - cjk), float(cjk)))
            targets.append(float(tokens))
        a, b = _nnls2(np.asarray(rows), np.asarray(targets))
        return replace(
            self,
            chars_per_token=1.0 / a if a > 0 else self.chars_per_token,
            cjk_chars_per_token=1.0 / b if b > 0 else self.cjk_chars_per_token,
            margin=self.margin if margin is None else margin,
        )


def _nnls2(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Non-negative least squares for two columns (closed form over the candidate faces)."""
    candidates: list[tuple[float, float]] = [(0.0, 0.0)]
    full, *_ = np.linalg.lstsq(x, y, rcond=None)
    if full[0] >= 0 and full[1] >= 0:
        candidates.append((float(full[0]), float(full[1])))
    for col in (0, 1):
        denom = float(x[:, col] @ x[:, col])
        if denom > 0:
            coef = max(0.0, float(x[:, col] @ y) / denom)
            candidates.append((coef, 0.0) if col == 0 else (0.0, coef))

    def sse(ab: tuple[float, float]) -> float:
        resid = x @ np.asarray(ab) - y
        return float(resid @ resid)

    return min(candidates, key=sse)


__all__ = ["DEFAULT_CHARS_PER_TOKEN", "DEFAULT_CJK_CHARS_PER_TOKEN", "EstimatingCounter"]
