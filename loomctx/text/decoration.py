"""The words of a message, without the id and time a client may write in front of them.

Agents and chat exports often prefix every message with its id and time, e.g.
``[D1:3] (2023-05-08 13:56) Ann: ...`` or ``[msg-42] ...``. Those tokens are the same kind on every
line and say nothing about what was said, yet they weigh in a message's BM25 length and in its
embedding, and a question's number ("in 2023") matches every line's timestamp. Memory indexes and
embeds :func:`index_text` (of a very long message, a bounded sample: :mod:`loomctx.text.sample`);
the message is stored and rendered whole.
"""

from __future__ import annotations

import re

from loomctx.text.sample import sample

_DECORATION = re.compile(
    r"^\s*\[[^\[\]\n]{1,40}\]"           # a leading [id] tag
    r"(?:\s*\((?=[^)\n]*\d)[^()\n]{1,40}\))?"  # optionally a (time) with a digit in it
    r"\s+(?=\S)"
)


def index_text(text: str) -> str:
    """``text`` without a leading ``[id]`` tag and optional ``(time)`` after it.

    Only the prefix goes; a text that would be left empty is returned unchanged, so a message
    that is nothing but a tag still has something to match. A text longer than
    :data:`~loomctx.text.sample.ANALYSIS_CHARS` gives its :func:`~loomctx.text.sample.sample`:
    what is indexed and embedded of one message is bounded.
    """
    m = _DECORATION.match(text)
    return sample(text[m.end():] if m else text)


__all__ = ["index_text"]
