"""Reading JSON Lines files with errors that name the file and the line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from loomctx.errors import InputError


def json_lines(
    path: str | os.PathLike[str], *, label: str = "not valid JSON", hint: str = ""
) -> Iterator[tuple[int, str, Any]]:
    """``(line number, "path:line", value)`` for every non-blank line, streamed.

    A line that is not JSON raises :class:`InputError` ``"{label} ({reason} at column c){hint}"``
    at ``path:line``; an unreadable file raises it at ``path``.
    """
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - closed below, streamed
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", where=str(path)) from exc
    with fh:
        try:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                where = f"{path}:{n}"
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{label} ({exc.msg} at column {exc.colno}){hint}",
                                     where=where) from None
                yield n, where, value
        except UnicodeDecodeError as exc:
            raise InputError(f"cannot read as UTF-8 text: {exc}", where=str(path)) from exc
