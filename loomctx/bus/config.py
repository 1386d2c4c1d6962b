"""An event bus from configuration: one URL moves an application from the embedded bus to Redis.

``memory://`` (or no URL) is the in-process bus; ``redis://``, ``rediss://`` and ``unix://`` are
:class:`~loomctx.bus.redis.RedisEventBus` (the ``redis`` extra). A CLI flag, an environment
variable or a config file hands the URL over unchanged.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from loomctx.bus.inprocess import BusOptions, InProcessEventBus
from loomctx.bus.protocol import EventBus
from loomctx.errors import ConfigError

MEMORY_SCHEMES = frozenset({"memory"})
REDIS_SCHEMES = frozenset({"redis", "rediss", "unix"})


def open_bus(url: str | None = None, *, options: BusOptions | None = None,
             **redis_options: Any) -> EventBus:
    """The bus ``url`` names; ``redis_options`` (``stream_prefix``, ``maxlen``,
    ``redis_options``) go to :class:`~loomctx.bus.redis.RedisEventBus`."""
    scheme = "memory" if url is None else urlsplit(url).scheme if isinstance(url, str) else None
    if scheme in MEMORY_SCHEMES:
        if redis_options:
            raise ConfigError(f"{sorted(redis_options)!r} apply to a Redis bus only, not to "
                              f"{url!r}")
        return InProcessEventBus(options)
    if scheme in REDIS_SCHEMES:
        from loomctx.bus.redis import RedisEventBus

        assert isinstance(url, str)
        return RedisEventBus(url, options=options, **redis_options)
    raise ConfigError(f"unknown event bus URL {url!r}: use memory:// (in process) or "
                      "redis://host:port/db (Redis Streams)")


__all__ = ["open_bus"]
