"""Embedders: text to unit vectors, offline (see :class:`~loomctx.embed.protocol.Embedder`)."""

from loomctx.embed.cache import CachedEmbedder, VectorCache, text_hash
from loomctx.embed.default import default_embedder
from loomctx.embed.fake import HashingEmbedder
from loomctx.embed.joint import JointEmbedder
from loomctx.embed.minilm import MiniLMEmbedder
from loomctx.embed.protocol import Embedder
from loomctx.embed.use import UniversalSentenceEncoder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "JointEmbedder",
    "MiniLMEmbedder",
    "UniversalSentenceEncoder",
    "VectorCache",
    "default_embedder",
    "text_hash",
]
