"""Earlier questions are not evidence: in view, they do not make a turn's need look met.

A user who asks about the same thing several times has those questions in the window; they
match the next question best, but they hold no answer, so the share of retrieval's best
candidates out of view is read without them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from loomctx import BuildOptions, Session
from loomctx.text.need import is_bare_question

BUDGET = 4000


LEADS = ("", "so ", "and ", "ok, ", "again, ", "sorry, ", "now, ", "right, ", "hm, ", "well, ")
SMALL_TALK = ("Sorry for the slow reply, it has been a hectic day. ", "Cool, thanks. ",
              "I was just thinking about last week. ", "That makes sense, thanks for that. ",
              "Hi again! ", "Quick one. ", "Great, I will try that tonight. ", "Hmm. ",
              "Alright, switching topics for a second. ", "Back again. ")


def _session(depot_past: Callable[[int], Session], leads: tuple[str, ...]) -> Session:
    s = depot_past(80)  # the distant past: what was said about the Hamburg depot
    for i in range(40):  # the recent window: other talk, and questions about the depot
        s.add_message_sync("user", f"Draft line {i} of the Lyon newsletter about spring colours.")
        s.add_message_sync("assistant", f"Line {i}: spring catalogue colours are in.")
    for lead in leads:  # asked before, in the window, never answered
        s.add_message_sync("user", f"{lead}which Hamburg depot pickups moved, and who is the "
                                   "contact?")
    s.add_message_sync("user", "which Hamburg depot pickups moved, and who is the contact?")
    return s


@pytest.mark.parametrize("leads", [LEADS, SMALL_TALK], ids=["words", "small-talk"])
def test_earlier_questions_in_view_do_not_count_as_evidence(
        depot_past: Callable[[int], Session], leads: tuple[str, ...]) -> None:
    r = _session(depot_past, leads).build_sync(max_tokens=BUDGET)
    assert r.tokens <= BUDGET
    evidence = sum(it.tokens or 0 for it in r.report.items
                   if it.included and it.kind == "evidence")
    assert evidence > 2 * BuildOptions().volatile_share * BUDGET


def test_a_bare_question_is_one_sentence_that_asks() -> None:
    assert is_bare_question("in which month did they score a career high?")
    assert is_bare_question("Tell me what we decided about Hamburg.")
    assert not is_bare_question("I moved to Berlin in May.")
    assert not is_bare_question("I'm planning a trip to Jordan. Can you tell me about Petra?")
    assert not is_bare_question("what happened? " * 200)  # long: read as more than a question


def test_small_talk_beside_a_question_holds_no_answer() -> None:
    assert is_bare_question("Sorry for the slow reply, it has been a hectic day. What martial "
                            "arts has John done?")
    assert is_bare_question("Great, I will try that tonight. One more thing. When did John join "
                            "the online support group?")
    assert not is_bare_question("Hi Maria, thanks for asking. I've always been passionate about "
                                "veterans, so I worked on a project to support them.")
    assert is_bare_question("Sorry 打扰一下，What martial arts has John done?")
    assert is_bare_question("我有个 question：What martial arts has John done?")
    assert not is_bare_question("My flight got moved to 7am. What time should I leave?")
    assert not is_bare_question("我昨天去了北京。你知道那里有什么好吃的吗？")  # a trip to Beijing
    assert not is_bare_question("Sorry for the slow reply.")  # it asks nothing
