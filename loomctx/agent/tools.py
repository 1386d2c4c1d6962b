"""Tools from plain Python functions: a JSON schema from the signature and docstring, and a
registry that runs the calls a model asked for.

The schema is what the model reads, so it comes from what the author already wrote: parameter
types from the annotations (``str``, ``int``, ``float``, ``bool``, ``list[...]``,
``dict[str, ...]``, ``Optional``/``X | None``, ``Literal``, ``Enum``), defaults from the
signature, the description from the docstring's summary, and each parameter's description from
its ``Args:`` (Google), ``:param x:`` (Sphinx) or ``Parameters`` (NumPy) section.

A call never crashes the loop: bad arguments, an unknown tool, an exception or a timeout all
become a result text starting with ``error:`` that the model reads and can act on.
"""

from __future__ import annotations

import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from loomctx.errors import ConfigError
from loomctx.sources.tools import normalize_tool

_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Returns?|Yields?|"
                      r"Raises|Examples?|Notes?)\s*:?\s*$")
_GOOGLE_ARG = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SPHINX_ARG = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_NUMPY_ARG = re.compile(r"^(\w+)\s*(?::.*)?$")


def _type_schema(hint: Any) -> dict[str, Any]:
    """The JSON schema of one annotation (``{}`` accepts anything)."""
    if hint is inspect.Parameter.empty or hint is Any or hint is None:
        return {} if hint is not None else {"type": "null"}
    if hint is type(None):
        return {"type": "null"}
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [m.value for m in hint]
        return {**_enum_type(values), "enum": values}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return {**_enum_type(list(args)), "enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        nullable = len(inner) < len(args)
        if len(inner) == 1:
            schema = _type_schema(inner[0])
            if nullable and isinstance(schema.get("type"), str):
                return {**schema, "type": [schema["type"], "null"]}
            return {"anyOf": [schema, {"type": "null"}]} if nullable else schema
        return {"anyOf": [_type_schema(a) for a in args]}
    if hint in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset,
                                                            Sequence):
        items = [a for a in args if a is not Ellipsis]
        return {"type": "array", **({"items": _type_schema(items[0])} if items else {})}
    if hint is dict or origin in (dict, Mapping):
        value = args[1] if len(args) == 2 else Any
        return {"type": "object",
                **({"additionalProperties": _type_schema(value)} if value is not Any else {})}
    raise ConfigError(f"cannot describe the type {hint!r} in a tool schema: use str, int, float,"
                      " bool, list, dict, Optional, Literal or an Enum")


def _enum_type(values: list[Any]) -> dict[str, Any]:
    kinds = {_SIMPLE.get(type(v)) for v in values}
    return {"type": kinds.pop()} if len(kinds) == 1 and None not in kinds else {}


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}) from a Google, Sphinx or NumPy docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        head = _SECTION.match(line.strip())
        if head and (line.rstrip().endswith(":") or set(nxt.strip()) == {"-"}):
            section, current = head.group(1), None
            continue
        if set(line.strip()) == {"-"}:
            continue
        sphinx = _SPHINX_ARG.match(line)
        if sphinx:
            section, current = "sphinx", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
        elif line.strip().startswith(":"):
            section, current = "sphinx-other", None
        elif section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Params", "Keyword Args"):
            m = _GOOGLE_ARG.match(line)
            if m and len(line) - len(line.lstrip()) <= 4 and not _continues(line, lines, i):
                current = m.group(1)
                params[current] = m.group(3).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
        elif section == "Parameters":
            m = _NUMPY_ARG.match(line)
            if m and not line.startswith(" "):
                current = m.group(1)
                params[current] = ""
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
        elif section == "sphinx" and current and line.startswith(" ") and line.strip():
            params[current] = f"{params[current]} {line.strip()}"
    return "\n".join(summary).strip(), params


def _continues(line: str, lines: list[str], i: int) -> bool:
    """A Google argument line indented deeper than the section's first argument continues the
    previous description (``key: value`` text inside a description is not a new argument)."""
    indent = len(line) - len(line.lstrip())
    for prev in reversed(lines[:i]):
        if _SECTION.match(prev.strip()):
            return False
        if prev.strip() and _GOOGLE_ARG.match(prev):
            return indent > len(prev) - len(prev.lstrip())
    return False


def tool_schema(fn: Callable[..., Any], *, name: str | None = None,
                description: str | None = None) -> dict[str, Any]:
    """The tool definition of ``fn`` (``{"type": "function", "function": {...}}``).

    Parameters without a default are required; ``*args`` and positional-only parameters are
    refused (the model passes arguments by name); ``**kwargs`` is not shown.
    """
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # a forward reference that does not resolve
        raise ConfigError(f"cannot read the annotations of tool {fn!r}: {exc}") from exc
    doc, arg_docs = parse_docstring(inspect.getdoc(fn))
    props: dict[str, Any] = {}
    required: list[str] = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
            raise ConfigError(f"tool {fn.__name__!r} takes {p.name!r} by position: a model "
                              "passes arguments by name, so make it a keyword parameter")
        if p.kind is p.VAR_KEYWORD:
            continue
        schema = _type_schema(hints.get(p.name, p.annotation))
        if arg_docs.get(p.name):
            schema["description"] = arg_docs[p.name]
        if p.default is p.empty:
            required.append(p.name)
        else:
            default = p.default.value if isinstance(p.default, enum.Enum) else p.default
            try:
                json.dumps(default, allow_nan=False)
                schema["default"] = default
            except (TypeError, ValueError):
                pass  # a default JSON cannot show (an object) is still a default: not required
        props[p.name] = schema
    fn_schema: dict[str, Any] = {"name": name or fn.__name__}
    if description or doc:
        fn_schema["description"] = description or doc
    fn_schema["parameters"] = {"type": "object", "properties": props,
                               **({"required": required} if required else {})}
    return normalize_tool({"type": "function", "function": fn_schema},
                          where=f"tool {fn_schema['name']!r}")


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A function the model may call, with its schema."""

    fn: Callable[..., Any]
    """A plain function, sync (run in a worker thread) or async (awaited)."""
    schema: Mapping[str, Any]
    """The tool definition the model sees (``{"type": "function", "function": {...}}``)."""
    timeout: float | None = None
    """Seconds one call may take; None uses the registry's timeout."""

    @property
    def name(self) -> str:
        return str(self.schema["function"]["name"])

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None,
                      description: str | None = None, timeout: float | None = None) -> Tool:
        if timeout is not None and not timeout > 0:
            raise ConfigError(f"timeout must be > 0 seconds or None, got {timeout!r}")
        return cls(fn=fn, schema=tool_schema(fn, name=name, description=description),
                   timeout=timeout)
