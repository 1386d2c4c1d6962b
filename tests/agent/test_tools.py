"""Tools from plain functions: schemas from signatures and docstrings; calls that never crash."""

from __future__ import annotations

import asyncio
import enum
import json
from typing import Literal, Optional

import pytest

from loomctx import ConfigError, Tool, ToolRegistry, tool_schema
from loomctx.agent import parse_docstring
from loomctx.sources.tools import check_schema


class Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


def forecast(city: str, days: int = 3, unit: Unit = Unit.CELSIUS,
             detail: Literal["short", "long"] = "short", hourly: Optional[bool] = None,  # noqa: UP045
             tags: list[str] | None = None, extra: dict[str, float] | None = None,
             ratio: float = 0.5) -> str:
    """The weather forecast for a city.

    Used by the planner before trips.

    Args:
        city: The city's name, e.g. "Lyon".
        days: How many days ahead,
            counted from today.
        unit: Temperature unit.
        detail: How much to say.
    """
    return f"{city}: {days} days in {unit.value}, {detail}"


def _fn(schema):
    return schema["function"]


def test_schema_types_defaults_and_descriptions():
    s = _fn(tool_schema(forecast))
    assert s["name"] == "forecast"
    assert s["description"] == ("The weather forecast for a city.\n\n"
                                "Used by the planner before trips.")
    props = s["parameters"]["properties"]
    assert s["parameters"]["required"] == ["city"]
    assert props["city"] == {"type": "string", "description": 'The city\'s name, e.g. "Lyon".'}
    assert props["days"] == {"type": "integer", "default": 3,
                             "description": "How many days ahead, counted from today."}
    assert props["unit"]["enum"] == ["c", "f"] and props["unit"]["default"] == "c"
    assert props["detail"]["enum"] == ["short", "long"] and props["detail"]["type"] == "string"
    assert props["hourly"]["type"] == ["boolean", "null"]
    assert props["tags"] == {"type": ["array", "null"], "items": {"type": "string"},
                             "default": None}
    assert props["extra"] == {"type": ["object", "null"], "default": None,
                              "additionalProperties": {"type": "number"}}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert check_schema(s["parameters"]) is None


def test_sphinx_and_numpy_docstrings():
    def a(x: int) -> int:
        """Double it.

        :param x: the number
            to double.
        :returns: twice x.
        """
        return 2 * x

    def b(x: int, y: str = "") -> int:
        """Add up.

        Parameters
        ----------
        x : int
            The first.
        y : str
            The second.

        Returns
        -------
        int
        """
        return x

    assert parse_docstring(a.__doc__) == ("Double it.", {"x": "the number to double."})
    desc, params = parse_docstring(b.__doc__)
    assert desc == "Add up." and params == {"x": "The first.", "y": "The second."}
    assert _fn(tool_schema(b))["parameters"]["properties"]["y"]["description"] == "The second."


def test_unusable_signatures_are_refused():
    def positional(x, /):
        return x

    def varargs(*xs):
        return xs

    def odd(x: complex):
        return x

    for fn in (positional, varargs, odd):
        with pytest.raises(ConfigError):
            tool_schema(fn)
    with pytest.raises(ConfigError, match="two tools are named"):
        ToolRegistry([forecast, Tool.from_function(forecast)])


def _call(name, args, cid="c1"):
    return {"id": cid, "type": "function", "function": {
        "name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}


def test_sync_and_async_tools_run_and_enum_arguments_are_converted():
    async def lookup(key: str) -> dict:
        """Look a key up."""
        return {"key": key, "found": True}

    reg = ToolRegistry([forecast, lookup])
    out = asyncio.run(reg.run_all([_call("forecast", {"city": "Lyon", "unit": "f"}, "a"),
                                   _call("lookup", {"key": "k"}, "b")]))
    assert [(o.id, o.status) for o in out] == [("a", "ok"), ("b", "ok")]
    assert out[0].content == "Lyon: 3 days in f, short"
    assert json.loads(out[1].content) == {"key": "k", "found": True}


def test_every_failure_is_a_result_the_model_reads():
    def boom(x: int) -> str:
        raise ValueError(f"bad x {x}")

    async def slow() -> str:
        await asyncio.sleep(30)
        return "never"

    reg = ToolRegistry([boom, forecast, Tool.from_function(slow, timeout=0.01)])
    cases = {
        "boom": _call("boom", {"x": 7}),
        "unknown": _call("nope", {}),
        "json": _call("forecast", "{not json"),
        "not_object": _call("forecast", "[1, 2]"),
        "missing_arg": _call("forecast", {}),
        "bad_enum": _call("forecast", {"city": "Lyon", "unit": "kelvin"}),
        "slow": _call("slow", {}),
    }
    out = {k: asyncio.run(reg.run(c)) for k, c in cases.items()}
    assert all(o.content.startswith("error: ") for o in out.values())
    assert out["boom"].content == "error: ValueError: bad x 7"
    assert "unknown tool 'nope'" in out["unknown"].content and "forecast" in out["unknown"].content
    assert "not valid JSON" in out["json"].content
    assert "must be a JSON object" in out["not_object"].content
    assert "city" in out["missing_arg"].content
    assert "['c', 'f']" in out["bad_enum"].content
    assert out["slow"].status == "timeout" and "timed out" in out["slow"].content
    assert {o.status for k, o in out.items() if k != "slow"} == {"error"}


def test_a_tool_error_is_told_in_the_tools_own_words_and_recorded_as_an_error():
    from loomctx.errors import ToolError

    def query(sql: str) -> str:
        raise ToolError("no such column: order_id")

    out = asyncio.run(ToolRegistry([query]).run(_call("query", {"sql": "SELECT 1"})))
    assert (out.status, out.content) == ("error", "error: no such column: order_id")
