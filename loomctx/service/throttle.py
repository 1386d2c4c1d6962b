"""Throttling wrong keys: a client address that keeps guessing gets 429, others never notice.

Each client address (IPv4, or the /64 an IPv6 client holds) has a bucket of
:attr:`~loomctx.service.limits.EdgeLimits.auth_failures` tries, refilled over
``auth_window`` seconds. A wrong key takes a try; a right one takes none. An address whose
bucket is empty gets 429 with ``Retry-After`` for *every* key it presents, right or wrong,
without the key being compared: answering a right key differently would tell the guesser it
found one. A request without a key is not a guess and is answered 401 as always.

Why per address and not per key or tenant: a guesser chooses the keys it sends, so counting
them per key prefix or per tenant would let anyone lock a real tenant out from elsewhere by
sending wrong keys "for" it; an address is what the guesser cannot choose freely. Behind a
reverse proxy the address is the one uvicorn takes from ``X-Forwarded-For`` when the proxy is
trusted (``--forwarded-allow-ips``; loopback by default). The buckets live in each process: with
``--workers N`` an address may guess up to N times as often.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Mapping

from starlette.requests import Request

from loomctx.service.limits import EdgeLimits
from loomctx.service.tenants import Unauthorized, presented_key, tenant_of
from loomctx.service.web import ServiceError

MAX_CLIENTS = 100_000
"""Client addresses whose buckets are remembered (the least recently failed are forgotten)."""


class Throttled(ServiceError):
    """Too many wrong keys from this client address: 429, try again after ``retry_after``."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(429, f"too many wrong API keys from this address; try again in "
                              f"{retry_after} s")
        self.retry_after = retry_after


def client_of(request: Request) -> str:
    """The address a request's tries are counted under (an IPv6 client's /64)."""
    host = request.client.host if request.client is not None else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class FailureThrottle:
    """Token buckets of wrong-key tries per client address (see the module)."""

    def __init__(self, limits: EdgeLimits, *, max_clients: int = MAX_CLIENTS) -> None:
        self.burst = float(limits.auth_failures)
        self.rate = limits.auth_failures / limits.auth_window
        self.max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def _tries(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (self.burst, now))
        return min(self.burst, tokens + (now - at) * self.rate)

    def wait(self, client: str) -> int | None:
        """Seconds ``client`` must wait before its next key is looked at (None: no wait)."""
        tries = self._tries(client, time.monotonic())
        return None if tries >= 1 else max(1, math.ceil((1 - tries) / self.rate))

    def failed(self, client: str) -> None:
        """``client`` presented a wrong key: one try less."""
        now = time.monotonic()
        self._buckets[client] = (self._tries(client, now) - 1, now)
        self._buckets.move_to_end(client)
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)


def throttle_of(request: Request) -> FailureThrottle:
    """The app's throttle (made on first use from the service's edge limits)."""
    state = request.app.state
    if getattr(state, "throttle", None) is None:
        state.throttle = FailureThrottle(state.service.options.edge)
    throttle: FailureThrottle = state.throttle
    return throttle


def checked_tenant(request: Request, keys: Mapping[str, str],
                   headers: Mapping[str, str] | None = None) -> str:
    """:func:`~loomctx.service.tenants.tenant_of` for ``headers`` (default: the request's),
    counting a wrong key against the request's address and refusing (:class:`Throttled`) an
    address out of tries before its key is compared."""
    headers = request.headers if headers is None else headers
    if not keys or presented_key(headers) is None:
        return tenant_of(keys, headers)
    throttle, client = throttle_of(request), client_of(request)
    wait = throttle.wait(client)
    if wait is not None:
        raise Throttled(wait)
    try:
        return tenant_of(keys, headers)
    except Unauthorized:
        throttle.failed(client)
        raise


__all__ = ["MAX_CLIENTS", "FailureThrottle", "Throttled", "checked_tenant", "client_of",
           "throttle_of"]
