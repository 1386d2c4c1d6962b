"""The ONNX writer: protobuf encoding checked by hand, and small graphs run by onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

from loomctx import _onnx


def test_varints_follow_the_protobuf_encoding() -> None:
    assert _onnx._varint(1) == b"\x01"
    assert _onnx._varint(300) == b"\xac\x02"
    assert _onnx._varint(-1) == b"\xff" * 9 + b"\x01"  # int64 -1: ten bytes, two's complement


def test_a_dtype_onnx_has_no_code_for_is_refused() -> None:
    with pytest.raises(ValueError, match="no ONNX type"):
        _onnx.tensor("x", np.zeros(3, dtype=np.complex64))


def _run(graph: _onnx.Graph, feeds: dict[str, np.ndarray],
         out_shape: list[int | str]) -> np.ndarray:
    inputs = [_onnx.value_info(name, _onnx.FLOAT, ["n", 4]) for name in feeds]
    model = graph.model(inputs, [_onnx.value_info("y", _onnx.FLOAT, out_shape)], opsets={"": 17})
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(["y"], feeds)[0]


def test_every_attribute_kind_reaches_onnxruntime() -> None:
    # float (epsilon), negative int (axis), ints (perm), and a scalar constant that stays 0-d
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    g = _onnx.Graph()
    w = g.constant("w", np.full(4, 2.0, np.float32))
    b = g.constant("b", np.zeros(4, np.float32))
    two = g.constant("two", np.array(2.0, np.float32))
    normed = g.node("LayerNormalization", ["x", w, b], epsilon=0.5, axis=-1)
    soft = g.node("Softmax", [g.node("Mul", [normed, two])], axis=-1)
    g.node("Transpose", [soft], "y", perm=[1, 0])
    y = _run(g, {"x": x}, [4, "n"])
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    z = 2.0 * 2.0 * (x - mean) / np.sqrt(var + 0.5)
    want = np.exp(z - z.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    assert y.shape == (4, 3)
    assert np.allclose(y, want.T, atol=1e-6)

