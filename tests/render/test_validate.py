"""The provider-rule checker: each rule has a request that breaks it and one that keeps it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from loomctx.items import ContextItem
from loomctx.render.chat import AnthropicRenderer, OpenAIRenderer
from loomctx.render.protocol import Layout
from loomctx.render.validate import check, check_anthropic, check_openai
from loomctx.sources.history import HistorySource
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import counter_for_model

Payload = dict[str, Any]

TRACK = {"type": "function", "function": {
    "name": "track_shipment", "description": "Where a shipment is.",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}
REFUND = {"type": "function", "function": {
    "name": "refund_policy", "parameters": {"type": "object", "properties": {}}}}


def call(cid: str, name: str = "track_shipment", args: Any = '{"id": "SHP-1"}') -> Payload:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def openai_ok() -> Payload:
    """A real-looking agent request: two parallel calls answered, then a follow-up question."""
    return {"messages": [
        {"role": "system", "content": "You are Atlas, a logistics assistant."},
        {"role": "user", "content": "Where is SHP-1, and can I get a refund?"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("c1"), call("c2", "refund_policy", "{}")]},
        {"role": "tool", "tool_call_id": "c2", "content": "Refunds within 30 days."},
        {"role": "tool", "tool_call_id": "c1", "content": "customs hold at Lyon"},
        {"role": "assistant", "content": "SHP-1 is on customs hold at Lyon."},
        {"role": "user", "content": [{"type": "text", "text": "What does the hold mean?"},
                                     {"type": "image_url",
                                      "image_url": {"url": "https://example.com/a.png"}}]},
    ], "tools": [TRACK, REFUND]}


def anthropic_ok() -> Payload:
    eph = {"type": "ephemeral"}
    return {
        "system": [{"type": "text", "text": "You are Atlas.", "cache_control": eph}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Where is SHP-1?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "t1", "name": "track_shipment", "input": {"id": "1"}},
                {"type": "tool_use", "id": "t2", "name": "refund_policy", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": "30 days"},
                {"type": "tool_result", "tool_use_id": "t1",
                 "content": [{"type": "text", "text": "customs hold"}]},
                {"type": "text", "text": "And the refund?", "cache_control": eph}]},
            {"role": "assistant", "content": "It is on hold; refunds within 30 days."},
            {"role": "user", "content": "Thanks. 海关扣留是什么意思？"},
        ],
        "tools": [{"name": "track_shipment", "input_schema": {"type": "object"}},
                  {"name": "refund_policy", "input_schema": {"type": "object"},
                   "cache_control": eph}],
    }


def test_valid_requests_have_no_problems() -> None:
    assert check_openai(openai_ok()) == []
    assert check_anthropic(anthropic_ok()) == []
    assert check("openai", openai_ok()) == []
    assert check("anthropic", anthropic_ok()) == []


def test_text_formats_have_no_structural_rules_but_must_be_json() -> None:
    assert check("text", {"text": "[Task]\nhello"}) == []
    assert check("minimal", {"text": ""}) == []
    assert check("text", {"text": "bad \udc80"}) != []


def test_check_dispatches_by_format() -> None:
    bad = {"messages": [{"role": "tool", "tool_call_id": "x", "content": "r"}]}
    assert check("openai", bad) == check_openai(bad) != []
    assert check("anthropic", bad) == check_anthropic(bad) != []


# ---- OpenAI -------------------------------------------------------------------------------
def _set(path: str, value: Any) -> Callable[[Payload], None]:
    """A mutation setting ``payload[...]`` at a dotted path (ints index lists)."""
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]

    def apply(p: Payload) -> None:
        target: Any = p
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
    return apply


def _drop(index: int) -> Callable[[Payload], None]:
    return lambda p: p["messages"].pop(index)


def _move(src: int, dst: int) -> Callable[[Payload], None]:
    return lambda p: p["messages"].insert(dst, p["messages"].pop(src))


OPENAI_BAD: dict[str, tuple[Callable[[Payload], None], str]] = {
    "empty messages": (_set("messages", []), "non-empty list"),
    "message not an object": (_set("messages.1", "hi"), "messages[1]"),
    "unknown role": (_set("messages.1.role", "human"), "unknown role 'human'"),
    "tool result missing": (_drop(4), "'c1'] are not answered before messages[4]"),
    "message between call and result": (_move(6, 4), "not answered before messages[4]"),
    "orphan result (call dropped)": (_drop(2), "messages[2] (tool): orphan result"),
    "result answers another block": (_set("messages.3.tool_call_id", "c9"),
                                      "call 'c9' is not in messages[2]"),
    "second answer": (_set("messages.4.tool_call_id", "c2"), "second answer to call 'c2'"),
    "empty tool_calls": (_set("messages.2.tool_calls", []), "non-empty list; leave the key out"),
    "call without id": (_set("messages.2.tool_calls.0.id", None), "non-empty string id"),
    "call type": (_set("messages.2.tool_calls.0.type", "tool"), "use 'function'"),
    "call without name": (_set("messages.2.tool_calls.0.function.name", 7),
                           "string function.name"),
    "arguments as object": (_set("messages.2.tool_calls.0.function.arguments", {"id": 1}),
                            "send a JSON string"),
    "arguments not JSON": (_set("messages.2.tool_calls.0.function.arguments", "{id: 1"),
                           "not valid JSON"),
    "duplicate call ids": (_set("messages.2.tool_calls.1.id", "c1"), "duplicate tool call ids"),
    "assistant without content or calls": (_set("messages.5.content", None), "content is missing"),
    "user content None": (_set("messages.1.content", None), "messages[1] (user): content"),
    "content number": (_set("messages.1.content", 42), "string or a non-empty list"),
    "content empty list": (_set("messages.6.content", []), "string or a non-empty list"),
    "junk part": (_set("messages.6.content.1", "img"), "content[1]"),
    "text part without text": (_set("messages.6.content.0.text", None), "without string 'text'"),
    "tool message without id": (_set("messages.3.tool_call_id", None), "string tool_call_id"),
    "tool_calls on a user": (_set("messages.1.tool_calls", [call("c7")]),
                             "only assistant messages carry tool_calls"),
    "tool not a function": (_set("tools.0", {"type": "retrieval"}), "tools[0]"),
    "tool name pattern": (_set("tools.1.function.name", "refund policy"),
                          "tools[1]: name 'refund policy'"),
    "duplicate tool names": (_set("tools.1", TRACK), "defined twice"),
    "lone surrogate": (_set("messages.1.content", "Where is \udce9?"), "lone surrogate"),
    "NaN": (_set("messages.2.tool_calls.0.function.x", float("nan")), "not valid JSON"),
    "bytes": (_set("messages.1.content", b"hi"), "messages[1]"),
}


@pytest.mark.parametrize("case", sorted(OPENAI_BAD))
def test_openai_rule(case: str) -> None:
    mutate, expected = OPENAI_BAD[case]
    payload = copy.deepcopy(openai_ok())
    mutate(payload)
    problems = check_openai(payload)
    assert any(expected in p for p in problems), problems


def test_openai_trailing_call_is_unanswered_but_answered_one_is_fine() -> None:
    p = openai_ok()
    p["messages"] = p["messages"][:3]
    problems = check_openai(p)
    assert any("ends with unanswered tool calls" in x and "'c1', 'c2'" in x for x in problems)
    p["messages"] = openai_ok()["messages"][:5]  # both answered, ends on a tool message
    assert check_openai(p) == []


def test_openai_results_in_any_order_and_no_tools_key_are_fine() -> None:
    p = openai_ok()
    p["messages"][3], p["messages"][4] = p["messages"][4], p["messages"][3]
    del p["tools"]
    assert check_openai(p) == []


def test_openai_problem_names_the_message_index() -> None:
    p = openai_ok()
    p["messages"].insert(0, {"role": "tool", "tool_call_id": "c1", "content": "stale"})
    problems = check_openai(p)
    assert problems and problems[0].startswith("messages[0] (tool)")


def test_payload_not_an_object() -> None:
    assert check_openai([]) != []  # type: ignore[arg-type]
    assert check_anthropic("x") != []  # type: ignore[arg-type]


# ---- Anthropic ----------------------------------------------------------------------------
ANTHROPIC_BAD: dict[str, tuple[Callable[[Payload], None], str]] = {
    "empty messages": (_set("messages", []), "non-empty list"),
    "system role in messages": (_set("messages.0.role", "system"), "top-level 'system'"),
    "starts with assistant": (_drop(0), "first message must be a user turn"),
    "two user turns": (_set("messages.3.role", "user"), "two user turns in a row"),
    "two assistant turns": (_set("messages.2.role", "assistant"), "two assistant turns"),
    "empty string content": (_set("messages.4.content", ""), "content is empty"),
    "empty block list": (_set("messages.0.content", []), "non-empty list of blocks"),
    "empty text block": (_set("messages.1.content.0.text", ""), "non-empty text"),
    "whitespace text block": (_set("messages.0.content.0.text", "  \n"), "non-empty text"),
    "block without type": (_set("messages.0.content.0", {"text": "x"}), "with a 'type'"),
    "result missing": (lambda p: p["messages"][2]["content"].pop(1),
                       "tool_use ids ['t1'] have no tool_result"),
    "result after text": (lambda p: p["messages"][2]["content"].reverse(),
                          "must come first"),
    "next message not a user turn": (_drop(2), "have no tool_result at the start"),
    "orphan result": (_set("messages.2.content.0.tool_use_id", "t9"), "orphan tool_result 't9'"),
    "orphan result in first turn": (_set("messages.0.content.0",
                                         {"type": "tool_result", "tool_use_id": "t1"}),
                                    "no tool_use with that id in a previous assistant"),
    "second result": (_set("messages.2.content.0.tool_use_id", "t1"), "second tool_result"),
    "tool_use input a string": (_set("messages.1.content.1.input", '{"id": "1"}'),
                                "must be an object"),
    "tool_use without id": (_set("messages.1.content.1.id", ""), "non-empty string id"),
    "tool_use without name": (_set("messages.1.content.1.name", None), "string name"),
    "duplicate tool_use id": (_set("messages.1.content.2.id", "t1"), "used twice"),
    "tool_use in a user turn": (_set("messages.4.content", [
        {"type": "tool_use", "id": "t5", "name": "x", "input": {}}]), "belongs in an assistant"),
    "tool_result in an assistant turn": (_set("messages.3.content", [
        {"type": "tool_result", "tool_use_id": "t1"}]), "belongs in a user message"),
    "result without id": (_set("messages.2.content.0.tool_use_id", 3), "string tool_use_id"),
    "result content junk": (_set("messages.2.content.0.content", [1]), "tool_result content"),
    "too many breakpoints": (lambda p: [b.update(cache_control={"type": "ephemeral"})
                                    for b in p["messages"][1]["content"]],
                         "6 cache_control breakpoints"),
    "bad cache_control": (_set("system.0.cache_control", {"type": "persistent"}),
                          "must be {'type': 'ephemeral'}"),
    "system not blocks": (_set("system", 5), "system must be"),
    "empty system block": (_set("system.0.text", ""), "system[0]"),
    "tool name with dot": (_set("tools.0.name", "track.shipment"), "does not match"),
    "tool name too long": (_set("tools.0.name", "t" * 65), "does not match"),
    "duplicate tool names": (_set("tools.1.name", "track_shipment"), "defined twice"),
    "tool without schema": (_set("tools.0.input_schema", None), "input_schema"),
    "lone surrogate": (_set("messages.4.content", "海关\ud83d"), "lone surrogate"),
}


@pytest.mark.parametrize("case", sorted(ANTHROPIC_BAD))
def test_anthropic_rule(case: str) -> None:
    mutate, expected = ANTHROPIC_BAD[case]
    payload = copy.deepcopy(anthropic_ok())
    mutate(payload)
    problems = check_anthropic(payload)
    assert any(expected in p for p in problems), problems


def test_anthropic_trailing_tool_use_is_unanswered() -> None:
    p = anthropic_ok()
    p["messages"] = p["messages"][:2]
    problems = check_anthropic(p)
    assert any("ends with unanswered tool_use ['t1', 't2']" in x for x in problems), problems


def test_anthropic_final_assistant_prefill_may_be_empty() -> None:
    p = anthropic_ok()
    p["messages"].append({"role": "assistant", "content": ""})
    assert check_anthropic(p) == []
    p["messages"][-1] = {"role": "assistant", "content": [{"type": "text", "text": ""}]}
    assert check_anthropic(p) == []


def test_anthropic_string_system_server_tools_and_four_breakpoints_are_fine() -> None:
    p = anthropic_ok()
    p["system"] = "You are Atlas."
    p["tools"].append({"type": "web_search_20250305", "name": "web_search"})
    p["messages"][0]["content"][0]["cache_control"] = {"type": "ephemeral"}
    p["messages"][4] = {"role": "user", "content": [
        {"type": "text", "text": "Thanks.", "cache_control": {"type": "ephemeral", "ttl": "5m"}}]}
    # tools[1], messages[0], messages[2], messages[4]: four (system is now a string).
    assert check_anthropic(p) == []


def test_breakpoints_count_only_where_the_api_reads_them() -> None:
    p = anthropic_ok()
    schema = {"type": "object", "properties": {"cache_control": {"type": "string"}}}
    p["tools"][0]["input_schema"] = schema
    p["messages"][1]["content"][1]["input"] = {"cache_control": "x", "a": {"cache_control": 1}}
    assert check_anthropic(p) == []


def test_problems_are_json_safe_strings() -> None:
    p = openai_ok()
    p["messages"][1]["content"] = "bad \udc80"
    problems = check_openai(p)
    assert problems and all(isinstance(x, str) for x in problems)
    "\n".join(problems).encode("utf-8")  # a report row or log line can carry them


def test_renderers_output_for_a_whole_layout_passes() -> None:
    """No false alarm on what the renderers produce from a well-formed layout."""
    history = [
        {"id": "m1", "role": "user", "content": "Where is SHP-1?"},
        {"id": "m2", "role": "assistant", "content": None, "tool_calls": [call("c1")]},
        {"id": "m3", "role": "tool", "tool_call_id": "c1", "content": "customs hold in Lyon"},
        {"id": "m4", "role": "assistant", "content": "SHP-1 is on customs hold in Lyon."},
    ]
    lay = Layout(
        system=[ContextItem(id="system", source="s", content="You are Atlas.", kind="system")],
        tools=[ContextItem(id="tool:track", source="tools", content="track", kind="tool",
                           metadata={"schema": TRACK})],
        history=list(HistorySource(history).items),
        evidence=[ContextItem(id="ev", source="RAG", content="Holds get no refund.",
                              kind="evidence")],
        input=[ContextItem(id="input", source="user_input", content="And the refund?",
                           kind="input")],
    )
    counter = counter_for_model("gpt-4o").counter
    for renderer in (OpenAIRenderer(ChatCounter(counter, "openai")),
                     AnthropicRenderer(ChatCounter(counter, "anthropic"))):
        rendered = renderer.render(lay)
        assert check(rendered.format, rendered.payload) == [], rendered.payload


def test_a_message_seen_clean_is_not_serialised_again_and_a_new_bad_one_is_still_caught() -> None:
    """The JSON check remembers clean message objects (a turn re-sends the same stored ones);
    a message it has not seen, or one that failed, is checked in full every time."""
    from loomctx.providers import _rules

    history = [{"role": "user", "content": f"line {i}"} for i in range(50)]
    payload = {"model": "gpt-4o", "messages": history}
    assert check("openai", payload) == []
    assert all(_rules._CLEAN.get(id(m)) is m for m in history)
    bad = {"role": "user", "content": "Where is \udce9?"}
    assert any("lone surrogate" in p for p in check("openai", {**payload,
                                                              "messages": [*history, bad]}))
    assert _rules._CLEAN.get(id(bad)) is not bad
    assert any("lone surrogate" in p for p in check("openai", {**payload,
                                                              "messages": [*history, bad]}))
    odd = {"role": "user", "content": "x", 1: "odd"}
    assert any("not a string" in p for p in check("openai", {"messages": [*history, odd]}))


def test_a_turn_resends_the_same_copies_of_stored_messages_unless_one_was_changed() -> None:
    """The OpenAI payload's history copies are reused while they equal the stored messages
    (the JSON check then skips them); a copy a caller changed is not reused, and the stored
    message never changes."""
    from loomctx import HashingEmbedder, Session

    s = Session(embedder=HashingEmbedder(dim=64), clock=lambda: 1.7e9)
    for i in range(6):
        s.add_message_sync("user" if i % 2 == 0 else "assistant", f"line {i}")
    first = s.build_sync().messages
    s.add_message_sync("user", "and now?")
    second = s.build_sync().messages
    assert any(a is b for a, b in zip(first, second, strict=False))
    changed = next(m for m in second if m.get("content") == "line 2")
    changed["content"] = "edited by the caller"
    s.add_message_sync("assistant", "ok")
    third = s.build_sync().messages
    assert [m["content"] for m in third if m.get("content", "").startswith("line 2")] == \
        ["line 2"]
    assert all(m is not changed for m in third)
