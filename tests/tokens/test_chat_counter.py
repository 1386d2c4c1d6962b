"""ChatCounter: provider rules, reference counts, and exact additivity (hypothesis)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError
from loomctx.tokens import BPECounter, CachedCounter, ChatCounter, EstimatingCounter, render_text

CL100K = BPECounter("cl100k_base")
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


@pytest.fixture(scope="module")
def openai() -> ChatCounter:
    return ChatCounter(CL100K, "openai")


COOKBOOK = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates "
        "corporate jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more "
        "bandwidth to touch base on opportunities for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for "
        "the client deliverable.",
    },
]


@pytest.mark.parametrize(("encoding", "expected"), [("cl100k_base", 129), ("o200k_base", 124)])
def test_openai_cookbook_example(encoding: str, expected: int) -> None:
    # the OpenAI cookbook's published prompt_tokens for gpt-4 (cl100k) and gpt-4o (o200k)
    assert ChatCounter(BPECounter(encoding), "openai").messages(COOKBOOK) == expected


HELLO = [{"role": "user", "content": "hello"}]
RECIPE = {
    "name": "get_recipe",
    "parameters": {
        "type": "object",
        "required": ["ingredients", "instructions", "time_to_cook"],
        "properties": {
            "ingredients": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "unit", "amount"],
                    "properties": {
                        "name": {"type": "string"},
                        "unit": {
                            "enum": ["grams", "ml", "cups", "pieces", "teaspoons"],
                            "type": "string",
                        },
                        "amount": {"type": "number"},
                    },
                },
            },
            "instructions": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Steps to prepare the recipe (no numbering)",
            },
            "time_to_cook": {
                "type": "number",
                "description": "Total time to prepare the recipe in minutes",
            },
        },
    },
}


@pytest.mark.parametrize(
    ("msgs", "tools", "expected"),
    [
        (HELLO, None, 8),
        (
            [
                {"role": "system", "content": "# Important: you're the best robot"},
                {"role": "user", "content": "hello robot"},
                {"role": "assistant", "content": "hello world"},
            ],
            None,
            27,
        ),
        (HELLO, [{"name": "foo", "parameters": EMPTY}], 31),
        (HELLO, [{"name": "foo", "description": "Do a foo", "parameters": EMPTY}], 36),
        (
            HELLO,
            [
                {
                    "type": "function",
                    "function": {
                        "name": "bing_bong",
                        "description": "Do a bing bong",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "foo": {"type": "string"},
                                "bar": {"type": "number", "description": "A number"},
                            },
                        },
                    },
                }
            ],
            57,
        ),
        (
            HELLO,
            [
                {
                    "name": "bing_bong",
                    "description": "Do a bing bong",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "foo": {
                                "type": "object",
                                "properties": {
                                    "bar": {"type": "string", "enum": ["a", "b", "c"]},
                                    "baz": {"type": "boolean"},
                                },
                            }
                        },
                    },
                }
            ],
            68,
        ),
        (HELLO, [RECIPE], 106),
    ],
)
def test_openai_rule_matches_api_observed_counts(
    openai: ChatCounter, msgs: list[dict[str, Any]], tools: Any, expected: int
) -> None:
    # prompt_tokens reported by the API for gpt-3.5-turbo, as published with the community
    # openai-chat-tokens rule
    assert openai.messages(msgs, tools) == expected


def test_openai_message_rule(openai: ChatCounter) -> None:
    t = CL100K.count
    assert openai.reply_priming == 3
    assert openai.message({"role": "user", "content": "hi there"}) == 3 + t("user") + t("hi there")
    named = {"role": "user", "name": "bob", "content": "hi"}
    assert openai.message(named) == 3 + t("user") + t("bob") + 1 + t("hi")
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    }
    assert openai.message(call) == 3 + t("assistant") + 3 + t("get_weather") + t('{"city":"Paris"}')
    result = {"role": "tool", "tool_call_id": "call_1", "content": "21C"}
    assert openai.message(result) == 3 + t("tool") + t("call_1") + t("21C")


def test_openai_content_parts_and_images(openai: ChatCounter) -> None:
    t = CL100K.count
    base = 3 + t("user")

    def with_parts(*parts: dict[str, Any]) -> int:
        return openai.message({"role": "user", "content": list(parts)}) - base

    assert with_parts({"type": "text", "text": "look"}) == t("look")
    low = {"type": "image_url", "image_url": {"url": "data:...", "detail": "low"}}
    assert with_parts(low) == 85
    assert with_parts({"type": "image_url", "image_url": {"url": "x"}}) == 765
    sized = {"type": "image_url", "image_url": {"url": "x", "width": 1024, "height": 1024}}
    assert with_parts(sized) == 85 + 170 * 4  # scaled to 768x768 -> 2x2 tiles
    wide = {"type": "image_url", "image_url": {"url": "x", "width": 4096, "height": 2048}}
    assert with_parts(wide) == 85 + 170 * 6  # 2048x1024 -> 1536x768 -> 3x2 tiles
    small = {"type": "image_url", "image_url": {"url": "x", "width": 300, "height": 200}}
    assert with_parts(small) == 85 + 170
    audio = {"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}}
    assert with_parts(audio) > 0


def test_tools_are_additive_with_a_fixed_overhead(openai: ChatCounter) -> None:
    defs = [{"name": "foo", "parameters": EMPTY}, RECIPE]
    assert openai.tools([]) == 0
    assert openai.tools(None) == 0
    assert openai.tools(defs) == openai.tools_overhead + sum(openai.tool(d) for d in defs)
    openai_shape = {"type": "function", "function": RECIPE}
    assert openai.tool(openai_shape) == openai.tool(RECIPE)
    with pytest.raises(ConfigError, match="name"):
        openai.tool({"type": "function", "function": {"description": "no name"}})


def test_anthropic_rules() -> None:
    est = EstimatingCounter(name="estimate:claude")
    chat = ChatCounter(est, "anthropic")
    t = est.count
    assert chat.tools_overhead == 346
    assert chat.system("Be brief.") == 3 + t("Be brief.")
    assert chat.system(None) == 0
    assert chat.message({"role": "user", "content": "hi"}) == 4 + t("hi")
    use = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "tu_1", "name": "get_weather", "input": {"city": "Paris"}},
        ],
    }
    assert chat.message(use) == 4 + t("Checking.") + 8 + t("get_weather") + t('{"city":"Paris"}')
    res = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "tu_1",
                "content": "21C",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    }
    assert chat.message(res) == 4 + 5 + t("21C")
    img = {
        "role": "user",
        "content": [{"type": "image", "source": {"type": "base64"}, "width": 1000, "height": 750}],
    }
    assert chat.message(img) == 4 + 1000
    assert chat.message({"role": "user", "content": [{"type": "image", "source": {}}]}) == 4 + 1600
    tool = {"name": "get_weather", "description": "Weather", "input_schema": EMPTY}
    assert chat.tools([tool]) == 346 + chat.tool(tool)


def test_text_provider_renders_then_counts() -> None:
    chat = ChatCounter(CL100K, "text")
    msg = {
        "role": "assistant",
        "content": "ok",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    assert render_text(msg) == "assistant: ok\n-> f({})\n"
    assert chat.message(msg) == CL100K.count(render_text(msg))
    assert chat.reply_priming == 0
    assert chat.tools_overhead == 0
    assert render_text({"role": "tool", "tool_call_id": "c", "content": "1"}) == "tool (c): 1\n"


def test_counter_is_cached_once() -> None:
    cache = CachedCounter(CL100K)
    chat = ChatCounter(cache, "openai")
    assert chat.counter is cache
    chat.messages(COOKBOOK)
    misses = cache.misses
    chat.messages(COOKBOOK)
    assert cache.misses == misses


def test_bad_provider_and_bad_message() -> None:
    with pytest.raises(ConfigError, match="gemini"):
        ChatCounter(CL100K, "gemini")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="mapping"):
        ChatCounter(CL100K).message("hi")  # type: ignore[arg-type]


_text = st.text(max_size=30)
_openai_part = st.one_of(
    st.builds(lambda s: {"type": "text", "text": s}, _text),
    st.builds(
        lambda d: {"type": "image_url", "image_url": {"url": "u", "detail": d}},
        st.sampled_from(["low", "high", "auto"]),
    ),
)
_tool_call = st.builds(
    lambda n, a: {"id": "c1", "type": "function", "function": {"name": n, "arguments": a}},
    st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
    _text,
)
_openai_msg = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["system", "user", "assistant", "tool"]),
        "content": st.one_of(st.none(), _text, st.lists(_openai_part, max_size=3)),
    },
    optional={
        "name": st.from_regex(r"[a-z]{1,8}", fullmatch=True),
        "tool_calls": st.lists(_tool_call, max_size=2),
        "tool_call_id": _text,
    },
)
_anthropic_block = st.one_of(
    st.builds(lambda s: {"type": "text", "text": s}, _text),
    st.builds(
        lambda n, v: {"type": "tool_use", "id": "t", "name": n, "input": {"v": v}},
        st.from_regex(r"[a-z]{1,8}", fullmatch=True),
        _text,
    ),
    st.builds(lambda s: {"type": "tool_result", "tool_use_id": "t", "content": s}, _text),
)
_anthropic_msg = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": st.one_of(_text, st.lists(_anthropic_block, max_size=3)),
    }
)
_tool_def = st.builds(
    lambda n, d, props: {
        "type": "function",
        "function": {
            "name": n,
            "description": d,
            "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in props}},
        },
    },
    st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
    _text,
    st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), max_size=3),
)


@settings(max_examples=60, deadline=None)
@given(
    provider=st.sampled_from(["openai", "anthropic", "text"]),
    data=st.data(),
    tools=st.lists(_tool_def, max_size=3),
    system=st.one_of(st.none(), _text),
)
def test_messages_is_exactly_additive(
    provider: str, data: st.DataObject, tools: list[dict[str, Any]], system: str | None
) -> None:
    chat = ChatCounter(CL100K, provider)  # type: ignore[arg-type]
    msg_strategy = _anthropic_msg if provider == "anthropic" else _openai_msg
    msgs = data.draw(st.lists(msg_strategy, max_size=5))
    total = chat.messages(msgs, tools, system=system)
    expected = (
        chat.reply_priming
        + chat.system(system)
        + sum(chat.message(m) for m in msgs)
        + chat.tools(tools)
    )
    assert total == expected
    assert chat.tools(tools) == (chat.tools_overhead if tools else 0) + sum(
        chat.tool(d) for d in tools
    )
    # each message is priced on its own: splitting the list does not change the sum
    half = len(msgs) // 2
    assert total == (
        chat.messages(msgs[:half], tools, system=system)
        + chat.messages(msgs[half:])
        - chat.reply_priming
    )
