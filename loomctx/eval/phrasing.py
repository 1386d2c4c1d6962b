"""The ways people say a question: a deterministic phrasing set for recall benchmarks.

Data sets word every question as a question, with its question mark; people talking to an
agent make requests, chat first, bury the question in a longer message, split it over two
turns, or write in Chinese or a mix. This turns one question into each of those phrasings with
templates and a few word rules (no model), so recall can be measured on the way people talk.

- The template is chosen per question and phrasing by a PRNG seeded with the question's key,
  so every run and every reader gets the same text.
- The question's own words are kept (the rules move a verb or replace the follow-up's subject,
  which the first turn names): recall differences come from the wording around them.
- The templates of each phrasing are split in two disjoint halves (even entries ``dev``, odd
  ``heldout``): tune on one, check on the other that a gain is not the wording it was tuned on.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from loomctx.errors import ConfigError
from loomctx.eval import phrasing_templates as t

PHRASINGS = ("dataset", "request", "chatter", "embedded", "follow_up", "no_mark", "zh",
             "code_switched")
"""Every phrasing; ``dataset`` is the question as worded (the reference)."""
TEMPLATE_SPLITS = ("dev", "heldout")
"""The two halves of each phrasing's templates."""

_TABLES: dict[str, tuple[object, ...]] = {
    "dataset": ("{q}",), "request": t.REQUEST_LEADS, "chatter": t.CHATTER,
    "embedded": t.EMBEDDED, "follow_up": t.FOLLOW_UPS, "no_mark": t.NO_MARK, "zh": t.ZH,
    "code_switched": t.CODE_SWITCHED,
}
_MARKS = re.compile(r"\s*[?？]+")
_WH = {"what", "when", "where", "who", "whom", "whose", "which", "why", "how"}
_AUX = {"is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "can", "could",
        "would", "will", "should", "may", "might", "shall"}
_LEADING = _WH | _AUX | {"in", "for", "according", "based", "after", "around", "considering",
                         "aside", "and", "so", "if"}
_COPULA = {"is", "are", "was", "were"}
_NP_START = {"the", "a", "an", "my", "your", "his", "her", "their", "our", "this", "that",
             "these", "those"}
_SENTENCE = re.compile(r"(?<=[a-z)\"'][.!?])(?<!\b[DMS][rst]\.)\s+(?=[A-Z])")
_POLITE = re.compile(r"^(?:can|could|would|will) you (?:please )?(.+)$", re.IGNORECASE | re.S)
_NAME = re.compile(r"\b[A-Z][\w\-]*(?:(?:(?<=Dr|Mr|Ms|St)\.|(?<=Mrs)\.)?\s+[A-Z][\w\-]*)*")
_QUOTE = re.compile(r"[\"“”]|(?<!\w)'|'(?!\w)")
_CJK = re.compile(r"[\u3400-\u9fff]")
_NOT_NAMES = _LEADING | {"i", "i'm", "i've", "i'd", "monday", "tuesday", "wednesday",
                         "thursday", "friday", "saturday", "sunday", "january", "february",
                         "march", "april", "june", "july", "august", "september", "october",
                         "november", "december", "ok", "hi", "hey", "the", "this", "that", "these",
                         "those", "a", "an", "my", "our"}
_PLACE = {"at", "in", "from", "near"}
_MODIFIER = {"many", "much", "the", "a", "an", "my", "your", "our", "some", "any", "which",
             "what", "whose", "his", "her", "their"}
_FUNCTION = re.compile(r" (?:that|who|which|whom|whose|and|or|in|on|at|to|of|for|from|with|by|"
                       r"is|are|was|were|has|have|had|did|does|do)\b")
_VERB = re.compile(r" (?:[a-z]+ed|showed|made|got|took|gave|saw|had|said|went|bought|found|felt|"
                   r"told|wrote|read|ran|won|met|left|came|kept|thought|built|taught|brought|"
                   r"began|chose|drew|sang|spent|sent|shared|tried)\b")
_AGREE = re.compile(r"\b(?:(does|is|was|has) they|they (does|is|was|has))\b", re.IGNORECASE)
_AGREED = {"does": "do", "is": "are", "was": "were", "has": "have"}


def _agree(match: re.Match[str]) -> str:
    if match.group(1):
        return _AGREED[match.group(1).lower()] + " they"
    return "they " + _AGREED[match.group(2).lower()]


@dataclass(frozen=True, slots=True)
class Phrased:
    """One question in one phrasing: the user turns that carry it."""

    phrasing: str
    """One of :data:`PHRASINGS`."""
    template: str
    """``<phrasing>/<index>``: which template of :func:`templates` was used."""
    message: str
    """The user message asked (the turn built after, or the query of a question build)."""
    context: tuple[str, ...] = ()
    """User turns said before ``message`` (a follow-up's first turn), oldest first."""
    subject: str | None = None
    """Follow-ups: the words of the question the first turn names and ``message`` leaves out."""


def templates(phrasing: str, split: str = "dev") -> tuple[object, ...]:
    """The templates of ``phrasing`` in ``split`` (even entries dev, odd heldout); the
    ``dataset`` wording has one template, in both halves."""
    if phrasing not in _TABLES:
        raise ConfigError(f"phrasing {phrasing!r} is not one of {', '.join(PHRASINGS)}")
    if split not in TEMPLATE_SPLITS:
        raise ConfigError(f"template split {split!r} is not one of {', '.join(TEMPLATE_SPLITS)}")
    table = _TABLES[phrasing]
    return table if len(table) == 1 else table[TEMPLATE_SPLITS.index(split)::2]


FILLED = ("chatter", "embedded", "no_mark", "zh", "code_switched")
"""The phrasings whose templates fill ``{q}``, ``{bare}`` and ``{low}`` (:func:`set_templates`)."""


def set_templates(phrasing: str, templates: Sequence[object]) -> None:
    """Say ``phrasing`` with ``templates`` instead of the set's own, in both halves: a
    caller's own wordings, measured as the set's are. A :data:`FILLED` phrasing's template
    fills ``{q}`` (the question), ``{bare}`` (without its question mark) or ``{low}`` (that,
    its first letter in lower case); a ``request`` template is a lead ("Jog my memory on"),
    said before the question turned into a clause; a ``follow_up`` template is a pair of turns,
    the first filling ``{subject}`` and the second ``{rest}``."""
    if phrasing not in (*FILLED, "request", "follow_up"):
        raise ConfigError(f"phrasing {phrasing!r} takes no templates of a caller's: use one "
                          f"of {', '.join((*FILLED, 'request', 'follow_up'))}")
    if isinstance(templates, str) or not templates:
        raise ConfigError(f"the templates of {phrasing!r} must be a non-empty list")
    table = tuple(_checked(phrasing, template) for template in templates)
    _TABLES[phrasing] = tuple(tpl for tpl in table for _ in TEMPLATE_SPLITS)


def _checked(phrasing: str, template: object) -> object:
    """``template`` as :func:`set_templates` keeps it, or a :class:`ConfigError` saying why
    it cannot phrase a question."""
    if phrasing == "follow_up":
        if not (isinstance(template, (list, tuple)) and len(template) == 2
                and all(isinstance(turn, str) for turn in template)):
            raise ConfigError(f"template {template!r} of 'follow_up' is not a pair of strings "
                              "(the turn naming {subject}, then the one with {rest})")
        first, second = template
        _fills(phrasing, first, "subject")
        _fills(phrasing, second, "rest")
        return (first, second)
    if not isinstance(template, str):
        raise ConfigError(f"template {template!r} of {phrasing!r} is not a string")
    if phrasing == "request":
        if not template.strip() or "{" in template or "}" in template:
            raise ConfigError(f"template {template!r} of 'request' must be a lead of words "
                              "(\"Jog my memory on\"): the question follows it as a clause")
        return template.strip()
    _fills(phrasing, template, "q", "bare", "low")
    return template


def _fills(phrasing: str, template: str, *names: str) -> None:
    """A :class:`ConfigError` unless ``template`` formats with only ``names`` and holds one."""
    marks = {name: "\0" for name in names}
    try:
        filled = template.format(**marks)
    except (KeyError, IndexError, ValueError) as exc:
        allowed = ", ".join("{" + name + "}" for name in names)
        raise ConfigError(f"template {template!r} of {phrasing!r} does not format ({exc}): "
                          f"use only {allowed}, and {{{{ }}}} for braces") from exc
    if "\0" not in filled:
        raise ConfigError(f"template {template!r} of {phrasing!r} holds none of "
                          f"{', '.join('{' + name + '}' for name in names)}: it would not ask "
                          "the question")


def phrase(question: str, phrasing: str, *, key: str, split: str = "dev", seed: int = 0,
           template: int | None = None) -> Phrased:
    """``question`` said as ``phrasing``, with a template of ``split`` chosen by a PRNG seeded
    with ``seed``, ``phrasing`` and ``key`` (the question's id: the same key, the same text).
    ``template`` picks one by its index in the whole table instead (it must be in ``split``)."""
    chosen = templates(phrasing, split)
    if not question.strip():
        raise ConfigError(f"question {key!r} is empty; every question needs its words")
    if template is None:
        pick = random.Random(f"{seed}|{phrasing}|{key}").randrange(len(chosen))
    else:
        table = _TABLES[phrasing]
        if not 0 <= template < len(table) or table[template] not in chosen:
            raise ConfigError(f"template {template!r} is not one of the {split} templates of "
                              f"{phrasing!r}; see templates({phrasing!r}, {split!r})")
        pick = chosen.index(table[template])
    index = _TABLES[phrasing].index(chosen[pick])
    name = f"{phrasing}/{index}"
    q = question.strip()
    bare = strip_marks(q)
    if phrasing == "request":
        return Phrased(phrasing, name, _request(str(chosen[pick]), q))
    if phrasing == "follow_up":
        first, second = cast("tuple[str, str]", _TABLES[phrasing][index])
        subject, rest = _follow_up(q)
        return Phrased(phrasing, name, second.format(rest=rest), (first.format(subject=subject),),
                       subject)
    return Phrased(phrasing, name, str(chosen[pick]).format(q=q, bare=bare,
                                                            low=_lower_first(bare)))


def strip_marks(text: str) -> str:
    """``text`` without question marks (ASCII and full width) and the spaces before them."""
    return _MARKS.sub("", text).strip()


def _lower_first(text: str) -> str:
    word = text.split(maxsplit=1)[0] if text.split() else ""
    return text[0].lower() + text[1:] if word.lower() in _LEADING else text


def _clause(sentence: str) -> tuple[str, bool]:
    """The question as the object of a request lead, and whether it reads as a clause (else
    the lead takes it after a colon). ``What is X's Y`` becomes ``what X's Y is``; other wh-
    and yes/no questions keep their order (``tell me when did she go``), as people type."""
    words = sentence.split()
    first = words[0].lower()
    if first in _WH and len(words) > 2:
        wh = 2 if first == "how" and words[1].lower() not in _COPULA else 1
        if len(words) > wh + 1 and words[wh].lower() in _COPULA:
            rest = words[wh + 1:]
            head = rest[0]
            np_like = (head.lower() in _NP_START or head[:1].isupper() or head.endswith("'s"))
            if np_like and len(rest) <= 10 and not any(w.endswith("ing") for w in rest):
                return " ".join([*(w.lower() if i == 0 else w for i, w in
                                   enumerate(words[:wh])), *rest, words[wh].lower()]), True
        return _lower_first(sentence), True
    if first in _AUX and first not in {"do", "does", "did"} and len(words) > 2:
        return " ".join(["whether", words[1], first, *words[2:]]), True
    return _lower_first(sentence), False


def _request(lead: str, q: str) -> str:
    """``<lead> <clause>.``; a polite question (``Can you remind me ...?``) is already a
    request and becomes ``Remind me ....``; sentences before the question stay before it."""
    sentences = _SENTENCE.split(q)
    head = [s if s.endswith((".", "!")) else strip_marks(s) + "." for s in sentences[:-1]]
    last = strip_marks(sentences[-1]).rstrip(" .")
    polite = _POLITE.match(last)
    if polite:
        body = polite.group(1)
        text = body[0].upper() + body[1:] + "."
    else:
        clause, fits = _clause(last)
        text = f"{lead} {clause}." if fits else f"{lead}: {clause}."
    return " ".join([*head, text])


def _follow_up(q: str) -> tuple[str, str]:
    """The thing the question is about, and the question with it left to a pronoun (or out)."""
    for match in _NAME.finditer(q):
        span = match.group(0)
        if span.split()[0].lower().rstrip(".") in _NOT_NAMES:
            span = " ".join(span.split()[1:])
            if not span:
                continue
        start = match.end() - len(span)
        if len(span) < 2 or len(_QUOTE.findall(q[:start])) % 2:
            continue  # a letter, or words inside a quoted title
        before = q[:start].split()
        prev = before[-1].lower().strip(",") if before else ""
        after = q[match.end():]
        if after.startswith(("'s", "’s")):
            out, end = "their", match.end() + 2
        elif prev in _MODIFIER:
            if not re.match(r" [a-z]+\b", after) or _FUNCTION.match(after) or _VERB.match(after):
                continue  # not a modifier of the noun after it: lean on another name
            out, end = "", match.end() + 1
        elif prev in _PLACE:
            start -= len(before[-1]) + 1
            out, end = "there", match.end()
        elif (not prev or prev in _AUX or prev in _WH or prev in {"and", "that", "who", ","}
              or _VERB.match(after)):
            out, end = "they", match.end()
        else:
            out, end = "them", match.end()
        if _CJK.search(q):
            out = {"their": "他的", "they": "他", "them": "他", "there": "那里"}.get(out, out)
        rest = _AGREE.sub(_agree, q[:start] + out + q[end:])
        return span, _lower_first(" ".join(rest.split()))
    return _follow_up_fallback(q)


_PREPOSITIONS = {"about", "on", "at", "in", "for", "to", "from", "with", "of", "into"}
_STOPS = _AUX | _WH | _PREPOSITIONS | {"i", "you", "we", "he", "she", "they", "me", "than",
                                       "that", "compared", "when", "while", "before", "after"}


def _follow_up_fallback(q: str) -> tuple[str, str]:
    """No name to lean on: the last prepositional object is the subject (``... spent on the
    handbag?`` → ``... spent on that?``); a Chinese question leaves out its first two
    characters (a name, in the multilingual set); else the noun after ``which``/``what``
    (``which one``), else the longest word."""
    words = q.split()
    for at in range(len(words) - 2, -1, -1):
        if words[at].lower() not in _PREPOSITIONS:
            continue
        taken: list[str] = []
        for word in words[at + 1:]:
            core = word.strip(",.?？!;:")
            if not core or core.lower() in _STOPS:
                break
            taken.append(core)
            if core != word:
                break
        if taken and taken[-1].lower() not in _NP_START:
            subject = " ".join(taken)
            head = " ".join(words[:at + 1])
            tail = q[len(head):].replace(subject, "that", 1)
            return subject, _lower_first(head + tail)
    if _CJK.match(q):
        return q[:2], "他" + q[2:]
    if (len(words) > 2 and words[0].lower() in {"which", "what"} and words[1].isalpha()
            and words[1].lower() not in _STOPS):
        return words[1], _lower_first(" ".join([words[0], "one", *words[2:]]))
    subject = max((w.strip(",.?？!") for w in words), key=len)
    return subject, _lower_first(q.replace(subject, "that", 1))


__all__ = ["FILLED", "PHRASINGS", "TEMPLATE_SPLITS", "Phrased", "phrase", "set_templates",
           "strip_marks", "templates"]
