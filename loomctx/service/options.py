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
from loomctx.memory.tiers import MAX_MESSAGE_CHARS
from loomctx.service.limits import EdgeLimits
from loomctx.service.urls import base_path, endpoint, redact

if TYPE_CHECKING:
    from loomctx.embed.protocol import Embedder
    from loomctx.events import EventSink
    from loomctx.stores.protocol import MemoryStore

DEFAULT_WINDOW = 128_000
"""The upstream window assumed when neither ``window`` nor the model's name tells it."""
MIN_KEY_LENGTH = 8
"""The shortest tenant key accepted."""
FALLBACK_ENCODING = "o200k_base"
"""How a model name loomctx does not know is counted (a local server's model, a fine-tune)."""


@dataclass(frozen=True, kw_only=True)
class ServiceOptions:
    """How the service reaches its upstream, whom it serves and what it accepts."""

    upstream: str
    """Base URL of the upstream API, with or without ``/v1``: OpenAI requests go to
    ``{base}/v1/chat/completions``, Anthropic ones to ``{base}/v1/messages``; a query
    (``?api-version=…``) is kept on every call. Shown and logged only redacted
    (:func:`loomctx.service.urls.redact`)."""
    upstream_api_key: str | None = None
    """Key sent upstream (``Authorization: Bearer`` / ``x-api-key``). None: without tenant keys
    the client's own key header is forwarded; with them none is (a tenant's loomctx key never
    leaves the service). Refused together with a ``user:password@`` in ``upstream``: the
    HTTP client sends a URL's credentials as ``Authorization: Basic``, which would replace
    the key (an ambiguity the operator must settle, not one the service guesses)."""
    keys: Mapping[str, str] = field(default_factory=dict)
    """API key → tenant. Empty: an open service on one tenant, ``default`` (loopback use). A
    :class:`~loomctx.service.tenants.KeyFile` (what ``serve --keys`` passes) follows its file's
    edits while the service runs."""
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
    """Largest request body accepted (413 above), and the most of an upstream reply read: a
    JSON reply's body (502 above), a stream's event data (read on for the client, not
    stored above)."""
    max_message_chars: int = MAX_MESSAGE_CHARS
    """Longest text of one message, in characters (``serve --max-message-chars``; the
    sessions' ``MemoryOptions.max_message_chars``): a request carrying a longer one gets 413
    before anything is stored or sent upstream; an upstream reply longer than it a 502, and
    nothing of the turn is stored."""
    max_messages: int = 100_000
    """Most messages one request may carry (413 above)."""
    max_builds: int = 1_000
    """Builds (with their reports and built requests) kept per tenant; the oldest are
    forgotten first."""
    max_build_bytes: int = 32 * 1024 * 1024
    """Text of the built requests kept per tenant, summed over its kept builds and estimated
    at 4 characters a token; past it the oldest builds are forgotten, the newest is always
    kept."""
    max_sessions: int = 1_000
    """Sessions kept loaded per tenant; past it the least recently used idle one is unloaded
    (its memory stays in the store)."""
    max_session_bytes: int = 16 * 1024 * 1024
    """Message bytes the loaded sessions of a tenant may hold together (what was stored through
    them); past it the least recently used idle ones are unloaded. A loaded session's indexes
    and vectors take several times its message bytes in memory (about 80 times for text of
    all-distinct words, the worst case), so this bounds a tenant's resident sessions."""
    timeout: float = 300.0
    """Seconds an upstream call may take (``serve --upstream-timeout``): a JSON answer in
    whole, a stream until its first bytes and then between two chunks. Past it the client
    gets a 504 (a stream: an error event) and the session's next request can go."""
    body_timeout: float = 30.0
    """Seconds a request body may pause between two chunks; past it the request is answered
    408 and its connection closed (a client cannot hold one open with half a body)."""
    body_deadline: float = 300.0
    """Seconds the whole request body may take to arrive (a body trickled in byte by byte)."""
    edge: EdgeLimits = field(default_factory=EdgeLimits)
    """What a client may hold or try before its request reaches a route: header size, count
    and time, idle keep-alive, connections per address and in all, wrong keys per address."""

    max_requests: int = 256
    """Requests one process serves at once, all tenants together, streams included (also its
    upstream connections); past it a request gets 503 with ``Retry-After``
    (:mod:`loomctx.service.shares`)."""
    tenant_requests: int = 64
    """Requests one tenant may have in flight in one process; past it that tenant gets 429
    with ``Retry-After`` while the others are served."""
    max_request_bytes: int = 256 * 1024 * 1024
    """Bytes of request bodies in flight in one process, all tenants (503 past it); a
    request's memory is several times its body, so this bounds what requests hold at once."""
    tenant_request_bytes: int = 64 * 1024 * 1024
    """Bytes of request bodies one tenant may have in flight in one process (429 past it); at
    least ``max_body_bytes``, which a chunked body (no ``Content-Length``) counts as."""
    lock_lines: int = 4
    """PostgreSQL connections a process holds its session locks on (a PostgreSQL store only;
    :mod:`loomctx.service.lock_lines`): any number of locks each, so this is not a limit on
    requests in flight; more lines let more holders write at once."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream) if isinstance(self.upstream, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            shown = redact(self.upstream) if isinstance(self.upstream, str) else self.upstream
            raise ConfigError(f"upstream must be an http(s) URL such as "
                              f"'https://api.openai.com/v1', got {shown!r}")
        if parts.fragment:
            raise ConfigError(f"upstream must not have a #fragment, got "
                              f"{redact(self.upstream)!r}#…: remove it")
        if self.upstream_api_key and (parts.username or parts.password):
            raise ConfigError(f"upstream {redact(self.upstream)!r} carries a user:password "
                              "(sent as 'Authorization: Basic') and an upstream key is set "
                              "too ($LOOMCTX_UPSTREAM_KEY): the URL's credentials would "
                              "replace the key; remove one of them")
        for name in ("window", "budget"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 16):
                raise ConfigError(f"{name} must be an int >= 16 or None, got {v!r}")
        for name in ("output_tokens", "max_body_bytes", "max_message_chars", "max_messages",
                     "max_builds", "max_build_bytes", "max_sessions", "max_session_bytes",
                     "max_requests",
                     "tenant_requests", "max_request_bytes", "tenant_request_bytes",
                     "lock_lines"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")
        for name in ("tenant_request_bytes", "max_request_bytes"):
            if getattr(self, name) < self.max_body_bytes:
                raise ConfigError(f"{name} ({getattr(self, name)}) must be at least "
                                  f"max_body_bytes ({self.max_body_bytes}): a request of the "
                                  "largest body accepted could never be admitted")
        for name, flag in (("timeout", " (serve --upstream-timeout)"),
                           ("body_timeout", " (serve --body-timeout)"), ("body_deadline", "")):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) \
                    or not 0 < v < float("inf"):
                raise ConfigError(f"{name}{flag} must be a finite number of seconds > 0, "
                                  f"got {v!r}")
        if not isinstance(self.edge, EdgeLimits):
            raise ConfigError(f"edge must be an EdgeLimits, got {type(self.edge).__name__}")
        for key, tenant in self.keys.items():
            if not isinstance(tenant, str) or not tenant:
                raise ConfigError(f"keys must map keys to tenant names, got the tenant "
                                  f"{tenant!r}")
            if not isinstance(key, str) or len(key) < MIN_KEY_LENGTH:
                what = (f"{len(key)} characters" if isinstance(key, str)
                        else f"a {type(key).__name__}")
                raise ConfigError(f"the key of tenant {tenant!r} is {what}: keys must be "
                                  f"strings of {MIN_KEY_LENGTH}+ characters")

    @property
    def upstream_base(self) -> str:
        """The upstream URL without its query, a trailing ``/`` or ``/v1`` (not for display:
        it keeps credentials; requests go to :meth:`upstream_url`, which keeps the query)."""
        parts = urlsplit(self.upstream)
        return f"{parts.scheme}://{parts.netloc}{base_path(self.upstream)}"

    @property
    def upstream_shown(self) -> str:
        """The upstream URL as messages and logs show it: no credentials, no query secrets."""
        return redact(self.upstream)

    def upstream_url(self, path: str) -> str:
        """Where a request for the API ``path`` (``/v1/chat/completions``) goes, query kept."""
        return endpoint(self.upstream, path)


__all__ = ["DEFAULT_WINDOW", "FALLBACK_ENCODING", "MIN_KEY_LENGTH", "ServiceOptions"]
