"""Exact counts for any HuggingFace ``tokenizer.json`` (Llama, Qwen, Mistral, ...).

Open-weight models publish their tokenizer as one ``tokenizer.json``; the Rust ``tokenizers``
package reads it and tokenizes exactly like the model's serving stack. The bundled quicktok
encodings already cover Llama-3 and Qwen; this counter is for any other model (``tokenizers`` is
installed with loomctx: the MiniLM embedder reads its vocabulary with it too). Counts never
include the special tokens a template adds (``add_special_tokens=False``): chat framing is
:mod:`loomctx.tokens.chat`'s business.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from loomctx.errors import ConfigError, MissingDependencyError
from loomctx.tokens._text import clean_surrogates, refine_prefix


def _tokenizer_class() -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise MissingDependencyError("tokenizer.json counting", None, "tokenizers") from exc
    return Tokenizer


class HFTokenizerCounter:
    """Exact counter backed by a ``tokenizers.Tokenizer``; build it with :meth:`from_file`."""

    exact: bool = True

    def __init__(self, tokenizer: Any, *, name: str = "hf") -> None:
        self.name: str = name
        self._tok = tokenizer
        self._batch = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, name: str | None = None
    ) -> HFTokenizerCounter:
        """Load ``tokenizer.json`` from ``path``; ``name`` defaults to ``"hf:<folder>/<file>"``."""
        tokenizer_cls = _tokenizer_class()
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ConfigError(f"tokenizer file {path!r} does not exist: pass a tokenizer.json path")
        try:
            tok = tokenizer_cls.from_file(path)
        except Exception as exc:  # the Rust side raises a bare Exception for bad JSON
            raise ConfigError(f"cannot read tokenizer file {path!r}: {exc}") from exc
        if name is None:
            parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
            name = f"hf:{parent}/{os.path.basename(path)}"
        return cls(tok, name=name)

    @classmethod
    def from_str(cls, json_text: str, *, name: str = "hf") -> HFTokenizerCounter:
        """Load a tokenizer from the JSON text of a ``tokenizer.json``."""
        tokenizer_cls = _tokenizer_class()
        try:
            tok = tokenizer_cls.from_str(json_text)
        except Exception as exc:
            raise ConfigError(f"cannot parse tokenizer JSON: {exc}") from exc
        return cls(tok, name=name)

    def __repr__(self) -> str:
        return f"HFTokenizerCounter(name={self.name!r})"

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without added special tokens."""
        return list(self._tok.encode(clean_surrogates(text), add_special_tokens=False).ids)

    def count(self, text: str) -> int:
        """Exact number of tokens in ``text``."""
        return len(self._tok.encode(clean_surrogates(text), add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Exact counts of many texts in one batched (parallel) call."""
        if not texts:
            return []
        encs = self._batch([clean_surrogates(t) for t in texts], add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def truncate(self, text: str, max_tokens: int) -> str:
        """Longest prefix of ``text`` with at most ``max_tokens`` tokens.

        The cut starts where token ``max_tokens + 1`` begins (character offsets from the
        tokenizer, so a character split over several byte tokens is dropped whole), then is
        re-counted and adjusted as in :func:`loomctx.tokens._text.refine_prefix`.
        """
        if max_tokens < 0:
            raise ConfigError(f"max_tokens must be >= 0, got {max_tokens!r}")
        clean = clean_surrogates(text)
        enc = self._tok.encode(clean, add_special_tokens=False)
        if len(enc.ids) <= max_tokens:
            return text
        guess = enc.offsets[max_tokens][0]
        cut = refine_prefix(clean, self.count, max_tokens, guess)
        return text[: len(cut)]


__all__ = ["HFTokenizerCounter"]
