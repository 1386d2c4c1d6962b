"""Sources: static P0 items, history validation and grouping, tools, skills, knowledge, outputs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError, InputError
from loomctx.items import ContextItem, Tier
from loomctx.sources.agent_output import AgentOutput, AgentOutputSource
from loomctx.sources.history import HistorySource
from loomctx.sources.knowledge import Document, KnowledgeSource, chunk, load_folder
from loomctx.sources.messages import content_text, message_text, parse_timestamp
from loomctx.sources.protocol import ContextSource
from loomctx.sources.skills import Skill, SkillSource
from loomctx.sources.static import SystemPromptSource, UserInputSource
from loomctx.sources.tools import ToolSource, normalize_tool
from loomctx.tokens.registry import counter_for_model

COUNTER = counter_for_model("gpt-4o").counter
Collect = Callable[..., Sequence[ContextItem]]
NOW = 1_714_560_000.0  # the conftest clock (FIXED_NOW)


def test_static_sources_are_pinned_and_skip_empty_text(collect: Collect) -> None:
    (sys_item,) = collect(SystemPromptSource("Be precise."))
    assert (sys_item.kind, sys_item.tier, sys_item.id) == ("system", Tier.P0, "system")
    assert collect(SystemPromptSource("  \n")) == []
    (inp,) = collect(UserInputSource(), "hello?", input_id="msg-15")
    assert (inp.kind, inp.tier, inp.id, inp.content) == ("input", Tier.P0, "msg-15", "hello?")
    assert collect(UserInputSource(), "   ") == []
    assert isinstance(UserInputSource(), ContextSource)


def test_history_groups_tool_calls_with_their_results(collect: Collect) -> None:
    h = HistorySource([
        {"role": "user", "content": "check SHP-1", "timestamp": "2024-05-01T08:00:00Z"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "function": {"name": "t", "arguments": "{}"}},
            {"id": "b", "function": {"name": "t", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "b", "content": "two"},
        {"role": "assistant", "content": "done", "extra": "dropped"},
    ])
    items = collect(h)
    assert [i.id for i in items] == ["m1", "m2", "m3", "m4", "m5"]
    assert [i.seq for i in items] == [0, 1, 2, 3, 4]
    assert items[0].group is None
    assert items[1].group == items[2].group == items[3].group == "g:m2"
    assert items[0].timestamp == 1_714_550_400.0
    assert items[4].message == {"role": "assistant", "content": "done"}
    assert items[1].content == "t({})\nt({})"


@pytest.mark.parametrize(
    ("messages", "line", "fragment"),
    [
        ([{"role": "robot", "content": "x"}], 1, "unknown role 'robot'"),
        ([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "zz",
                                             "content": "r"}], 2, "no matching assistant"),
        ([{"id": "a", "role": "user", "content": "x"}, {"id": "a", "role": "user",
                                                        "content": "y"}], 2, "duplicate"),
        ([{"role": "user", "content": 5}], 1, "content must be"),
        ([{"role": "user", "content": "x", "timestamp": "yesterday"}], 1, "ISO 8601"),
        ([{"role": "assistant", "tool_calls": [{"function": {}}]}], 1, "needs an 'id'"),
        (["not an object"], 1, "JSON object"),
    ],
)
def test_history_errors_name_origin_and_line(messages: list, line: int, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        HistorySource(messages, origin="chat.jsonl")
    assert info.value.where == f"chat.jsonl:{line}"
    assert fragment in str(info.value)


def test_history_extend_is_all_or_nothing() -> None:
    h = HistorySource([{"role": "user", "content": "a"}])
    with pytest.raises(InputError):
        h.extend([{"role": "user", "content": "b"}, {"role": "bogus"}])
    assert len(h) == 1
    added = h.append({"role": "assistant", "content": "c"})
    assert added.id == "m2" and added.seq == 1


def test_timestamps_and_content_text() -> None:
    assert parse_timestamp(None) is None
    assert parse_timestamp(12) == 12.0
    assert parse_timestamp("2024-05-01T08:00:00+00:00") == 1_714_550_400.0
    assert parse_timestamp("2024-05-01T08:00:00") == 1_714_550_400.0  # naive = UTC
    with pytest.raises(InputError):
        parse_timestamp(True)
    with pytest.raises(InputError):
        parse_timestamp(math.inf)
    assert content_text([{"type": "text", "text": "a"}, {"type": "image_url"}, "b"]) == \
        "a\n[image]\nb"
    assert message_text({"content": None, "tool_calls": [
        {"function": {"name": "f", "arguments": "{\"x\":1}"}}]}) == "f({\"x\":1})"


def test_tools_normalize_and_reject_bad_definitions(collect: Collect) -> None:
    bare = normalize_tool({"name": "f", "description": "does f"})
    assert bare == {"type": "function", "function": {
        "name": "f", "description": "does f", "parameters": {"type": "object",
                                                             "properties": {}}}}
    src = ToolSource([bare, {"type": "function", "function": {"name": "g"}}])
    items = collect(src)
    assert [i.id for i in items] == ["tool:f", "tool:g"]
    assert items[0].metadata["schema"] == bare and items[0].kind == "tool"
    assert "does f" in items[0].content
    with pytest.raises(InputError, match="duplicate tool names"):
        ToolSource([bare, bare])
    with pytest.raises(InputError, match="needs a name"):
        ToolSource([{"description": "nameless"}])
    with pytest.raises(InputError, match="parameters"):
        ToolSource([{"name": "h", "parameters": "oops"}])


def test_skills_named_in_the_query_are_required(collect: Collect) -> None:
    src = SkillSource([Skill(name="refunds", description="refund rules", instructions="R"),
                       Skill(name="customs", description="customs", instructions="C")])
    named, other = collect(src, "apply /refunds please")
    assert (named.tier, named.priority, named.metadata["named"]) == (Tier.P1, 1.0, True)
    assert (other.tier, other.metadata["named"]) == (Tier.P2, False)
    assert named.content == "## Skill: refunds\nR"
    assert all(i.tier == Tier.P2 for i in collect(src, "prerefunds-x"))
    with pytest.raises(ConfigError):
        Skill(name="two words", description="", instructions="")
    with pytest.raises(ConfigError):
        SkillSource([Skill(name="a", description="", instructions=""),
                     Skill(name="a", description="", instructions="")])


def test_agent_output_priority_decays_with_age(collect: Collect) -> None:
    src = AgentOutputSource([AgentOutput(id="new", content="n", timestamp=NOW),
                             AgentOutput(id="old", content="o", timestamp=NOW - 3600)])
    new, old = collect(src)
    assert new.priority == 1.0
    assert old.priority == pytest.approx(math.exp(-1))
    assert new.kind == old.kind == "state"
    with pytest.raises(ConfigError):
        AgentOutputSource(tau=0)


PARAS = ["Refunds for customs holds: none, but a goodwill credit of 5%.",
         "Hamburg pickups move to Tuesdays from June.",
         "米兰网关的联系人是 Giulia Conti，周五提货窗口 9:00–15:00。" * 30]


@settings(max_examples=50, deadline=None, derandomize=True)
@given(paras=st.lists(st.sampled_from(PARAS) | st.text(min_size=1, max_size=400),
                      min_size=1, max_size=6),
       size=st.integers(16, 120))
def test_chunks_fit_and_keep_all_text(paras: list[str], size: int) -> None:
    text = "\n\n".join(paras)
    chunks = chunk(text, COUNTER, size)
    assert all(COUNTER.count(c) <= size for c in chunks)
    squashed = "".join("".join(c.split()) for c in chunks)
    assert squashed == "".join(text.split())  # nothing lost, nothing added


def test_knowledge_ranks_by_query_and_needs_one(collect: Collect) -> None:
    src = KnowledgeSource([Document(id="refunds.md", text=PARAS[0]),
                           Document(id="hubs.md", text=PARAS[1])], chunk_tokens=50)
    assert collect(src, "") == []
    items = collect(src, "customs hold refund")
    assert items[0].id == "refunds.md#0"
    assert items[0].kind == "evidence" and items[0].scores["bm25"] > 0
    assert items[0].metadata == {"origin": "knowledge", "rank": 0}
    with pytest.raises(ConfigError):
        KnowledgeSource([], chunk_tokens=4)
    with pytest.raises(ConfigError):
        KnowledgeSource([], recall_limit=0)


def test_load_folder(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("beta", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("alpha", encoding="utf-8")
    (tmp_path / "skip.bin").write_bytes(b"\x00\x01")
    docs = load_folder(tmp_path)
    assert [(d.id, d.text) for d in docs] == [("b.md", "beta"), ("sub/a.txt", "alpha")]
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(InputError) as info:
        load_folder(tmp_path)
    assert info.value.where == "bad.md"
    with pytest.raises(InputError, match="not a folder"):
        load_folder(tmp_path / "b.md")
