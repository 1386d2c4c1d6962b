"""API keys and the tenants they belong to.

A key file maps keys to tenants, one per line (``KEY TENANT``; ``#`` starts a comment) or as a
JSON object ``{"KEY": "TENANT"}``. A request names its key the way the SDKs send one:
``Authorization: Bearer KEY`` (OpenAI) or ``x-api-key: KEY`` (Anthropic). Without keys the
service is open and every request is tenant ``default``: meant for loopback use by one user.

``loomctx serve --keys FILE`` reads the file again when it changes (:class:`KeyFile`): a
tenant whose line is removed loses its key and its page cookies within
:data:`KEYS_RELOAD` seconds in every process, without a restart.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from pathlib import Path

from loomctx.errors import ConfigError
from loomctx.service.options import MIN_KEY_LENGTH
from loomctx.stores.protocol import DEFAULT_TENANT

log = logging.getLogger("loomctx.service")


class Unauthorized(Exception):
    """The request has no key, or one the service does not know (HTTP 401)."""


def load_keys(path: str | Path) -> dict[str, str]:
    """Read a key file (lines ``KEY TENANT`` or a JSON object; a UTF-8 BOM is allowed).

    A key listed twice for two tenants is an error naming both lines, and no message ever
    shows a key or part of one.
    """
    where = repr(str(path))
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the key file {where}: {exc}") from exc
    entries: list[tuple[str, str, int]] = []  # (key, tenant, line)
    if text.lstrip().startswith("{"):
        try:
            pairs = json.loads(text, object_pairs_hook=list)
        except ValueError as exc:
            raise ConfigError(f"key file {where} is not valid JSON: {exc}") from exc
        if not isinstance(pairs, list) or not all(isinstance(v, str) for _, v in pairs):
            raise ConfigError(f"key file {where} must map keys to tenant names")
        lines = _json_key_lines(text, [k for k, _ in pairs])
        entries = [(k, v, n) for (k, v), n in zip(pairs, lines, strict=True)]
    else:
        for n, line in enumerate(text.splitlines(), start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ConfigError(f"key file {where} line {n}: expected 'KEY TENANT', "
                                  f"got {len(parts)} fields")
            entries.append((parts[0], parts[1], n))
    keys: dict[str, str] = {}
    first: dict[str, int] = {}
    for key, tenant, n in entries:
        if not tenant:
            raise ConfigError(f"key file {where} line {n}: the tenant name is empty")
        if len(key) < MIN_KEY_LENGTH:
            raise ConfigError(f"key file {where} line {n}: the key of tenant {tenant!r} is "
                              f"{len(key)} characters; use {MIN_KEY_LENGTH} or more")
        if key in keys and keys[key] != tenant:
            raise ConfigError(f"key file {where}: lines {first[key]} and {n} give one key to "
                              f"two tenants ({keys[key]!r} and {tenant!r}); give each tenant "
                              "its own key")
        keys[key] = tenant
        first.setdefault(key, n)
    if not keys:
        raise ConfigError(f"key file {where} holds no keys")
    return keys


KEYS_RELOAD = 1.0
"""Seconds between two looks at a key file's modification stamp (its staleness bound)."""


def _stamp(path: Path) -> tuple[int, ...] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


class KeyFile(Mapping[str, str]):
    """The keys of a key file as they are now: the file is read again when its stamp
    (modification and change times, size, inode) changed, looked at most every ``every``
    seconds, so an edit (a key removed, added, or moved to another tenant) takes effect
    within that bound in every process. A file that became unreadable or invalid (or was
    removed) keeps the keys last read, and says so in the log once per change, rather than
    turning the service open or shutting every tenant out mid-edit."""

    def __init__(self, path: str | Path, *, every: float = KEYS_RELOAD) -> None:
        self.path, self.every = Path(path), every
        self._seen = _stamp(self.path)
        self._keys = load_keys(self.path)
        self._checked = time.monotonic()

    def current(self) -> Mapping[str, str]:
        """The keys now (read again if the file changed since the last look)."""
        now = time.monotonic()
        if now - self._checked >= self.every:
            self._checked = now
            stamp = _stamp(self.path)
            if stamp != self._seen:
                self._seen = stamp
                try:
                    self._keys = load_keys(self.path)
                    log.info("key file %r read again: %d keys", str(self.path), len(self._keys))
                except ConfigError as exc:
                    log.error("%s; the keys read before stay in force until it is fixed", exc)
        return self._keys

    def __getitem__(self, key: str) -> str:
        return self.current()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.current())

    def __len__(self) -> int:
        return len(self.current())

    def keys(self) -> KeysView[str]:
        return self.current().keys()

    def items(self) -> ItemsView[str, str]:
        return self.current().items()

    def values(self) -> ValuesView[str]:
        return self.current().values()


def _json_key_lines(text: str, keys: list[str]) -> list[int]:
    """The line of each key of a JSON key file, in order (0 where it cannot be found)."""
    out, at = [], 0
    for key in keys:
        pos = text.find(json.dumps(key)[1:-1], at)
        pos = pos if pos != -1 else text.find(json.dumps(key, ensure_ascii=False)[1:-1], at)
        if pos == -1:
            out.append(0)
            continue
        out.append(text.count("\n", 0, pos) + 1)
        at = pos + 1
    return out


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries, if any."""
    auth = headers.get("authorization")
    if auth and auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return headers.get("x-api-key") or None


def tenant_of(keys: Mapping[str, str], headers: Mapping[str, str]) -> str:
    """The tenant a request's key maps to (``default`` when the service has no keys)."""
    if isinstance(keys, KeyFile):
        keys = keys.current()
    if not keys:
        return DEFAULT_TENANT
    key = presented_key(headers)
    if key is None:
        raise Unauthorized("no API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'")
    for known, tenant in keys.items():  # compare every key in constant time
        if hmac.compare_digest(known.encode(), key.encode()):
            return tenant
    raise Unauthorized("unknown API key")


__all__ = ["KEYS_RELOAD", "KeyFile", "Unauthorized", "load_keys", "presented_key", "tenant_of"]
