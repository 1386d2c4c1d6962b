"""Benchmark the event bus: throughput through Redis Streams with 4 consumers, beside in-process.

Why: every session step is an event, so the bus must keep up with many sessions, and the Redis
backend's guarantees (acknowledge after the handler, a de-duplication window, MULTI per event)
have a cost that must be a known number. Each run publishes N ``turn_started`` events from 8
concurrent publishers (each awaiting its ``publish`` calls in turn) into one consumer group of
4 consumers (4 subscriptions of one bus in this process, or 4 consumer processes for
``redis-procs``), and times:

- publish: N / time until the last ``publish`` returned;
- handled: N / time from the first publish until the 4 consumers handled all N.

Redis runs without persistence (``redis``) and with an append-only file fsynced on every write
(``redis-aof``: what the restart guarantee needs). Repeats give the median and the spread.

``--loss`` also restarts Redis in the middle of a stream, once for plain pub/sub and once for
the streams bus: pub/sub drops what is published while the subscriber reconnects, the streams
bus hands over every acknowledged event.

    python3 benchmarks/bench_bus.py [--events 5000] [--repeats 3] [--quick] [--loss]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from loomctx.bus import BusOptions, Envelope, InProcessEventBus
from loomctx.bus.redis import RedisEventBus, RedisOptions
from loomctx.events import TurnStarted
from loomctx.servers import RedisServer

CONSUMERS = 4
PUBLISHERS = 8
"""Concurrent publisher tasks (each awaits its publishes one after another)."""


async def _publish_all(bus: Any, n: int) -> None:
    async def one(k: int) -> None:
        for i in range(k, n, PUBLISHERS):
            await bus.publish(_event(i))

    await asyncio.gather(*(one(k) for k in range(PUBLISHERS)))


def _event(i: int) -> TurnStarted:
    return TurnStarted(tenant="bench", session="s", turn=i, at=float(i))


async def _one_run(make: Any, n: int) -> dict[str, float]:
    bus = make()
    handled = 0
    done = asyncio.Event()

    def handler(env: Envelope) -> None:
        nonlocal handled
        handled += 1
        if handled == n:
            done.set()

    for c in range(CONSUMERS):
        await bus.subscribe(None, handler, group="bench", consumer=f"c{c}")
    start = time.perf_counter()
    await _publish_all(bus, n)
    published = time.perf_counter() - start
    await asyncio.wait_for(done.wait(), 600)
    finished = time.perf_counter() - start
    await bus.aclose()
    return {"publish_per_s": n / published, "handled_per_s": n / finished}


def _consumer_proc(url: str, prefix: str, n: int, ready: Any, counts: Any, index: int) -> None:
    async def main() -> None:
        bus = RedisEventBus(url, stream_prefix=prefix, maxlen=None,
                            redis_options=RedisOptions(block=0.05))

        def handler(env: Envelope) -> None:
            counts[index] += 1

        await bus.subscribe(None, handler, group="bench", consumer=f"p{index}")
        ready.release()
        while sum(counts[:]) < n:
            await asyncio.sleep(0.002)
        await bus.aclose(drain=False)

    asyncio.run(main())


async def _procs_run(url: str, n: int) -> dict[str, float]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    ctx = mp.get_context("spawn")
    ready = ctx.Semaphore(0)
    counts = ctx.Array("q", CONSUMERS)
    # the group exists before the consumers join, so none of them misses the first events
    setup = RedisEventBus(url, stream_prefix=prefix, maxlen=None)
    await setup._create_group("bench", "$")
    procs = [ctx.Process(target=_consumer_proc, args=(url, prefix, n, ready, counts, i))
             for i in range(CONSUMERS)]
    for p in procs:
        p.start()
    for _ in procs:
        await asyncio.to_thread(ready.acquire)
    start = time.perf_counter()
    await _publish_all(setup, n)
    published = time.perf_counter() - start
    while sum(counts[:]) < n:
        await asyncio.sleep(0.002)
    finished = time.perf_counter() - start
    for p in procs:
        await asyncio.to_thread(p.join, 60)
    await setup.aclose(drain=False)
    return {"publish_per_s": n / published, "handled_per_s": n / finished,
            "per_consumer": list(counts[:])}


def _stats(runs: list[dict[str, Any]], key: str) -> dict[str, float]:
    values = [r[key] for r in runs]
    return {"median": round(statistics.median(values)), "min": round(min(values)),
            "max": round(max(values))}


def throughput(n: int, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with RedisServer() as plain, RedisServer(appendonly=True) as aof:
        setups: dict[str, Any] = {
            "in-process": lambda: InProcessEventBus(BusOptions()),
            "redis": lambda: RedisEventBus(plain.url, stream_prefix=uuid.uuid4().hex[:8],
                                           maxlen=None),
            "redis-aof": lambda: RedisEventBus(aof.url, stream_prefix=uuid.uuid4().hex[:8],
                                               maxlen=None),
        }
        for name, make in setups.items():
            runs = [asyncio.run(_one_run(make, n)) for _ in range(repeats)]
            out[name] = {"publish_per_s": _stats(runs, "publish_per_s"),
                         "handled_per_s": _stats(runs, "handled_per_s")}
            print(f"{name:12} publish {out[name]['publish_per_s']}  "
                  f"handled {out[name]['handled_per_s']}", flush=True)
        runs = [asyncio.run(_procs_run(plain.url, n)) for _ in range(repeats)]
        out["redis-procs"] = {"publish_per_s": _stats(runs, "publish_per_s"),
                              "handled_per_s": _stats(runs, "handled_per_s"),
                              "per_consumer_last": runs[-1]["per_consumer"]}
        print(f"{'redis-procs':12} publish {out['redis-procs']['publish_per_s']}  "
              f"handled {out['redis-procs']['handled_per_s']}", flush=True)
    return out


async def _loss_pubsub(server: RedisServer, n: int) -> dict[str, int]:
    import redis.asyncio as aioredis
    from redis.exceptions import ConnectionError as RedisConnectionError

    received: set[int] = set()
    sent: list[int] = []

    async def listen() -> None:
        while True:
            try:
                client = aioredis.Redis.from_url(server.url)
                pubsub = client.pubsub()
                await pubsub.subscribe("bench")
                async for msg in pubsub.listen():
                    if msg["type"] == "message":
                        received.add(int(msg["data"]))
            except (RedisConnectionError, OSError):
                await asyncio.sleep(0.05)  # resubscribe once the server is back

    listener = asyncio.create_task(listen())
    await asyncio.sleep(0.2)
    pub = aioredis.Redis.from_url(server.url)
    nobody = 0
    restart = None
    for i in range(n):
        if i == n // 2:  # restart beside the publisher, as a crash would happen
            restart = asyncio.create_task(asyncio.to_thread(server.restart))
        while True:
            try:
                nobody += await pub.publish("bench", str(i)) == 0
                sent.append(i)
                break
            except (RedisConnectionError, OSError):
                await asyncio.sleep(0.01)  # retry until the server is back
        await asyncio.sleep(0.001)
    assert restart is not None
    await restart
    await asyncio.sleep(0.5)
    listener.cancel()
    await pub.aclose()
    return {"published": len(sent), "received": len(received & set(sent)),
            "lost": len(set(sent) - received), "publish_reached_nobody": nobody}


async def _loss_streams(server: RedisServer, n: int) -> dict[str, int]:
    bus = RedisEventBus(server.url, stream_prefix=uuid.uuid4().hex[:8],
                        redis_options=RedisOptions(block=0.2, reconnect_max_delay=0.2,
                                                   publish_timeout=30))
    handled: set[str] = set()
    await bus.subscribe(None, lambda env: handled.add(env.id), group="loss")
    sent = []
    restart = None
    for i in range(n):
        if i == n // 2:
            restart = asyncio.create_task(asyncio.to_thread(server.restart))
        sent.append(await bus.publish(_event(i)))
        await asyncio.sleep(0.001)
    assert restart is not None
    await restart
    await bus.aclose()
    return {"published": len(sent), "received": len(handled & set(sent)),
            "lost": len(set(sent) - handled)}


def loss(n: int) -> dict[str, Any]:
    with RedisServer(appendonly=True) as server:
        pubsub = asyncio.run(_loss_pubsub(server, n))
        streams = asyncio.run(_loss_streams(server, n))
    print(f"restart mid-stream: pub/sub {pubsub}, streams {streams}", flush=True)
    return {"pubsub": pubsub, "streams": streams}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=5_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="2,000 events, 3 repeats, with --loss")
    p.add_argument("--loss", action="store_true", help="also restart Redis mid-stream")
    args = p.parse_args(argv)
    n, repeats = (2_000, 3) if args.quick else (args.events, args.repeats)
    result: dict[str, Any] = {
        "events": n, "repeats": repeats, "consumers": CONSUMERS,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "throughput": throughput(n, repeats),
    }
    if args.loss or args.quick:
        result["restart"] = loss(2_000)
    out = Path(__file__).parent / "results" / "bus.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
