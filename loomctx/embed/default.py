"""The library's one default embedder, used wherever the caller names none.

A :class:`~loomctx.session.Session` without ``embedder=`` and the ``loomctx eval`` systems
without ``--embedder`` both call :func:`default_embedder`, so a session and its evaluation embed
the same way. It returns the bare model, never a cache: the caller knows which cache fits (a
session wraps it in a :class:`~loomctx.embed.cache.CachedEmbedder` over its own store, so vectors
persist with the memories; the evaluation memoises in process). A cache here would hide the
session's persistent one.
"""

from __future__ import annotations

from loomctx.embed.protocol import Embedder
from loomctx.embed.use import UniversalSentenceEncoder


def default_embedder() -> Embedder:
    """A new multilingual Universal Sentence Encoder (offline; the model loads on first use)."""
    return UniversalSentenceEncoder()


__all__ = ["default_embedder"]
