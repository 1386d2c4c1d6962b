"""What both providers' structural checks share: names, limits, JSON-encodability, places.

See :mod:`loomctx.render.validate` for the rules and their sources.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""Tool name pattern both providers document."""
MAX_CACHE_BREAKPOINTS = 4
"""Anthropic's limit on ``cache_control`` markers in one request."""
OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_SURROGATE = re.compile("[\ud800-\udfff]")


CLEAN_MAX = 100_000
"""Message objects remembered as JSON-clean (past this many the memo starts over)."""
_CLEAN: dict[int, Any] = {}
"""id of a message that passed the fast path → the message. A turn re-sends the same stored
messages (they are not changed in place: the builder's token costs rely on it too), so each
is serialised once, not on every build."""


def _json_problems(payload: Any) -> list[str]:
    """Values that would not survive ``json.dumps(...).encode("utf-8")`` as the API reads it."""
    messages = payload.get("messages") if isinstance(payload, Mapping) else None
    fresh = ([m for m in messages if _CLEAN.get(id(m)) is not m]
             if type(messages) is list else None)
    # the fast path (C speed): a payload that serialises cleanly has no such values; of its
    # messages only those not seen clean before are serialised
    head = payload if fresh is None else {**payload, "messages": fresh}
    try:
        if not _has_odd_keys(head):
            json.dumps(head, ensure_ascii=False, allow_nan=False).encode("utf-8")
            if fresh:
                if len(_CLEAN) + len(fresh) > CLEAN_MAX:
                    _CLEAN.clear()
                _CLEAN.update((id(m), m) for m in fresh)
            return []
    except (TypeError, ValueError, UnicodeEncodeError):
        pass
    problems: list[str] = []
    stack: list[tuple[str, Any]] = [("payload", payload)]
    while stack and len(problems) < 20:
        path, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                problems.append(f"{path}: lone surrogate in {value[:40]!r}: it cannot be encoded "
                                "as UTF-8; replace it (errors='replace') before building")
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    problems.append(f"{path}: key {key!r} is not a string: JSON keys are strings")
                stack.append((f"{path}.{key}", item))
        elif isinstance(value, list | tuple):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append(f"{path}: {value!r} is not valid JSON: use a finite number or null")
        elif value is not None and not isinstance(value, bool | int | float):
            problems.append(f"{path}: {type(value).__name__} {value!r:.60} is not a JSON value")
    return problems


def _has_odd_keys(value: Any) -> bool:
    """Whether a mapping anywhere in the top two levels of messages has a non-string key
    (``json.dumps`` would coerce it silently)."""
    if not isinstance(value, Mapping):
        return False
    for key, item in value.items():
        if not isinstance(key, str):
            return True
        if isinstance(item, list):
            for el in item:
                if isinstance(el, Mapping) and any(not isinstance(k, str) for k in el):
                    return True
    return False


def _at(i: int, msg: Any) -> str:
    role = msg.get("role") if isinstance(msg, Mapping) else None
    return f"messages[{i}] ({role})" if isinstance(role, str) else f"messages[{i}]"


def _tool_names(names: list[tuple[int, Any]]) -> list[str]:
    """Pattern and uniqueness of ``(index in tools, name)`` pairs."""
    problems = []
    seen: set[str] = set()
    for i, name in names:
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            problems.append(f"tools[{i}]: name {name!r} does not match {TOOL_NAME.pattern}: "
                            "use letters, digits, _ and - (at most 64)")
        elif name in seen:
            problems.append(f"tools[{i}]: name {name!r} is defined twice: keep one definition")
        else:
            seen.add(name)
    return problems
