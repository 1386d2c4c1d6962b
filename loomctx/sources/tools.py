"""Tool definitions: each definition is one budgeted item.

When all definitions do not fit their share, only the ones most relevant to the query are kept
(relevance over name, description and parameter names). Definitions render in the provider's
``tools`` parameter, in their original order, as part of the stable prefix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.errors import InputError
from loomctx.items import ContextItem, Tier
from loomctx.sources.protocol import SourceRequest


def normalize_tool(tool: Mapping[str, Any], *, where: str = "tools") -> dict[str, Any]:
    """Accept ``{"type": "function", "function": {...}}`` or a bare ``{"name", ...}`` schema."""
    if not isinstance(tool, Mapping):
        raise InputError(f"a tool definition must be an object, got {tool!r}", where=where)
    fn = tool.get("function", tool) if tool.get("type", "function") == "function" else None
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
        raise InputError(
            "a tool needs a name: {\"type\": \"function\", \"function\": {\"name\": ...}}",
            where=where,
        )
    params = fn.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, Mapping):
        raise InputError(f"parameters of tool {fn['name']!r} must be a JSON schema object",
                         where=where)
    out: dict[str, Any] = {"name": fn["name"]}
    if fn.get("description"):
        out["description"] = str(fn["description"])
    out["parameters"] = dict(params)
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


class ToolSource:
    """Tool definitions for the ``tools`` parameter (seed: ToolSource)."""

    def __init__(self, tools: Sequence[Mapping[str, Any]] = (), *, name: str = "tools") -> None:
        self.name = name
        self.tools = [normalize_tool(t, where=f"tools[{i}]") for i, t in enumerate(tools)]
        names = [t["function"]["name"] for t in self.tools]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise InputError(f"duplicate tool names {sorted(dup)!r}: names must be unique",
                             where="tools")
        self._items = [
            ContextItem(id=f"tool:{t['function']['name']}", source=self.name,
                        content=_search_text(t), kind="tool", tier=Tier.P2, priority=0.5,
                        metadata={"schema": t}, seq=i)
            for i, t in enumerate(self.tools)
        ]

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        return self._items


__all__ = ["ToolSource", "normalize_tool"]
