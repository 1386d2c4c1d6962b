"""What a value must be to cross the service's boundary, checked before anything is stored.

A request the proxy refuses must leave nothing behind and cost no upstream call, so every check
a request can fail runs first, on the parsed body and the headers: JSON without ``NaN`` or
``Infinity`` (the upstream would get invalid JSON), nested at most :data:`MAX_DEPTH` deep (the
builder, the fingerprints and the stores walk it recursively), strings of valid Unicode (a lone
surrogate cannot be stored, listed or sent), and session ids that can name a URL path segment and
a response header. Upstream bodies are read with the same bounded reader, so an odd upstream
reply is an unreadable reply, never an exception.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from loomctx.errors import InputError

MAX_DEPTH = 100
"""Deepest nesting of arrays and objects a body may have (tool schemas need a dozen or so)."""

SESSION_ID_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,127}"
"""A session id: 1-128 ASCII letters, digits and ``_ . : @ -``, not starting with ``.`` or
``-``: it is a URL path segment (``/sessions/{id}``) and a response header's value."""
_SESSION_ID = re.compile(SESSION_ID_PATTERN)
_SURROGATE = re.compile("[\ud800-\udfff]")


class _NotJson(ValueError):
    """A constant JSON does not have (``NaN``, ``Infinity``, a number too large for a float)."""


def _constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON value: send a number or null")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"the number {text[:40]} is too large for a float: send a smaller one")
    return value


def loads(raw: bytes | str) -> Any:
    """Strict JSON: no ``NaN``/``Infinity``, finite numbers, nesting at most :data:`MAX_DEPTH`,
    valid Unicode. Raises :class:`InputError` saying what is wrong."""
    try:
        value = json.loads(raw, parse_constant=_constant, parse_float=_float)
    except _NotJson as exc:
        raise InputError(str(exc), where="body") from None
    except RecursionError:
        raise InputError(f"the body nests deeper than {MAX_DEPTH} levels", where="body") from None
    except ValueError as exc:  # JSONDecodeError, and bytes that are not UTF-8
        raise InputError(f"the body is not valid JSON: {exc}", where="body") from None
    # A lone surrogate can only come from a \\uD8xx-\\uDFxx escape or from the UTF-8 bytes
    # of one: without either in the text (the usual case) no string needs looking at.
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    maybe = b"\\ud" in data or b"\\uD" in data or b"\xed" in data
    check_value(value, "body", strings=maybe, floats=False)
    return value


def check_value(value: Any, where: str, *, strings: bool = True, floats: bool = True) -> None:
    """Refuse nesting past :data:`MAX_DEPTH`, lone surrogates in strings and keys (unless not
    ``strings``), and floats that are not finite (unless not ``floats``), anywhere in
    ``value`` (JSON as parsed: dicts, lists, tuples); walked without recursion."""
    if not isinstance(value, dict | list | tuple):
        _check_leaf(value, where, strings, floats)
        return
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth >= MAX_DEPTH:
            raise InputError(f"the value nests deeper than {MAX_DEPTH} levels: send flatter "
                             "JSON", where=where)
        if isinstance(item, dict):
            if strings:
                for key in item:
                    if isinstance(key, str):
                        _check_text(key, where)
            children: Any = item.values()
        else:
            children = item
        for child in children:
            if isinstance(child, dict | list | tuple):
                stack.append((child, depth + 1))
            elif strings or floats:
                _check_leaf(child, where, strings, floats)


def _check_leaf(value: Any, where: str, strings: bool, floats: bool) -> None:
    if strings and isinstance(value, str):
        _check_text(value, where)
    elif floats and isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{value!r} is not a JSON value: send a finite number or null",
                         where=where)


def _check_text(text: str, where: str) -> None:
    found = _SURROGATE.search(text)
    if found is not None:
        start = max(0, found.start() - 20)
        raise InputError(f"a string holds the lone surrogate {found.group()!r} (near "
                         f"{text[start:found.start()]!r}): send valid Unicode", where=where)


def check_session_id(value: str) -> str:
    """``value`` when it is a valid session id, else :class:`InputError` naming the pattern."""
    if not _SESSION_ID.fullmatch(value):
        shown = value if len(value) <= 60 else value[:60] + "..."
        raise InputError(f"session id {shown!r} ({len(value)} characters) is not allowed: use "
                         "at most 128 characters of A-Z a-z 0-9 _ . : @ - not starting with "
                         f"'.' or '-' (the pattern {SESSION_ID_PATTERN})", where="session")
    return value


def read_upstream(raw: bytes) -> Any:
    """An upstream body as JSON, or None when it is not JSON this service can handle (invalid,
    nested too deep, lone surrogates, non-finite numbers)."""
    try:
        return loads(raw)
    except InputError:
        return None


__all__ = ["MAX_DEPTH", "SESSION_ID_PATTERN", "check_session_id", "check_value", "loads",
           "read_upstream"]
