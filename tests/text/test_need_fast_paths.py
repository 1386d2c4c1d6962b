"""The need rules' fast paths read a text as their patterns do.

Reading a message's need runs before every turn build, so its patterns skip what cannot match:
a pattern tried only when the text holds a word every match needs, a split without the
full-width marks an ASCII text cannot hold, a search of only a text's end for a pattern
anchored there. Each must decide exactly what the plain pattern decides; these tests compare
them on random texts made of the words, marks and look-alike letters ("ſ", "K", "İ") the
patterns turn on, so a branch added to a pattern without its word fails here.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.text import need

_TOKENS = (  # noqa: SIM905 (a word list reads best as text)
    "did Do is ARE was can will am tell Remind know find look check recall wonder ask please "
    "suggest List give show need want would like 'd i we I forgot forget can't remember cannot "
    "don't lost the our what When where who whom whose which why How whats hows if whether to "
    "in on of with many much it its those these that one ones there Dr. mr. Mrs. e.g. etc. A. "
    "x1 SHP-40233 previous conversation about told mentioned 上次 之前 thanks pls thank you thx "
    "cheers for me by any chance real quick 谢谢 吧 呢 好吗 什么 哪 , ; : ， ： ； ? ？ . ! 。 "
    "！ - – — ſ K İ ı ﬀ hi so um anyway according Lyon, year wanted follow up chat Quick "
    "about regarding my this day days week Weekend morning afternoon Evening nights Sunday "
    "today said gave time game shared sent wrote other earlier 27th A1001 4-B B9").split()
_TALK = re.compile(r"conversation|chat|discussion|session|talk", re.IGNORECASE)
_OWN_TIME = re.compile(r"\b(?:i|we|me|us|my|our)\b.*\b" + need._TIME + r"|\b" + need._TIME
                       + r".*\b(?:i|we|me|us|my|our)\b", re.IGNORECASE)
"""The asker's own time as one pattern: what :func:`need._own_time` reads in linear time."""
_texts = st.lists(st.tuples(st.sampled_from(_TOKENS), st.sampled_from([" ", "", "  ", "\n"])),
                  max_size=14).map(lambda parts: "".join(t + s for t, s in parts))


def _plain_asks(text: str) -> bool:
    return bool(need._ASKS_START.match(text) or need._ASKS.search(text)
                or need._ASKS_WANT.search(text) or need._ASKS_WH.search(text))


def _agree(text: str) -> None:
    assert need._asks(text) == _plain_asks(text)
    assert need._points(text) == bool(need._POINTING.search(text))
    cut = need._FRAME_ZH.sub("", need._FRAME.sub("", text.strip(), count=1), count=1)
    for _ in range(need.LEADS):
        cut = need._wh_framed(cut) or cut
    assert need._unframed(text)[0] == need._TAIL_ZH.sub("", need._TAIL.sub("", cut)).strip()
    assert need._abbreviated(text) == bool(need._ABBREVIATION.search(text))
    unled = need._unled(text, need._POINTER.match)
    talks = need._may_hold(text, need._TALK_WORDS)
    assert unled == text or talks  # the pointer's words gate the reading
    assert talks == bool(_TALK.search(text)) if text.isascii() else talks
    assert need._POINTER.sub("", text) == text or talks
    assert need._names(text) == bool(need._HAN.search(text) or need._capitals(text)
                                     or need._CODE.search(text) or need._PAST.search(text))
    found = need._TIME_TOPIC.search(text)
    assert need._time_topic(text) == (found.group(1) + "." if found else "")
    assert need._own_time(text) == bool(_OWN_TIME.search(text))
    if text.isascii():
        assert need._SENTENCES_ASCII.split(text) == need._SENTENCES.split(text)


@settings(max_examples=3000, deadline=None)
@given(_texts)
def test_each_fast_path_decides_what_its_pattern_decides(text: str) -> None:
    _agree(text)


def test_every_pair_of_words_is_read_alike() -> None:
    """Every two of the words, side by side and after a lead: a word a pattern needs but its
    fast path does not know shows up here whatever the random texts above drew."""
    for a in _TOKENS:
        for b in _TOKENS:
            for text in (f"{a} {b}", f"{a} {b} the year", f"So, {a} {b} the year",
                         f"I asked about {a} {b}", f"I\n{a} {b}", f"I {a}\n{b}",
                         f"{a}\n{b} we"):
                _agree(text)


def test_the_split_patterns_hold_every_question_pattern_once() -> None:
    """The question patterns are one rule split for speed: a message asks when any of them
    matches (at its start for :data:`need._ASKS_START`)."""
    for text, asks in [("Did she go?", True), ("did she go", True), ("tell me her job", True),
                       ("so, is it open", True), ("I need the address", True),
                       ("i forgot the wifi password", True), ("she moved in what year", True),
                       ("I forget when she went", True), ("她去了哪里", True),
                       ("a library for when I have kids", False), ("I forgot my umbrella", False),
                       ("I'm not sure if the store opened", True),
                       ("here is what my app exported", False), ("Nice weather today.", False)]:
        assert need._asks(text) is asks, text
        assert _plain_asks(text) is asks, text
    assert not re.search(r"(?<!\\)\^", need._ASKS.pattern)  # its start is _ASKS_START's
