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



def test_a_model_with_large_constants_is_the_plain_nested_encoding() -> None:
    # The writer copies a constant's data once, when the model is joined; the bytes must be
    # those of each message written inside its parent.
    rng = np.random.default_rng(0)
    arrays = {"big": rng.integers(-127, 128, (300, 70)).astype(np.int8),
              "f64": rng.standard_normal(1000), "scalar": np.array(3, np.int64),
              "empty": np.zeros((0, 4), np.float32),
              "strided": rng.standard_normal((6, 8)).astype(np.float32).T}  # not contiguous
    g = _onnx.Graph()
    for name, array in arrays.items():
        g.constant(name, array)
    g.node("Identity", ["big"], "y")
    inputs = [_onnx.value_info("x", _onnx.FLOAT, ["n"])]
    outputs = [_onnx.value_info("y", _onnx.INT32, [300, 70])]
    tensors = [b"".join(_onnx._int(1, d) for d in a.shape) + _onnx._int(2, _onnx._DTYPES[a.dtype])
               + _onnx._str(8, name) + _onnx._bytes(9, np.ascontiguousarray(a).tobytes())
               for name, a in arrays.items()]
    assert [_onnx.tensor(name, a) for name, a in arrays.items()] == tensors
    graph = (b"".join(_onnx._bytes(1, n) for n in g.nodes) + _onnx._str(2, "loomctx")
             + b"".join(_onnx._bytes(5, t) for t in tensors) + _onnx._bytes(11, inputs[0])
             + _onnx._bytes(12, outputs[0]))
    plain = (_onnx._int(1, 8) + _onnx._str(2, "loomctx") + _onnx._bytes(7, graph)
             + _onnx._bytes(8, _onnx._str(1, "") + _onnx._int(2, 13)))
    assert g.model(inputs, outputs, opsets={"": 13}) == plain
