"""The public surface of loomctx.tokens is pinned."""

from __future__ import annotations

import loomctx.tokens as tokens


def test_all_is_sorted_and_pinned() -> None:
    assert tokens.__all__ == [
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
    assert tokens.__all__ == sorted(tokens.__all__, key=lambda n: (not n.isupper(), n))
    for name in tokens.__all__:
        assert getattr(tokens, name) is not None
