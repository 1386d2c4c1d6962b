"""What a message needs, as people write it: the part that carries the need drives retrieval
(loomctx/text/need.py)."""

from __future__ import annotations

import pytest

from loomctx.text.need import MAX_WORDS, need_of, need_text, with_before


@pytest.mark.parametrize("message, need", [
    ("What did Caroline research?", "What did Caroline research?"),
    ("Thanks for the help earlier, by the way. What did Caroline research?",
     "What did Caroline research?"),
    ("Tell me what Caroline researched.", "what Caroline researched."),
    ("Can you remind me when Melanie painted a sunrise?", "when Melanie painted a sunrise?"),
    ("Hi again! I am putting together notes for the team. When did Melanie paint a sunrise, "
     "if you can find it. Thanks!", "When did Melanie paint a sunrise"),
    ("I was wondering, where did Caroline move from", "where did Caroline move from"),
    ("Would Caroline likely have Dr. Seuss books on her bookshelf?",
     "Would Caroline likely have Dr. Seuss books on her bookshelf?"),
    ("请帮我查一下：Caroline 研究了什么？", "Caroline 研究了什么？"),
    ("帮我 check 一下 what did Caroline research", "what did Caroline research"),
    ("Book the same hotel as last time", "Book the same hotel as last time"),
])
def test_the_need_is_what_asks_without_frames_and_small_talk(message: str, need: str) -> None:
    assert need_text(message) == need


@pytest.mark.parametrize("message", ["Thanks, that helps!", "How are you?", "你好！谢谢！",
                                     "Hey! Hope your day is going well.", "ok", "   ", ""])
def test_small_talk_alone_needs_nothing(message: str) -> None:
    assert need_of(message)[:2] == ("", False)


def test_what_asks_with_one_word_leans_on_the_sentence_before_it() -> None:
    need = need_of("I have a question about Caroline's support group. What did she research?")
    assert "support group" in need.text and "research" in need.text and need.asks


def test_a_statement_is_its_own_need_and_does_not_ask() -> None:
    need = need_of("Send it to the address I gave you")
    assert need.text == "Send it to the address I gave you" and not need.asks


def test_a_question_in_a_pasted_log_is_the_need() -> None:
    log = "\n".join(f"2024-05-0{i % 9 + 1} scan SHP-{40000 + i} Lyon customs hold"
                    for i in range(400))
    need = need_of(f"Here is the scan log:\n{log}\nWhy is SHP-40233 still on hold?")
    assert need.text == "Why is SHP-40233 still on hold?" and need.asks


def test_a_long_message_with_nothing_that_asks_keeps_its_ends_bounded() -> None:
    text = "word " * 2_000_000  # 10 MB: only its start and end are read
    need = need_text(text + "shipment SHP-40233 to Lyon")
    assert need.endswith("SHP-40233 to Lyon") and len(need) < 5000


def test_the_sentences_around_what_asks_stay_within_max_words() -> None:
    context = " ".join(f"Shipment {i} left depot {i}." for i in range(100))
    need = need_text(f"{context} What about her?")
    assert len([w for w in need.split() if w[0].isalpha()]) <= 3 * MAX_WORDS
    assert need.endswith("What about her?")


def test_a_follow_up_over_two_turns_takes_its_subject_from_the_turn_before() -> None:
    follow_up = need_of("how did they feel about her family after the accident?")
    assert follow_up.leans
    need = with_before(follow_up, "I have a question about Melanie.")
    assert need.text.startswith("Melanie") and need.asks
    named = need_of("What did Caroline research?")
    assert not named.leans and with_before(named, "Tell me about Melanie.") == named
