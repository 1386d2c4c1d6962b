"""Reading JSON and JSON Lines input with errors that name the file and the line.

Every input file goes through :func:`loads` so that hostile JSON fails as an
:class:`~loomctx.errors.InputError`, never as a traceback:

- nesting deeper than the parser's recursion limit → "nested too deeply";
- an integer literal longer than Python's digit limit → "number too large".

A lone surrogate escape such as ``"\\ud800"`` is valid JSON but not Unicode text (UTF-8 cannot
encode it); the loader keeps it and the consumer applies the project-wide rule, the stores' rule:
in text it becomes U+FFFD (:func:`clean_text`, :func:`clean_json`), in an id it is refused.

Files are read as ``utf-8-sig``: a UTF-8 byte order mark at the start is accepted and dropped.
A JSON Lines file whose name ends in ``.gz`` is read through gzip, streamed (data sets ship
compressed; a 500-message history repeated per question compresses about tenfold).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from loomctx.errors import InputError

ENCODING = "utf-8-sig"
"""How input files are decoded: UTF-8, with an optional byte order mark at the start."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def short(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, so one bad field never floods an error."""
    try:
        text = repr(value)
    except ValueError:  # an int past Python's digit limit
        return f"<a number of about {value.bit_length() * 3 // 10} digits>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bad_text(text: str) -> int | None:
    """Index of the first lone surrogate in ``text`` (which UTF-8 cannot encode), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the stores' rule)."""
    return _SURROGATE.sub("\ufffd", text) if bad_text(text) is not None else text


def clean_json(value: Any) -> Any:
    """A copy of a JSON value (already depth-checked) with its strings and keys cleaned."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    return value


def check_json(value: Any, *, max_depth: int | None = None) -> str | None:
    """Why ``value`` is not plain JSON data a provider accepts, or None when it is.

    Walks iteratively (no recursion, whatever the depth) and reports the first of: nesting
    beyond ``max_depth``, a non-string key, a non-finite number or an integer outside 64 bits,
    a value that is not a JSON type (lone surrogates are left to :func:`clean_json`). The
    reason names the JSON path, e.g. ``$.properties.city``.
    """
    stack: list[tuple[Any, str, int]] = [(value, "$", 0)]
    while stack:
        node, full, depth = stack.pop()
        path = full if len(full) <= 60 else f"{full[:28]}...{full[-28:]}"
        if isinstance(node, str):
            pass
        elif isinstance(node, float):
            if not math.isfinite(node):
                return f"the number at {path} is {node!r}, which JSON cannot carry"
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) >= 2**63:
            return f"the number at {path} is too large ({short(node)})"
        elif node is None or isinstance(node, (bool, int)):
            pass
        elif isinstance(node, (dict, list, tuple)):
            if max_depth is not None and depth >= max_depth:
                return f"nested deeper than {max_depth} levels at {path}"
            if isinstance(node, dict):
                for key, child in node.items():
                    if not isinstance(key, str):
                        return f"the key {short(key)} at {path} is not a string"
                    stack.append((child, f"{full}.{key}", depth + 1))
            else:
                stack.extend((child, f"{full}[{i}]", depth + 1) for i, child in enumerate(node))
        else:
            return f"the value at {path} is a {type(node).__name__}, not JSON data"
    return None


def loads(text: str, *, where: str, label: str = "not valid JSON", hint: str = "") -> Any:
    """``json.loads`` whose every failure is an :class:`InputError` at ``where``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno} column {exc.colno}" if "\n" in text.strip() else \
            f"column {exc.colno}"
        raise InputError(f"{label} ({exc.msg} at {at}){hint}", where=where) from None
    except RecursionError:
        raise InputError(f"{label}: nested too deeply for the JSON parser; flatten the data",
                         where=where) from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
        raise InputError(f"{label}: number too large ({str(exc).split(':')[0]})",
                         where=where) from None
    return value


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """The whole file as text (BOM dropped); unreadable or non-UTF-8 files raise InputError."""
    try:
        with open(path, encoding=ENCODING) as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the {what} file: {exc}", where=str(path)) from None


def json_lines(
    path: str | os.PathLike[str], *, label: str = "not valid JSON", hint: str = ""
) -> Iterator[tuple[int, str, Any]]:
    """``(line number, "path:line", value)`` for every non-blank line, streamed.

    A line that is not JSON raises :class:`InputError` ``"{label} ({reason} at column c){hint}"``
    at ``path:line``; an unreadable file raises it at ``path``.
    """
    try:
        fh = (gzip.open(path, "rt", encoding=ENCODING)  # noqa: SIM115 - closed below, streamed
              if os.fspath(path).endswith(".gz")
              else open(path, encoding=ENCODING))  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", where=str(path)) from None
    with fh:
        try:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                where = f"{path}:{n}"
                yield n, where, loads(line, where=where, label=label, hint=hint)
        except UnicodeDecodeError as exc:
            raise InputError(f"cannot read as UTF-8 text: {exc}", where=str(path)) from None
        except (OSError, EOFError) as exc:  # gzip: a corrupt or truncated archive
            raise InputError(f"cannot read: {exc}", where=str(path)) from None
