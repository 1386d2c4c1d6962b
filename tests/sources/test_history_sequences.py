"""Tool sequences in a history: what is repaired, refused, recorded as interrupted or pending."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from loomctx.errors import InputError
from loomctx.items import ContextItem
from loomctx.sources.history import HistorySource
from loomctx.sources.messages import INTERRUPTED_TEXT, validate_history
from loomctx.sources.protocol import SourceRequest
from loomctx.tokens.registry import counter_for_model

COUNTER = counter_for_model("gpt-4o").counter


def call(cid: str, args: Any = "{}", **extra: Any) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "track", "arguments": args},
            **extra}


def asks(*cids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [call(c) for c in cids]}


def result(cid: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": text}


def user(text: str = "hi") -> dict[str, Any]:
    return {"role": "user", "content": text}


def collect(src: HistorySource) -> Sequence[ContextItem]:
    req = SourceRequest(query="", now=0.0, counter=COUNTER, budget=1000)
    return asyncio.run(src.collect(req))


def error(messages: list[Any]) -> InputError:
    with pytest.raises(InputError) as info:
        validate_history(messages, origin="h.jsonl")
    return info.value


# ---- repairs ---------------------------------------------------------------------------------

def test_empty_tool_calls_are_dropped() -> None:
    raw = {"role": "assistant", "content": "done", "tool_calls": []}
    (msg,) = validate_history([raw])
    assert "tool_calls" not in msg and "group" not in msg
    assert raw["tool_calls"] == []  # the caller's dict is not changed


@pytest.mark.parametrize("args", [{"city": "Lyon"}, [1, "é"], {}])
def test_structured_arguments_become_a_json_string(args: Any) -> None:
    (msg, _) = validate_history([{"role": "assistant", "tool_calls": [call("c", args)]},
                                 result("c")])
    got = msg["tool_calls"][0]["function"]["arguments"]
    assert isinstance(got, str) and json.loads(got) == args
    assert got == json.dumps(args, ensure_ascii=False)


def test_missing_type_is_filled_and_blank_arguments_are_an_empty_object() -> None:
    raw_call = {"id": "c", "function": {"name": "f", "arguments": "  "}}
    (msg, _) = validate_history([{"role": "assistant", "tool_calls": [raw_call]}, result("c")])
    assert msg["tool_calls"][0] == {"id": "c", "type": "function",
                                    "function": {"name": "f", "arguments": "{}"}}


def test_lone_surrogates_in_text_become_replacement_characters() -> None:
    (msg,) = validate_history([{"role": "user", "content": [
        {"type": "text", "text": "a\ud800b"}], "name": "x\udfff"}])
    assert msg["content"][0]["text"] == "a\ufffdb" and msg["name"] == "x\ufffd"
    with pytest.raises(InputError, match="lone surrogate"):
        validate_history([{"role": "user", "content": "x", "id": "m\ud800"}])


# ---- refusals --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("bad_call", "fragment"),
    [
        ({"id": "c", "type": "function", "function": "track"}, "'function' must be an object"),
        ({"id": "c", "type": "function", "function": {"arguments": "{}"}}, "'name'"),
        ({"id": "c", "type": "function", "function": {"name": 5, "arguments": "{}"}}, "'name'"),
        ({"id": "c", "type": "retrieval", "function": {"name": "f"}}, "type 'retrieval'"),
        (call("c", 5), "arguments must be a JSON string"),
        (call("c", None), "arguments must be a JSON string"),
        (call("c", "{oops"), "not valid JSON"),
        (call("", "{}"), "needs an 'id'"),
        (call(7, "{}"), "needs an 'id'"),  # type: ignore[arg-type]
        ("track()", "tool call 0 must be an object"),
    ],
)
def test_bad_tool_calls_are_input_errors(bad_call: Any, fragment: str) -> None:
    err = error([user(), {"role": "assistant", "tool_calls": [bad_call]}])
    assert err.where == "h.jsonl:2" and fragment in str(err)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ([{"type": "text", "text": "a"}, "junk"], "content part 1 must be an object"),
        ([{"type": "video", "url": "x"}], "content part 0 has unknown type 'video'"),
        ([{"text": "no type"}], "content part 0 has unknown type None"),
        ([{"type": "text", "text": 3}], "content part 0 (text) needs a string 'text'"),
        ([{"type": "image_url", "image_url": {"url": float("nan")}}], "nan"),
        ({"type": "text", "text": "a dict"}, "content must be a string or a list"),
    ],
)
def test_junk_content_parts_name_the_part(content: Any, fragment: str) -> None:
    err = error([{"role": "user", "content": content}])
    assert fragment in str(err)


def test_known_part_types_pass() -> None:
    parts = [{"type": "text", "text": "look"},
             {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
             {"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}},
             {"type": "file", "file": {"file_id": "f1"}}]
    (msg,) = validate_history([{"role": "user", "content": parts}])
    assert msg["content"] == parts


def test_result_after_an_intervening_message_is_refused() -> None:
    err = error([asks("c1"), user(), result("c1")])
    assert err.where == "h.jsonl:3" and "must directly follow their call" in str(err)


def test_result_answered_twice_is_refused() -> None:
    err = error([asks("c1"), result("c1"), result("c1")])
    assert err.where == "h.jsonl:3" and "already answered" in str(err)


@pytest.mark.parametrize("cid", [None, "", 3])
def test_tool_call_id_must_be_a_non_empty_string(cid: Any) -> None:
    err = error([asks("c1"), {"role": "tool", "tool_call_id": cid, "content": "r"}])
    assert "tool_call_id must be a non-empty string" in str(err)


def test_reused_call_ids_and_misplaced_fields_are_refused() -> None:
    assert "already used" in str(error([asks("c1"), result("c1"), asks("c1")]))
    assert "already used" in str(error([asks("c1", "c1")]))
    assert "only assistant" in str(error([{**user(), "tool_calls": [call("c")]}]))
    assert "only tool messages" in str(error([{**user(), "tool_call_id": "c"}]))
    assert "needs content" in str(error([{"role": "user"}]))
    assert "needs content" in str(error([{"role": "assistant", "content": None}]))


# ---- interrupted and pending groups ----------------------------------------------------------

def test_interrupted_calls_get_synthetic_results_after_their_group() -> None:
    src = HistorySource([user("track it"), asks("c1", "c2"), result("c1"), user("hello?"),
                         {"role": "assistant", "content": "sorry"}])
    assert src.interrupted_calls == {"g:m2": ("c2",)}
    assert len(src) == 5 and len(src.items) == 5  # nothing synthetic is stored
    items = collect(src)
    assert [i.id for i in items] == ["m1", "m2", "m3", "g:m2:interrupted:c2", "m4", "m5"]
    fake = items[3]
    assert (fake.group, fake.role, fake.kind, fake.seq) == ("g:m2", "tool", "message", 2)
    assert fake.content == INTERRUPTED_TEXT
    assert fake.message == {"role": "tool", "tool_call_id": "c2", "content": INTERRUPTED_TEXT}
    assert fake.metadata == {"repair": "interrupted_call"}
    assert [i.seq for i in items] == sorted(i.seq for i in items)  # still chronological


def test_trailing_unanswered_group_is_pending_until_answered() -> None:
    src = HistorySource([user(), asks("c1", "c2")])
    assert src.pending_calls == ("c1", "c2")
    items = collect(src)
    assert [i.metadata.get("pending") for i in items] == [None, True]
    assert "pending" not in src.items[1].metadata  # the stored item is not marked
    src.append(result("c1"))
    assert [i.metadata.get("pending") for i in collect(src)] == [None, True, True]
    src.append(result("c2"))
    assert src.pending_calls == ()
    assert not any(i.metadata.get("pending") for i in collect(src))
    src.append(user("thanks"))
    assert src.interrupted_calls == {}


def test_interrupt_turns_pending_calls_into_interrupted_ones() -> None:
    src = HistorySource([user(), asks("c1")])
    assert src.interrupt() == ("c1",)
    assert [i.id for i in collect(src)] == ["m1", "m2", "g:m2:interrupted:c1"]
    with pytest.raises(InputError, match="must directly follow"):
        src.append(result("c1"))
    assert src.interrupt() == ()


def test_a_failed_batch_leaves_the_tool_state_unchanged() -> None:
    src = HistorySource([user(), asks("c1")])
    with pytest.raises(InputError):
        src.extend([result("c1"), {"role": "bogus"}])
    assert src.pending_calls == ("c1",) and len(src) == 2
    src.extend([result("c1")])  # c1 was not recorded as answered by the failed batch
    assert src.pending_calls == ()


def test_undo_extend_restores_ids_and_calls() -> None:
    src = HistorySource([user(), asks("c1")])
    src.extend([result("c1"), {"id": "x", **user("next")}])
    removed = src.undo_extend()
    assert [i.id for i in removed] == ["m3", "x"]
    assert src.pending_calls == ("c1",) and len(src) == 2
    src.extend([result("c1"), {"id": "x", **user("next")}])  # the same ids are free again
    assert [i.seq for i in src.items] == [0, 1, 2, 3]
    assert src.undo_extend() and src.undo_extend() == []  # only the last batch


def test_evicting_an_interrupted_group_forgets_it() -> None:
    src = HistorySource([asks("c1"), user()])
    assert src.interrupted_calls
    assert [i.id for i in src.evict_oldest()] == ["m1"]
    assert src.interrupted_calls == {}
    assert [i.id for i in collect(src)] == ["m2"]


@pytest.mark.parametrize("huge", [10**30, 10**5000], ids=["30-digits", "5000-digits"])
def test_huge_numbers_from_the_python_api_are_input_errors(huge: int) -> None:
    assert "id must be a string" in str(error([{"role": "user", "content": "x", "id": huge}]))
    part = {"type": "image_url", "image_url": {"url": "u", "width": huge, "height": 1}}
    assert "too large" in str(error([{"role": "user", "content": [part]}]))
    assert "too large" in str(error([{"role": "assistant", "tool_calls": [call("c", [huge])]}]))
    if huge > 10**400:  # beyond a float
        with pytest.raises(InputError, match="out of range"):
            validate_history([{"role": "user", "content": "x", "timestamp": huge}])
    else:
        (msg,) = validate_history([{"role": "user", "content": "x", "timestamp": huge}])
        assert msg["timestamp"] == float(huge)
