"""Token counting in the target model's own tokens.

Exact counters for the bundled BPE encodings (:class:`BPECounter`) and any HuggingFace
``tokenizer.json`` (:class:`HFTokenizerCounter`), an upper-bound estimator for models with no
public tokenizer (:class:`EstimatingCounter`), a count cache (:class:`CachedCounter`), chat
overhead per provider (:class:`ChatCounter`), and :func:`counter_for_model` to pick them by name.
"""

from loomctx.tokens.bpe import BUNDLED_ENCODINGS, BPECounter
from loomctx.tokens.cache import CachedCounter
from loomctx.tokens.chat import PROVIDERS, ChatCounter, Provider, render_text
from loomctx.tokens.estimate import EstimatingCounter
from loomctx.tokens.hf import HFTokenizerCounter
from loomctx.tokens.protocol import TokenCounter
from loomctx.tokens.registry import KNOWN_FAMILIES, ModelTokenizer, counter_for_model

__all__ = [
    "BUNDLED_ENCODINGS",
    "KNOWN_FAMILIES",
    "PROVIDERS",
    "BPECounter",
    "CachedCounter",
    "ChatCounter",
    "EstimatingCounter",
    "HFTokenizerCounter",
    "ModelTokenizer",
    "Provider",
    "TokenCounter",
    "counter_for_model",
    "render_text",
]
