"""Summaries of old history: the :class:`Summarizer` protocol and an offline extractive one.

A summary never replaces content silently: the summarized originals stay in the report (reason
``budget``, ``summarized_in`` set) and in the store they came from; a failed summary is reported
and the build goes on without it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from loomctx.items import ContextItem
from loomctx.text.lexical import tokenize
from loomctx.tokens.protocol import TokenCounter

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+")
_SIGNAL = re.compile(
    r"\d|remember|decid|prefer|always|never|must|deadline|agreed|记住|决定|喜欢|必须|不要",
    re.IGNORECASE)


@runtime_checkable
class Summarizer(Protocol):
    """Condenses messages into at most ``max_tokens`` tokens.

    Contract: returns text with ``counter.count(text) <= max_tokens``; may raise any exception,
    which the builder reports ("summary failed: ...") and goes on without the summary, losing
    no content.
    """

    async def summarize(
        self, items: Sequence[ContextItem], max_tokens: int, counter: TokenCounter
    ) -> str: ...


class ExtractiveSummarizer:
    """Picks the most informative sentences (numbers, decisions, names, frequent terms)."""

    async def summarize(
        self, items: Sequence[ContextItem], max_tokens: int, counter: TokenCounter
    ) -> str:
        sentences: list[tuple[int, str, str]] = []
        seen: set[str] = set()
        for pos, it in enumerate(items):
            for s in _SENTENCE.split(it.content):
                s = s.strip()
                if len(s) > 3 and s not in seen:  # a repeated line says nothing new
                    seen.add(s)
                    sentences.append((pos, it.role or it.source, s))
        if not sentences:
            return ""
        freq: dict[str, int] = {}
        for _, _, s in sentences:
            for t in set(tokenize(s, drop_stopwords=True)):
                freq[t] = freq.get(t, 0) + 1

        def value(entry: tuple[int, str, str]) -> float:
            terms = set(tokenize(entry[2], drop_stopwords=True))
            lexical = sum(freq[t] for t in terms) / (1 + len(terms)) ** 0.5
            return lexical + (2.0 if _SIGNAL.search(entry[2]) else 0.0) + entry[0] / len(items)

        ranked = sorted(range(len(sentences)), key=lambda i: -value(sentences[i]))
        chosen: list[int] = []
        used = 0
        for i in ranked:
            pos, who, s = sentences[i]
            cost = counter.count(f"- {who}: {s}") + 1
            if used + cost > max_tokens:
                continue
            chosen.append(i)
            used += cost
        # One bullet per message (its chosen sentences in order), so a summary "of N
        # messages" never lists more than N lines.
        by_pos: dict[int, list[str]] = {}
        for i in sorted(chosen):
            by_pos.setdefault(sentences[i][0], []).append(sentences[i][2])
        lines = [f"- {items[pos].role or items[pos].source}: {' '.join(parts)}"
                 for pos, parts in by_pos.items()]
        text = "\n".join(lines)
        while text and counter.count(text) > max_tokens:
            lines.pop()
            text = "\n".join(lines)
        return text


__all__ = ["ExtractiveSummarizer", "Summarizer"]
