"""Date cues: the span a question names, relative to the build's now."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from loomctx.retrieval.timecues import DAY, SLACK_DAYS, time_window


def _t(*ymd: int) -> float:
    return datetime(*ymd, tzinfo=timezone.utc).timestamp()


NOW = _t(2023, 8, 20)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("When did Mel go camping in June?", _t(2023, 6, 1), _t(2023, 7, 1)),
        ("What happened in November?", _t(2022, 11, 1), _t(2022, 12, 1)),  # the latest November
        ("What did Maria do in December 2022?", _t(2022, 12, 1), _t(2023, 1, 1)),
        ("What did Gina find on 1 February, 2023?", _t(2023, 2, 1), _t(2023, 2, 2)),
        ("Which painting on October 13, 2023?", _t(2023, 10, 13), _t(2023, 10, 14)),
        ("Who came to dinner on May 3, 2023?", _t(2023, 5, 3), _t(2023, 5, 4)),
        ("小安5月3日做了什么？", _t(2023, 5, 3), _t(2023, 5, 4)),
        ("老白2022年12月在哪里？", _t(2022, 12, 1), _t(2023, 1, 1)),
    ],
)
def test_named_spans_widen_after_their_end(question: str, start: float, end: float) -> None:
    assert time_window(question, NOW) == (start, end + SLACK_DAYS * DAY)


def test_relative_cues_count_back_from_now() -> None:
    start, end = time_window("What did she cook last week?", NOW) or (0.0, 0.0)
    assert start == NOW - 14 * DAY and end == NOW
    assert time_window("他上个月去了哪里？", NOW) is not None


@pytest.mark.parametrize(
    ("question", "days_back"),
    [("What gardening did I do two weeks ago?", (21, 7)), ("I met her 3 days ago.", (4, 2)),
     ("Which book did I finish a week ago?", (14, 0)), ("Where was I a month ago?", (60.88, 0))],
)
def test_a_count_of_units_ago_spans_one_unit_either_side(
        question: str, days_back: tuple[float, float]) -> None:
    start, end = time_window(question, NOW) or (0.0, 0.0)
    assert (round((NOW - start) / DAY, 2), round((NOW - end) / DAY, 2)) == days_back


@pytest.mark.parametrize(
    "question",
    ["How many days ago did I go rafting?",  # asks for the count: names no time
     "Where did Caroline move from 4 years ago?",  # years are told in messages of any date
     "What may happen next?", "When did she start running?", "Which book did he like?",
     "What happened on February 30, 2023?"],
)
def test_no_cue_no_span(question: str) -> None:
    assert time_window(question, NOW) is None
