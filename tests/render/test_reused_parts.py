"""``reused_parts``: the cached prefix counted in the request's own parts, by the rule the token
count uses, so a page can mark it."""

from __future__ import annotations

from loomctx import Session
from loomctx.builder import BuildOptions
from loomctx.render.verify import reused_parts
from loomctx.testing import HashingEmbedder

TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "find a thing",
                                           "parameters": {"type": "object", "properties": {}}}}]


def test_chat_parts_stop_at_the_first_difference() -> None:
    prev = {"tools": TOOLS, "messages": [{"role": "system", "content": "s"},
                                         {"role": "user", "content": "a"}]}
    cur = {"tools": TOOLS, "messages": [{"role": "system", "content": "s"},
                                        {"role": "user", "content": "a"},
                                        {"role": "user", "content": "b"}]}
    assert reused_parts(None, cur) == 0
    assert reused_parts(prev, cur) == 3  # tools block + two messages
    assert reused_parts({**prev, "tools": []}, cur) == 0  # the tools block differs: nothing
    ant_prev = {"system": "s", "messages": [{"role": "user", "content": "a"}]}
    assert reused_parts(ant_prev, {"system": "s", "messages": [{"role": "user", "content": "a"},
                                                              {"role": "user", "content": "b"}]}
                        ) == 2
    assert reused_parts(ant_prev, {"system": "t", "messages": ant_prev["messages"]}) == 0


def test_text_parts_are_characters() -> None:
    assert reused_parts({"text": "abcdef"}, {"text": "abcxyz"}) == 3
    assert reused_parts({"text": ""}, {"text": "abc"}) == 0


def test_a_turn_reports_its_reused_parts() -> None:
    s = Session(system_prompt="be brief", tools=TOOLS, embedder=HashingEmbedder(),
                options=BuildOptions(model="gpt-4o"))
    s.add_message_sync("user", "hello there")
    first = s.build_sync(max_tokens=2000)
    assert first.report.reused_prefix_parts == 0
    s.add_message_sync("assistant", "hi")
    s.add_message_sync("user", "and now?")
    second = s.build_sync(max_tokens=2000)
    msgs = second.messages
    same = 0
    while same < len(first.messages) and first.messages[same] == msgs[same]:
        same += 1
    assert same >= 2 and len(msgs) > same  # system and the first message repeat
    assert second.report.reused_prefix_parts == 1 + same  # the tools block, then messages
    assert second.report.to_dict()["reused_prefix_parts"] == 1 + same
