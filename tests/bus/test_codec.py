"""The wire form: every event kind survives a JSON round trip; unknown kinds and versions are
refused with an error that names them."""

from __future__ import annotations

import dataclasses
import json

import pytest

from loomctx import HashingEmbedder, RecordingSink, Session
from loomctx.bus.codec import EVENT_TYPES, decode, encode
from loomctx.errors import ConfigError
from loomctx.events import (
    BuildCompleted,
    ContextRebuilt,
    Event,
    MessageAdded,
    ModelCalled,
    SessionEnded,
    SessionPaused,
    SessionResumed,
    TaskAdded,
    TaskUpdated,
    TierMoved,
    ToolFinished,
    ToolStarted,
    TurnStarted,
)
from loomctx.report import BuildReport


@pytest.fixture(scope="module")
def report() -> BuildReport:
    sink = RecordingSink()
    s = Session(embedder=HashingEmbedder(dim=64), events=sink, clock=lambda: 1.0)
    s.add_message_sync("user", "Where is parcel PX-1138? 包裹在哪里？")
    s.build_sync(max_tokens=400)
    s.add_message_sync("assistant", "It left the depot this morning.")
    s.add_message_sync("user", "When does it arrive?")
    s.build_sync(max_tokens=400)
    built = sink.of("build_completed")[1]  # the second: it reuses a prefix of the first
    assert isinstance(built, BuildCompleted) and built.report.reused_prefix_parts > 0
    return built.report


def _every_kind(report: BuildReport) -> list[Event]:
    base = {"tenant": "t1", "at": 1_700_000_000.5}
    return [
        MessageAdded(session="s", ids=("m1", "m2"), **base),
        TierMoved(session="s", ids=("m1",), level="L2", **base),
        BuildCompleted(session=None, tokens=report.tokens, reused_prefix_tokens=3,
                       report=report, **base),
        SessionEnded(session="s", summary_id=None, **base),
        SessionPaused(session="s", agent="support", **base),
        SessionResumed(session="s", **base),
        TaskAdded(session="s", agent="support", task_id="job-7", description="补货 SKU-9",
                  **base),
        TaskUpdated(session="s", task_id="job-7", status="done", **base),
        TurnStarted(session="s", turn=0, **base),
        ContextRebuilt(session="s", turn=1, budget=400, tokens=report.tokens,
                       reused_prefix_tokens=0, reason="context_length", report=report, **base),
        ModelCalled(session="s", turn=1, model="gpt-4o", prompt_tokens=10, completion_tokens=2,
                    cached_tokens=0, predicted_tokens=11, predicted_reusable_tokens=0,
                    tool_calls=1, finish_reason=None, **base),
        ToolStarted(session="s", turn=1, call_id="c1", name="lookup", **base),
        ToolFinished(session="s", turn=1, call_id="c1", name="lookup", status="timeout", **base),
    ]


def _fields(event: Event) -> dict[str, object]:
    out = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        out[f.name] = value.to_dict() if isinstance(value, BuildReport) else value
    return out


def test_the_fixture_covers_every_kind(report: BuildReport) -> None:
    assert sorted(e.kind for e in _every_kind(report)) == sorted(EVENT_TYPES)


@pytest.mark.parametrize("index", range(len(EVENT_TYPES)))
def test_every_kind_round_trips_through_json(report: BuildReport, index: int) -> None:
    event = _every_kind(report)[index]
    wire = json.loads(json.dumps(encode(event, event_id="e-1")))
    event_id, back = decode(wire)
    assert event_id == "e-1"
    assert type(back) is type(event)
    assert _fields(back) == _fields(event)
    assert wire["kind"] == event.kind and wire["version"] == event.version


def test_a_decoded_report_is_a_build_report(report: BuildReport) -> None:
    event = _every_kind(report)[2]
    _, back = decode(json.loads(json.dumps(encode(event))))
    assert isinstance(back, BuildCompleted) and isinstance(back.report, BuildReport)
    assert back.report.included_ids == report.included_ids and report.included_ids
    assert back.report.to_dict() == report.to_dict()  # every field, the reused parts too


def test_each_encode_gives_a_new_id() -> None:
    event = TurnStarted(tenant="t", session="s", turn=0, at=0.0)
    assert encode(event)["id"] != encode(event)["id"]


def test_unknown_kind_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="'note_added'"):
        decode({"id": "x", "kind": "note_added", "version": 1, "data": {}})


def test_unknown_version_is_refused_by_value() -> None:
    wire = encode(TurnStarted(tenant="t", session="s", turn=0, at=0.0))
    wire["version"] = 99
    with pytest.raises(ConfigError, match="99"):
        decode(wire)


def test_missing_id_and_unfitting_fields_are_refused() -> None:
    wire = encode(TurnStarted(tenant="t", session="s", turn=0, at=0.0))
    with pytest.raises(ConfigError, match="no id"):
        decode({**wire, "id": ""})
    with pytest.raises(ConfigError, match="does not fit"):
        decode({**wire, "data": {**wire["data"], "extra": 1}})


def test_encoding_a_foreign_object_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Fake:
        kind: str = "turn_started"
        version: int = 1

    with pytest.raises(ConfigError, match="'Fake'"):
        encode(Fake())  # type: ignore[arg-type]
