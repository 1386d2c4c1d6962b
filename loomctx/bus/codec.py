"""Events to and from JSON-safe dicts, so a bus can carry them between processes.

The wire form of one event::

    {"id": "9f1c…", "kind": "message_added", "version": 1,
     "data": {"tenant": "t", "session": "s", "ids": ["m1"], "at": 1700000000.0}}

``data`` holds every field but ``kind`` and ``version``; tuples travel as lists and come back as
tuples. A :class:`~loomctx.report.BuildReport` (``build_completed``, ``context_rebuilt``) travels
as its ``to_dict()`` and comes back as a ``BuildReport`` rebuilt from that dict: its ``to_dict()``
equals the original's, but it has no link to the build's items (only the report rows).
Decoding refuses a kind or version this loomctx does not know (:class:`ConfigError` naming it):
a consumer older than its producer must be upgraded, not fed guesses.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any, get_args

from loomctx.errors import ConfigError
from loomctx.events import (
    EVENT_VERSION,
    Event,
)
from loomctx.report import BuildReport, ItemReport, SourceReport

EVENT_TYPES: dict[str, type[Any]] = {cls.kind: cls for cls in get_args(Event)}
"""Every event kind the codec knows → its dataclass (read off the ``Event`` union, so a new
event is one place to add)."""

SUPPORTED_VERSIONS = frozenset({EVENT_VERSION})
"""Event versions this loomctx can decode."""

_TUPLE_FIELDS = {kind: frozenset(f.name for f in dataclasses.fields(cls)
                                 if str(f.type).startswith("tuple"))
                 for kind, cls in EVENT_TYPES.items()}


def new_event_id() -> str:
    """A fresh unique event id (random, 32 hex digits)."""
    return uuid.uuid4().hex


def check_event(event: object) -> None:
    """Refuse (:class:`ConfigError`) anything but one of the :mod:`loomctx.events` dataclasses."""
    kind = getattr(event, "kind", None)
    if kind not in EVENT_TYPES or not isinstance(event, EVENT_TYPES[kind]):
        raise ConfigError(f"cannot publish {type(event).__name__!r} as an event: publish one of "
                          f"the loomctx.events dataclasses ({', '.join(sorted(EVENT_TYPES))})")


def encode(event: Event, *, event_id: str | None = None) -> dict[str, Any]:
    """``event`` as a JSON-safe dict with its kind, version and id (a new one unless given)."""
    check_event(event)
    data: dict[str, Any] = {}
    for f in dataclasses.fields(event):
        if f.name in ("kind", "version"):
            continue
        value = getattr(event, f.name)
        if isinstance(value, BuildReport):
            value = value.to_dict()
        elif isinstance(value, tuple):
            value = list(value)
        data[f.name] = value
    return {"id": event_id or new_event_id(), "kind": event.kind, "version": event.version,
            "data": data}


def decode(payload: Mapping[str, Any]) -> tuple[str, Event]:
    """``(event id, event)`` from a dict :func:`encode` made (after a JSON round trip too)."""
    if not isinstance(payload, Mapping):
        raise ConfigError(f"an encoded event is a dict, got {type(payload).__name__!r}")
    kind, version, event_id = payload.get("kind"), payload.get("version"), payload.get("id")
    if kind not in EVENT_TYPES:
        raise ConfigError(f"unknown event kind {kind!r}: this loomctx knows "
                          f"{', '.join(sorted(EVENT_TYPES))}; upgrade the consumer")
    if version not in SUPPORTED_VERSIONS:
        raise ConfigError(f"event {kind!r} has version {version!r}, this loomctx reads versions "
                          f"{sorted(SUPPORTED_VERSIONS)}; upgrade the consumer")
    if not isinstance(event_id, str) or not event_id:
        raise ConfigError(f"event {kind!r} has no id (got {event_id!r}); publish it through a "
                          "bus or loomctx.bus.codec.encode")
    data = dict(payload.get("data") or {})
    for name in _TUPLE_FIELDS[kind]:
        if isinstance(data.get(name), list):
            data[name] = tuple(data[name])
    if isinstance(data.get("report"), Mapping):
        data["report"] = _report(data["report"])
    try:
        event = EVENT_TYPES[kind](**data)
    except TypeError as exc:
        raise ConfigError(f"event {kind!r} version {version!r} does not fit its dataclass "
                          f"({exc}); producer and consumer disagree on the fields") from exc
    return event_id, event


def _report(d: Mapping[str, Any]) -> BuildReport:
    try:
        return BuildReport(
            format=d["format"], model=d["model"], counter=d["counter"], exact=d["exact"],
            budget=d["budget"], tokens=d["tokens"], prefix_tokens=d["prefix_tokens"],
            prefix_hash=d["prefix_hash"], reused_prefix_tokens=d["reused_prefix_tokens"],
            reused_prefix_parts=d.get("reused_prefix_parts", 0),
            timings_ms=dict(d["timings_ms"]),
            sources=[SourceReport(**s) for s in d["sources"]],
            _items=[ItemReport(**r) for r in d["items"]])
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"an event's build report cannot be read ({exc!r}); producer and "
                          "consumer run different loomctx versions") from exc


__all__ = ["EVENT_TYPES", "SUPPORTED_VERSIONS", "check_event", "decode", "encode",
           "new_event_id"]
