"""The tools an agent may call, and how one call runs.

Every call ends in a result the model can read: the function's return value (a string as is,
anything else as JSON), or a text starting with ``error:`` when the tool is unknown, the
arguments are not a JSON object, the function raised, or it ran past its timeout. Sync
functions run in a worker thread and async ones on the loop, so the calls of one reply run
concurrently. A sync function that times out cannot be stopped (Python threads cannot be
killed): its result is dropped and the model is told it timed out.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import inspect
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from loomctx.agent.tools import Tool
from loomctx.errors import ConfigError, ToolError

ToolLike = Callable[..., Any] | Tool
"""What a registry accepts: a plain function (schema from its signature) or a :class:`Tool`."""


@dataclass(frozen=True, kw_only=True)
class ToolOutcome:
    """How one tool call ended."""

    id: str
    """The tool-call id the model gave (the provider's, unchanged)."""
    name: str
    """The tool name the model asked for (unknown names included)."""
    content: str
    """The result the model reads: the return value, or ``"error: ..."``."""
    status: Literal["ok", "error", "timeout", "not_run"]
    """``ok``, ``error`` (unknown tool, bad arguments, an exception), ``timeout``, or
    ``not_run`` (refused by the agent's ``max_tool_calls``)."""


class ToolRegistry:
    """Tools by name, each run with a per-call timeout."""

    def __init__(self, tools: Sequence[ToolLike] = (), *, timeout: float = 30.0) -> None:
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ConfigError(f"timeout must be > 0 seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self.tools: dict[str, Tool] = {}
        for t in tools:
            tool = t if isinstance(t, Tool) else Tool.from_function(t)
            if tool.name in self.tools:
                raise ConfigError(f"two tools are named {tool.name!r}: pass name=... to "
                                  "Tool.from_function for one of them")
            self.tools[tool.name] = tool

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The tool definitions, in registration order (what the session budgets)."""
        return [dict(t.schema) for t in self.tools.values()]

    async def run(self, call: Mapping[str, Any], *, timeout: float | None = None) -> ToolOutcome:
        """Run one OpenAI-shaped tool call (``id``, ``function: {name, arguments}``).

        ``timeout`` caps this call's own timeout (an agent passes the wall time it has left).
        """
        fn_part = call.get("function") or {}
        cid, name = str(call.get("id", "")), str(fn_part.get("name", ""))

        def error(text: str, status: Literal["error", "timeout"] = "error") -> ToolOutcome:
            return ToolOutcome(id=cid, name=name, content=f"error: {text}", status=status)

        tool = self.tools.get(name)
        if tool is None:
            return error(f"unknown tool {name!r}: the tools are {sorted(self.tools)!r}")
        try:
            args = _arguments(fn_part.get("arguments"))
            args = _convert(tool.fn, args)
        except ValueError as exc:
            return error(str(exc))
        limit = tool.timeout if tool.timeout is not None else self.timeout
        if timeout is not None:
            limit = max(0.0, min(limit, timeout))
        try:
            value = await asyncio.wait_for(_invoke(tool.fn, args), limit)
        except asyncio.TimeoutError:
            return error(f"tool {name!r} timed out after {limit:g} s", "timeout")
        except ToolError as exc:  # the tool's own message, read by the model as it is
            return error(str(exc))
        except Exception as exc:  # the model reads what went wrong and may try again
            return error(f"{type(exc).__name__}: {exc}")
        return ToolOutcome(id=cid, name=name, content=_as_text(value), status="ok")

    async def run_all(self, calls: Sequence[Mapping[str, Any]], *,
                      timeout: float | None = None) -> list[ToolOutcome]:
        """Run ``calls`` concurrently; outcomes in the order of the calls."""
        return list(await asyncio.gather(*(self.run(c, timeout=timeout) for c in calls)))


def _arguments(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the arguments are not valid JSON ({exc}): {str(raw)[:200]!r}") \
            from exc
    if not isinstance(value, dict):
        raise ValueError(f"the arguments must be a JSON object, got {str(raw)[:200]!r}")
    return value


@functools.lru_cache(maxsize=256)
def _enums(fn: Callable[..., Any]) -> dict[str, type[enum.Enum]]:
    """Parameters annotated with an Enum (directly or Optional): their values are converted."""
    out: dict[str, type[enum.Enum]] = {}
    for pname, hint in typing.get_type_hints(fn).items():
        for cand in (hint, *typing.get_args(hint)):
            if isinstance(cand, type) and issubclass(cand, enum.Enum):
                out[pname] = cand
    return out


def _convert(fn: Callable[..., Any], args: dict[str, Any]) -> dict[str, Any]:
    try:
        enums = _enums(fn)
    except TypeError:  # an unhashable callable object: no conversion
        return args
    for pname, kind in enums.items():
        if pname in args and args[pname] is not None and not isinstance(args[pname], kind):
            try:
                args[pname] = kind(args[pname])
            except ValueError:
                allowed = [m.value for m in kind]
                raise ValueError(f"{pname} must be one of {allowed!r}, got {args[pname]!r}") \
                    from None
    return args


async def _invoke(fn: Callable[..., Any], args: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)):  # noqa: B004 (an object with an async __call__)
        return await fn(**args)
    value = await asyncio.to_thread(fn, **args)
    if inspect.isawaitable(value):
        value = await value
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # a circular structure
        return repr(value)


__all__ = ["ToolLike", "ToolOutcome", "ToolRegistry"]
