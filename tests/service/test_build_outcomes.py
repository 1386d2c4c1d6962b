"""What becomes known of a saved build after the upstream answered (usage, whether the reply
was stored, a note) is kept beside its record, not written into it: patching the record
rewrote all of it (the built request, compressed again) a second time each turn."""

from __future__ import annotations

import asyncio

import psycopg

from loomctx.report import BuildReport
from loomctx.service.conversations import BuildRecord, Usage
from loomctx.service.shared import SharedSessions

ROW = {"id": "s1", "version": 1, "format": "openai", "anonymous": False, "seed": "x",
       "head": "x", "state": "active", "model": "gpt-4o", "system": "", "undercount": 1.0,
       "cap": None, "created": 0.0, "messages": 0, "builds": 0, "tools": []}


def test_a_builds_outcome_is_read_with_it_and_its_record_left_as_written(pg_url: str) -> None:
    report = BuildReport(format="openai", model="gpt-4o", counter="o200k_base", exact=True,
                         budget=100, tokens=10, prefix_tokens=5, prefix_hash="h", sources=[],
                         timings_ms={"total": 1.0})
    record = BuildRecord(id="b-1", tenant="t", session="s1", at=1.0, report=report,
                         payload={"messages": [{"role": "user", "content": "x" * 5000}]})

    async def scenario() -> None:
        shared = SharedSessions(pg_url, max_builds=10)
        await shared.open()
        try:
            assert await shared.insert("t", ROW)
            await shared.save_builds([record])
            record.usage = Usage(prompt_tokens=10, cached_tokens=0, completion_tokens=3)
            record.reply_stored, record.note = True, "kept"
            held, _ = await shared.lock_and_bump("t", "s1")
            await shared.settle("t", "s1", [record], {"builds": 1}, held)
            await shared.unlock(held)
            read = await shared.build("t", "b-1")
            assert read is not None and read.usage == record.usage
            assert read.reply_stored is True and read.note == "kept"
            assert [r.usage for r in await shared.builds_of("t", "s1")] == [record.usage]
            assert (await shared.row("t", "s1") or {})["builds"] == 1
        finally:
            await shared.close()

    asyncio.run(scenario())
    with psycopg.connect(pg_url) as conn:
        stored = conn.execute("SELECT record FROM loomctx_proxy_builds").fetchone()
    assert stored is not None and stored[0]["usage"] is None  # the record as saved
