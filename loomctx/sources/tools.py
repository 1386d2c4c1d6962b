"""Tool definitions: each definition is one budgeted item.

When all definitions do not fit their share, only the ones most relevant to the query are kept
(relevance over name, description and parameter names). Definitions render in the provider's
``tools`` parameter, in their original order, as part of the stable prefix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from loomctx._jsonl import check_json, clean_json, clean_text, short
from loomctx.errors import InputError
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import BaseSource, SourceRequest

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""What a tool name must match in full (OpenAI's rule)."""
MAX_SCHEMA_DEPTH = 64
"""Deepest JSON nesting accepted in a tool's parameters."""
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def check_schema(params: Mapping[str, Any]) -> str | None:
    """Why ``params`` is not a usable parameters schema, or None.

    The top is an object schema (``type`` absent or ``"object"``); anywhere inside,
    ``properties`` (and ``$defs``...) map names to schema objects, ``required`` is a list of
    strings, ``anyOf``/``oneOf``/``allOf`` are lists of schemas, ``items`` is a schema, ``enum``
    a list and ``type`` a string or a list of strings. The whole value is plain JSON (no
    non-finite numbers or lone surrogates) nested at most :data:`MAX_SCHEMA_DEPTH` deep.
    """
    reason = check_json(params, max_depth=MAX_SCHEMA_DEPTH)
    if reason is not None:
        return reason
    if params.get("type", "object") != "object":
        return f"the top-level type must be 'object', got {short(params.get('type'))}"
    stack: list[tuple[Mapping[str, Any], str]] = [(params, "$")]
    while stack:
        node, path = stack.pop()
        kind = node.get("type")
        if kind is not None and not isinstance(kind, str) and not (
                isinstance(kind, list) and all(isinstance(k, str) for k in kind)):
            return f"{path}.type must be a string or a list of strings, got {short(kind)}"
        required = node.get("required")
        if required is not None and not (
                isinstance(required, list) and all(isinstance(r, str) for r in required)):
            return f"{path}.required must be a list of property names, got {short(required)}"
        if "enum" in node and not isinstance(node["enum"], list):
            return f"{path}.enum must be a list, got {short(node['enum'])}"
        children: list[tuple[Any, str]] = []
        for key in _SCHEMA_MAPS:
            if key in node:
                if not isinstance(node[key], Mapping):
                    return f"{path}.{key} must be an object, got {short(node[key])}"
                children += [(v, f"{path}.{key}.{k}") for k, v in node[key].items()]
        for key in _SCHEMA_LISTS:
            if key in node:
                if not isinstance(node[key], list):
                    return f"{path}.{key} must be a list of schemas, got {short(node[key])}"
                children += [(v, f"{path}.{key}[{i}]") for i, v in enumerate(node[key])]
        for key in ("items", "additionalProperties", "not"):
            if isinstance(node.get(key), Mapping):
                children.append((node[key], f"{path}.{key}"))
        for child, where in children:
            if not isinstance(child, Mapping):
                return f"{where} must be a schema object, got {short(child)}"
            stack.append((child, where))
    return None


def normalize_tool(tool: Mapping[str, Any], *, where: str = "tools") -> dict[str, Any]:
    """Accept ``{"type": "function", "function": {...}}`` or a bare ``{"name", ...}`` schema.

    Refuses, with an :class:`InputError` at ``where``: a definition that is not an object, a
    ``type`` other than ``"function"``, a name not matching :data:`TOOL_NAME` (what OpenAI
    accepts), a description that is not a string, and parameters that are not an object schema
    (see :func:`check_schema`). Lone surrogates in the description and schema become U+FFFD.
    """
    if not isinstance(tool, Mapping):
        raise InputError(f"a tool definition must be an object, got {short(tool)}", where=where)
    kind = tool.get("type", "function")
    if kind != "function":
        raise InputError(f"tool type {short(kind)} is not supported: use "
                         '{"type": "function", "function": {"name": ...}}', where=where)
    fn = tool.get("function", tool)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
        raise InputError(
            "a tool needs a name: {\"type\": \"function\", \"function\": {\"name\": ...}}",
            where=where,
        )
    name = fn["name"]
    if not TOOL_NAME.fullmatch(name):
        raise InputError(f"tool name {short(name)} must be 1-64 letters, digits, '_' or '-'",
                         where=where)
    description = fn.get("description")
    if description is not None and not isinstance(description, str):
        raise InputError(f"description of tool {name!r} must be a string, got "
                         f"{short(description)}", where=where)
    params = fn.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, Mapping):
        raise InputError(f"parameters of tool {name!r} must be a JSON schema object, got "
                         f"{short(params)}", where=where)
    problem = check_schema(params)
    if problem is not None:
        raise InputError(f"parameters of tool {name!r}: {problem}", where=where)
    out: dict[str, Any] = {"name": name}
    if description:
        out["description"] = clean_text(description)
    out["parameters"] = clean_json(params)
    return {"type": "function", "function": out}


def _search_text(tool: Mapping[str, Any]) -> str:
    fn = tool["function"]
    props = fn.get("parameters", {}).get("properties", {}) or {}
    words = [fn["name"].replace("_", " "), fn.get("description", "")]
    for pname, spec in props.items():
        words.append(str(pname).replace("_", " "))
        if isinstance(spec, Mapping) and spec.get("description"):
            words.append(str(spec["description"]))
    return " ".join(w for w in words if w)


class ToolSource(BaseSource):
    """Tool definitions for the ``tools`` parameter."""

    def __init__(self, tools: Sequence[Mapping[str, Any]] = (), *, name: str = "tools",
                 origin: str = "tools") -> None:
        self.name = name
        self.tools = [normalize_tool(t, where=f"{origin}[{i}]") for i, t in enumerate(tools)]
        names = [t["function"]["name"] for t in self.tools]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise InputError(f"duplicate tool names {sorted(dup)!r}: names must be unique",
                             where=origin)
        self._items = [
            ContextItem(id=f"tool:{t['function']['name']}", source=self.name,
                        content=_search_text(t), kind="tool", tier=Tier.P2, priority=0.5,
                        metadata={"schema": t}, seq=i)
            for i, t in enumerate(self.tools)
        ]

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        return self._items


__all__ = ["MAX_SCHEMA_DEPTH", "TOOL_NAME", "ToolSource", "check_schema", "normalize_tool"]
