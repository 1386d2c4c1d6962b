"""Every embedder keeps the :class:`Embedder` contract; USE and the hashing fake behave sensibly."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.embed import (
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    UniversalSentenceEncoder,
    default_embedder,
)
from loomctx.embed import use as use_module
from loomctx.embed.protocol import embed_later
from loomctx.embed.use import ENGINES
from loomctx.errors import ConfigError

TEXTS = ["I love hiking on weekends", "我喜欢周末去爬山", "", "   ", "emoji 🎉 only", "x" * 3000]


@pytest.fixture(scope="module")
def use() -> UniversalSentenceEncoder:
    return UniversalSentenceEncoder(threads=1)


@pytest.fixture(params=["hashing", "use", "minilm", "default"])
def embedder(request: pytest.FixtureRequest, use: UniversalSentenceEncoder) -> Embedder:
    made: dict[str, Callable[[], Embedder]] = {
        "hashing": HashingEmbedder, "use": lambda: use, "minilm": MiniLMEmbedder,
        "default": default_embedder,
    }
    return made[request.param]()


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_conforms_to_the_protocol(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    vecs = embedder.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), embedder.dim)
    assert vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(vecs).all()


def test_empty_input_gives_an_empty_matrix(embedder: Embedder) -> None:
    vecs = embedder.embed([])
    assert vecs.shape == (0, embedder.dim)
    assert vecs.dtype == np.float32


def test_deterministic_and_independent_of_batch(embedder: Embedder) -> None:
    together = embedder.embed(TEXTS)
    alone = np.vstack([embedder.embed([t]) for t in TEXTS])
    assert np.allclose(together, alone, atol=1e-5)
    assert np.array_equal(embedder.embed(TEXTS), together)


def test_use_identity_and_dimension(use: UniversalSentenceEncoder) -> None:
    assert use.name == "use-multilingual-v3@0.2.1"
    assert use.dim == 512


def test_use_aligns_english_and_chinese(use: UniversalSentenceEncoder) -> None:
    en, zh, other = use.embed(
        ["I love hiking on weekends", "我喜欢周末去爬山", "The stock market fell"]
    )
    assert _cos(en, zh) > _cos(en, other) + 0.2


def test_use_batches_larger_than_one_chunk(use: UniversalSentenceEncoder) -> None:
    texts = [f"message number {i}" for i in range(300)]
    vecs = use.embed(texts)
    assert vecs.shape == (300, 512)
    assert np.allclose(vecs[260], use.embed([texts[260]])[0], atol=1e-5)


def test_use_rejects_bad_threads_and_non_strings(use: UniversalSentenceEncoder) -> None:
    with pytest.raises(ConfigError):
        UniversalSentenceEncoder(threads=0)
    with pytest.raises(ConfigError):
        use.embed(["ok", 3])  # type: ignore[list-item]


def test_use_engines_give_the_same_vectors(use: UniversalSentenceEncoder) -> None:
    """The onnxruntime graph reproduces the package's numpy pass: one text, a batch that spans
    several ~384-token micro-batches, a text longer than one, empty and Chinese texts."""
    assert use.engine == "onnxruntime"
    texts = [*TEXTS, *(f"turn {i}: the deploy failed again" for i in range(120)), "word " * 500]
    numpy_pass = UniversalSentenceEncoder(threads=1, engine="numpy")
    graph, reference = use.embed(texts), numpy_pass.embed(texts)
    assert np.abs(graph - reference).max() < 1e-5
    assert np.abs(use.embed(texts[:1]) - reference[:1]).max() < 1e-5
    assert numpy_pass.name == use.name  # a cache serves either


@pytest.mark.parametrize("engine", ["torch", "", None, "ONNXRUNTIME"])
def test_use_rejects_an_unknown_engine(engine: object) -> None:
    with pytest.raises(ConfigError, match="engine must be one of onnxruntime, numpy"):
        UniversalSentenceEncoder(engine=engine)  # type: ignore[arg-type]


def test_use_without_onnxruntime_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    monkeypatch.setattr(use_module, "_GRAPHS", {})
    with pytest.raises(ConfigError, match=r"pip install onnxruntime.*engine='numpy'"):
        UniversalSentenceEncoder(threads=1).embed(["hello"])
    assert UniversalSentenceEncoder(threads=1, engine="numpy").embed(["hello"]).shape == (1, 512)


def test_hashing_similar_texts_are_closer() -> None:
    emb = HashingEmbedder()
    a, b, c = emb.embed(
        ["the deploy failed with a timeout", "deploy failed: timeout again", "我喜欢周末去爬山"]
    )
    assert _cos(a, b) > 0.5
    assert _cos(a, b) > _cos(a, c) + 0.3


def test_hashing_dim_is_validated_and_named() -> None:
    assert HashingEmbedder(64).embed(["abc"]).shape == (1, 64)
    assert HashingEmbedder(64).name != HashingEmbedder(128).name
    with pytest.raises(ConfigError):
        HashingEmbedder(1)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=5))
def test_hashing_rows_are_unit_and_stable(texts: list[str]) -> None:
    emb = HashingEmbedder(32)
    vecs = emb.embed(texts)
    assert vecs.shape == (len(texts), 32)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vecs, HashingEmbedder(32).embed(texts))


@pytest.mark.parametrize("texts", [["What did Caroline say about the support group?"],
                                   ["a", "我喜欢周末去爬山", ""], TEXTS, ["word " * 300] * 2])
def test_use_in_two_steps_is_embed(use: UniversalSentenceEncoder, texts: list[str]) -> None:
    """A question's tokens now, its pass later on another thread: ``embed``'s vectors (texts
    beyond one micro-batch, or the numpy engine, leave everything for the second step)."""
    for engine in ENGINES:
        model = UniversalSentenceEncoder(engine=engine)
        rest = model.embed_later(texts)
        box: list[np.ndarray] = []
        worker = threading.Thread(target=lambda: box.append(rest()))  # noqa: B023
        worker.start()
        worker.join()
        assert np.array_equal(box[0], use.embed(texts) if engine == "onnxruntime"
                              else model.embed(texts))
    with pytest.raises(ConfigError, match="at index 0"):
        use.embed_later([None])  # type: ignore[list-item]


def test_embed_later_defers_all_of_an_embedder_without_two_steps() -> None:
    calls: list[list[str]] = []

    class OneStep(HashingEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            calls.append(list(texts))
            return super().embed(texts)

    rest = embed_later(OneStep(16), ("a b", "c"))
    assert calls == []
    assert np.array_equal(rest(), HashingEmbedder(16).embed(["a b", "c"]))
    assert calls == [["a b", "c"]]
