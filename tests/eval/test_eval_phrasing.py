"""The phrasing set: deterministic, the question's words kept, the halves of templates apart."""

from __future__ import annotations

import re

import pytest

from loomctx.errors import ConfigError
from loomctx.eval import phrasing as phrasing_module
from loomctx.eval.phrasing import (
    PHRASINGS,
    TEMPLATE_SPLITS,
    phrase,
    set_templates,
    strip_marks,
    templates,
)

QUESTIONS = [
    "When did Caroline go to the LGBTQ support group?",
    "What is Caroline's identity?",
    "Would Caroline likely have Dr. Seuss books on her bookshelf?",
    "How does Gina stay confident in her business?",
    "What are the new shoes that Melanie got used for?",
    "How much cashback did I earn at SaveMart last Thursday?",
    "What is the total amount I spent on the designer handbag and high-end skincare products?",
    "Which book did I finish a week ago?",
    "How many years older is my grandma than me?",
    "I remember you provided a list of 100 prompt parameters. Can you remind me what was the "
    "27th parameter on that list?",
    "Can you recommend some interesting cultural events happening around me this weekend?",
    "The Vermont Catamounts men's soccer team competes in a conference that was formerly known "
    "as what from 1988 to 1996?",
    "What is the name for the adventure in \"Tunnels and Trolls\", a game designed by Ken St. "
    "Andre?",
    "Alexander Kerensky was defeated by the Bolsheviks in a civil war that ended when ?",
    "小安的小提琴老师是谁？",
    "老白领养的乌龟叫什么名字？",
    "Bob 为了 book fair 飞去了哪个 city？",
    "Ann 的 violin teacher 是谁？",
]
_STOP = {"can", "could", "would", "will", "you", "please", "is", "are", "was", "were", "do",
         "does", "did", "has", "have", "s", "the", "a", "an", "at", "in", "from", "near"}


def _content(text: str) -> set[str]:
    """Latin words (lower case, but function words) and single CJK characters."""
    words = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", text)} - _STOP
    return words | set(re.findall(r"[\u3400-\u9fff]", text))


def _every(phrasing: str) -> list[tuple[str, int]]:
    return [(split, index) for split in TEMPLATE_SPLITS
            for index, entry in enumerate(templates(phrasing, "dev") + templates(phrasing,
                                                                                "heldout"))
            if entry in templates(phrasing, split)]


def _indices(phrasing: str, split: str) -> list[int]:
    from loomctx.eval import phrasing as module

    table = module._TABLES[phrasing]
    return [i for i, entry in enumerate(table) if entry in templates(phrasing, split)]


def test_the_same_question_and_key_give_the_same_text() -> None:
    for phrasing in PHRASINGS:
        for n, q in enumerate(QUESTIONS):
            first = phrase(q, phrasing, key=f"q{n}", split="heldout")
            assert first == phrase(q, phrasing, key=f"q{n}", split="heldout")
    chosen = {phrase(QUESTIONS[0], "chatter", key=f"k{n}").template for n in range(40)}
    assert len(chosen) > 3  # the key moves the draw: many templates are used, not one
    assert chosen <= {f"chatter/{i}" for i in _indices("chatter", "dev")}


@pytest.mark.parametrize("phrasing", PHRASINGS)
def test_every_template_keeps_the_question_words(phrasing: str) -> None:
    for split in TEMPLATE_SPLITS:
        for index in _indices(phrasing, split):
            for n, q in enumerate(QUESTIONS):
                said = phrase(q, phrasing, key=str(n), split=split, template=index)
                text = " ".join([*said.context, said.message])
                missing = _content(q) - _content(text)
                assert not missing, (phrasing, index, q, text, missing)
                assert said.template == f"{phrasing}/{index}"


@pytest.mark.parametrize("phrasing", ["request", "no_mark"])
def test_requests_and_unmarked_questions_carry_no_question_mark(phrasing: str) -> None:
    for split in TEMPLATE_SPLITS:
        for index in _indices(phrasing, split):
            for n, q in enumerate(QUESTIONS):
                said = phrase(q, phrasing, key=str(n), split=split, template=index)
                assert "?" not in said.message and "？" not in said.message, said.message
                assert said.message.strip()


def test_a_request_reads_as_one() -> None:
    said = phrase("What is Caroline's identity?", "request", key="x", template=0)
    assert said.message == "Tell me what Caroline's identity is."
    said = phrase(QUESTIONS[9], "request", key="x", split="heldout", template=1)
    assert said.message.endswith("Remind me what was the 27th parameter on that list.")
    said = phrase("Would Caroline move back?", "request", key="x", template=2)
    assert said.message == "I need to know whether Caroline would move back."


def test_a_follow_up_leaves_its_subject_to_the_first_turn() -> None:
    for split in TEMPLATE_SPLITS:
        for index in _indices("follow_up", split):
            for n, q in enumerate(QUESTIONS):
                said = phrase(q, "follow_up", key=str(n), split=split, template=index)
                assert said.subject and len(said.context) == 1
                assert said.subject in said.context[0]
                assert said.subject not in said.message, (q, said)
    said = phrase("When did Caroline go to the LGBTQ support group?", "follow_up", key="x",
                  template=0)
    assert said.context == ("I have a question about Caroline.",)
    assert said.message == "when did they go to the LGBTQ support group?"
    said = phrase("How does Gina stay confident?", "follow_up", key="x", split="heldout",
                  template=3)
    assert said.context == ("Going back to Gina.",)
    assert said.message == "and how do they stay confident?"
    for question, subject, rest in [
            ("What motivated Tim to keep pushing himself?", "Tim", "motivated them to"),
            ("How many points John scored in a game?", "John", "points they scored"),
            ("How many MCU films did I watch?", "MCU", "how many films did I watch?"),
            ("How many Prius has Evan owned?", "Evan", "how many Prius have they owned?"),
            ("What is Gina's favorite dance?", "Gina", "what is their favorite dance?")]:
        said = phrase(question, "follow_up", key="x", template=0)
        assert said.subject == subject and rest in said.message, said
    said = phrase("小安的小提琴老师是谁？", "follow_up", key="x", template=2)
    assert said.subject == "小安" and said.message == "他的小提琴老师是谁？"


def test_template_halves_are_disjoint_and_large() -> None:
    for phrasing in PHRASINGS:
        dev, held = templates(phrasing, "dev"), templates(phrasing, "heldout")
        if phrasing == "dataset":
            assert dev == held == ("{q}",)
            continue
        assert not set(dev) & set(held), phrasing
        assert len(dev) == len(held) >= (2 if phrasing == "no_mark" else 8), phrasing
        for n in range(30):
            index = int(phrase(QUESTIONS[n % len(QUESTIONS)], phrasing, key=str(n),
                               split="heldout").template.split("/")[1])
            assert index in _indices(phrasing, "heldout")


def test_bad_input_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'shouting'"):
        phrase("What?", "shouting", key="x")
    with pytest.raises(ConfigError, match="'test'"):
        templates("request", "test")
    with pytest.raises(ConfigError, match="empty"):
        phrase("  ", "request", key="x")
    with pytest.raises(ConfigError, match="template 1 is not one of the dev templates"):
        phrase("What?", "chatter", key="x", template=1)


def test_strip_marks_removes_ascii_and_full_width_marks() -> None:
    assert strip_marks("ended when ?") == "ended when"
    assert strip_marks("是谁？") == "是谁"
    assert strip_marks("What?? Really?") == "What Really"


def test_a_callers_templates_replace_a_phrasings_in_both_halves(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(phrasing_module, "_TABLES", dict(phrasing_module._TABLES))
    set_templates("chatter", ["Hmm, {low}?", "Quick one — {q}"])
    assert templates("chatter", "dev") == templates("chatter", "heldout") == (
        "Hmm, {low}?", "Quick one — {q}")
    said = {phrase("Where did Caroline move from?", "chatter", key=str(k)).message
            for k in range(20)}
    assert said == {"Hmm, where did Caroline move from?",
                    "Quick one — Where did Caroline move from?"}


def test_a_callers_request_leads_and_follow_up_turns_are_said(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(phrasing_module, "_TABLES", dict(phrasing_module._TABLES))
    set_templates("request", ["Jog my memory on"])
    set_templates("follow_up", [["Hey, about {subject}.", "so {rest}"]])
    assert phrase("Where did Caroline move from?", "request", key="1").message == (
        "Jog my memory on where did Caroline move from.")
    said = phrase("Where did Caroline move from?", "follow_up", key="1")
    assert (said.context, said.message) == (("Hey, about Caroline.",),
                                            "so where did they move from?")


@pytest.mark.parametrize(("name", "given", "words"), [
    ("dataset", ["{q}"], "takes no templates"),
    ("request", ["Tell me {q}"], "must be a lead"),
    ("request", [" "], "must be a lead"),
    ("follow_up", ["{subject}"], "not a pair"),
    ("follow_up", [["About {subject}.", "{q}"]], "does not format"),
    ("follow_up", [["About it.", "{rest}"]], "holds none of"),
    ("chatter", [], "non-empty list"),
    ("chatter", "Hmm, {q}", "non-empty list"),
    ("chatter", [3], "is not a string"),
    ("chatter", ["Hmm, {question}"], "does not format"),
    ("chatter", ["Hmm, {q"], "does not format"),
    ("chatter", ["Hello there."], "holds none of"),
])
def test_templates_that_cannot_ask_are_refused(monkeypatch: pytest.MonkeyPatch, name: str,
                                               given: object, words: str) -> None:
    monkeypatch.setattr(phrasing_module, "_TABLES", dict(phrasing_module._TABLES))
    before = templates("chatter", "dev")
    with pytest.raises(ConfigError, match=words):
        set_templates(name, given)  # type: ignore[arg-type]
    assert templates("chatter", "dev") == before  # nothing half set
