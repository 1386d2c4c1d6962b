"""Constants and helpers the service tests share."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

from loomctx.service import RunningServer
from loomctx.testing.windowed import WindowedFakeServer

KEYS = {"key-tenant-a-0001": "acme", "key-tenant-b-0002": "globex"}
"""Two tenants' keys, for the services that have keys."""


def hang_up_during(server: RunningServer, upstream: WindowedFakeServer, path: str,
                   body: dict[str, Any], headers: dict[str, str]) -> None:
    """Send a request and close the connection, unread, once the upstream has it."""
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    host, port = server.url.removeprefix("http://").split(":")
    calls = len(upstream.requests)
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                    f"{head}content-length: {len(data)}\r\n\r\n".encode() + data)
        deadline = time.monotonic() + 30
        while len(upstream.requests) == calls and time.monotonic() < deadline:
            time.sleep(0.02)
