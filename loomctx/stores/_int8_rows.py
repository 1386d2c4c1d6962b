"""The exact nearest rows of a large matrix for a quarter of the memory traffic.

A float32 product over 100k × 512 rows reads 205 MB per search, ~16 ms on one core of the
benchmark machine, and it was the slowest step of a warm build over a 100k-message session
(``benchmarks/bench_memory.py``). An int8 copy of the rows (one scale per row) is a quarter of
that; onnxruntime (a dependency already, for the embedders) multiplies it with a prepacked
integer kernel in ~3 ms. Its scores are estimates, and the search stays exact by bounding them:

for a row ``x`` with int8 copy ``x̂`` and the query ``q`` with its own integer copy ``q̂``,
``|q·x − q̂·x̂| ≤ |q − q̂|·|x| + |q̂|·|x − x̂|`` (two Cauchy–Schwarz steps; every norm is kept or
computed exactly). No row whose upper bound is below the k-th best lower bound can be among the
best k, so only the others are scored again in float32: ~400–650 rows for k = 256 of 100k in
``benchmarks/bench_memory.py``'s session. The result is the float32 product's top k.

The query gets 7 bits, not 8: x86 kernels without VNNI multiply unsigned × signed byte pairs into
a saturating 16-bit sum (``vpmaddubsw``), and 2 · 127 · 128 fits in it where 2 · 255 · 128 does
not, so the integer products are exact on every kernel onnxruntime may pick.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loomctx._onnx import Graph, session, value_info

_INT32 = 6  # TensorProto.DataType
_QUERY_LEVELS = 63  # the query's integers: -63..63 around a zero point of 64
_CHUNK = 8192  # rows quantized at a time: no float32 temporary of the whole matrix
ROUNDING = 2.0 ** -23
"""Per term, relative to ``|q|·|x|``: the float32 product the estimates stand in for rounds
(at most one unit in the last place of a float32 per multiply-add), so each bound is widened by
``dim · ROUNDING · |q|·|x|`` to hold for that product as well as for the exact one."""


class Int8Rows:
    """An int8 copy of ``matrix``'s rows, their scales, norms and quantization errors, and an
    onnxruntime session multiplying a query with them."""

    def __init__(self, matrix: np.ndarray) -> None:
        n, dim = matrix.shape
        self.rows = n
        self._dim = dim
        scale = np.empty(n, dtype=np.float32)
        norm = np.empty(n, dtype=np.float64)
        error = np.empty(n, dtype=np.float64)
        codes = np.empty((dim, n), dtype=np.int8)  # transposed: the graph's right-hand side
        for start in range(0, n, _CHUNK):
            block = matrix[start:start + _CHUNK]
            s = np.abs(block).max(axis=1) / 127
            s[s == 0] = 1.0  # an all-zero row: any scale codes it exactly
            c = np.clip(np.rint(block / s[:, None]), -127, 127)
            end = start + len(block)
            scale[start:end] = s
            wide = block.astype(np.float64)  # the errors as they are, not as float32 rounds them
            norm[start:end] = np.linalg.norm(wide, axis=1)
            error[start:end] = np.linalg.norm(wide - c * s[:, None].astype(np.float64), axis=1)
            codes[:, start:end] = c.T
        self._scale = scale
        self._norm = norm
        self._error = error
        graph = Graph()
        graph.constant("rows", codes)
        graph.constant("zero", np.array(_QUERY_LEVELS + 1, dtype=np.uint8))
        graph.node("MatMulInteger", ["query", "rows", "zero"], "dot")
        model = graph.model([value_info("query", 2, [1, dim])],
                            [value_info("dot", _INT32, [1, n])], opsets={"": 13})
        self._session: Any = session(model, 1, needed_by="the int8 vector search",
                                     instead="a smaller store")

    def bounds(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of every row's product with ``query`` (float32, unit or not)."""
        q = query.astype(np.float64)
        top = float(np.abs(q).max())
        if top == 0.0:  # every product is 0
            zeros = np.zeros(self.rows, dtype=np.float64)
            return zeros, zeros
        step = top / _QUERY_LEVELS
        codes = np.clip(np.rint(q / step), -_QUERY_LEVELS, _QUERY_LEVELS)
        approx = codes * step
        feed = (codes + _QUERY_LEVELS + 1).astype(np.uint8).reshape(1, self._dim)
        dots = self._session.run(None, {"query": feed})[0][0]
        estimate = dots * (self._scale.astype(np.float64) * step)
        size = float(np.linalg.norm(q))
        slack = ((float(np.linalg.norm(q - approx)) + self._dim * ROUNDING * size) * self._norm
                 + float(np.linalg.norm(approx)) * self._error)
        return estimate - slack, estimate + slack


__all__ = ["ROUNDING", "Int8Rows"]
