"""Build latency of loomctx against LangChain ``trim_messages`` and loom-agent, on one workload.

Why: an agent rebuilds its context before every LLM call, so a build must stay cheap as the
history grows (target: warm build of 10k messages <= 20 ms median on 2 cores, cost no worse than
linear in the history). This script measures it side by side with two peers on the same seeded
history (mixed English/Chinese, tool calls with long results), the same 1k knowledge chunks and
the same token budget, and writes ``benchmarks/results/build.json``.

Each (system, history size) runs in its own worker process so its peak RSS is its own.
"cold" = fresh sources and builder, empty token cache; "warm" = the same builder after appending
one new message (a new message per repetition). Message conversion into a peer's own message
objects is timed apart and not included in its build time.

    python3 benchmarks/bench_build.py [--sizes 1000,10000,100000] [--windows 8000,128000]
                                      [--warm 20] [--cold 3] [--systems loomctx,langchain,loom]
    python3 benchmarks/bench_build.py --quick        # 1k and 10k messages only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

SYSTEMS = ("loomctx", "langchain", "loom")
_OUT = Path(__file__).parent / "results" / "build.json"



# -- workload -------------------------------------------------------------------------------
def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_EN = _words(
    "the service request returns an error when retry policy timeout config user account payment "
    "order database query cache index memory agent tool call result file path version update "
    "deploy build test check value list table schema field token budget context window model "
    "prompt history message session store search vector score rank chunk document report log "
    "metric latency queue worker job task plan step state event handler client server api key "
    "we you it is was can should will not but and or for with from to in on at by of this that "
    "please thanks sure okay next first then after before because so if why how what which"
)
_ZH = _words(
    "我们 需要 检查 这个 服务 请求 返回 错误 重试 策略 超时 配置 用户 账户 支付 订单 数据库 查询 "
    "缓存 索引 内存 代理 工具 调用 结果 文件 路径 版本 更新 部署 构建 测试 上下文 模型 历史 消息 "
    "会话 向量 分数 文档 报告 日志 延迟 队列 任务 计划 步骤 状态 事件 客户端 服务器 为什么 怎么 "
    "可以 应该 但是 因为 所以 如果 然后 已经 还有 今天 明天 问题 方案"
)
_TOOLS = ("search_logs", "query_database", "read_file", "run_tests", "get_metrics")
SYSTEM_PROMPT = (
    "You are a careful operations assistant for a payment platform. Answer in the user's "
    "language (English or Chinese), cite the knowledge you used, call tools when facts are "
    "missing, and never invent log lines or metrics."
)
QUERIES = (
    "why does the payment service return a timeout error after the retry policy update",
    "数据库 查询 为什么 延迟 这么 高，缓存 索引 应该 怎么 配置",
    "which worker job failed in the queue before the deploy and what did the log say",
    "上下文 模型 token budget 历史 消息 会话 状态 报告",
)


class Workload:
    """One seeded history, 1k knowledge documents and the messages appended in warm builds."""

    def __init__(self, messages: list[dict[str, Any]], documents: list[Any],
                 new_messages: list[dict[str, Any]], history_tokens: int,
                 knowledge_tokens_mean: float) -> None:
        self.messages = messages
        self.documents = documents
        self.new_messages = new_messages
        self.history_tokens = history_tokens
        self.knowledge_tokens_mean = knowledge_tokens_mean


def _text(rng: np.random.Generator, n_words: int) -> str:
    """English (60%), Chinese (25%) or mixed (15%) prose of ``n_words`` words."""
    kind = rng.random()
    if kind < 0.6:
        words = [_EN[i] for i in rng.integers(0, len(_EN), n_words)]
        return " ".join(words).capitalize() + "."
    zh = [_ZH[i] for i in rng.integers(0, len(_ZH), n_words)]
    if kind < 0.85:
        return "，".join("".join(zh[i:i + 6]) for i in range(0, len(zh), 6)) + "。"
    en = [_EN[i] for i in rng.integers(0, len(_EN), n_words // 2)]
    return " ".join(en) + " " + "".join(zh[: n_words - n_words // 2]) + "。"


def _tool_output(rng: np.random.Generator, long: bool) -> str:
    """A log-like tool result: ~500-2,000 tokens when ``long``, else a short answer."""
    if not long:
        return _text(rng, int(rng.integers(10, 60)))
    lines = []
    for n in range(int(rng.integers(500, 2000)) // 28):
        words = " ".join(_EN[i] for i in rng.integers(0, len(_EN), 6))
        lines.append(f"2024-05-{1 + n % 28:02d}T12:{n % 60:02d}:07Z INFO worker-{n % 9} "
                     f"job={int(rng.integers(1000, 9999))} latency_ms={int(rng.integers(1, 900))} "
                     f'msg="{words}"')
    return "\n".join(lines)


def _history(rng: np.random.Generator, n: int, t0: float) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    call = 0
    while len(msgs) < n:
        msgs.append({"role": "user", "content": _text(rng, int(rng.integers(10, 81)))})
        room = n - len(msgs)
        if room >= 4 and rng.random() < 0.15:  # a tool round: call(s), result(s), answer
            calls = []
            for _ in range(1 + int(rng.random() < 0.3)):
                call += 1
                args = {"query": _text(rng, 5), "limit": int(rng.integers(5, 50))}
                calls.append({"id": f"call_{call}", "type": "function", "function": {
                    "name": _TOOLS[call % len(_TOOLS)],
                    "arguments": json.dumps(args, ensure_ascii=False)}})
            msgs.append({"role": "assistant", "content": None, "tool_calls": calls})
            msgs.extend({"role": "tool", "tool_call_id": c["id"],
                         "content": _tool_output(rng, rng.random() < 0.3)} for c in calls)
        if len(msgs) < n:
            msgs.append({"role": "assistant", "content": _text(rng, int(rng.integers(10, 81)))})
    for i, m in enumerate(msgs):
        m["timestamp"] = t0 + 30.0 * i
    return msgs


def make_workload(size: int, *, seed: int = 7, n_docs: int = 1000) -> Workload:
    """The same history, documents and new messages for every system (seeded)."""
    import quicktok

    from loomctx.sources.knowledge import Document

    rng = np.random.default_rng(seed)
    messages = _history(rng, size, 1.7e9)
    documents = [Document(id=f"kb/{i:04d}.md", text=_text(rng, 135)) for i in range(n_docs)]
    extra = np.random.default_rng(seed + 1)
    new = [{"role": ("user", "assistant")[i % 2],
            "content": _text(extra, int(extra.integers(10, 81))),
            "timestamp": 1.7e9 + 30.0 * (size + i)} for i in range(64)]
    enc = quicktok.get_encoding("o200k_base")
    texts = [m.get("content") or "" for m in messages] + [
        c["function"]["arguments"] for m in messages for c in m.get("tool_calls", [])]
    doc_counts = quicktok.count_batch(enc, [d.text for d in documents])
    return Workload(messages, documents, new, int(np.sum(quicktok.count_batch(enc, texts))),
                    round(float(np.mean(doc_counts)), 1))



# -- systems ------------------------------------------------------------------------------
def _exact_tokens(messages: list[dict[str, Any]]) -> int:
    """The same exact o200k chat count (OpenAI framing) for every system's output."""
    from loomctx.tokens.bpe import BPECounter
    from loomctx.tokens.chat import ChatCounter

    return ChatCounter(BPECounter("o200k_base"), "openai").messages(messages)


def _orphans(messages: list[dict[str, Any]]) -> int:
    """Tool results without their call, plus calls without their results (both invalid)."""
    calls = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    results = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    return len(results - calls) + len(calls - results)


class _LoomctxCase:
    """loomctx: ContextBuilder over system prompt, user input, history and knowledge."""

    def __init__(self, wl: Workload, window: int) -> None:
        from loomctx.builder import BuildOptions, ContextBuilder
        from loomctx.sources.history import HistorySource
        from loomctx.sources.knowledge import KnowledgeSource
        from loomctx.sources.static import SystemPromptSource, UserInputSource
        from loomctx.tokens import registry

        registry._cached_encoding.cache_clear()  # cold: a new, empty token-count cache
        self.window, self.new = window, wl.new_messages
        self.history = HistorySource(wl.messages)
        self.builder = ContextBuilder(
            [SystemPromptSource(SYSTEM_PROMPT), UserInputSource(), self.history,
             KnowledgeSource(wl.documents)], options=BuildOptions(model="gpt-4o"))
        self.build(QUERIES[0])

    def append(self, i: int) -> None:
        self.history.append(self.new[i % len(self.new)])

    def build(self, query: str) -> None:
        self.result = self.builder.build_sync(query, max_tokens=self.window)

    def check(self, window: int) -> dict[str, Any]:
        msgs = self.result.messages
        by = {s.name: s.included for s in self.result.report.sources}
        tokens = _exact_tokens(msgs)
        return {"tokens": tokens, "fits": tokens <= window, "history_messages": by["L1_recent"],
                "knowledge_items": by["RAG_knowledge"], "orphan_tool_messages": _orphans(msgs),
                "own_count": self.result.tokens, "stages_ms": self.result.report.timings_ms}


def _lc_convert(wl: Workload) -> dict[str, Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    def one(m: dict[str, Any]) -> Any:
        if m["role"] == "user":
            return HumanMessage(m["content"])
        if m["role"] == "tool":
            return ToolMessage(m["content"], tool_call_id=m["tool_call_id"])
        calls = [{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]),
                  "id": c["id"], "type": "tool_call"} for c in m.get("tool_calls") or []]
        return AIMessage(m.get("content") or "", tool_calls=calls)

    return {"history": [one(m) for m in wl.messages], "new": [one(m) for m in wl.new_messages]}


def _lc_counter() -> Callable[[list[Any]], int]:
    """Exact o200k count of LangChain messages (OpenAI framing), batched, no cache."""
    import quicktok

    enc = quicktok.get_encoding("o200k_base")
    roles = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}

    def count(messages: list[Any]) -> int:
        n, texts = 3, []
        for m in messages:
            n += 3
            texts.append(roles[m.type])
            texts.append(m.content if isinstance(m.content, str) else json.dumps(m.content))
            if m.type == "tool":
                texts.append(m.tool_call_id)
            for c in getattr(m, "tool_calls", None) or ():
                n += 3
                texts.append(c["name"])
                texts.append(json.dumps(c["args"], ensure_ascii=False))
        return n + int(np.sum(quicktok.count_batch(enc, texts)))

    return count


def _bm25_terms(text: str) -> list[str]:
    import re

    return re.findall(r"[a-z0-9]+|[\u4e00-\u9fff]", text.lower())


class _LangChainCase:
    """LangChain: top-5 BM25 chunks (rank-bm25) in the system message, then trim_messages."""

    def __init__(self, wl: Workload, converted: dict[str, Any], window: int) -> None:
        from rank_bm25 import BM25Okapi

        self.window, self.docs, self.new = window, wl.documents, converted["new"]
        self.history = list(converted["history"])
        self.bm25 = BM25Okapi([_bm25_terms(d.text) for d in wl.documents])
        self.counter = _lc_counter()
        self.build(QUERIES[0])

    def append(self, i: int) -> None:
        self.history.append(self.new[i % len(self.new)])

    def build(self, query: str) -> None:
        from langchain_core.messages import HumanMessage, SystemMessage, trim_messages

        top = self.bm25.get_top_n(_bm25_terms(query), self.docs, n=5)
        system = SystemMessage(SYSTEM_PROMPT + "\n\nKnowledge:\n" + "\n\n".join(
            f"[{d.id}] {d.text}" for d in top))
        self.out = trim_messages(
            [system, *self.history, HumanMessage(query)], max_tokens=self.window,
            token_counter=self.counter, strategy="last", include_system=True,
            allow_partial=False, start_on="human")

    def check(self, window: int) -> dict[str, Any]:
        from langchain_core.messages import convert_to_openai_messages

        msgs = convert_to_openai_messages(self.out)
        tokens = _exact_tokens(msgs)
        return {"tokens": tokens, "fits": tokens <= window,
                "history_messages": max(0, len(self.out) - 2), "knowledge_items": 5,
                "orphan_tool_messages": _orphans(msgs), "own_count": self.counter(self.out)}


def _loom_convert(wl: Workload) -> dict[str, Any]:
    from loom.config import KnowledgeDocument
    from loom.types import Message
    from loom.types.messages import ToolCall

    def one(m: dict[str, Any]) -> Any:
        calls = [ToolCall(id=c["id"], name=c["function"]["name"],
                          arguments=json.loads(c["function"]["arguments"]))
                 for c in m.get("tool_calls") or []]
        return Message(role=m["role"], content=m.get("content") or "", tool_calls=calls,
                       tool_call_id=m.get("tool_call_id"))

    return {"history": [one(m) for m in wl.messages], "new": [one(m) for m in wl.new_messages],
            "docs": [KnowledgeDocument(content=d.text, title=d.id) for d in wl.documents]}


def _loom_openai(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {
            "name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
            for c in m.tool_calls]
    if m.tool_call_id:
        out["tool_call_id"] = m.tool_call_id
    return out


class _LoomAgentCase:
    """loom-agent: ContextManager + ContextRuntime, then the agent loop's per-call context step.

    ``loom.runtime.loop_runner`` does, before each LLM call: measure rho, ``renew()`` if
    rho >= 1, else ``compress(strategy)`` if a threshold is crossed, then ``build_messages``.
    Its token count is ``len(text) // 4`` (loom.utils.tokens); there is no exact budget.
    """

    def __init__(self, wl: Workload, converted: dict[str, Any], window: int) -> None:
        from loom.config import KnowledgeSource as LoomKnowledge
        from loom.runtime.context import ContextPolicy
        from loom.runtime.context_runtime import ContextRuntime

        self.new = converted["new"]
        self.cm = ContextPolicy.manager(
            max_tokens=window,
            knowledge_sources=[LoomKnowledge.inline("knowledge", converted["docs"])])
        self.runtime = ContextRuntime(context_manager=self.cm, ecosystem_manager=None,
                                      skill_injection_policy=None, emit=lambda *a, **k: None)
        self.runtime.initialize_context(QUERIES[0], SYSTEM_PROMPT, None)
        self.cm.partitions.history.extend(converted["history"])
        self.build(QUERIES[0])

    def append(self, i: int) -> None:
        self.cm.partitions.history.append(self.new[i % len(self.new)])

    def build(self, query: str) -> None:
        cm = self.cm
        cm.dashboard.update_rho(cm.rho)
        if cm.should_renew():
            cm.renew()
        elif strategy := cm.should_compress():
            cm.compress(strategy)
        self.out = self.runtime.build_messages(query)

    def check(self, window: int) -> dict[str, Any]:
        from loom.utils import count_messages_tokens

        msgs = [_loom_openai(m) for m in self.out]
        tokens = _exact_tokens(msgs)
        return {"tokens": tokens, "fits": tokens <= window,
                "history_messages": len(self.cm.partitions.history),
                "knowledge_items": len(
                    self.cm.partitions.working.knowledge_surface.evidence_packs),
                "orphan_tool_messages": _orphans(msgs),
                "own_count": count_messages_tokens(self.out)}


class _Peer:
    def __init__(self, convert: Callable[[Workload], Any],
                 cold: Callable[[Workload, Any, int], Any]) -> None:
        self.convert, self.cold = convert, cold


PEERS = {
    "loomctx": _Peer(lambda wl: None, lambda wl, _c, w: _LoomctxCase(wl, w)),
    "langchain": _Peer(_lc_convert, _LangChainCase),
    "loom": _Peer(_loom_convert, _LoomAgentCase),
}

def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _stats(samples: list[float]) -> dict[str, Any]:
    s = sorted(samples)
    return {
        "n": len(s),
        "median_ms": round(statistics.median(s), 3),
        "p95_ms": round(s[min(len(s) - 1, round(0.95 * (len(s) - 1)))], 3),
        "min_ms": round(s[0], 3),
        "max_ms": round(s[-1], 3),
    }


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1000.0, out


def run_worker(system: str, size: int, windows: list[int], warm: int, cold: int) -> dict[str, Any]:
    """Every window, cold then warm, for one system and one history size (in this process)."""
    peer = PEERS[system]
    tiny = make_workload(10, n_docs=5)
    # Imports, vocabularies and tokenizer dictionaries load once per process: timed apart.
    first_use_ms, _ = _timed(lambda: peer.cold(tiny, peer.convert(tiny), 8000))
    wl: Workload = make_workload(size)
    data_rss = _rss_mb()
    conversion_ms, converted = _timed(lambda: peer.convert(wl))
    out: dict[str, Any] = {
        "system": system, "messages": size, "history_tokens": wl.history_tokens,
        "knowledge_chunks": len(wl.documents),
        "knowledge_tokens_mean": wl.knowledge_tokens_mean,
        "first_use_ms": round(first_use_ms, 1), "conversion_ms": round(conversion_ms, 1),
        "rss_after_data_mb": data_rss, "windows": {},
    }
    for window in windows:
        cold_ms: list[float] = []
        case: Any = None
        for _ in range(max(1, cold)):
            start = time.perf_counter()
            case = peer.cold(wl, converted, window)
            cold_ms.append((time.perf_counter() - start) * 1000.0)
        first = case.check(window)
        warm_ms = []
        for i in range(warm):
            case.append(i)
            query = QUERIES[i % len(QUERIES)]
            start = time.perf_counter()
            case.build(query)
            warm_ms.append((time.perf_counter() - start) * 1000.0)
        last = case.check(window)
        out["windows"][str(window)] = {
            "cold": _stats(cold_ms), "warm": _stats(warm_ms),
            "cold_result": first, "warm_result": last,
        }
    out["peak_rss_mb"] = _rss_mb()
    return out


def _spawn(system: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", system, "--sizes", str(size),
           "--windows", ",".join(map(str, args.windows)), "--warm", str(args.warm),
           "--cold", str(_cold_reps(args.cold, size))]
    # loom-agent writes .loom/memory/*.json into the working directory on renewal: keep it out
    # of the repository.
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": _pythonpath()})
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"system": system, "messages": size, "error": "\n".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _pythonpath() -> str:
    root = str(Path(__file__).resolve().parent.parent)
    old = os.environ.get("PYTHONPATH")
    return root if not old else f"{root}{os.pathsep}{old}"


def _cold_reps(cold: int, size: int) -> int:
    return max(1, cold - 1) if size >= 100_000 else cold


def _machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {"cpus": os.cpu_count(), "cpu": cpu, "memory": mem,
            "python": platform.python_version(), "platform": platform.platform(),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    root = Path(__file__).resolve().parent.parent
    git = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root,
                         capture_output=True, text=True, check=False)
    out = {"loomctx_git": git.stdout.strip() or "unknown"}
    for dist in ("loomctx", "langchain-core", "loom-agent", "quicktok-v1", "rank-bm25"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _print_table(results: list[dict[str, Any]]) -> None:
    print(f"{'system':<10}{'msgs':>8}{'window':>8} {'mode':<5}{'median':>10}{'p95':>10}"
          f"{'min-max':>22}{'tokens':>9} fits  hist  RSS MB")
    for r in results:
        if "error" in r:
            print(f"{r['system']:<10}{r['messages']:>8}  ERROR: {r['error']}")
            continue
        for window, w in r["windows"].items():
            for mode in ("cold", "warm"):
                s, res = w[mode], w[f"{mode}_result"]
                spread = f"{s['min_ms']:.2f}-{s['max_ms']:.2f}"
                print(f"{r['system']:<10}{r['messages']:>8}{window:>8} {mode:<5}"
                      f"{s['median_ms']:>10.2f}{s['p95_ms']:>10.2f}{spread:>22}"
                      f"{res['tokens']:>9} {'yes' if res['fits'] else 'NO ':<5}"
                      f"{res['history_messages']:>5} {r['peak_rss_mb']:>7}")


def markdown(report: dict[str, Any]) -> str:
    """The README table for a ``build.json`` report: one row per size x window x mode."""
    by = {(r["system"], r["messages"]): r for r in report["results"]}
    systems = [s for s in SYSTEMS if any(k[0] == s for k in by)]
    head = "| messages | window | mode | " + " | ".join(
        f"{s} median / p95 (min–max) ms" for s in systems) + " |"
    lines = [head, "|" + "---|" * (3 + len(systems))]
    for size in report["settings"]["sizes"]:
        for window in report["settings"]["windows"]:
            for mode in ("cold", "warm"):
                cells = []
                for system in systems:
                    r = by.get((system, size))
                    if r is None or "error" in r:
                        cells.append("error" if r else "–")
                        continue
                    w = r["windows"][str(window)]
                    st, res = w[mode], w[f"{mode}_result"]
                    fit = "" if res["fits"] else f" **over: {res['tokens']:,} tok**"
                    cells.append(f"{st['median_ms']:.1f} / {st['p95_ms']:.1f} "
                                 f"({st['min_ms']:.1f}–{st['max_ms']:.1f}){fit}")
                lines.append(f"| {size:,} | {window // 1000}k | {mode} | " + " | ".join(cells)
                             + " |")
    lines += ["", "| system | messages | window | cold → warm tokens (fits?) | history msgs "
              "cold → warm | orphan tool msgs | conversion ms | peak RSS MB |",
              "|---|---|---|---|---|---|---|---|"]
    for (system, size), r in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if "error" in r:
            lines.append(f"| {system} | {size:,} | – | error: {r['error'][-80:]} | | | | |")
            continue
        for window, w in r["windows"].items():
            c, h = w["cold_result"], w["warm_result"]
            fits = "/".join("yes" if x["fits"] else "NO" for x in (c, h))
            lines.append(
                f"| {system} | {size:,} | {int(window) // 1000}k | {c['tokens']:,} → "
                f"{h['tokens']:,} ({fits}) | {c['history_messages']:,} → "
                f"{h['history_messages']:,} | {c['orphan_tool_messages']} → "
                f"{h['orphan_tool_messages']} | {r['conversion_ms']:,.0f} | {r['peak_rss_mb']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="history sizes, comma-separated")
    parser.add_argument("--windows", default="8000,128000", help="token budgets, comma-separated")
    parser.add_argument("--warm", type=int, default=20, help="warm builds per window")
    parser.add_argument("--cold", type=int, default=3,
                        help="cold builds per window (one fewer at 100k messages)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="subset of " + str(SYSTEMS))
    parser.add_argument("--quick", action="store_true", help="1k and 10k messages only")
    parser.add_argument("--out", type=Path, default=_OUT)
    parser.add_argument("--markdown", type=Path,
                        help="print the README table of an existing build.json and exit")
    parser.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text(encoding="utf-8"))))
        return 0
    sizes = [1000, 10000] if args.quick else [int(s) for s in args.sizes.split(",") if s]
    args.windows = [int(w) for w in args.windows.split(",") if w]
    if args.worker:
        print(json.dumps(run_worker(args.worker, sizes[0], args.windows, args.warm, args.cold)))
        return 0
    systems = [s for s in args.systems.split(",") if s]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        parser.error(f"unknown systems {unknown!r}: use some of {list(SYSTEMS)!r}")
    results = []
    for size in sizes:
        for system in systems:
            print(f"... {system} with {size:,} messages", file=sys.stderr, flush=True)
            results.append(_spawn(system, size, args))
    _print_table(results)
    report = {"benchmark": "build", "machine": _machine(), "versions": _versions(),
              "settings": {"sizes": sizes, "windows": args.windows, "warm": args.warm,
                           "cold": args.cold, "model": "gpt-4o (o200k_base)",
                           "system_prompt_chars": len(SYSTEM_PROMPT)},
              "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
