"""A plain function as a source (the seed's callback gatherers): sync or async, text, mappings
or items, and a failing function degrades the build and is named in the report."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from loomctx.builder import ContextBuilder
from loomctx.errors import ConfigError
from loomctx.items import ContextItem, Tier
from loomctx.sources.function import FunctionSource
from loomctx.sources.static import SystemPromptSource, UserInputSource

Collect = Callable[..., Sequence[ContextItem]]


def test_a_sync_function_gets_the_query_and_its_results_become_items(collect: Collect) -> None:
    seen: list[tuple[str, int]] = []

    def rag(query: str, top_k: int) -> list[object]:
        seen.append((query, top_k))
        return ["Returns take 7 days.", {"content": "Refunds go to the card.", "score": 0.9,
                                         "id": "doc-2", "metadata": {"url": "u"}}, "extra"]

    items = collect(FunctionSource(rag, name="rag", limit=2), "refund?")
    assert seen == [("refund?", 2)]
    assert [(i.id, i.source, i.kind, i.tier, i.priority) for i in items] == [
        ("rag:0", "rag", "evidence", Tier.P2, 0.5), ("doc-2", "rag", "evidence", Tier.P2, 0.9)]
    assert items[1].metadata == {"url": "u"}


def test_an_async_function_works_too(collect: Collect) -> None:
    async def memory(query: str, limit: int) -> list[str]:
        return [f"remembered about {query}"]

    (item,) = collect(FunctionSource(memory, name="memory", kind="state", tier=Tier.P1), "x")
    assert (item.content, item.kind, item.tier) == ("remembered about x", "state", Tier.P1)


@pytest.mark.parametrize("returns", [None, "one string", [{"text": 3}], [{"content": "a",
                                                                          "score": 7}], [42]])
def test_a_function_that_fails_or_returns_junk_degrades_the_build(returns: object) -> None:
    def bad(query: str, limit: int) -> object:
        return returns

    builder = ContextBuilder([SystemPromptSource("Be brief."), UserInputSource(),
                              FunctionSource(bad, name="rag")])  # type: ignore[arg-type]
    result = builder.build_sync("hi there", max_tokens=500)
    assert result.payload["messages"][-1] == {"role": "user", "content": "hi there"}
    (failed,) = result.report.failed_sources
    assert failed.name == "rag"


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="fn"):
        FunctionSource("nope", name="rag")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="name"):
        FunctionSource(lambda q, n: [], name=" ")
    with pytest.raises(ConfigError, match="limit"):
        FunctionSource(lambda q, n: [], name="rag", limit=0)
