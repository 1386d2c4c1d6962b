"""Question builds about the past: the recent tail's share shrinks at small budgets."""

from __future__ import annotations

import pytest

from loomctx.builder import BuildOptions, BuildResult, ContextBuilder
from loomctx.errors import ConfigError
from loomctx.select.tail import about_the_past, tail_share_scale
from loomctx.sources.history import HistorySource
from loomctx.sources.knowledge import Document, KnowledgeSource
from loomctx.sources.static import UserInputSource


@pytest.mark.parametrize(
    ("question", "past"),
    [("When did Mel paint a sunrise?", True), ("What did Ann name her cat?", True),
     ("Where was the conference held?", True), ("小安什么时候去了巴黎？", True),
     ("老白领养的狗叫什么名字？", True), ("What is Caroline's identity?", True), ("", False),
     ("What should I do next?", False), ("What is the plan for tomorrow?", False),
     ("接下来应该做什么？", False)],
)
def test_about_the_past(question: str, past: bool) -> None:
    assert about_the_past(question) is past


def test_scale_follows_the_budget_below_full_at_only() -> None:
    q = "When did Mel paint a sunrise?"
    assert tail_share_scale(q, 512, 4096) == 512 / 4096
    assert tail_share_scale(q, 8192, 4096) == 1.0
    assert tail_share_scale(q, 512, 0) == 1.0  # off
    assert tail_share_scale("What should I do next?", 512, 4096) == 1.0


def _builder(tail_full_at: int) -> ContextBuilder:
    history = HistorySource(name="L1_recent")
    history.extend([{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
                     "content": f"small talk about the weather, day {i} of the trip"}
                    for i in range(60)])
    docs = KnowledgeSource([Document(id=f"d{i}", text=f"Note {i}: Mel painted a sunrise "
                                     f"by the lake in week {i}.") for i in range(30)],
                           name="RAG_knowledge")
    return ContextBuilder([UserInputSource(), history, docs],
                          options=BuildOptions(model="gpt-4o", format="text",
                                               tail_full_at=tail_full_at))


def test_a_past_question_at_a_small_budget_gives_retrieval_the_tails_room() -> None:
    q = "When did Mel paint a sunrise?"
    full = _builder(0).build_sync(q, max_tokens=400)
    scaled = _builder(4096).build_sync(q, max_tokens=400)

    def count(result: BuildResult, source: str) -> int:
        return sum(1 for r in result.report.items if r.included and r.source == source)

    assert count(scaled, "L1_recent") < count(full, "L1_recent")
    assert count(scaled, "RAG_knowledge") > count(full, "RAG_knowledge")
    assert scaled.tokens <= 400 and full.tokens <= 400
    same = _builder(4096).build_sync("What should I do next?", max_tokens=400)
    assert count(same, "L1_recent") == count(_builder(0).build_sync(
        "What should I do next?", max_tokens=400), "L1_recent")


def test_bad_option() -> None:
    with pytest.raises(ConfigError, match="tail_full_at"):
        BuildOptions(tail_full_at=-1)
