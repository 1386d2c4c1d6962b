"""English suffix stripping for search terms: Porter's step 1 (plurals, then -ed / -ing).

A question and its evidence often use one word in two forms: "What did Caroline research?"
against "Researching adoption agencies", "When did Melanie paint a sunrise?" against "I painted
that lake sunrise last year" (LoCoMo). Porter's first step folds those forms together and stops
there: it found more evidence than a plural-only stemmer, and the whole Porter or Snowball
stemmer (-ational, -ness, -ive ... too) found no more than step 1 for four times the rules
(``benchmarks/HISTORY.md``, a stemmer for verb endings).

Rules, applied to a lowercased word of more than three letters (anything else is kept as is):

- plurals: ``-sses`` → ``-ss``, ``-ies`` → ``-y``, ``-s`` dropped unless the word ends in
  ``-ss``, ``-us`` or ``-is`` ("weekends" → "weekend", "stories" → "story", "status" kept);
- ``-eed`` → ``-ee`` when a vowel-consonant pair precedes it ("agreed" → "agree", "need" kept);
- ``-ed`` and ``-ing`` dropped when what is left has a vowel ("researching" → "research",
  "painting" → "paint", "bring" kept); then ``-at``/``-bl``/``-iz`` get their ``e`` back
  ("created" → "create"), a doubled final consonant other than l, s, z is undoubled ("running"
  → "run") and a short consonant-vowel-consonant stem gets an ``e`` ("hoping" → "hope").
"""

from __future__ import annotations

from functools import lru_cache

_VOWELS = frozenset("aeiou")


def _consonant(word: str, i: int) -> bool:
    """Porter's consonant: not a vowel, and ``y`` only after a vowel or at the start."""
    c = word[i]
    if c in _VOWELS:
        return False
    if c == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: how many vowel-consonant sequences the stem has."""
    m, previous = 0, None
    for i in range(len(stem)):
        consonant = _consonant(stem, i)
        if previous is False and consonant:
            m += 1
        previous = consonant
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _short(stem: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y ("hop", "fil")."""
    n = len(stem)
    return (n >= 3 and _consonant(stem, n - 3) and not _consonant(stem, n - 2)
            and _consonant(stem, n - 1) and stem[-1] not in "wxy")


STEM_MEMO_CHARS = 64
"""The longest word whose stem is memoised: the memo holds 65,536 words, and a "word" of a
text without spaces can be megabytes long."""


def stem(word: str) -> str:
    """The search term of a lowercased English word (see the module docstring for the rules)."""
    return _stem_memo(word) if len(word) <= STEM_MEMO_CHARS else _stem(word)


def _stem(word: str) -> str:
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    if word.endswith("ed") and _has_vowel(word[:-2]):
        base = word[:-2]
    elif word.endswith("ing") and _has_vowel(word[:-3]):
        base = word[:-3]
    else:
        return word
    if len(base) < 2:
        return word
    if base.endswith(("at", "bl", "iz")):
        return base + "e"
    if base[-1] == base[-2] and _consonant(base, len(base) - 1) and base[-1] not in "lsz":
        return base[:-1]
    if _measure(base) == 1 and _short(base):
        return base + "e"
    return base


_stem_memo = lru_cache(maxsize=1 << 16)(_stem)

__all__ = ["STEM_MEMO_CHARS", "stem"]
