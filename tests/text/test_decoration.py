"""index_text: the id and time a client writes in front of a message are left out of indexing."""

from __future__ import annotations

import pytest

from loomctx import HashingEmbedder, Session
from loomctx.text.decoration import index_text


@pytest.mark.parametrize(("text", "expected"), [
    ("[D1:3] (2023-05-08 13:56) Caroline: I went hiking.", "Caroline: I went hiking."),
    ("[msg-42] hello there", "hello there"),
    ("  [7]  (8:05 pm) ok", "ok"),
])
def test_a_leading_tag_and_time_are_left_out(text: str, expected: str) -> None:
    assert index_text(text) == expected


@pytest.mark.parametrize("text", [
    "no decoration at all",
    "a [tag] in the middle",
    "(2023) a time without a tag",
    "[only-a-tag]",
    "[" + "x" * 60 + "] a tag too long to be an id",
])
def test_other_texts_are_unchanged(text: str) -> None:
    assert index_text(text) == text


def test_a_parenthesis_without_a_digit_is_part_of_the_message() -> None:
    assert index_text("[a] (see below) the plan") == "(see below) the plan"


def test_memory_matches_the_words_not_the_decoration() -> None:
    s = Session(embedder=HashingEmbedder(), model="gpt-4o", clock=lambda: 0.0)
    s.add_messages_sync([
        {"id": f"m{i}", "role": "user", "content": f"[m{i}] (2023-05-0{i} 10:00) note {i}"}
        for i in range(1, 4)
    ] + [{"id": "q", "role": "user", "content": "[q] (2024-01-01 09:00) we moved in 2023"}])
    hits = s.memory.search_lexical("2023", 10)
    # Every line carries 2023 in its time; only one says it.
    assert [h.record.id for h in hits] == ["q"]
    # The message is stored whole.
    assert hits[0].record.content.startswith("[q] (2024-01-01 09:00)")
