"""The static part's own cap (seed 004: 12,000 of 16,000 tokens): what is cut, and in which
order, with the bytes stable across calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from loomctx.demo import sql_demo
from loomctx.demo.setup import STATIC_MAX_TOKENS
from loomctx.errors import ConfigError
from loomctx.items import ContextItem
from loomctx.retrieval.task import TaskContextSource
from loomctx.tokens.protocol import TokenCounter

Collect = Callable[..., Sequence[ContextItem]]


def _tokens(items: Sequence[ContextItem], counter: TokenCounter) -> int:
    return sum(counter.count(i.content) for i in items)


def test_a_static_part_within_its_cap_is_unchanged(collect: Collect) -> None:
    capped = TaskContextSource("Total sales", phase="sql", task_context={"db": "sales"},
                               max_tokens=1_000)
    free = TaskContextSource("Total sales", phase="sql", task_context={"db": "sales"})
    assert [i.content for i in collect(capped)] == [i.content for i in collect(free)]


def test_the_task_context_is_cut_first_and_the_cut_is_stable(
        collect: Collect, counter: TokenCounter) -> None:
    src = TaskContextSource("Total sales of the last 7 days", phase="sql_generation",
                            task_context="row " * 5_000, max_tokens=300)
    items = collect(src, budget=10_000)
    assert _tokens(items, counter) <= 300
    assert [i.id for i in items] == ["task:requirement", "task:phase", "task:context"]
    assert items[0].content == "### Requirement\nTotal sales of the last 7 days"
    assert items[2].content.endswith("[cut: the static part is capped at 300 tokens]")
    assert [i.content for i in collect(src, budget=10_000)] == [i.content for i in items]


def test_a_huge_requirement_is_cut_to_the_cap_too(collect: Collect,
                                                 counter: TokenCounter) -> None:
    src = TaskContextSource("word " * 4_000, phase="sql", task_context={"db": "x"},
                            max_tokens=200)
    items = collect(src, budget=10_000)
    assert _tokens(items, counter) <= 200
    assert [i.id for i in items] == ["task:requirement"]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "12000"])
def test_a_bad_cap_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_tokens"):
        TaskContextSource("x", max_tokens=bad)  # type: ignore[arg-type]


def test_the_sql_demo_caps_its_static_part_at_the_seeds_12000() -> None:
    demo = sql_demo("Total sales")
    (task,) = [s for s in demo.session.builder.sources if isinstance(s, TaskContextSource)]
    assert task.max_tokens == STATIC_MAX_TOKENS == 12_000
