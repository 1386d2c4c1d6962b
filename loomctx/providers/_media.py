"""Token rules for images in chat messages (documented provider rules, not tokenizer output).

Images are not text, so no tokenizer counts them; each provider publishes a formula.

* OpenAI (GPT-4o class vision pricing): ``detail="low"`` costs 85 tokens. Otherwise the image is
  scaled to fit 2048x2048, then its short side scaled down to 768, and it costs
  ``85 + 170 * tiles`` with 512-pixel tiles. Without a size loomctx charges 765 (a 2x2-tile image,
  the cost of a typical 1024x1024 picture).
* Anthropic: ``ceil(width * height / 750)`` after scaling the long side down to 1568; without a
  size loomctx charges 1600 (the most a resized image can cost).

Sizes are read from ``width``/``height`` keys on the part, or inside its ``image_url`` /
``source`` mapping (a loomctx convention: the APIs themselves only take the bytes or a URL).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

OPENAI_LOW_DETAIL = 85
OPENAI_BASE = 85
OPENAI_PER_TILE = 170
OPENAI_UNKNOWN_SIZE = OPENAI_BASE + 4 * OPENAI_PER_TILE
ANTHROPIC_UNKNOWN_SIZE = 1600
_ANTHROPIC_LONG_EDGE = 1568


def _size(part: Mapping[str, Any], inner_key: str) -> tuple[int, int] | None:
    for where in (part, part.get(inner_key)):
        if isinstance(where, Mapping):
            w, h = where.get("width"), where.get("height")
            if isinstance(w, int) and isinstance(h, int) and w > 0 and h > 0:
                return w, h
    return None


def openai_image_tokens(part: Mapping[str, Any]) -> int:
    """Tokens of an OpenAI ``image_url`` content part under the tile rule."""
    inner = part.get("image_url")
    detail = inner.get("detail") if isinstance(inner, Mapping) else part.get("detail")
    if detail == "low":
        return OPENAI_LOW_DETAIL
    size = _size(part, "image_url")
    if size is None:
        return OPENAI_UNKNOWN_SIZE
    w, h = float(size[0]), float(size[1])
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return OPENAI_BASE + OPENAI_PER_TILE * tiles


def anthropic_image_tokens(part: Mapping[str, Any]) -> int:
    """Tokens of an Anthropic ``image`` content block under the area rule."""
    size = _size(part, "source")
    if size is None:
        return ANTHROPIC_UNKNOWN_SIZE
    w, h = float(size[0]), float(size[1])
    if max(w, h) > _ANTHROPIC_LONG_EDGE:
        scale = _ANTHROPIC_LONG_EDGE / max(w, h)
        w, h = w * scale, h * scale
    return min(math.ceil(w * h / 750), ANTHROPIC_UNKNOWN_SIZE)


__all__ = ["anthropic_image_tokens", "openai_image_tokens"]
