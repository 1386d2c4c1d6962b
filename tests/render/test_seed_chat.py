"""``BuildOptions(chat_style="seed")``: the seed's labels and ``[来源: …]`` tags in the
turn-context block of the chat requests a Session builds and an Agent sends."""

from __future__ import annotations

import json

import pytest

from loomctx import Agent, BuildOptions, ConfigError, OpenAIChatModel, Session, check_request
from loomctx.render.seed_chat import SeedChatRenderer
from loomctx.render.text import SEED_LABELS, TextRenderer
from loomctx.sources.knowledge import Document, KnowledgeSource
from loomctx.testing import FakeModelServer, HashingEmbedder, Reply
from loomctx.tokens.registry import counter_for_model

DOCS = [Document(id="refunds.md", text="Refunds are issued within 30 days of the return."),
        Document(id="hubs.md", text="The Lyon hub holds parcels for customs checks.")]
QUESTION = "When are refunds issued?"


def session(fmt: str, style: str, language: str = "zh") -> Session:
    return Session("desk", embedder=HashingEmbedder(), clock=lambda: 0.0,
                   system_prompt="You answer refund questions.",
                   knowledge=[KnowledgeSource(DOCS, chunk_tokens=40)],
                   options=BuildOptions(model="gpt-4o" if fmt == "openai" else
                                        "claude-sonnet-4-5", format=fmt,
                                        chat_style=style,  # type: ignore[arg-type]
                                        text_language=language))  # type: ignore[arg-type]


def block(payload: dict) -> str:
    """The request's turn-context block, as text."""
    text = json.dumps(payload, ensure_ascii=False)
    start = text.index("Context for this turn")
    return json.loads('"' + text[start:text.index('"', start)] + '"')


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_sessions_chat_request_carries_the_labels_and_source_tags(fmt: str) -> None:
    plain = session(fmt, "plain").build_sync(QUESTION, max_tokens=2000)
    seed = session(fmt, "seed").build_sync(QUESTION, max_tokens=2000)
    assert "来源" not in json.dumps(plain.payload, ensure_ascii=False)
    text = block(seed.payload)
    assert f"{SEED_LABELS['zh']['evidence']}\n[来源: L4_semantic] Refunds are issued" in text
    assert seed.tokens <= 2000 and check_request(fmt, seed.payload) == []
    same = [(r.id, r.included, r.reason) for r in plain.report.items]
    assert [(r.id, r.included, r.reason) for r in seed.report.items] == same
    assert seed.report.item("refunds.md#0").tokens > plain.report.item("refunds.md#0").tokens
    english = session(fmt, "seed", "en").build_sync(QUESTION, max_tokens=2000)
    assert "[Source: L4_semantic] Refunds are issued" in block(english.payload)


def test_an_agents_requests_over_http_carry_them() -> None:
    s = session("openai", "seed")
    with FakeModelServer([Reply(text="Within 30 days.")]) as server:
        model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key="k")
        result = Agent(model, session=s, budget=2000).run_sync(QUESTION)
        body = server.requests[0].body
    assert result.output == "Within 30 days."
    assert "[来源: L4_semantic] Refunds are issued" in block(body)


@pytest.mark.parametrize("budget", range(100, 250, 10))
def test_the_tags_are_priced_before_packing_so_nothing_is_dropped_after_rendering(
        budget: int) -> None:
    many = [Document(id=f"refunds{i}.md", text=f"Refunds of kind {i} are issued within "
                     f"{i + 20} days.") for i in range(10)]
    s = Session("desk", embedder=HashingEmbedder(), clock=lambda: 0.0,
                knowledge=[KnowledgeSource(many, chunk_tokens=40)],
                options=BuildOptions(format="openai", chat_style="seed"))
    r = s.build_sync(QUESTION, max_tokens=budget)
    assert r.tokens <= budget
    assert "overflow" not in {row.reason for row in r.report.items}  # packing priced it right


def test_a_text_renderer_is_refused() -> None:
    with pytest.raises(ConfigError, match="chat formats"):
        SeedChatRenderer(TextRenderer(counter_for_model("gpt-4o").counter))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="chat_style"):
        BuildOptions(chat_style="loud")  # type: ignore[arg-type]
