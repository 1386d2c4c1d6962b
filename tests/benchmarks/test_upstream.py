"""``benchmarks/_upstream.py``: the lean stand-in for a model API that ``bench_proxy.py
--only workers`` feeds the workers from answers every request on a kept-alive connection with
a reply an OpenAI client reads, and nothing else as a reply."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from loomctx.models.openai import OpenAIChatModel
from loomctx.testing.processes import wait_healthy

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def upstream() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(BENCH / "_upstream.py"), "--port", str(port),
                             "--text", "fixed answer"])
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health", proc, timeout=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_every_request_on_a_kept_connection_is_answered(upstream: str) -> None:
    done = subprocess.run([sys.executable, str(BENCH / "_load.py"), upstream, "--clients", "3",
                           "--requests", "5"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["latencies_s"]) == 15


def test_an_openai_client_reads_the_reply_and_other_paths_are_not_found(upstream: str) -> None:
    model = OpenAIChatModel("gpt-4o", base_url=upstream + "/v1", api_key="k", max_retries=0)
    reply = asyncio.run(model.complete({"messages": [{"role": "user", "content": "hi " * 5000}]}))
    assert reply.message["content"] == "fixed answer" and reply.finish_reason == "stop"
    with httpx.Client() as client:
        assert client.post(upstream + "/v1/embeddings", json={}).status_code == 404
