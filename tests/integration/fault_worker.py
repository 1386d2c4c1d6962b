"""One worker process of the multi-process fault test (run as a script, killed with SIGKILL).

``producer``: sessions that write messages to PostgreSQL, build contexts and publish one event
per message through Redis Streams. After each acknowledged step it appends a line to its journal
(flushed and fsynced), so the test knows what was acknowledged before the kill:
``msg TENANT SESSION ID`` once ``add_message`` returned, ``event EVENT_ID SESSION`` once
``publish`` returned.

``consumer``: one consumer of the group ``effects``. Its handler applies each event's effect in
one PostgreSQL transaction — the event id into ``processed`` (its primary key makes a redelivery
a no-op), and the session's counter in ``effects`` up by one only when the id was new — and
counts every delivery in ``deliveries``, so the test can tell redeliveries from effects. It then
waits a little before returning (the acknowledgement), so kills land between effect and ack.

``worker``: both at once, in one process (the consumer subscribed before the first message).

Usage: fault_worker.py producer|consumer|worker PG_URL REDIS_URL PREFIX NAME JOURNAL
"""

from __future__ import annotations

import asyncio
import os
import sys

import psycopg

from loomctx.bus.protocol import Envelope
from loomctx.bus.redis import RedisEventBus, RedisOptions
from loomctx.events import MessageAdded
from loomctx.session import Session
from loomctx.stores.postgres import PostgresStore
from loomctx.testing import HashingEmbedder

SCHEMA = """
CREATE TABLE IF NOT EXISTS processed (event_id text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS effects (session text PRIMARY KEY, n integer NOT NULL);
CREATE TABLE IF NOT EXISTS deliveries (event_id text, consumer text);
"""


def _journal(path: str, line: str) -> None:
    with open(path, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


async def produce(pg_url: str, redis_url: str, prefix: str, name: str, journal: str) -> None:
    store = PostgresStore(pg_url)
    bus = RedisEventBus(redis_url, stream_prefix=prefix)
    embedder = HashingEmbedder()
    tenant = f"tenant-{int(name[1]) % 2}"  # names are p<N>.g<generation>
    sessions: dict[str, Session] = {}
    n = 0
    while True:
        sid = f"{name}-s{n // 5}"
        if sid not in sessions:
            sessions[sid] = Session(sid, agent="a", tenant=tenant, store=store,
                                    embedder=embedder, model="gpt-4o")
        session = sessions[sid]
        mid = f"m{n}"
        await session.add_message("user", f"{name} note {n}: the crate for order {n % 7} "
                                  "left the warehouse", id=mid)
        _journal(journal, f"msg {tenant} {sid} {mid}")
        result = await session.build(max_tokens=600)
        assert result.tokens <= 600
        eid = await bus.publish(MessageAdded(tenant=tenant, session=sid, ids=(mid,), at=n),
                                event_id=f"{sid}/{mid}")
        _journal(journal, f"event {eid} {sid}")
        n += 1
        await asyncio.sleep(0.1)  # a paced producer: the consumers keep up, the drain is short


async def consume(pg_url: str, redis_url: str, prefix: str, name: str, journal: str,
                  *, forever: bool = True) -> None:
    bus = RedisEventBus(redis_url, stream_prefix=prefix,
                        redis_options=RedisOptions(claim_timeout=1.0, block=0.2))

    def apply(env: Envelope) -> None:
        assert isinstance(env.event, MessageAdded)
        with psycopg.connect(pg_url) as conn:
            conn.execute("INSERT INTO deliveries VALUES (%s, %s)", (env.id, name))
            new = conn.execute("INSERT INTO processed VALUES (%s) ON CONFLICT DO NOTHING",
                               (env.id,)).rowcount
            if new:
                conn.execute("INSERT INTO effects VALUES (%s, 1) ON CONFLICT (session) "
                             "DO UPDATE SET n = effects.n + 1", (env.event.session,))

    async def handler(env: Envelope) -> None:
        await asyncio.to_thread(apply, env)
        # Work after the effect, before the acknowledgement: a kill here leaves the event
        # pending with its effect applied, so its redelivery must take no second effect.
        await asyncio.sleep(0.05)

    await bus.subscribe("message_added", handler, group="effects", consumer=name)
    _journal(journal, f"ready {name}")
    while forever:
        await asyncio.sleep(3600)


async def both(pg_url: str, redis_url: str, prefix: str, name: str, journal: str) -> None:
    """A worker that consumes the group's events while it produces its own."""
    await consume(pg_url, redis_url, prefix, name, journal, forever=False)
    await produce(pg_url, redis_url, prefix, name, journal)


def main(argv: list[str]) -> None:
    role, pg_url, redis_url, prefix, name, journal = argv
    if role == "schema":
        with psycopg.connect(pg_url) as conn:
            conn.execute(SCHEMA)
        return
    run = {"producer": produce, "consumer": consume, "worker": both}[role]
    asyncio.run(run(pg_url, redis_url, prefix, name, journal))


if __name__ == "__main__":
    main(sys.argv[1:])
