"""Each tenant's share of what one process serves at once.

A proxied request holds, for as long as its upstream call lasts (10–60 s for a streamed reply),
a session lock, an upstream connection and the memory of its request. Without shares one
tenant's slow requests could take them all and every other tenant would wait. So a process
admits a request only within two limits, counted while it is in flight (its stream included):

- its tenant's share: ``tenant_requests`` requests and ``tenant_request_bytes`` bytes of
  request bodies; past it the tenant gets a **429** with ``Retry-After`` (its SDK waits and
  retries) while other tenants go on being served;
- the process's total: ``max_requests`` requests (also the size of the upstream connection
  pool, so the upstream calls of a tenant are bounded by its share) and
  ``max_request_bytes``; past it any tenant gets a **503** with ``Retry-After``.

Session locks hold no connection of their own (:mod:`loomctx.service.lock_lines`), so they
need no share besides the requests'. The admission is taken where the tenant is known (the
proxy route) and given back by :class:`ReleaseShares` when the ASGI call ends, however it
ends: a client that hangs up mid-stream gives its share back too.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from loomctx.service.web import ServiceError

RETRY_AFTER = 1
"""Seconds a client over its share is told to wait (``Retry-After``) before trying again."""
SCOPE_KEY = "loomctx.shares"
"""Where :class:`ReleaseShares` keeps the admissions of a request in its ASGI scope."""


class Busy(ServiceError):
    """A request refused for want of room (429: its tenant's share; 503: the process's);
    answered with ``Retry-After``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.retry_after: int | None = RETRY_AFTER


class Admission:
    """A request's place in its tenant's share: :meth:`release` gives it back (once)."""

    __slots__ = ("_shares", "size", "tenant")

    def __init__(self, shares: Shares, tenant: str, size: int) -> None:
        self._shares: Shares | None = shares
        self.tenant, self.size = tenant, size

    def release(self) -> None:
        shares, self._shares = self._shares, None
        if shares is not None:
            shares.give_back(self)


class Shares:
    """The requests and request bytes in flight, per tenant and in all (see the module)."""

    def __init__(self, *, max_requests: int, tenant_requests: int, max_request_bytes: int,
                 tenant_request_bytes: int) -> None:
        self.max_requests, self.tenant_requests = max_requests, tenant_requests
        self.max_request_bytes, self.tenant_request_bytes = (max_request_bytes,
                                                             tenant_request_bytes)
        self._requests: dict[str, int] = {}
        self._bytes: dict[str, int] = {}
        self.requests = 0
        """Requests in flight, all tenants."""
        self.bytes = 0
        """Bytes of request bodies in flight, all tenants."""

    def in_flight(self, tenant: str) -> tuple[int, int]:
        """The tenant's requests and request bytes in flight."""
        return self._requests.get(tenant, 0), self._bytes.get(tenant, 0)

    def admit(self, tenant: str, size: int) -> Admission:
        """Room for a request of ``tenant`` whose body is ``size`` bytes, or :class:`Busy`."""
        requests, held = self.in_flight(tenant)
        if requests + 1 > self.tenant_requests:
            raise Busy(429, f"tenant {tenant!r} has {requests} requests in flight, its share "
                            f"of this process (serve --tenant-requests {self.tenant_requests}); "
                            f"retry after {RETRY_AFTER} s")
        if held + size > self.tenant_request_bytes:
            raise Busy(429, f"tenant {tenant!r} has {held} bytes of requests in flight; this "
                            f"one's {size} would pass its share of this process (serve "
                            f"--tenant-request-mb); retry after {RETRY_AFTER} s")
        if self.requests + 1 > self.max_requests or self.bytes + size > self.max_request_bytes:
            raise Busy(503, f"the service has {self.requests} requests ({self.bytes} bytes) in "
                            f"flight, its limit (serve --max-requests / --max-request-mb); "
                            f"retry after {RETRY_AFTER} s")
        self._requests[tenant] = requests + 1
        self._bytes[tenant] = held + size
        self.requests += 1
        self.bytes += size
        return Admission(self, tenant, size)

    def give_back(self, admission: Admission) -> None:
        tenant = admission.tenant
        self.requests -= 1
        self.bytes -= admission.size
        left = self._requests[tenant] - 1
        if left:
            self._requests[tenant] = left
            self._bytes[tenant] -= admission.size
        else:  # an idle tenant leaves nothing behind
            del self._requests[tenant], self._bytes[tenant]


def hold(scope: Scope, admission: Admission) -> None:
    """Keep ``admission`` until the request's ASGI call ends (see :class:`ReleaseShares`);
    without that middleware it is given back at once."""
    held: list[Admission] | None = scope.get(SCOPE_KEY)
    if held is None:
        admission.release()
    else:
        held.append(admission)


class ReleaseShares:
    """Gives back every admission a request took when its ASGI call ends (a streamed reply
    included, and a client that hung up)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: list[Any] = []
        scope[SCOPE_KEY] = held
        try:
            await self.app(scope, receive, send)
        finally:
            for admission in held:
                admission.release()


__all__ = ["RETRY_AFTER", "SCOPE_KEY", "Admission", "Busy", "ReleaseShares", "Shares", "hold"]
