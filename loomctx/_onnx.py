"""A small ONNX model writer: the protobuf encoding of the few messages a graph of ours needs.

onnxruntime runs a model given as ONNX bytes; the ``onnx`` package that usually writes them is
~17 MB of generated code for a job that takes the protobuf wire format and six message types
(``onnx.proto``: ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
ValueInfoProto). This module writes exactly those. Field numbers are the ones of onnx.proto;
``tests/embed/test_minilm.py`` checks a graph written here against the numpy forward pass.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from loomctx.errors import ConfigError

Buffer: TypeAlias = bytes | memoryview

# TensorProto.DataType
_DTYPES = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3,
           np.dtype(np.int32): 6, np.dtype(np.int64): 7, np.dtype(np.float64): 11}
FLOAT = 1
UINT8 = 2
INT32 = 6
INT64 = 7
BOOL = 9
DOUBLE = 11
_FLOAT, _INT, _INTS = 1, 2, 7  # AttributeProto.AttributeType


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _int(number: int, value: int) -> bytes:
    return _key(number, 0) + _varint(value)


def _bytes(number: int, value: bytes) -> bytes:
    return _key(number, 2) + _varint(len(value)) + value


def _str(number: int, value: str) -> bytes:
    return _bytes(number, value.encode("utf-8"))


def _attribute(name: str, value: float | int | Sequence[int]) -> bytes:
    out = _str(1, name)
    if isinstance(value, float):
        return out + _key(2, 5) + struct.pack("<f", value) + _int(20, _FLOAT)
    if isinstance(value, int):
        return out + _int(3, value) + _int(20, _INT)
    return out + b"".join(_int(8, v) for v in value) + _int(20, _INTS)


def _message(number: int, pieces: Sequence[Buffer]) -> list[Buffer]:
    """A length-delimited field holding ``pieces`` (joined), as pieces: a large array is copied
    once, when the model's bytes are joined, not once per message it is nested in."""
    return [_key(number, 2) + _varint(sum(memoryview(p).nbytes for p in pieces)), *pieces]


def _tensor(name: str, array: np.ndarray) -> list[Buffer]:
    data = np.asarray(array)  # (np.ascontiguousarray would make a scalar one-dimensional)
    little = data.dtype.newbyteorder("<")
    code = _DTYPES.get(little)
    if code is None:
        raise ValueError(f"no ONNX type for {data.dtype}")
    # the array's own bytes, not a copy: the model's join copies them (the caller leaves the
    # array unchanged until then)
    raw = np.ascontiguousarray(data.astype(little, copy=False)).reshape(-1).view(np.uint8).data
    head = b"".join(_int(1, d) for d in data.shape) + _int(2, code) + _str(8, name)
    return [head, *_message(9, [raw])]


def tensor(name: str, array: np.ndarray) -> bytes:
    """A TensorProto holding ``array`` (float32/64, uint8, int8, int32 or int64) as raw
    little-endian data."""
    return b"".join(_tensor(name, array))


def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> bytes:
    """A ValueInfoProto: a graph input or output of ``elem_type`` and ``shape`` (a str is a
    named, free dimension)."""
    dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in shape)
    tensor_type = _int(1, elem_type) + _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


@dataclass
class Graph:
    """Nodes and initialisers appended in order; :meth:`model` is the ModelProto's bytes."""

    nodes: list[bytes] = field(default_factory=list)
    initializers: list[list[Buffer]] = field(default_factory=list)
    """Each initializer's TensorProto as pieces (see :func:`_message`)."""
    _names: int = 0

    def constant(self, name: str, array: np.ndarray) -> str:
        """An initializer named ``name`` holding ``array``, which is read (not copied) when
        :meth:`model` joins the model's bytes."""
        self.initializers.append(_tensor(name, array))
        return name

    def node(self, op: str, inputs: Sequence[str], output: str | None = None, *,
             also: Sequence[str] = (), **attributes: float | int | Sequence[int]) -> str:
        """Append ``op`` (default domain) with its output named ``output`` or a fresh name, and
        the outputs ``also`` after it (an op's further outputs, e.g. TopK's indices); returns
        the first output's name."""
        name = output or self._fresh(op)
        body = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in (name, *also))
        body += _str(4, op)
        body += b"".join(_bytes(5, _attribute(k, v)) for k, v in attributes.items())
        self.nodes.append(body)
        return name

    def _fresh(self, op: str) -> str:
        self._names += 1
        return f"{op.lower()}_{self._names}"

    def model(self, inputs: Sequence[bytes], outputs: Sequence[bytes], *,
              opsets: dict[str, int]) -> bytes:
        graph: list[Buffer] = [b"".join(_bytes(1, n) for n in self.nodes) + _str(2, "loomctx")]
        for t in self.initializers:
            graph += _message(5, t)
        graph.append(b"".join(_bytes(11, i) for i in inputs)
                     + b"".join(_bytes(12, o) for o in outputs))
        return b"".join([_int(1, 8) + _str(2, "loomctx"), *_message(7, graph),  # ir_version 8
                         *(_bytes(8, _str(1, domain) + _int(2, version))
                           for domain, version in opsets.items())])


def session(model: bytes, threads: int | None, *, needed_by: str, instead: str) -> Any:
    """An onnxruntime CPU session running ``model`` on ``threads`` intra-op threads (None:
    onnxruntime's own choice). Without onnxruntime, a :class:`ConfigError` says that
    ``needed_by`` needs it and what to use ``instead``."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise ConfigError(f"{needed_by} needs onnxruntime: pip install onnxruntime "
                          f"(or use {instead})") from exc
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads or 0  # 0: onnxruntime's own choice
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: they are raised, not logged
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


__all__ = ["BOOL", "DOUBLE", "FLOAT", "INT32", "INT64", "UINT8", "Graph", "session", "tensor",
           "value_info"]
