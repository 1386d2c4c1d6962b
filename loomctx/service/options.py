"""What ``loomctx serve`` is configured with: the upstream, the tenants' keys, the limits.

One frozen object shared by the proxy and the HTTP API, validated on construction, so a bad
option fails at start (``loomctx serve`` prints one line and exits 2) instead of on the first
request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from loomctx.errors import ConfigError

if TYPE_CHECKING:
    from loomctx.embed.protocol import Embedder
    from loomctx.events import EventSink
    from loomctx.stores.protocol import MemoryStore

DEFAULT_WINDOW = 128_000
"""The upstream window assumed when neither ``window`` nor the model's name tells it."""
FALLBACK_ENCODING = "o200k_base"
"""How a model name loomctx does not know is counted (a local server's model, a fine-tune)."""


@dataclass(frozen=True, kw_only=True)
class ServiceOptions:
    """How the service reaches its upstream, whom it serves and what it accepts."""

    upstream: str
    """Base URL of the upstream API, with or without ``/v1``: OpenAI requests go to
    ``{base}/v1/chat/completions``, Anthropic ones to ``{base}/v1/messages``."""
    upstream_api_key: str | None = None
    """Key sent upstream (``Authorization: Bearer`` / ``x-api-key``). None: without tenant keys
    the client's own key header is forwarded; with them none is (a tenant's loomctx key never
    leaves the service)."""
    keys: Mapping[str, str] = field(default_factory=dict)
    """API key → tenant. Empty: an open service on one tenant, ``default`` (loopback use)."""
    model: str | None = None
    """Model whose tokenizer and window the builds use; None: the model each request names."""
    window: int | None = None
    """Upstream context window in tokens; None: the model's known window, else 128000."""
    budget: int | None = None
    """Most prompt tokens a build may use (a request's ``X-Loomctx-Budget`` may lower it)."""
    output_tokens: int = 4096
    """Output reserve when a request names no ``max_tokens`` (at most a quarter of the window)."""
    store: str = "memory://"
    """Where sessions' memories live, as :func:`loomctx.stores.open_store` reads it:
    ``memory://``, a SQLite file path or ``sqlite:///path``, or ``postgresql://...``."""
    store_factory: Callable[[], MemoryStore] | None = None
    """Builds the store instead of ``store`` (tests, custom backends)."""
    embedder: Embedder | None = None
    """Embedder of every session (None: loomctx's default multilingual encoder)."""
    events: EventSink | None = None
    """Where sessions' events go besides the service's own stream (e.g. a Redis bus)."""
    max_body_bytes: int = 32 * 1024 * 1024
    """Largest request body accepted (413 above)."""
    max_messages: int = 100_000
    """Most messages one request may carry (413 above)."""
    max_builds: int = 10_000
    """Builds (with their reports) kept per tenant; the oldest are forgotten first."""
    max_sessions: int = 10_000
    """Sessions kept loaded per tenant; past it the least recently used idle one is unloaded
    (its memory stays in the store)."""
    timeout: float = 300.0
    """Seconds an upstream call may take (``serve --upstream-timeout``): a JSON answer in
    whole, a stream until its first bytes and then between two chunks. Past it the client
    gets a 504 (a stream: an error event) and the session's next request can go."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream) if isinstance(self.upstream, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"upstream must be an http(s) URL such as "
                              f"'https://api.openai.com/v1', got {self.upstream!r}")
        for name in ("window", "budget"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 16):
                raise ConfigError(f"{name} must be an int >= 16 or None, got {v!r}")
        for name in ("output_tokens", "max_body_bytes", "max_messages", "max_builds",
                     "max_sessions"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) \
                or not 0 < self.timeout < float("inf"):
            raise ConfigError(f"timeout (serve --upstream-timeout) must be a finite number of "
                              f"seconds > 0, got {self.timeout!r}")
        for key, tenant in self.keys.items():
            if not isinstance(key, str) or len(key) < 8 or not isinstance(tenant, str) \
                    or not tenant:
                raise ConfigError(f"keys must map keys of 8+ characters to tenant names, got "
                                  f"{key[:4] if isinstance(key, str) else key!r}... → {tenant!r}")

    @property
    def upstream_base(self) -> str:
        """The upstream URL without a trailing ``/`` or ``/v1``."""
        base = self.upstream.rstrip("/")
        return base[:-3] if base.endswith("/v1") else base


__all__ = ["DEFAULT_WINDOW", "FALLBACK_ENCODING", "ServiceOptions"]
