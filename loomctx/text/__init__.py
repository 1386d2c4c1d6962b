"""Base text utilities every layer may use: the CJK-aware word tokenizer, BM25 and stopwords.

This package imports nothing else from loomctx but ``errors``: stores, embedders, selection,
compression, memory and retrieval all build on it, never the other way round.
"""
