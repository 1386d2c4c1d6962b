"""Model name -> the right counter, chat provider and context window.

Budgets are exact only when counted with the target model's own tokenizer, and a silent wrong
guess (cl100k for an o200k model) is off by 10-30% on non-English text. So the mapping is
explicit: known families resolve to their encoding, anything else is a :class:`ConfigError`
unless the caller names a ``fallback`` encoding, which is then recorded on the result.

``"estimate"`` (:data:`ESTIMATE`), as a name or as the fallback, is the explicit choice for a
model whose tokenizer loomctx does not have: the character estimator of the GSSC design
(:class:`~loomctx.tokens.estimate.EstimatingCounter`) with ratios that err high and a +10 %
margin, so a budget holds for English, Chinese and code under the tokenizers measured
(docs/build.md, "Models loomctx has no tokenizer for"). Its counts are marked inexact
(``counter.exact`` is False) and every build report says they are estimates.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

from loomctx import providers
from loomctx.errors import ConfigError
from loomctx.tokens.bpe import BUNDLED_ENCODINGS, BPECounter
from loomctx.tokens.cache import CachedCounter
from loomctx.tokens.chat import ChatCounter, Provider
from loomctx.tokens.estimate import EstimatingCounter
from loomctx.tokens.hf import HFTokenizerCounter
from loomctx.tokens.protocol import TokenCounter

# (pattern on the lower-cased name without an org prefix, encoding, provider); first match wins.
_FAMILIES: tuple[tuple[str, str, Provider], ...] = (
    (r"gpt-oss", "o200k_harmony", "openai"),
    (r"(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4)([-.:]|$)", "o200k_base", "openai"),
    (r"(gpt-4|gpt-3\.5-turbo|gpt-35-turbo)([-:]|$)", "cl100k_base", "openai"),
    (r"(meta-)?llama-?3(?![0-9])", "llama3", "openai"),
    (r"qwen(2|3)(?![0-9])", "qwen3", "openai"),
    (r"claude-", "estimate:claude", "anthropic"),
)

# (prefix of the lower-cased name without an org prefix, context window); longest prefix wins.
_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "chatgpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o4": 200_000,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4-1106": 128_000,
    "gpt-4-0125": 128_000,
    "gpt-3.5-turbo": 16_385,
    "gpt-oss": 131_072,
    "claude-": 200_000,
    "llama-3": 8_192,
    "meta-llama-3": 8_192,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    "meta-llama-3.1": 131_072,
    "qwen2.5": 32_768,
    "qwen3": 32_768,
}

ESTIMATE = "estimate"
"""The name of the character estimator, for any model (``counter_for_model("estimate")``,
``fallback="estimate"``, ``--count-as estimate``)."""

KNOWN_FAMILIES = (
    "gpt-4o*, chatgpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, o1*, o3*, o4* (o200k_base); "
    "gpt-4, gpt-4-turbo, gpt-3.5-turbo* (cl100k_base); gpt-oss* (o200k_harmony); "
    "llama-3*, meta-llama/Llama-3*, meta-llama/Meta-Llama-3* (llama3); "
    "qwen2*, qwen3* (qwen3); claude-* (estimate); "
    f"encodings {', '.join(BUNDLED_ENCODINGS)}; a path to a tokenizer.json; "
    f"{ESTIMATE!r} (a character estimate with a safety margin, for any other model)"
)


@dataclass(frozen=True, kw_only=True)
class ModelTokenizer:
    """What loomctx knows about counting for one model."""

    model: str
    """The model name as given."""
    counter: TokenCounter
    """A cached counter for the model's tokens (exact unless ``counter.exact`` is False)."""
    provider: Provider
    """Chat format whose overhead applies: a registered provider's name (``"openai"``,
    ``"anthropic"``) or ``"text"``."""
    context_window: int | None
    """Maximum input + output tokens, when known."""
    fallback: str | None = None
    """The fallback encoding used because the model was unknown, else None."""

    def __post_init__(self) -> None:
        if self.provider != "text" and providers.find(self.provider) is None:
            raise ConfigError(f"provider must be one of {', '.join((*providers.names(), 'text'))}"
                              f", got {self.provider!r}")
        if self.context_window is not None and self.context_window <= 0:
            raise ConfigError(f"context_window must be > 0 or None, got {self.context_window!r}")

    def chat(self) -> ChatCounter:
        """A :class:`ChatCounter` for this model's provider, sharing the counter's cache."""
        return ChatCounter(self.counter, self.provider)


@functools.cache
def _cached_encoding(encoding: str) -> CachedCounter:
    if encoding in ("estimate:claude", ESTIMATE):
        return CachedCounter(EstimatingCounter(name=encoding))
    return CachedCounter(BPECounter(encoding))


@functools.lru_cache(maxsize=32)
def _cached_file(path: str) -> CachedCounter:
    return CachedCounter(HFTokenizerCounter.from_file(path))


def _window(key: str) -> int | None:
    best = ""
    for prefix in _WINDOWS:
        if key.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return _WINDOWS[best] if best else None


def counter_for_model(model: str, *, fallback: str | None = None) -> ModelTokenizer:
    """Resolve ``model`` (a model id, an encoding name or a tokenizer.json path).

    Unknown names raise :class:`ConfigError` unless ``fallback`` names a bundled encoding, e.g.
    ``counter_for_model("my-finetune", fallback="cl100k_base")``, or ``"estimate"`` (the
    character estimator, inexact and erring high); the result then records the fallback and
    has no known context window.
    """
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"model must be a non-empty string, got {model!r}")
    if fallback is not None and fallback not in (*BUNDLED_ENCODINGS, ESTIMATE):
        raise ConfigError(
            f"fallback {fallback!r} is not a bundled encoding: use one of "
            f"{', '.join(BUNDLED_ENCODINGS)}, or {ESTIMATE!r} for a character estimate"
        )
    if model in (*BUNDLED_ENCODINGS, ESTIMATE):
        return ModelTokenizer(
            model=model, counter=_cached_encoding(model), provider="openai", context_window=None
        )
    if model.endswith(".json") and os.path.isfile(model):
        return ModelTokenizer(
            model=model,
            counter=_cached_file(os.path.abspath(model)),
            provider="openai",
            context_window=None,
        )
    lowered = model.strip().lower()
    key = lowered.rsplit("/", 1)[-1]
    candidates = [key] if key == lowered else [key, lowered.replace("/", "-")]
    for name in candidates:
        for pattern, encoding, provider in _FAMILIES:
            if re.match(pattern, name):
                return ModelTokenizer(
                    model=model,
                    counter=_cached_encoding(encoding),
                    provider=provider,
                    context_window=_window(name),
                )
    if fallback is None:
        raise ConfigError(
            f"unknown model {model!r}: known families are {KNOWN_FAMILIES}. For another model "
            "pass an explicit fallback, e.g. counter_for_model(model, fallback='cl100k_base'), "
            "the path of its tokenizer.json, or fallback='estimate' for a character estimate "
            "that errs high"
        )
    return ModelTokenizer(
        model=model,
        counter=_cached_encoding(fallback),
        provider="openai",
        context_window=None,
        fallback=fallback,
    )


__all__ = ["ESTIMATE", "KNOWN_FAMILIES", "ModelTokenizer", "counter_for_model"]
