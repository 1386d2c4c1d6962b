"""What of a long text its analysis reads: all of it up to :data:`ANALYSIS_CHARS` characters,
else its head and its tail.

A message is analysed many times over: its search terms when it is indexed (the session's BM25
index, the store's full-text index), its vector when it is embedded, its importance when it
leaves the recent window, and at every later build its terms again (the query rewriter reads
the recent messages, the reranker a candidate's term set, the bridge query a match's names).
Each of those passes reads the whole text, so one pasted 5 MB log cost 20 s to add and 5 s per
build. Reading a bounded sample instead bounds each pass, whatever the message's length: the
first :data:`HEAD_CHARS` characters (where a document says what it is) and the last ones (where
a log says how it ended). The message itself is stored, rendered and counted whole.

The bound is far above conversational messages (the longest in the LongMemEval, LoCoMo and
HotpotQA sets has 37,208 characters), so they are analysed whole, exactly as before.
"""

from __future__ import annotations

ANALYSIS_CHARS = 65_536
"""Characters of one text that any analysis of it reads."""
HEAD_CHARS = 49_152
"""Of those, the ones from the start of the text; the rest come from its end."""
JOIN = "\n"
"""What stands between the head and the tail in a sample."""


def sample(text: str) -> str:
    """``text`` when it has at most :data:`ANALYSIS_CHARS` characters, else its first
    :data:`HEAD_CHARS` and its last characters joined by a line break, ``ANALYSIS_CHARS`` in
    all at most, each cut at a space when one is near so that no word is read in half.
    Deterministic: a text always gives the same sample."""
    if len(text) <= ANALYSIS_CHARS:
        return text
    tail = ANALYSIS_CHARS - HEAD_CHARS - len(JOIN)
    head_end = text.rfind(" ", HEAD_CHARS - _NEAR, HEAD_CHARS)
    tail_start = text.find(" ", len(text) - tail, len(text) - tail + _NEAR)
    return (text[:HEAD_CHARS if head_end < 0 else head_end] + JOIN
            + text[len(text) - tail if tail_start < 0 else tail_start + 1:])


_NEAR = 64  # how far back (or on) a cut looks for a space


__all__ = ["ANALYSIS_CHARS", "HEAD_CHARS", "sample"]
