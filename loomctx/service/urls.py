"""The upstream's URL: where each request goes, and how it is shown without its secrets.

An upstream URL can carry credentials (``https://user:password@host/v1``) and secrets in its
query (``?key=…``, ``?sig=…``), and it can carry a query the upstream needs on every call
(Azure's ``?api-version=…``). :func:`endpoint` keeps the query and puts the API path before it;
:func:`redact` is what every message, log line and page shows instead of the URL itself.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

SHOWN_PARAMETERS = frozenset({"api-version", "api_version", "version"})
"""Query parameters whose values are shown; every other value is hidden."""
HIDDEN = "***"


def base_path(url: str) -> str:
    """The URL's path without a trailing ``/`` or ``/v1`` (the API paths add it back)."""
    path = urlsplit(url).path.rstrip("/")
    return path[:-3] if path.endswith("/v1") else path


def endpoint(url: str, path: str) -> str:
    """The URL a request for ``path`` (e.g. ``/v1/chat/completions``) goes to, query kept."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, base_path(url) + path, parts.query, ""))


def redact(url: str) -> str:
    """``url`` with its user name, password and secret-looking query values hidden."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<an unreadable URL>"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    if parts.username is not None or parts.password is not None:
        netloc = f"{HIDDEN}@{netloc}"
    query = "&".join(
        f"{quote(k, safe='-_.')}="
        f"{quote(v, safe='-_.') if k.lower() in SHOWN_PARAMETERS else HIDDEN}"
        for k, v in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact_in(text: str, url: str) -> str:
    """``text`` (an exception's message) with ``url``'s secrets hidden wherever they appear."""
    parts = urlsplit(url)
    secrets = [s for s in (parts.username, parts.password) if s]
    secrets += [v for k, v in parse_qsl(parts.query) if k.lower() not in SHOWN_PARAMETERS and v]
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, HIDDEN).replace(quote(secret, safe=""), HIDDEN)
    return text


class SecretFilter(logging.Filter):
    """Hides ``url``'s secrets in the records of a logger that prints request URLs (httpx
    logs every request's URL at INFO)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        hidden = redact_in(text, self.url)
        if hidden != text:
            record.msg, record.args = hidden, None
        return True


__all__ = ["HIDDEN", "SHOWN_PARAMETERS", "SecretFilter", "base_path", "endpoint", "redact",
           "redact_in"]
