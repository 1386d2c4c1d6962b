"""FunctionSource: a plain function (sync or async) as a source, the seed's callback gatherer."""

from __future__ import annotations

import pytest

from loomctx.builder import BuildOptions, ContextBuilder
from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.sources.function import FunctionSource
from loomctx.sources.static import SystemPromptSource, UserInputSource

FACTS = {"refund": "Refunds take 5 days.", "lyon": "The Lyon depot closes at 18:00."}


def lookup(request) -> list[str]:  # type: ignore[no-untyped-def]
    return [text for word, text in FACTS.items() if word in request.query.lower()]


async def alookup(request) -> list[ContextItem]:  # type: ignore[no-untyped-def]
    return [ContextItem(id="own", source="elsewhere", content="Async fact about refunds.",
                        kind="evidence")]


def builder(*sources: FunctionSource) -> ContextBuilder:
    return ContextBuilder([SystemPromptSource("You are Atlas."), UserInputSource(), *sources],
                          options=BuildOptions(format="text"))


def test_a_sync_function_gathers_for_the_query() -> None:
    r = builder(FunctionSource("facts", lookup)).build_sync("When is my refund?",
                                                           max_tokens=300, now=0.0)
    assert "Refunds take 5 days." in r.text and "Lyon" not in r.text
    [row] = [i for i in r.report.items if i.source == "facts"]
    assert row.included


def test_an_async_function_and_items_keep_their_fields_under_the_source_name() -> None:
    r = builder(FunctionSource("mem", alookup)).build_sync("refunds?", max_tokens=300, now=0.0)
    assert "Async fact about refunds." in r.text
    assert [i.source for i in r.report.items if i.id == "own"] == ["mem"]


def test_a_failing_or_malformed_function_degrades_the_build_and_is_named() -> None:
    def broken(request):  # type: ignore[no-untyped-def]
        raise RuntimeError("lookup service down")

    r = builder(FunctionSource("broken", broken),
                FunctionSource("odd", lambda req: "not a list")).build_sync(
        "refund?", max_tokens=300, now=0.0)
    failed = {s.name: s.error for s in r.report.failed_sources}
    assert "lookup service down" in (failed["broken"] or "")
    assert "return a list" in (failed["odd"] or "")
    assert "refund?" in r.text


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="callable"):
        FunctionSource("x", "not a function")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'message'"):
        FunctionSource("x", lookup, kind="message")
    with pytest.raises(ConfigError, match="priority"):
        FunctionSource("x", lookup, priority=2.0)
    with pytest.raises(ConfigError, match="name"):
        FunctionSource("", lookup)
    assert FunctionSource("x", lookup, tier=Tier.P1).tier is Tier.P1
