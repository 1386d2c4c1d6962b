"""The ContextSource contract: declared ``history`` and ``share``, failures per build."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from loomctx import BuildOptions, ContextBuilder, Session
from loomctx.errors import ConfigError
from loomctx.items import ContextItem
from loomctx.sources.history import HistorySource
from loomctx.sources.knowledge import Document, KnowledgeSource
from loomctx.sources.protocol import (
    BaseSource,
    ContextSource,
    SourceRequest,
    check_source,
    declared_share,
    is_history,
    starts_eager,
)
from loomctx.sources.static import SystemPromptSource


class _Flaky:
    """A knowledge base that fails for questions about storms. Every call waits until
    ``waiting`` calls are in flight, so concurrent builds overlap inside their sources."""

    name = "flaky_kb"

    def __init__(self, waiting: int) -> None:
        self.waiting = waiting
        self.entered = 0
        self.all_in = asyncio.Event()

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        self.entered += 1
        if self.entered >= self.waiting:
            self.all_in.set()
        await self.all_in.wait()
        if "storm" in request.query:
            raise OSError("index offline")
        return []


def test_concurrent_builds_of_one_session_keep_their_failures_apart(
        make_session: Callable[..., Session]) -> None:
    """Two builds at once, one whose knowledge base fails and one whose does not: each
    report names only its own build's failure (they were one attribute of the source)."""
    questions = ["storm warnings?", "calm seas?"] * 3
    flaky = _Flaky(waiting=len(questions))
    docs = KnowledgeSource([Document("sea.md", "Calm seas and storm warnings at sea.")])
    s = make_session(knowledge=[flaky, docs])
    s.add_message_sync("user", "We sailed when the seas were calm, before the storm.")

    async def both() -> list[Any]:
        return list(await asyncio.gather(*(s.build(q, max_tokens=600) for q in questions)))

    results = asyncio.run(both())
    rows = [next(r for r in res.report.sources if r.name == "L4_semantic") for res in results]
    assert [r.error for r in rows] == [
        "partial: flaky_kb failed: OSError: index offline" if "storm" in q else None
        for q in questions]
    assert all(r.included >= 1 for r in rows)  # the rest of recall still answered


class _Minimal:
    """A source written to the first form of the contract: a name and collect, nothing else."""

    name = "notes"

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        if "fail" in request.query:
            request.failed("notes_db", "timed out")
        return [ContextItem(id="n1", source=self.name, content="The boat is called Wren.",
                            kind="evidence")]


def test_a_source_without_history_or_share_still_works() -> None:
    src = _Minimal()
    assert check_source(src) is src and not isinstance(src, ContextSource)
    assert not is_history(src)  # type: ignore[arg-type]
    assert declared_share(src) is None  # type: ignore[arg-type]
    builder = ContextBuilder([SystemPromptSource("Be brief."), src],  # type: ignore[list-item]
                             options=BuildOptions(format="text"))
    result = builder.build_sync("What is the boat called?", max_tokens=300)
    assert "The boat is called Wren." in result.text
    row = next(r for r in result.report.sources if r.name == "notes")
    assert row.error is None
    failing = builder.build_sync("Why did the boat fail?", max_tokens=300)
    row = next(r for r in failing.report.sources if r.name == "notes")
    assert row.error == "partial: notes_db failed: timed out"


def test_a_session_takes_a_minimal_source_too(make_session: Callable[..., Session]) -> None:
    s = make_session()
    s.add_source(_Minimal())  # type: ignore[arg-type]
    assert "Wren" in str(s.build_sync("What is the boat called?", max_tokens=400).payload)


def test_base_source_gives_the_contract_its_defaults() -> None:
    class Notes(BaseSource):
        name = "notes"

        async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
            return []

    notes: ContextSource = Notes()
    assert (notes.history, notes.share) == (False, None)
    assert isinstance(notes, ContextSource)
    assert is_history(HistorySource()) and isinstance(HistorySource(), ContextSource)


def test_a_sessions_own_sources_are_eager_and_one_added_is_not(
        make_session: Callable[..., Session]) -> None:
    """A task per source was a tenth of a warm build: every source a session makes answers in
    the build's own task until it waits; one a user adds gets its task, unless it says eager."""
    s = make_session()
    s.add_source(_Minimal())  # type: ignore[arg-type]
    eager = {src.name: starts_eager(src) for src in s.builder.sources}
    assert eager.pop("notes") is False
    assert len(eager) >= 5 and all(eager.values()), eager
    assert BaseSource.eager is False


@pytest.mark.parametrize(("attrs", "message"), [
    ({"history": "yes"}, "history='yes'"),
    ({"share": 1.5}, "share=1.5"),
    ({"share": "0.2"}, "share='0.2'"),
    ({"name": ""}, "non-empty str name"),
    ({"collect": None}, "async collect(request)"),
])
def test_a_source_that_breaks_the_contract_is_refused_when_the_builder_is_made(
        attrs: dict[str, Any], message: str) -> None:
    src = _Minimal()
    for key, value in attrs.items():
        setattr(src, key, value)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ContextBuilder([src])  # type: ignore[list-item]


def test_failures_are_recorded_on_the_request_not_the_source() -> None:
    from loomctx.tokens.registry import counter_for_model

    def request() -> SourceRequest:
        return SourceRequest(query="fail", now=0.0, counter=counter_for_model("gpt-4o").counter,
                             budget=100)

    first, second = request(), request()
    asyncio.run(_Minimal().collect(first))
    assert dict(first.failures) == {"notes_db": "timed out"}
    assert dict(second.failures) == {}
    first.failed("other", OSError("disk full"))
    assert first.failures["other"] == "OSError: disk full"
