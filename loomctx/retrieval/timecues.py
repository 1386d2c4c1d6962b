"""Date cues in a question ("in June", "on 13 October, 2023", "last week", "上个月", "two weeks
ago") → a time span.

Messages carry timestamps; a question that names when something happened should prefer what was
said then. :func:`time_window` reads the span a question names, relative to the build's ``now``
(a month without a year is the latest such month not after ``now``). The span is widened by
``slack`` after its end, because an event is often told a little after it happened ("last week
I went camping"). No cue, no span: the question then recalls as before.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, timezone

DAY = 86_400.0
SLACK_DAYS = 14
"""Days after a named span that still count (events are told after they happen)."""

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS.pop("may", None)  # "may" is a verb far more often than a month in lowercase text
_MONTH_RE = "|".join(sorted((re.escape(m) for m in _MONTHS), key=len, reverse=True))
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(May|{_MONTH_RE})\.?,?\s+(\d{{4}})\b",
                        re.IGNORECASE)
_MONTH_FIRST = re.compile(
    rf"\b(May|{_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b(May|{_MONTH_RE})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_ONLY = re.compile(rf"\b(?:in|during|of|since|early|late|mid)\s+(May|{_MONTH_RE})\b",
                         re.IGNORECASE)
_ZH_DATE = re.compile(r"(?:(\d{4})年)?(\d{1,2})月(?:(\d{1,2})[日号])?")
_RELATIVE: tuple[tuple[re.Pattern[str], float, float], ...] = (
    (re.compile(r"\byesterday\b|昨天", re.IGNORECASE), 2, 0),
    (re.compile(r"\blast week\b|\bthe week before\b|上周|上个星期", re.IGNORECASE), 14, 0),
    (re.compile(r"\blast weekend\b|上个周末", re.IGNORECASE), 9, 0),
    (re.compile(r"\blast month\b|上个月", re.IGNORECASE), 62, 20),
)

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 30.44}
# "two weeks ago", "3 days ago", "a month ago". Years are left out: what a history says happened
# years ago it says in messages of any date, so a span of message dates would miss it.
_AGO = re.compile(rf"\b({'|'.join(_NUMBERS)}|\d{{1,3}})\s+(day|week|month)s?\s+ago\b",
                  re.IGNORECASE)


def _month_name(text: str) -> int:
    return _MONTHS.get(text.lower().rstrip("."), 5)  # only "may" is missing from the table


def _span_month(year: int, month: int) -> tuple[float, float]:
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    days = calendar.monthrange(year, month)[1]
    return start.timestamp(), (start + timedelta(days=days)).timestamp()


def _latest(month: int, now: float) -> int:
    """The year of the latest ``month`` that started no later than ``now``."""
    today = datetime.fromtimestamp(now, tz=timezone.utc)
    return today.year if month <= today.month else today.year - 1


def _named_span(question: str, now: float) -> tuple[float, float] | None:
    for pattern, day_at in ((_DAY_FIRST, 1), (_MONTH_FIRST, 2)):
        m = pattern.search(question)
        if m:
            month = _month_name(m.group(2 if day_at == 1 else 1))
            day, year = int(m.group(day_at)), int(m.group(3))
            try:
                start = datetime(year, month, day, tzinfo=timezone.utc).timestamp()
            except ValueError:
                return None
            return start, start + DAY
    m = _MONTH_YEAR.search(question)
    if m:
        return _span_month(int(m.group(2)), _month_name(m.group(1)))
    m = _MONTH_ONLY.search(question)
    if m:
        month = _month_name(m.group(1))
        return _span_month(_latest(month, now), month)
    m = _ZH_DATE.search(question)
    if m and 1 <= int(m.group(2)) <= 12:
        month = int(m.group(2))
        year = int(m.group(1)) if m.group(1) else _latest(month, now)
        if m.group(3):
            try:
                start = datetime(year, month, int(m.group(3)), tzinfo=timezone.utc).timestamp()
            except ValueError:
                return None
            return start, start + DAY
        return _span_month(year, month)
    return None


def time_window(question: str, now: float, *, slack_days: float = SLACK_DAYS,
                ) -> tuple[float, float] | None:
    """``(start, end)`` epoch seconds of the span ``question`` names, or None.

    A named date or month is widened by ``slack_days`` after its end; a relative cue ("last
    week") is counted back from ``now``.
    """
    span = _named_span(question, now)
    if span is not None:
        return span[0], span[1] + slack_days * DAY
    m = _AGO.search(question)
    if m:  # one unit either side of the point named: "two weeks ago" is 7 to 21 days back
        count = _NUMBERS.get(m.group(1).lower()) or int(m.group(1))
        unit = _UNIT_DAYS[m.group(2).lower()]
        return now - (count + 1) * unit * DAY, now - (count - 1) * unit * DAY
    for pattern, back, until in _RELATIVE:
        if pattern.search(question):
            return now - back * DAY, now - until * DAY
    return None


__all__ = ["SLACK_DAYS", "time_window"]
