"""What one long text costs an embedder is bounded: a pasted log or a 20 MB reply is embedded
in pieces of bounded size, and only its first tokens count (loomctx/embed/use.py, minilm.py)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from loomctx.embed import MiniLMEmbedder, UniversalSentenceEncoder
from loomctx.embed import minilm as minilm_module
from loomctx.embed import use as use_module


def _log(lines: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return "".join(f"2024-05-01 10:40:{rng.randint(10, 59)} INFO worker-{rng.randint(1, 9)} "
                   f"shipment SHP-{rng.randint(10000, 99999)} customs hold at Lyon\n"
                   for _ in range(lines))


@pytest.fixture(scope="module")
def graph() -> Any:
    return use_module._load_graph(1)


def test_a_long_text_runs_in_bounded_pieces(graph: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    run = graph.session.run
    seen: list[int] = []

    def recorded(outputs: list[str], feed: dict[str, np.ndarray]) -> Any:
        seen.append(len(feed["embedded"]))
        return run(outputs, feed)

    monkeypatch.setattr(graph.session, "run", recorded, raising=False)
    text = _log(4000)  # ~300 KB, a pasted log
    vector = UniversalSentenceEncoder(threads=1).embed([text])
    assert np.isclose(np.linalg.norm(vector[0]), 1.0, atol=1e-5)
    assert seen and max(seen) <= use_module._WHOLE  # never the whole text at once


def test_pieces_give_the_whole_text_vector(graph: Any) -> None:
    text = _log(120, seed=2)  # a few thousand tokens: longer than one piece, under the cap
    ids = graph.tokens(text)
    assert use_module._WHOLE < len(ids) < use_module.MAX_TOKENS
    whole = graph._forward(graph._feed([ids], len(ids)))[0]
    pieces = UniversalSentenceEncoder(threads=1).embed([text])[0]
    assert np.abs(whole - pieces).max() < 1e-5


def test_only_the_first_tokens_count(graph: Any) -> None:
    head = _log(700, seed=3)
    assert len(graph.tokens(head)) == use_module.MAX_TOKENS  # the cap is reached
    use = UniversalSentenceEncoder(threads=1)
    a, b = use.embed([head, head + _log(2000, seed=4)])
    assert np.abs(a - b).max() < 1e-6
    numpy_pass = UniversalSentenceEncoder(threads=1, engine="numpy").embed([head])[0]
    assert float(numpy_pass @ a) > 0.99  # the package's own pass embeds the same tokens


def test_minilm_tokenizes_a_bounded_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    minilm = MiniLMEmbedder(threads=1)
    minilm.embed(["warm"])
    model = minilm_module._load_pass(minilm.precision, minilm.threads).model
    encode = model.tokenizer.encode_batch
    lengths: list[int] = []

    class Recording:
        def encode_batch(self, texts: list[str]) -> Any:
            lengths.extend(map(len, texts))
            return encode(texts)

    monkeypatch.setattr(model, "tokenizer", Recording())
    text = _log(30_000)  # ~2 MB
    long, prefix = minilm.embed([text, text[:minilm_module._MAX_CHARS]])
    assert max(lengths) <= minilm_module._MAX_CHARS
    assert np.abs(long - prefix).max() < 1e-6
