"""What one client may cost the service before it is even known: the bounds at the edge.

Everything here applies before a request reaches a route, most of it before its key is read:
the size and number of its header lines, how long its head and its idle keep-alive may take,
how many connections one address and all clients may hold, and how many wrong keys an address
may try. ``loomctx serve`` sets them from its options; docs/service.md says why each default.
"""

from __future__ import annotations

from dataclasses import dataclass

from loomctx.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class EdgeLimits:
    """Bounds on what a client may hold or try (``serve --max-header-kb`` and the others)."""

    max_header_bytes: int = 64 * 1024
    """Bytes of a request's head (request line and header lines); past them the client gets
    431 and its connection is closed, before the head is parsed (``serve --max-header-kb``)."""
    max_headers: int = 100
    """Header lines one request may carry (431 above; ``serve --max-headers``)."""
    header_timeout: float = 10.0
    """Seconds a request's head may take to arrive whole, from its first byte (or from the
    connection's opening); past them the connection is closed (``serve --header-timeout``)."""
    idle_timeout: float = 5.0
    """Seconds a kept-alive connection may sit idle between two requests before it is closed
    (``serve --idle-timeout``)."""
    max_client_connections: int = 64
    """Connections one client address (an IPv6 /64) may hold open at once; one more is closed
    at once (``serve --max-client-connections``)."""
    max_connections: int = 4096
    """Connections the process holds open at once, all clients together; one more is closed at
    once (``serve --max-connections``)."""
    auth_failures: int = 10
    """Wrong keys one client address (an IPv6 /64) may present in a burst; past them every
    key it presents gets 429 with ``Retry-After`` until it has earned a try back
    (``serve --auth-failures``)."""
    auth_window: float = 60.0
    """Seconds in which a client earns back all of ``auth_failures`` tries (one every
    ``auth_window / auth_failures`` seconds; ``serve --auth-window``)."""

    def __post_init__(self) -> None:
        for name in ("max_header_bytes", "max_headers", "max_client_connections",
                     "max_connections", "auth_failures"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")
        if self.max_header_bytes < 1024:
            raise ConfigError(f"max_header_bytes must be at least 1024 (SDKs send ~1 KB of "
                              f"headers), got {self.max_header_bytes!r}")
        for name in ("header_timeout", "idle_timeout", "auth_window"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) \
                    or not 0 < v < float("inf"):
                raise ConfigError(f"{name} must be a finite number of seconds > 0, got {v!r}")


__all__ = ["EdgeLimits"]
