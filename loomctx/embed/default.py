"""The library's one default embedder, used wherever the caller names none.

A :class:`~loomctx.session.Session` without ``embedder=`` and the ``loomctx eval`` systems
without ``--embedder`` both call :func:`default_embedder`, so a session and its evaluation embed
the same way. It returns the bare model, never a cache: the caller knows which cache fits (a
session wraps it in a :class:`~loomctx.embed.cache.CachedEmbedder` over its own store, so vectors
persist with the memories; the evaluation memoises in process). A cache here would hide the
session's persistent one.

The default joins the multilingual USE (every language, English and Chinese in one space) with
all-MiniLM-L6-v2 on Latin-script text (:class:`~loomctx.embed.joint.JointEmbedder`): on
English the English model tells close meanings apart better, and the multilingual one keeps
every other language (and a question in one language against memories in another) in one
space. ``DEFAULT_WEIGHT`` is USE's share, fitted on the development split
(``benchmarks/HISTORY.md``).
"""

from __future__ import annotations

from collections.abc import Callable

from loomctx.embed.fake import HashingEmbedder
from loomctx.embed.joint import JointEmbedder
from loomctx.embed.minilm import MiniLMEmbedder
from loomctx.embed.protocol import Embedder
from loomctx.embed.use import UniversalSentenceEncoder
from loomctx.errors import ConfigError

DEFAULT_WEIGHT = 0.3


def default_embedder() -> Embedder:
    """A new joint USE + MiniLM embedder (offline; the models load on first use)."""
    return JointEmbedder(UniversalSentenceEncoder(), MiniLMEmbedder(), weight=DEFAULT_WEIGHT)


EMBEDDER_NAMES = ("default", "use", "minilm", "hashing")
"""The embedders a command line may name (``--embedder``)."""


def named_embedder(name: str) -> Embedder:
    """The embedder a command line names: the default, USE alone, MiniLM alone, or the fast
    hashing fake (tests and smoke runs; its vectors carry no meaning)."""
    makers: dict[str, Callable[[], Embedder]] = {
        "default": default_embedder, "use": UniversalSentenceEncoder, "minilm": MiniLMEmbedder,
        "hashing": HashingEmbedder,
    }
    if name not in makers:
        raise ConfigError(f"unknown embedder {name!r}; use one of {', '.join(EMBEDDER_NAMES)}")
    return makers[name]()


__all__ = ["DEFAULT_WEIGHT", "EMBEDDER_NAMES", "default_embedder", "named_embedder"]
