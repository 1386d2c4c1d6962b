"""The exact nearest rows of a large matrix for a quarter of the memory traffic.

A float32 product over 100k × 512 rows reads 205 MB per search, ~16 ms on one core of the
benchmark machine, and it was the slowest step of a warm build over a 100k-message session
(``benchmarks/bench_memory.py``). An int8 copy of the rows (one scale per row) is a quarter of
that; onnxruntime (a dependency already, for the embedders) multiplies it with a prepacked
integer kernel in 2–9 ms (2 with the copy in cache, more as a build's other work evicts it).
Its scores are estimates, and the search stays exact by bounding them:

for a row ``x`` with int8 copy ``x̂`` and the query ``q`` with its own integer copy ``q̂``,
``|q·x − q̂·x̂| ≤ |q − q̂|·|x| + |q̂|·|x − x̂|`` (two Cauchy–Schwarz steps; every norm is kept or
computed exactly; the first term is taken at the largest row norm, one number for every row).
No row whose upper bound is below the k-th best lower bound can be among the
best k, so only the others are scored again in float32: ~400–650 rows for k = 256 of 100k in
``benchmarks/bench_memory.py``'s session. The result is the float32 product's top k.

The query gets 7 bits, not 8: x86 kernels without VNNI multiply unsigned × signed byte pairs into
a saturating 16-bit sum (``vpmaddubsw``), and 2 · 127 · 128 fits in it where 2 · 255 · 128 does
not, so the integer products are exact on every kernel onnxruntime may pick.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loomctx import _onnx
from loomctx._onnx import Graph, session, value_info

_QUERY_LEVELS = 63  # the query's integers: -63..63 around a zero point of 64
_CHUNK = 256
"""Rows quantized at a time: their float64 temporaries (1 MB at 512 dimensions) stay in cache;
chunks of 8,192 rows took 3.5× as long over 100k rows (``benchmarks/HISTORY.md``)."""
ROUNDING = 2.0 ** -23
"""Per term, relative to ``|q|·|x|``: the float32 product the estimates stand in for rounds
(at most one unit in the last place of a float32 per multiply-add), so each bound is widened by
``(dim + 8) · ROUNDING · |q|·|x|`` to hold for that product as well as for the exact one (the
8: the few float64 operations of the bounds themselves, far below it)."""
SUBNORMAL = float(np.finfo(np.float32).smallest_subnormal)
"""Per term, absolute: below float32's normal range a rounding is off by up to this much
whatever the operands' size, where the relative allowance is no allowance at all."""


class Int8Rows:
    """An int8 copy of ``matrix``'s rows with their scales, norms and quantization errors, in one
    onnxruntime graph that turns a query into the rows still in play for its top k.

    Everything a search does over all rows runs inside that one call: the worker thread a
    search runs on gives the interpreter lock back and takes it again around each numpy call,
    and each time it may wait for the build's own thread to yield it (up to the interpreter's
    switch interval, 5 ms); a dozen such calls over 100k rows cost more than the product.
    """

    def __init__(self, matrix: np.ndarray) -> None:
        n, dim = matrix.shape
        self.rows = n
        self._dim = dim
        scale = np.empty(n, dtype=np.float64)
        norm = np.empty(n, dtype=np.float64)
        error = np.empty(n, dtype=np.float64)
        # transposed: the graph's right-hand side, the side onnxruntime prepacks (written a
        # chunk at a time: a transpose of the whole int8 copy took as long as the quantizing)
        codes = np.empty((dim, n), dtype=np.int8)
        for start in range(0, n, _CHUNK):
            block = matrix[start:start + _CHUNK]
            end = start + len(block)
            s = np.maximum(block.max(axis=1), -block.min(axis=1)) / np.float32(127)  # max |x|
            s[s == 0] = 1.0  # an all-zero row: any scale codes it exactly
            c = block / s[:, None]
            np.clip(np.rint(c, out=c), -127, 127, out=c)
            codes[:, start:end] = c.T
            # the norms as they are, not as float32 would round them
            wide = block.astype(np.float64)
            norm[start:end] = np.sqrt(np.einsum("ij,ij->i", wide, wide))
            miss = c.astype(np.float64)
            miss *= s[:, None].astype(np.float64)
            error[start:end] = np.sqrt(np.einsum("ij,ij->i", np.subtract(wide, miss, out=miss),
                                                 miss))
            scale[start:end] = s
        self._session: Any = session(_graph(codes, scale, error), 1,
                                     needed_by="the int8 vector search", instead="a smaller store")
        self._widest = float(norm.max()) if n else 0.0
        self._everywhere: np.ndarray = np.zeros(0)

    def _feed(self, query: np.ndarray, tail: np.ndarray, rows: np.ndarray | None,
              k: int) -> tuple[dict[str, np.ndarray], float] | None:
        """The graph's inputs and the query's step: everything the graph compares is in units
        of that step (it is > 0), which spares a multiplication of every row by it."""
        q = query.astype(np.float64)
        top = float(np.abs(q).max())
        if top == 0.0:
            return None
        step = top / _QUERY_LEVELS
        codes = np.clip(np.rint(q / step), -_QUERY_LEVELS, _QUERY_LEVELS)
        approx = codes * step
        size = float(np.linalg.norm(q))
        own = float(np.linalg.norm(q - approx)) + (self._dim + 8) * ROUNDING * size
        bias = self._bias(len(tail), rows)
        return {
            "query": (codes + _QUERY_LEVELS + 1).astype(np.uint8).reshape(1, self._dim),
            # |q − q̂| · |x| ≤ |q − q̂| · max |x|: one number for every row (stored embeddings
            # are unit vectors, so it is no looser), added to each side at the cut
            "own": np.array([(own * self._widest + (self._dim + 8) * SUBNORMAL) / step]),
            "theirs": np.array([float(np.linalg.norm(approx)) / step]),
            "tail": tail.astype(np.float64) / step + bias[self.rows:],
            "bias": bias[:self.rows],
            "k": np.array([k], dtype=np.int64),
            "k_rows": np.array([min(k, self.rows)], dtype=np.int64),
        }, step

    def bounds(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of every row's product with ``query``."""
        fed = self._feed(query, np.empty(0), None, 1)
        if fed is None:  # every product is 0
            zeros = np.zeros(self.rows, dtype=np.float64)
            return zeros, zeros
        feed, step = fed
        lower, upper = self._session.run(["lower", "upper"], feed)
        own = feed["own"][0]
        return (lower - own) * step, (upper + own) * step

    def in_play(self, query: np.ndarray, k: int, *, tail: np.ndarray,
                rows: np.ndarray | None) -> np.ndarray | None:
        """The rows (all rows, then ``tail``'s) among ``rows`` (None: every row) that may be among
        the best ``k``: those whose upper bound reaches the k-th best lower bound. ``tail``
        holds the exact scores of rows appended after this copy. None for a zero query (every
        row scores 0: nothing to tell apart)."""
        fed = self._feed(query, tail, rows, k)
        if fed is None:
            return None
        return self._session.run(["maybe"], fed[0])[0][0]

    def _bias(self, tail: int, rows: np.ndarray | None) -> np.ndarray:
        """0 for the rows searched, -inf for the others (all rows, then the tail's)."""
        total = self.rows + tail
        if rows is None:
            if len(self._everywhere) != total:
                self._everywhere = np.zeros(total)
            return self._everywhere
        bias = np.full(total, -np.inf)
        bias[rows] = 0.0
        return bias


def _graph(codes: np.ndarray, scale: np.ndarray, error: np.ndarray) -> bytes:
    """The model: integer products, their bounds, the k-th best lower bound, the rows above it.

    Inputs, in units of the query's step: its 7-bit codes around 64 (uint8, ``[1, dim]``),
    ``own`` (``|q − q̂|``, plus the rounding allowance, times the largest row norm) and
    ``theirs`` (``|q̂|``), the exact scores of rows appended since (``tail``, their bias added),
    a bias per row (``bias``: 0 inside the search's scope, -inf outside), ``k`` and ``k_rows``
    (``k``, at most the number of rows). Outputs ``lower`` and ``upper`` leave ``own`` out.
    Arithmetic after the integer product is in float64: the products are exact integers, and
    float32 would add rounding of its own. The tail joins only at the cut (the best ``k_rows``
    lower bounds with the tail's scores): no operation copies every row's bounds to append it.
    """
    dim, n = codes.shape
    g = Graph()
    g.constant("codes", codes)
    g.constant("zero", np.array(_QUERY_LEVELS + 1, dtype=np.uint8))
    product = g.node("MatMulInteger", ["query", "codes", "zero"])
    flat = g.node("Reshape", [product, g.constant("flat", np.array([-1], dtype=np.int64))])
    # The scope's bias goes into the estimate, so both bounds of a row outside it are -inf (an
    # add is ~0.1 ms at 100k rows, a gather of the scope's rows ~0.5 ms).
    estimate = g.node("Add", [g.node("Mul", [g.node("Cast", [flat], to=_onnx.DOUBLE),
                                             g.constant("scale", scale)]), "bias"])
    # Each row's own slack (its quantization error times |q̂|); the query's, the same for
    # every row, is added at the cut instead of to every row.
    slack = g.node("Mul", [g.constant("error", error), "theirs"])
    lower = g.node("Sub", [estimate, slack], "lower")
    upper = g.node("Add", [estimate, slack], "upper")
    best = g.node("TopK", [lower, "k_rows"], also=("best_rows",), axis=0, largest=1, sorted=0)
    pool = g.node("Concat", [g.node("Sub", [best, "own"]), "tail"], axis=0)
    kth = g.node("TopK", [pool, "k"], also=("kth_rows",), axis=0, largest=1, sorted=0)
    cut = g.node("ReduceMin", [kth], keepdims=1)
    rows = g.node("NonZero", [g.node("GreaterOrEqual", [upper, g.node("Sub", [cut, "own"])])])
    appended = g.node("Add", [g.node("NonZero", [g.node("GreaterOrEqual", ["tail", cut])]),
                              g.constant("first_appended", np.array(n, dtype=np.int64))])
    g.node("Concat", [rows, appended], "maybe", axis=1)
    double = _onnx.DOUBLE
    inputs = [value_info("query", _onnx.UINT8, [1, dim]), value_info("own", double, [1]),
              value_info("theirs", double, [1]),
              value_info("tail", double, ["tail"]), value_info("bias", double, [n]),
              value_info("k", _onnx.INT64, [1]), value_info("k_rows", _onnx.INT64, [1])]
    outputs = [value_info("maybe", _onnx.INT64, [1, "maybe"]),
               value_info("lower", double, [n]), value_info("upper", double, [n])]
    return g.model(inputs, outputs, opsets={"": 13})


__all__ = ["ROUNDING", "Int8Rows"]
