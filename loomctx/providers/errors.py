"""How a provider's failure becomes loomctx's error: the one mapping every caller shares.

A context-length refusal never passes by itself: it is a :class:`ContextLengthError` with the
numbers the provider gave (each provider reads its own wording, :meth:`Provider.context_length
<loomctx.providers.protocol.Provider.context_length>`), so the caller can rebuild smaller; a
429 after the client's retries is a :class:`RateLimitError`; anything else a
:class:`ModelError` with the provider's own message and a hint for the usual statuses. The
model clients and the proxy read errors through here, so an agent handles OpenAI, Anthropic,
local servers and any registered format alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn

from loomctx.errors import ContextLengthError, ModelError, ModelResponseError, RateLimitError
from loomctx.providers import registry


def preview(value: Any, limit: int = 200) -> str:
    """``str(value)`` cut to ``limit`` characters, for an error message about a reply (a reply
    nested too deep to print shows as such instead of raising)."""
    try:
        text = value if isinstance(value, str) else str(value)
    except (RecursionError, ValueError):
        return "<nested too deep to show>"
    return text[:limit]


def error_fields(body: Any) -> tuple[str, str]:
    """(message, code-or-type) from either provider's error body, or from plain text."""
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            message = err.get("message")
            code = err.get("code") or err.get("type") or ""
            return (message if isinstance(message, str) and message else preview(dict(err), 300),
                    code if isinstance(code, str) else preview(code, 40))
        if isinstance(err, str):
            return err, ""
        return preview(dict(body), 300), ""
    return preview(body or "", 2000), ""


def context_length(body: Any) -> tuple[int | None, int | None] | None:
    """(limit, requested) when ``body`` is any registered provider's "input too long" error,
    else None (a client may talk to a server that words it as another format does)."""
    for provider in registry.registered():
        if (numbers := provider.context_length(body)) is not None:
            return numbers
    return None


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def raise_for(provider: str, status: int | None, body: Any, *, key_env: str) -> NoReturn:
    """Raise the error for a failed call (after retries, or at once when not retryable)."""
    message, _ = error_fields(body)
    where = f"{provider} returned HTTP {status}" if status else f"{provider} stream failed"
    if (numbers := context_length(body)) is not None:
        limit, requested = numbers
        raise ContextLengthError(
            f"{where}: {one_line(message)} (build with a smaller budget and retry)",
            status=status, limit=limit, requested=requested)
    if status == 429:
        raise RateLimitError(f"{where} (rate limited) after the client's retries: "
                              f"{one_line(message)}", status=status)
    hint = {401: f"; check the API key (api_key= or ${key_env})",
            403: "; the key lacks access to this model or endpoint",
            404: "; check base_url and the model name"}.get(status or 0, "")
    raise ModelError(f"{where}: {one_line(message)}{hint}", status=status)


def raise_sdk_error(exc: Exception, provider: str, key_env: str) -> None:
    """Raise loomctx's error for an official SDK's exception that carries an HTTP status;
    return for any other exception (the caller re-raises it unchanged)."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return
    body = getattr(exc, "body", None)
    if not isinstance(body, Mapping):
        body = {"error": {"message": str(exc)}}
    elif "error" not in body and "message" in body:
        body = {"error": body}
    raise_for(provider, status, body, key_env=key_env)


def read_json(text: str, provider: str) -> Any:
    """A reply body as JSON, or :class:`ModelResponseError` showing what came instead."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelResponseError(
            f"{provider} sent a reply that is not JSON ({exc.msg}): {one_line(text, 120)!r}"
        ) from exc
    except RecursionError as exc:
        raise ModelResponseError(f"{provider} sent a reply nested too deep to read: "
                                 f"{one_line(text, 120)!r}") from exc


__all__ = ["context_length", "error_fields", "int_or_none", "one_line", "preview",
           "raise_for", "raise_sdk_error", "read_json"]
