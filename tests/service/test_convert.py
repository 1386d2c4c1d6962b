"""Fingerprints and format conversion: a reply the proxy stored and the copy a client sends back
are one message; Anthropic requests become the session's OpenAI-shaped messages."""

from __future__ import annotations

import json

import pytest

from loomctx.errors import InputError
from loomctx.models.anthropic import parse_message
from loomctx.models.openai import parse_completion
from loomctx.service.conversations import Tenants, hashes, seed
from loomctx.service.convert import fingerprint, from_anthropic, split_openai
from loomctx.service.replies import ReplyReader
from loomctx.testing import Reply, ToolCall
from loomctx.testing.fake_script import render

STEP = Reply(text="Checking.", tool_calls=[ToolCall("lookup", {"order": "A-7"}, id="c1")])


def test_an_openai_reply_and_the_sdk_copy_of_it_have_one_fingerprint() -> None:
    stored = parse_completion(json.loads(render(STEP, "openai", model="m", stream=False,
                                                include_usage=False).body)).message
    sdk_copy = {"role": "assistant", "content": "Checking.", "refusal": None, "audio": None,
                "function_call": None, "annotations": None, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "lookup", "arguments": '{"order": "A-7"}'}}]}
    assert fingerprint(stored) == fingerprint(sdk_copy)
    as_parts = {**sdk_copy, "content": [{"type": "text", "text": "Checking."}]}
    assert fingerprint(as_parts) == fingerprint(stored)
    assert fingerprint({**sdk_copy, "content": "Checking!"}) != fingerprint(stored)
    other_id = json.loads(json.dumps(sdk_copy))
    other_id["tool_calls"][0]["id"] = "c2"
    assert fingerprint(other_id) != fingerprint(stored)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_streamed_reply_reads_like_the_json_one(fmt: str) -> None:
    out = render(STEP, fmt, model="m", stream=True, include_usage=True)  # type: ignore[arg-type]
    reader = ReplyReader(fmt)  # type: ignore[arg-type]
    for chunk in out.chunks:
        for k in range(0, len(chunk), 7):  # split anywhere, as a socket may
            reader.feed(chunk[k:k + 7])
    streamed = reader.result()
    body = json.loads(render(STEP, fmt, model="m", stream=False,  # type: ignore[arg-type]
                             include_usage=False).body)
    parsed = parse_completion(body) if fmt == "openai" else parse_message(body)
    assert streamed is not None and streamed.message == parsed.message
    assert fingerprint(streamed.message) == fingerprint(parsed.message)


def test_an_anthropic_reply_sent_back_as_blocks_matches_the_stored_one() -> None:
    body = json.loads(render(STEP, "anthropic", model="m", stream=False,
                             include_usage=False).body)
    stored = parse_message(body).message
    (sent_back,) = from_anthropic([{"role": "assistant", "content": body["content"]}])
    assert fingerprint(sent_back) == fingerprint(stored)


def test_anthropic_messages_become_openai_shaped() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "AAAA"}}
    out = from_anthropic([
        {"role": "user", "content": [{"type": "text", "text": "Look"}, image]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "zoom",
                                           "input": {"x": 1}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "zoomed"}]},
            {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": True},
            {"type": "text", "text": "And now?"}]}])
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": "Look"}, image]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function",
             "function": {"name": "zoom", "arguments": '{"x": 1}'}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "zoomed"},
        {"role": "tool", "tool_call_id": "t2", "content": "error: boom"},
        {"role": "user", "content": "And now?"}]
    with pytest.raises(InputError, match="role"):
        from_anthropic([{"role": "system", "content": "x"}])


def test_leading_system_messages_are_the_prompt() -> None:
    system, rest = split_openai([{"role": "system", "content": "A"},
                                 {"role": "developer", "content": "B"},
                                 {"role": "user", "content": "hi"},
                                 {"role": "system", "content": "mid"}])
    assert system == "A\n\nB" and [m["role"] for m in rest] == ["user", "system"]


def test_the_longest_stored_prefix_is_found_and_branches_are_not() -> None:
    class Conv:  # the parts of a Conversation that Tenants reads
        def __init__(self, sid: str, chain: list[str]) -> None:
            self.chain = chain
            self.anonymous = True
            self.size = 0
            self.session = type("S", (), {"id": sid})()

        @property
        def head(self) -> str:
            return self.chain[-1]

    msgs = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    chained = hashes(seed("sys"), msgs)
    t = Tenants(max_builds=10)
    conv = Conv("s1", chained[:3])
    t.add_session("acme", conv)  # type: ignore[arg-type]
    t.index("acme", conv, None)  # type: ignore[arg-type]
    found = t.find("acme", chained)
    assert found is not None and found[0] is conv and found[1] == 3  # 3 and 4 are new
    assert t.find("globex", chained) is None  # another tenant never matches
    assert t.find("acme", hashes(seed("other system"), msgs)) is None
    # Another session that said the same things and went further does not hide s1's head.
    longer = Conv("s0", [*chained[:4], "elsewhere"])
    t.add_session("acme", longer)  # type: ignore[arg-type]
    t.index("acme", longer, None)  # type: ignore[arg-type]
    found = t.find("acme", chained)
    assert found is not None and found[0] is conv
    # s1 moves on by one message; a request branching from message 2 is nobody's continuation.
    conv.chain = chained[:4]
    t.index("acme", conv, chained[2])  # type: ignore[arg-type]
    branch = hashes(seed("sys"), [*msgs[:2], {"role": "user", "content": "edited"}])
    assert t.find("acme", branch) is None
    found = t.find("acme", chained)
    assert found is not None and found[0] is conv and found[1] == 4
    conv.anonymous = False  # a named session is reached by its id only
    assert t.find("acme", chained) is None
