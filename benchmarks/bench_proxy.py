"""The context proxy (``loomctx serve``): what it adds per request, its throughput, and what the
upstream is sent over a replayed agent session, against sending the full history straight.

The proxy runs as its own process (``python -m loomctx.cli.main serve``; ``--embedder hashing``
unless ``--embedder default`` asks for serve's own default, the joint USE + MiniLM), the fake
upstream (:class:`loomctx.testing.windowed.WindowedFakeServer`) and the clients in this one,
all on loopback.

- ``overhead``: a session with 1k / 10k messages of history; each request adds one user message,
  either alone with ``X-Loomctx-Session`` (``session`` mode, history seeded through the API) or
  with the whole conversation (``whole`` mode: the proxy finds what is new). Each proxied request
  is followed by the body the proxy forwarded, sent straight to the fake; the overhead is the
  difference of the two wall times, p50 / p95 over the requests, and, beside it, the build's own
  time (its report's ``timings_ms.total``) and what remains besides the build.
- ``throughput``: 16 client threads, each on its own session, sending requests back to back;
  requests per second over all of them (the fake answers at once), through the proxy, through
  the gateway floor (``_relay.py``: the proxy's server and HTTP client forwarding the bytes, no
  loomctx) and straight to the fake, one after the other in the same run. Beside each, the CPU
  milliseconds per request of the clients, the fake upstream (both in this process), the
  server in between (proxy or relay), and of other processes on the machine in that time:
  throughput is bounded by the CPU all of them spend per request.
- ``replay``: the seeded 50-turn tool-using agent of ``_replays.py``; before each assistant step
  the client sends the whole conversation so far, either through the proxy (whole-conversation
  mode, window configured) or straight to the fake. The fake has an 8,192-token window and
  refuses what exceeds it, as real APIs do; it reports as cached the tokens of the request's
  leading part that repeat the previous accepted request.

- ``--workers N [N ...]`` (part ``workers``): the throughput run's clients against ``loomctx
  serve --workers N`` over one PostgreSQL store and one Redis bus (started here), for each N
  (``--workers 1`` is one process on the same store), and straight to the upstream,
  interleaved ``--repeats`` times in one run: requests per second and the latency the proxy
  adds (p50 / p95 over the direct run's), median and spread of the repeats; and the CPU
  milliseconds per request of every process involved (the workers, PostgreSQL, Redis, the
  upstream, the load generator) and of the machine, so what bounds the rate can be read off.
  The upstream (``--upstream``) is ``_upstream.py`` in its own process (``lean``, the default:
  a real API's CPU is not on this machine, and the test fake's took a tenth of a worker's
  share of the cores) or the test fake in this one (``fake``).
- ``fairness``: tenant B's latency (4 clients, fast answers) alone, then while tenant A keeps
  twice its share (``--tenant-requests``) of slow requests (0.5 s upstream) in flight, its
  excess refused with 429 and retried; same process, same run, ``--repeats`` times.

    python3 benchmarks/bench_proxy.py [--quick] [--only PART ...] [--json PATH]
    python3 benchmarks/bench_proxy.py --only throughput --json /tmp/tput.json
    python3 benchmarks/bench_proxy.py --only overhead --quick --embedder default
    python3 benchmarks/bench_proxy.py --only workers --workers 1 2 4 --repeats 3 \
        --json benchmarks/results/proxy_workers.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from _replays import tool_agent

from loomctx.servers import ServerError
from loomctx.testing import Reply, ToolCall
from loomctx.testing.processes import wait_healthy
from loomctx.testing.windowed import WindowedFakeServer

_OUT = Path(__file__).parent / "results" / "proxy.json"
ROOT = Path(__file__).resolve().parent.parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Child:
    """A server in a child process on a free port, stopped on exit; :meth:`cpu` is the CPU
    seconds it has used (user + system, every thread; Linux ``/proc``)."""

    def __init__(self, args: list[str], health: str) -> None:
        self.port = _port()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, *args, "--port", str(self.port)],
                                     env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}"
        try:
            wait_healthy(self.url + health, self.proc)
        except ServerError:
            raise RuntimeError(f"{args[:2]} did not start") from None

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime

    def __enter__(self) -> _Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


EMBEDDER = "hashing"
"""The ``serve --embedder`` of every proxy started here (``--embedder``)."""


class Proxy(_Child):
    """``loomctx serve`` in a child process (:data:`EMBEDDER`)."""

    def __init__(self, upstream: str, *extra: str) -> None:
        super().__init__(["-m", "loomctx.cli.main", "serve", "--upstream", upstream,
                          "--embedder", EMBEDDER, *extra], "/health")

    def tree_cpu(self) -> float:
        """CPU seconds of the server and every process it started (``--workers``)."""
        return _tree_cpu(self.proc.pid)


def _cpu_of(pid: int) -> float:
    """CPU seconds a process has used (user + system, every thread; 0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _parents() -> dict[int, int]:
    """Every live process's parent (Linux ``/proc``)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return out


def _children(pid: int) -> list[int]:
    """The worker processes of the server ``pid`` (multiprocessing's own helpers left out)."""
    out = []
    for child, parent in _parents().items():
        try:
            if parent == pid and b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                out.append(child)
        except OSError:  # it just exited
            continue
    return sorted(out)


def _tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and its live descendants (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += _cpu_of(pid)
        todo += children.get(pid, [])
    return total


class Relay(_Child):
    """The gateway floor (``_relay.py``): the proxy's server and client, forwarding bytes."""

    def __init__(self, upstream: str) -> None:
        super().__init__([str(Path(__file__).parent / "_relay.py"), "--upstream", upstream],
                         "/health")


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _busy() -> float:
    """CPU seconds every core has spent busy since boot (Linux ``/proc/stat``)."""
    user, nice, system, _idle, _iowait, irq, softirq = Path("/proc/stat").read_text().split(
        "\n", 1)[0].split()[1:8]
    return sum(int(v) for v in (user, nice, system, irq, softirq)) / _TICK


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _history(n: int) -> list[dict[str, Any]]:
    topics = ["the invoice run", "the staging cluster", "the Q3 forecast", "a customer refund",
              "the on-call rota", "the data migration", "the release notes"]
    out = []
    for i in range(n // 2):
        t = topics[i % len(topics)]
        out += [{"role": "user", "content": f"Step {i}: what is the status of {t}? Please list "
                                            f"owners, blockers and the next date for {t}."},
                {"role": "assistant", "content": f"For {t}: owner team {i % 13}, one blocker "
                                                 f"(review {i}), next check on day {i % 28 + 1}."}]
    return out


def overhead(sizes: list[int], requests: int) -> list[dict[str, Any]]:
    rows = []
    with WindowedFakeServer(window=10**9, default="ok") as up, \
            Proxy(up.url + "/v1", "--max-messages", "200000") as proxy, \
            httpx.Client(timeout=300) as client:
        for size, mode in [(n, m) for n in sizes for m in ("session", "whole")]:
            sid = f"hist-{size}-{mode}"
            history = _history(size)
            if mode == "session":
                client.post(f"{proxy.url}/v1/loomctx/sessions",
                            json={"id": sid}).raise_for_status()
                for i in range(0, len(history), 1000):
                    client.post(f"{proxy.url}/v1/loomctx/sessions/{sid}/messages",
                                json={"messages": history[i:i + 1000]}).raise_for_status()
            added, own, build, tokens = [], [], [], []
            for k in range(requests + 3):
                new = {"role": "user", "content": f"New question {k}: status of the invoice run?"}
                if mode == "session":
                    body = {"model": "gpt-4o", "max_tokens": 500, "messages": [new]}
                    headers = {"x-loomctx-session": sid}
                else:  # the client sends everything, the proxy finds what is new
                    history.append(new)
                    body = {"model": "gpt-4o", "max_tokens": 500, "messages": history}
                    headers = {}
                t0 = time.perf_counter()
                r = client.post(proxy.url + "/v1/chat/completions", json=body, headers=headers)
                t1 = time.perf_counter()
                r.raise_for_status()
                if mode == "whole":
                    history.append({"role": "assistant", "content": "ok"})
                raw = up.requests[-1].raw
                t2 = time.perf_counter()
                client.post(up.url + "/v1/chat/completions", content=raw,
                            headers={"content-type": "application/json"}).raise_for_status()
                t3 = time.perf_counter()
                record = client.get(f"{proxy.url}/v1/loomctx/builds/"
                                    f"{r.headers['x-loomctx-build']}").json()
                if k >= 3:  # the first request of "whole" stores the history: left out too
                    added.append((t1 - t0 - (t3 - t2)) * 1000)
                    build.append(record["report"]["timings_ms"]["total"])
                    own.append(added[-1] - build[-1])
                    tokens.append(record["tokens"])
            rows.append({"history_messages": size, "mode": mode, "requests": requests,
                         "upstream_prompt_tokens_median": statistics.median(tokens),
                         "added_ms_p50": round(_pct(added, .5), 1),
                         "added_ms_p95": round(_pct(added, .95), 1),
                         "added_ms_min": round(min(added), 1),
                         "added_ms_max": round(max(added), 1),
                         "build_ms_p50": round(_pct(build, .5), 1),
                         "besides_build_ms_p50": round(_pct(own, .5), 1),
                         "besides_build_ms_p95": round(_pct(own, .95), 1)})
            print(rows[-1], flush=True)
    return rows


def throughput(clients: int, per_client: int) -> dict[str, Any]:
    """Requests per second through the proxy, through the bare relay and straight to the
    fake, one after the other in one run; and the CPU each process spent per request."""
    with WindowedFakeServer(window=10**9, default="ok") as up, \
            Proxy(up.url + "/v1") as proxy, Relay(up.url) as relay:
        result: dict[str, Any] = {"clients": clients, "requests_per_client": per_client,
                                  "load_generator": "_load.py (asyncio, raw keep-alive "
                                                    "HTTP/1.1, its own process)"}
        for name, base, header, child in (("proxy", proxy.url, True, proxy),
                                          ("relay", relay.url, False, relay),
                                          ("direct", up.url, False, None)):
            machine0, own0 = _busy(), time.process_time()
            child0 = child.cpu() if child is not None else 0.0
            load = subprocess.run(
                [sys.executable, str(Path(__file__).parent / "_load.py"), base,
                 "--clients", str(clients), "--requests", str(per_client),
                 *(["--session-header"] if header else [])],
                capture_output=True, text=True, check=False)
            machine1, own1 = _busy(), time.process_time()
            child1 = child.cpu() if child is not None else 0.0
            if load.returncode:
                raise SystemExit(f"load generator failed on {name}: {load.stderr.strip()}")
            run = json.loads(load.stdout)
            latencies, wall = run["latencies_s"], run["wall_s"]
            n = clients * per_client
            per = 1000 / n  # seconds in all -> ms per request
            busy = machine1 - machine0
            mine = own1 - own0 + child1 - child0 + run["cpu_s"]
            result[name] = {
                "requests_per_s": round(n / wall, 1),
                "latency_ms_p50": round(_pct(latencies, .5) * 1000, 2),
                "latency_ms_p95": round(_pct(latencies, .95) * 1000, 2),
                "latency_ms_max": round(max(latencies) * 1000, 2),
                "latency_ms_mean": round(statistics.fmean(latencies) * 1000, 2),
                "cpu_ms_per_request": {
                    "clients": round(run["cpu_s"] * per, 2),
                    "upstream": round((own1 - own0) * per, 2),
                    "server": round((child1 - child0) * per, 2),
                    "total": round(mine * per, 2),
                    "other_processes": round(max(0.0, busy - mine) * per, 2)}}
            print(name, result[name], flush=True)
        return result


def _load(base: str, clients: int, requests: int, *extra: str) -> dict[str, Any]:
    """One run of ``_load.py`` against ``base`` (its JSON result)."""
    load = subprocess.run([sys.executable, str(Path(__file__).parent / "_load.py"), base,
                           "--clients", str(clients), "--requests", str(requests), *extra],
                          capture_output=True, text=True, check=False)
    if load.returncode:
        raise SystemExit(f"load generator failed on {base}: {load.stderr.strip()[-400:]}")
    return dict(json.loads(load.stdout))


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
            "max": round(max(values), 2)}


def workers(counts: list[int], clients: int, per_client: int, repeats: int,
            upstream: str = "lean") -> dict[str, Any]:
    """``serve --workers N`` over PostgreSQL + Redis for each N, beside the upstream alone
    (``upstream``: ``lean``, ``_upstream.py`` in its own process; ``fake``, the test fake in
    this one)."""
    from loomctx.servers import PostgresServer, RedisServer

    runs: dict[str, list[dict[str, float]]] = {}
    with PostgresServer() as pg, RedisServer() as bus, _upstream(upstream) as up:
        store = pg.create_database()  # type: ignore[attr-defined]
        for r in range(repeats):
            for n in [0, *counts]:
                name = f"workers_{n}" if n else "direct"
                servers = {"postgresql": pg._proc.pid, "redis": bus._proc.pid}  # type: ignore[attr-defined]
                if isinstance(up, _Child):
                    servers["upstream"] = up.proc.pid
                if n:
                    with Proxy(up.url + "/v1", "--store", store, "--bus",
                               bus.url, "--workers", str(n)) as proxy:  # type: ignore[attr-defined]
                        prefix = f"r{r}w{n}-"
                        _load(proxy.url, clients, 2, "--session-header", "--session-prefix",
                              prefix)  # every process warm, every session made
                        kids = _children(proxy.proc.pid) if n > 1 else []
                        cpu0, each0 = _cpus(servers, proxy), [_cpu_of(k) for k in kids]
                        run = _load(proxy.url, clients, per_client, "--session-header",
                                    "--session-prefix", prefix)
                        cpu1, each1 = _cpus(servers, proxy), [_cpu_of(k) for k in kids]
                else:
                    cpu0 = _cpus(servers, None)
                    run = _load(up.url, clients, per_client)
                    cpu1 = _cpus(servers, None)
                lat = run["latencies_s"]
                per = 1000 / (clients * per_client)
                row = {"requests_per_s": clients * per_client / run["wall_s"],
                       "p50_ms": _pct(lat, .5) * 1000, "p95_ms": _pct(lat, .95) * 1000,
                       **{f"cpu_ms_{k}": (cpu1[k] - cpu0[k]) * per for k in cpu0},
                       "cpu_ms_load_generator": run["cpu_s"] * per}
                row["cpu_ms_other_processes"] = max(0.0, row["cpu_ms_machine"] - sum(
                    v for k, v in row.items() if k.startswith("cpu_ms_") and
                    k != "cpu_ms_machine"))
                if n > 1:  # how evenly the workers shared the work: least busy / busiest
                    used = [b - a for a, b in zip(each0, each1, strict=True)]
                    row["worker_balance"] = min(used) / max(used) if max(used) > 0 else 0.0
                runs.setdefault(name, []).append(row)
                print(r, name, {k: round(v, 1) for k, v in row.items()}, flush=True)
    direct = runs["direct"]
    out: dict[str, Any] = {"clients": clients, "requests_per_client": per_client,
                           "repeats": repeats, "upstream": UPSTREAMS[upstream],
                           "store": "PostgreSQL (loomctx.servers)",
                           "bus": "Redis (loomctx.servers)", "embedder": EMBEDDER,
                           "cpu_ms_per_request": "CPU ms per request, median of the repeats: "
                           "serve (every worker), postgresql and redis (every process of "
                           "each), upstream (the stand-in, --upstream), load_generator, "
                           "machine (every core busy), other_processes (machine less those); "
                           "worker_balance: the least busy worker's CPU over the busiest's",
                           "direct": {k: _spread([x[k] for x in direct]) for k in direct[0]}}
    for n in counts:
        rows = runs[f"workers_{n}"]
        out[f"workers_{n}"] = {
            "requests_per_s": _spread([x["requests_per_s"] for x in rows]),
            "cpu_ms_per_request": {k[7:]: round(statistics.median(x[k] for x in rows), 2)
                                   for k in rows[0] if k.startswith("cpu_ms_")},
            "added_ms_p50": _spread([x["p50_ms"] - d["p50_ms"] for x, d in zip(rows, direct,
                                                                               strict=True)]),
            "added_ms_p95": _spread([x["p95_ms"] - d["p95_ms"] for x, d in zip(rows, direct,
                                                                               strict=True)])}
        if n > 1:
            out[f"workers_{n}"]["worker_balance"] = _spread([x["worker_balance"] for x in rows])
    if 1 in counts:
        one = [x["requests_per_s"] for x in runs["workers_1"]]
        for n in counts:
            if n > 1:
                out[f"speedup_{n}_over_1"] = _spread(
                    [x["requests_per_s"] / o for x, o in zip(runs[f"workers_{n}"], one,
                                                              strict=True)])
    return out


def fairness(share: int, repeats: int) -> dict[str, Any]:
    """Tenant B's latency alone and while tenant A saturates its share (see the module)."""
    import tempfile

    from loomctx.testing import Delay, FakeModelServer
    from loomctx.testing.fake_server import RecordedRequest

    def respond(request: RecordedRequest) -> Any:
        text = str(request.body["messages"][-1].get("content"))
        return Delay(0.5, Reply(text="ok")) if "slow" in text else Reply(text="ok")

    alone, loaded, refused = [], [], []
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer(respond=respond) as up:
        up.requests = _Forgetful()  # type: ignore[assignment]
        keys = Path(tmp) / "keys.txt"
        keys.write_text("key-of-tenant-a a\nkey-of-tenant-b b\n", encoding="utf-8")
        with Proxy(up.url + "/v1", "--keys", str(keys), "--tenant-requests",
                   str(share)) as proxy:
            b = ("--key", "key-of-tenant-b", "--session-header")
            _load(proxy.url, 4, 3, *b, "--session-prefix", "warm-")
            for r in range(repeats):
                alone += _load(proxy.url, 4, 15, *b, "--session-prefix", f"b{r}-")[
                    "latencies_s"]
                a = subprocess.Popen(
                    [sys.executable, str(Path(__file__).parent / "_load.py"), proxy.url,
                     "--clients", str(2 * share), "--requests", "12", "--key",
                     "key-of-tenant-a", "--session-header", "--session-prefix", f"a{r}-",
                     "--text", "slow ", "--accept-429"], stdout=subprocess.PIPE, text=True)
                time.sleep(1.0)  # A holds its share
                loaded += _load(proxy.url, 4, 15, *b, "--session-prefix", f"bl{r}-")[
                    "latencies_s"]
                still = a.poll() is None
                out_a, _ = a.communicate(timeout=600)
                refused.append(json.loads(out_a)["refused"])
                print(r, "A still loading when B finished:", still, flush=True)
    p95 = (_pct(alone, .95), _pct(loaded, .95))
    return {"tenant_requests": share, "tenant_a_clients": 2 * share, "tenant_b_clients": 4,
            "repeats": repeats, "b_alone_ms": {"p50": round(_pct(alone, .5) * 1000, 1),
                                               "p95": round(p95[0] * 1000, 1)},
            "b_while_a_saturates_ms": {"p50": round(_pct(loaded, .5) * 1000, 1),
                                       "p95": round(p95[1] * 1000, 1)},
            "b_p95_ratio": round(p95[1] / p95[0], 2), "a_refused_429": refused}


def _cpus(servers: dict[str, int], proxy: Proxy | None) -> dict[str, float]:
    """CPU seconds so far of each process tree in ``servers``, of the proxy's, of the upstream
    (this process, unless ``servers`` names its own) and of every core (``machine``)."""
    out = {name: _tree_cpu(pid) for name, pid in servers.items()}
    out["serve"] = proxy.tree_cpu() if proxy is not None else 0.0
    out.setdefault("upstream", time.process_time())
    out["machine"] = _busy()
    return out


UPSTREAMS = {
    "lean": "_upstream.py in its own process: one fixed reply, the body read but not parsed",
    "fake": "WindowedFakeServer in the benchmark's process: each prompt parsed and counted"}
"""What stands in for the model API in part ``workers`` (``--upstream``)."""


def _upstream(kind: str) -> Any:
    """The stand-in upstream ``kind`` (:data:`UPSTREAMS`), as a context manager."""
    if kind == "lean":
        return _Child([str(Path(__file__).parent / "_upstream.py")], "/health")
    fake = WindowedFakeServer(window=10**9, default="ok")
    fake.requests = _Forgetful()
    return fake


class _Forgetful(list):  # type: ignore[type-arg]
    """A fake's request log that keeps nothing (long runs)."""

    def append(self, item: object) -> None:
        pass


def _steps(turns: int) -> tuple[str, list[tuple[list[dict[str, Any]], dict[str, Any]]]]:
    """(system prompt, [(conversation before the step, the recorded assistant reply)])."""
    replay = tool_agent(turns)
    messages = [{k: v for k, v in m.items() if k not in ("id", "timestamp")}
                for m in replay.messages]
    steps = []
    for i, m in enumerate(messages):
        if m["role"] == "assistant" and i and messages[i - 1]["role"] != "assistant":
            steps.append((messages[:i], m))
    return replay.system_prompt, steps


def _reply(message: dict[str, Any]) -> Reply:
    calls = [ToolCall(c["function"]["name"], c["function"]["arguments"], id=c["id"])
             for c in message.get("tool_calls") or []]
    return Reply(text=message.get("content"), tool_calls=calls)


def replay(turns: int, window: int) -> dict[str, Any]:
    system, steps = _steps(turns)
    tools = tool_agent(turns).tools
    out: dict[str, Any] = {"turns": turns, "model_steps": len(steps), "window": window,
                           "max_tokens": 500}
    for mode in ("direct", "proxy"):
        with WindowedFakeServer([_reply(m) for _, m in steps], window=window) as up:
            proxy = Proxy(up.url + "/v1", "--window", str(window)) if mode == "proxy" else None
            base = proxy.url if proxy is not None else up.url
            failed = 0
            try:
                with httpx.Client(timeout=120) as c:
                    for before, _ in steps:
                        body = {"model": "gpt-4o", "max_tokens": 500, "tools": tools,
                                "messages": [{"role": "system", "content": system}, *before]}
                        r = c.post(base + "/v1/chat/completions", json=body)
                        failed += r.status_code != 200  # a refusal consumes no step
            finally:
                if proxy is not None:
                    proxy.__exit__()
            prompt = sum(p for p, _ in up.usage)
            cached = sum(c for _, c in up.usage)
            out[mode] = {"accepted": up.accepted, "refused_by_upstream": up.refused,
                         "client_errors": failed, "prompt_tokens": prompt,
                         "cached_tokens": cached,
                         "cache_hit": round(cached / prompt, 3) if prompt else None,
                         "max_prompt_tokens": max((p for p, _ in up.usage), default=0)}
        print(mode, out[mode], flush=True)
    return out


def _machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "load_avg": os.getloadavg()}


PARTS = ("overhead", "throughput", "replay", "workers", "fairness")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1k history, fewer requests")
    ap.add_argument("--only", choices=PARTS, action="append",
                    help="run only this part (repeatable; default: the first three)")
    ap.add_argument("--workers", type=int, nargs="+", default=None, metavar="N",
                    help="part workers: serve --workers N over PostgreSQL + Redis, for each N "
                         "(default 1 2 4; giving it runs the part)")
    ap.add_argument("--upstream", choices=sorted(UPSTREAMS), default="lean",
                    help="workers: what stands in for the model API (default lean)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="workers / fairness: interleaved repeats (median and spread)")
    ap.add_argument("--tenant-requests", type=int, default=8,
                    help="fairness: tenant A's share (requests in flight)")
    ap.add_argument("--per-client", type=int, default=None,
                    help="throughput: requests per client (default 25, 10 with --quick)")
    ap.add_argument("--embedder", choices=("hashing", "default"), default="hashing",
                    help="serve --embedder of the proxies (default: hashing; 'default' is "
                         "serve's own default, the joint USE + MiniLM models)")
    ap.add_argument("--json", type=Path, default=_OUT)
    args = ap.parse_args()
    global EMBEDDER
    EMBEDDER = args.embedder
    parts = args.only or (["workers"] if args.workers else list(PARTS[:3]))
    sizes, requests = ([1000], 20) if args.quick else ([1000, 10_000], 40)
    per_client = args.per_client or (10 if args.quick else 25)
    result: dict[str, Any] = {"benchmark": "proxy", "machine": _machine(),
                              "embedder": EMBEDDER}
    if "overhead" in parts:
        result["overhead"] = overhead(sizes, requests)
    if "throughput" in parts:
        result["throughput"] = throughput(16, per_client)
    if "replay" in parts:
        result["replay"] = replay(50, 8192)
    if "workers" in parts:
        result["workers"] = workers(args.workers or [1, 2, 4], 16, per_client, args.repeats,
                                     args.upstream)
    if "fairness" in parts:
        result["fairness"] = fairness(args.tenant_requests, args.repeats)
    result["load_avg_after"] = os.getloadavg()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
