"""Porter's step 1 as loomctx's search stemmer: each rule, what it keeps, and its limits."""

from __future__ import annotations

import pytest

from loomctx.text.stem import stem


@pytest.mark.parametrize(("word", "expected"), [
    # plurals
    ("weekends", "weekend"), ("stories", "story"), ("classes", "class"), ("status", "status"),
    ("analysis", "analysis"), ("glass", "glass"),
    # -eed
    ("agreed", "agree"), ("need", "need"), ("feed", "feed"),
    # -ed and -ing
    ("researched", "research"), ("painting", "paint"), ("adopted", "adopt"),
    ("created", "create"), ("troubled", "trouble"), ("sizing", "size"),  # -at, -bl, -iz + e
    ("running", "run"), ("hopping", "hop"), ("falling", "fall"), ("missing", "miss"),
    ("hoping", "hope"), ("filing", "file"),  # short stem gets its e back
    ("bring", "bring"), ("red", "red"), ("sing", "sing"),  # no vowel before the ending
    ("snowing", "snow"),  # w, x, y end no short stem
    ("paintings", "paint"),  # plural, then -ing
])
def test_rules(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize("word", ["bus", "cat", "s", "", "1990s", "co2ed", "naïve"])
def test_short_and_non_alphabetic_words_are_kept(word: str) -> None:
    assert stem(word) == word


def test_forms_of_one_verb_meet() -> None:
    forms = {stem(w) for w in ("paint", "paints", "painted", "painting", "paintings")}
    assert forms == {"paint"}

