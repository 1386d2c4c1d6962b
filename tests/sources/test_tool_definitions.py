"""Tool definitions: every definition checked, hostile schemas refused, rendering never crashes."""

from __future__ import annotations

from typing import Any

import pytest

from loomctx.errors import InputError
from loomctx.sources.tools import MAX_SCHEMA_DEPTH, ToolSource, check_schema, normalize_tool
from loomctx.tokens._schema import render_typescript


def tool(name: str = "track", **params: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, **params}
    return {"type": "function", "function": {"name": name, "parameters": schema}}


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        (tool(properties=[1, 2]), "$.properties must be an object"),
        (tool(required=3), "$.required must be a list of property names"),
        (tool(required=[1]), "$.required must be a list of property names"),
        (tool(type="array"), "top-level type must be 'object'"),
        (tool(properties={"a": 5}), "$.properties.a must be a schema object"),
        (tool(properties={"a": {"anyOf": {"type": "string"}}}), "anyOf must be a list"),
        (tool(properties={"a": {"type": 4}}), "type must be a string or a list"),
        (tool(properties={"a": {"enum": "abc"}}), "enum must be a list"),
        (tool(properties={"a": {"default": float("inf")}}), "inf"),
        (tool(name="has space"), "tool name 'has space'"),
        (tool(name="x" * 65), "1-64 letters"),
        ({"type": "retrieval"}, "tool type 'retrieval'"),
        ({"type": "function", "function": "track"}, "needs a name"),
        ({"type": "function", "function": {"name": "f", "description": 3}},
         "description of tool 'f' must be a string"),
        ({"type": "function", "function": {"name": "f", "parameters": [1]}},
         "must be a JSON schema object"),
        ("track", "must be an object"),
    ],
)
def test_bad_definitions_name_the_index(definition: Any, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        ToolSource([tool("ok"), definition], origin="tools.json")
    assert info.value.where == "tools.json[1]"
    assert fragment in str(info.value)


def test_depth_is_limited() -> None:
    # every schema level is two JSON levels (the schema and its properties)
    ok = nested(MAX_SCHEMA_DEPTH // 2 - 1)
    assert check_schema(ok) is None
    deep = check_schema(nested(700))
    assert deep is not None and f"nested deeper than {MAX_SCHEMA_DEPTH} levels" in deep
    assert len(deep) < 200  # the JSON path in the message is shortened


def test_surrogates_in_descriptions_are_repaired() -> None:
    got = normalize_tool({"name": "f", "description": "bad \ud800",
                          "parameters": {"type": "object", "properties": {
                              "a": {"type": "string", "description": "x\udc00"}}}})
    fn = got["function"]
    assert fn["description"] == "bad \ufffd"
    assert fn["parameters"]["properties"]["a"]["description"] == "x\ufffd"


@pytest.mark.parametrize("params", [{"properties": [1]}, {"properties": {"a": {}}, "required": 5},
                                    nested(700), {"properties": {"a": {"type": ["x", ["y"]]}}}])
def test_rendering_tolerates_unchecked_schemas(params: dict[str, Any]) -> None:
    text = render_typescript({"name": "f", "description": "", "parameters": params})
    assert text.startswith("type f = ") and text.endswith("\n")
