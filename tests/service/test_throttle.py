"""The wrong-key throttle's buckets: tries come back at the configured pace, and the number of
addresses remembered is bounded."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from loomctx.service import throttle
from loomctx.service.limits import EdgeLimits


def test_an_address_earns_its_tries_back(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(throttle.time, "monotonic", lambda: clock[0])
    bucket = throttle.FailureThrottle(EdgeLimits(auth_failures=3, auth_window=30))
    for _ in range(3):
        assert bucket.wait("10.0.0.1") is None
        bucket.failed("10.0.0.1")
    assert bucket.wait("10.0.0.1") == 10 and bucket.wait("10.0.0.2") is None
    clock[0] += 9.0
    assert bucket.wait("10.0.0.1") == 1
    clock[0] += 1.0
    assert bucket.wait("10.0.0.1") is None  # one try back every 10 s


def test_the_remembered_addresses_are_bounded() -> None:
    bucket = throttle.FailureThrottle(EdgeLimits(auth_failures=1), max_clients=100)
    for n in range(1000):
        bucket.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(bucket._buckets) == 100
    assert bucket.wait("10.0.3.231") is not None and bucket.wait("10.0.0.0") is None


@pytest.mark.parametrize(("host", "counted"), [
    ("203.0.113.7", "203.0.113.7"), ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"), ("::ffff:198.51.100.4", "198.51.100.4")])
def test_an_ipv6_client_is_counted_by_its_64(host: str, counted: str) -> None:
    """One IPv6 client holds a whole /64: counting its addresses apart would give it 2**64
    buckets."""
    request = Request({"type": "http", "client": (host, 5000), "headers": []})
    assert throttle.client_of(request) == counted
