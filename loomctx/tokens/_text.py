"""Text helpers shared by the counters: surrogate cleaning, CJK detection, prefix search.

Why here: every counter must agree on two rules, so they live in one place.

* Lone surrogates (``"\\ud800"``) cannot be encoded as UTF-8, so tokenizers reject them. loomctx
  counts each surrogate code point as U+FFFD (the replacement character, 3 UTF-8 bytes), one for
  one, so string positions do not move and a truncated result is still a prefix of the input.
  (tiktoken instead round-trips through UTF-16, which joins a *paired* surrogate into one
  character; Python never produces paired surrogates from valid decoding, so the two rules only
  differ on already-broken text.)
* CJK means the Han, kana, Hangul, CJK punctuation and full-width ranges below.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_SURROGATE = re.compile("[\ud800-\udfff]")

CJK_PATTERN = re.compile(
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility Jamo, Katakana extensions
    "\u3200-\u33ff"  # enclosed CJK, compatibility
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7ff"  # Hangul syllables, Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff00-\uffef"  # half-width and full-width forms
    "\U00020000-\U0003134f"  # CJK extensions B-H
    "]"
)


def clean_surrogates(text: str) -> str:
    """Replace every surrogate code point by U+FFFD, keeping the length unchanged."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def count_cjk(text: str) -> int:
    """Number of CJK characters in ``text``."""
    if text.isascii():
        return 0
    return CJK_PATTERN.subn("", text)[1]


_MAX_EXTEND = 64
_MAX_LINEAR_BACKOFF = 16


def refine_prefix(text: str, count: Callable[[str], int], max_tokens: int, guess: int) -> str:
    """Longest prefix near ``text[:guess]`` whose ``count`` is ``<= max_tokens``.

    ``guess`` comes from the tokenizer's own token boundaries and is almost always right. Re-
    tokenizing a prefix can differ from the prefix of the tokens, so the guess is checked: backed
    off while it does not fit, then extended one character at a time while it still does.
    """
    pos = max(0, min(guess, len(text)))
    if count(text[:pos]) > max_tokens:
        for _ in range(_MAX_LINEAR_BACKOFF):
            pos -= 1
            if pos <= 0 or count(text[:pos]) <= max_tokens:
                break
        else:
            lo, hi = 0, pos  # text[:lo] fits, text[:hi] does not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if count(text[:mid]) <= max_tokens:
                    lo = mid
                else:
                    hi = mid
            pos = lo
        pos = max(pos, 0)
        while pos > 0 and count(text[:pos]) > max_tokens:
            pos -= 1
        return text[:pos]
    for _ in range(_MAX_EXTEND):
        if pos >= len(text) or count(text[: pos + 1]) > max_tokens:
            break
        pos += 1
    return text[:pos]


__all__ = ["CJK_PATTERN", "clean_surrogates", "count_cjk", "refine_prefix"]
