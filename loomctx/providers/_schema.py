"""Tool definitions as the model sees them: normalizing shapes and rendering JSON schemas.

OpenAI does not publish how tool definitions are tokenized. The community rule (the
``openai-chat-tokens`` approximation, matched against API usage numbers) is that functions are
rewritten into a TypeScript-like namespace::

    namespace functions {

    // Get the weather
    type get_weather = (_: {
    // City name
    city: string,
    unit?: "c" | "f",
    }) => any;

    } // namespace functions

loomctx renders each tool's block with that rule and counts it; it is a rule, not an official
count. Anthropic tool definitions are counted from their compact JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from loomctx.errors import ConfigError

NAMESPACE_HEADER = "namespace functions {\n\n"
NAMESPACE_FOOTER = "} // namespace functions"


def as_function(tool_def: Mapping[str, Any]) -> dict[str, Any]:
    """``{"name", "description", "parameters"}`` from an OpenAI, bare or Anthropic tool shape."""
    if not isinstance(tool_def, Mapping):
        raise ConfigError(f"a tool definition must be a mapping, got {tool_def!r}")
    fn: Mapping[str, Any] = tool_def
    if isinstance(tool_def.get("function"), Mapping):
        fn = tool_def["function"]
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(
            f"a tool definition needs a non-empty 'name' (OpenAI: "
            f"{{'type': 'function', 'function': {{'name': ...}}}}), got {tool_def!r}"
        )
    params = fn.get("parameters", fn.get("input_schema")) or {}
    return {"name": name, "description": fn.get("description") or "", "parameters": params}


def render_typescript(fn: Mapping[str, Any]) -> str:
    """One function's block in the namespace rendering, ending with a blank line."""
    lines: list[str] = []
    if fn["description"]:
        lines.append(f"// {fn['description']}")
    params = fn["parameters"]
    if (isinstance(params, Mapping) and isinstance(params.get("properties"), Mapping)
            and params["properties"]):
        lines.append(f"type {fn['name']} = (_: {{")
        lines.append(_properties(params, 0))
        lines.append("}) => any;")
    else:
        lines.append(f"type {fn['name']} = () => any;")
    lines.append("")
    return "\n".join(lines) + "\n"


def render_json(fn: Mapping[str, Any]) -> str:
    """Compact JSON of ``{"name", "description", "input_schema"}`` (Anthropic's shape)."""
    shape = {"name": fn["name"], "description": fn["description"], "input_schema": fn["parameters"]}
    return json.dumps(shape, ensure_ascii=False, separators=(",", ":"), default=str)


_MAX_DEPTH = 64  # deeper schemas render as ``any`` (validated inputs never get here)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _properties(obj: Mapping[str, Any], indent: int) -> str:
    raw_required = obj.get("required")
    required = ({r for r in raw_required if isinstance(r, str)}
                if isinstance(raw_required, list) else set())
    props = obj.get("properties")
    lines: list[str] = []
    for name, prop in (props.items() if isinstance(props, Mapping) else ()):
        prop = prop if isinstance(prop, Mapping) else {}
        if prop.get("description"):
            lines.append(f"// {prop['description']}")
        mark = "" if name in required else "?"
        lines.append(f"{name}{mark}: {_type(prop, indent)},")
    pad = " " * indent
    return "\n".join(pad + line for line in lines)


def _type(prop: Mapping[str, Any], indent: int, depth: int = 0) -> str:
    if depth > _MAX_DEPTH or indent > 2 * _MAX_DEPTH:
        return "any"
    if "const" in prop:
        return _dump(prop["const"])
    if isinstance(prop.get("enum"), list):
        return " | ".join(_dump(v) for v in prop["enum"]) or "never"
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            return " | ".join(_type(p if isinstance(p, Mapping) else {}, indent, depth + 1)
                              for p in prop[key])
    if isinstance(prop.get("$ref"), str):
        return prop["$ref"].rsplit("/", 1)[-1]
    kind = prop.get("type")
    if isinstance(kind, list):
        return " | ".join(_type({**prop, "type": k}, indent, depth + 1) for k in kind
                          if not isinstance(k, list))
    if kind == "string":
        return "string"
    if kind in ("number", "integer"):
        return "number"
    if kind in ("boolean", "null"):
        return str(kind)
    if kind == "object":
        if not isinstance(prop.get("properties"), Mapping) or not prop["properties"]:
            return "object"
        return "{\n" + _properties(prop, indent + 2) + "\n}"
    if kind == "array":
        items = prop.get("items")
        return f"{_type(items, indent, depth + 1)}[]" if isinstance(items, Mapping) else "any[]"
    return "any"


__all__ = [
    "NAMESPACE_FOOTER",
    "NAMESPACE_HEADER",
    "as_function",
    "render_json",
    "render_typescript",
]
