"""API keys and the tenants they belong to.

A key file maps keys to tenants, one per line (``KEY TENANT``; ``#`` starts a comment) or as a
JSON object ``{"KEY": "TENANT"}``. A request names its key the way the SDKs send one:
``Authorization: Bearer KEY`` (OpenAI) or ``x-api-key: KEY`` (Anthropic). Without keys the
service is open and every request is tenant ``default``: meant for loopback use by one user.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from pathlib import Path

from loomctx.errors import ConfigError
from loomctx.stores.protocol import DEFAULT_TENANT


class Unauthorized(Exception):
    """The request has no key, or one the service does not know (HTTP 401)."""


def load_keys(path: str | Path) -> dict[str, str]:
    """Read a key file (lines ``KEY TENANT`` or a JSON object)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the key file {str(path)!r}: {exc}") from exc
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"key file {str(path)!r} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise ConfigError(f"key file {str(path)!r} must map keys to tenant names")
        keys = dict(data)
    else:
        keys = {}
        for n, line in enumerate(text.splitlines(), start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ConfigError(f"key file {str(path)!r} line {n}: expected 'KEY TENANT', "
                                  f"got {len(parts)} fields")
            keys[parts[0]] = parts[1]
    if not keys:
        raise ConfigError(f"key file {str(path)!r} holds no keys")
    return keys


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries, if any."""
    auth = headers.get("authorization")
    if auth and auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return headers.get("x-api-key") or None


def tenant_of(keys: Mapping[str, str], headers: Mapping[str, str]) -> str:
    """The tenant a request's key maps to (``default`` when the service has no keys)."""
    if not keys:
        return DEFAULT_TENANT
    key = presented_key(headers)
    if key is None:
        raise Unauthorized("no API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'")
    for known, tenant in keys.items():  # compare every key in constant time
        if hmac.compare_digest(known.encode(), key.encode()):
            return tenant
    raise Unauthorized("unknown API key")


__all__ = ["Unauthorized", "load_keys", "presented_key", "tenant_of"]
