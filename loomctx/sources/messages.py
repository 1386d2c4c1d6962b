"""Validation and grouping of OpenAI-style chat messages (the history input format).

A history is a list of dicts with OpenAI message fields (``role``, ``content``, ``name``,
``tool_calls``, ``tool_call_id``) plus optional ``id`` and ``timestamp``. An assistant message with
``tool_calls`` and the ``tool`` messages answering it form one atomic group.

Every history goes through :func:`validate_history` (the CLI's ``--history`` file,
``HistorySource`` and so ``Session.add_message``). A message either becomes a request the
provider accepts, is repaired by one of the rules below, or is refused with an
:class:`~loomctx.errors.InputError` that names the origin and line and says how to fix it.

Repaired (the stored copy is changed, never the caller's dict):

- ``tool_calls: []`` or ``None``: the message has no tool calls (the key is dropped).
- a tool call without ``type``: ``"function"`` is filled in.
- ``arguments`` given as a JSON object or array: serialised to a JSON string
  (``json.dumps(..., ensure_ascii=False)``); an empty or blank string becomes ``"{}"``.
- lone surrogates (``"\\ud800"``, text cut from UTF-16 halfway) in content, content parts,
  ``name`` and ``arguments`` become U+FFFD, the rule the stores apply, so the text can always
  be sent as UTF-8.

Refused:

- a role outside :data:`ROLES`; ``content`` that is not a string, a list of parts or (only for an
  assistant message with tool calls) absent/None; a ``name`` that is not a string.
- ``content`` given as an empty list of parts;
- a content part that is not an object or whose ``type`` is not one of :data:`PART_TYPES`
  (the error names the part index); a ``text`` part without a string ``text``; parts nested
  deeper than :data:`MAX_PART_DEPTH` or holding non-finite numbers.
- an id (message id, tool call id, ``tool_call_id``) holding a lone surrogate.
- ``tool_calls`` on a message that is not ``assistant``, or not a list; a tool call that is not
  an object, has no non-empty string ``id``, repeats an id already used, has a ``type`` other
  than ``"function"``, a ``function`` that is not an object or lacks a non-empty string
  ``name``, or ``arguments`` that are neither an object, an array nor a string holding JSON.
- a ``tool`` message whose ``tool_call_id`` is not a non-empty string, answers no earlier call,
  answers a call already answered, or does not directly follow its call: the results of a call
  come right after the assistant message that made it, one ``tool`` message per call id, with
  no other message between.
- ``tool_call_id`` on a message that is not ``tool``.

Recorded, not refused:

- calls whose results never come (the assistant's tool-call message is followed by a non-tool
  message before every id is answered): the process crashed between call and result. The
  state records the group's unanswered ids (:attr:`HistoryState.interrupted`); ``HistorySource``
  answers each with a synthetic result at build time (see :data:`INTERRUPTED_TEXT`).
- a trailing group still waiting for results (:attr:`HistoryState.open_group`): an agent that is
  running its tools. It is legal; ``HistorySource`` marks its items ``pending`` until the results
  arrive.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from loomctx._jsonl import bad_text, check_json, clean_json, clean_text, short
from loomctx.errors import InputError
from loomctx.sources._history_state import HistoryState
from loomctx.text.messages import content_text, message_text, provider_message

ROLES = ("system", "developer", "user", "assistant", "tool")
PART_TYPES = ("text", "image_url", "input_audio", "file", "input_image", "image", "refusal")
"""Content part types accepted in a message's list content."""
MAX_PART_DEPTH = 32
"""Deepest JSON nesting accepted inside one content part."""
INTERRUPTED_TEXT = "The tool call was interrupted before it returned a result."
"""Content of the synthetic result that answers a call whose result never came."""


def parse_timestamp(value: Any, *, where: str | None = None) -> float | None:
    """Epoch seconds from an epoch number or an ISO 8601 string; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"timestamp {value!r} is not a time", where=where)
    if isinstance(value, (int, float)):
        try:
            seconds = float(value)
        except OverflowError:
            raise InputError(f"timestamp {short(value)} is out of range", where=where) from None
        if seconds != seconds or seconds in (float("inf"), float("-inf")):
            raise InputError(f"timestamp {value!r} is not finite", where=where)
        return seconds
    if isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            pass
        else:
            if seconds != seconds or seconds in (float("inf"), float("-inf")):
                raise InputError(f"timestamp {short(value)} is not finite", where=where)
            return seconds
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InputError(
                f"timestamp {short(value)} is neither epoch seconds nor ISO 8601 "
                "(e.g. 2024-05-08T13:56:00Z)",
                where=where,
            ) from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    raise InputError(f"timestamp {short(value)} must be a number or an ISO 8601 string",
                     where=where)


def _a(role: str) -> str:
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"


def _check_id(value: str, what: str, where: str) -> None:
    at = bad_text(value)
    if at is not None:
        raise InputError(f"{what} {short(value)} holds a lone surrogate at index {at}: ids are "
                         "never rewritten, use valid Unicode", where=where)


def _check_parts(parts: list[Any], where: str) -> list[Any]:
    for k, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise InputError(f"content part {k} must be an object like "
                             f'{{"type": "text", "text": "..."}}, got {short(part)}', where=where)
        kind = part.get("type")
        if kind not in PART_TYPES:
            raise InputError(f"content part {k} has unknown type {short(kind)}: use one of "
                             f"{list(PART_TYPES)!r}", where=where)
        for key in {"text": ("text",), "refusal": ("refusal",)}.get(kind, ()):
            if not isinstance(part.get(key), str):
                raise InputError(f"content part {k} ({kind}) needs a string {key!r}, got "
                                 f"{short(part.get(key))}", where=where)
        reason = check_json(dict(part), max_depth=MAX_PART_DEPTH)
        if reason is not None:
            raise InputError(f"content part {k}: {reason}", where=where)
    return [clean_json(part) for part in parts]


def _check_content(msg: dict[str, Any], role: str, where: str) -> None:
    content = msg.get("content")
    if isinstance(content, str):
        msg["content"] = clean_text(content)
    elif isinstance(content, list):
        if not content:
            raise InputError("content is an empty list of parts (providers refuse it): give a "
                             "string or at least one part", where=where)
        msg["content"] = _check_parts(content, where)
    elif content is not None:
        raise InputError(f"content must be a string or a list of parts, got {short(content)}",
                         where=where)
    elif not (role == "assistant" and msg.get("tool_calls")):
        raise InputError(f"{_a(role)} message needs content (a string or a list of parts); only "
                         "an assistant message with tool_calls may leave it out", where=where)


def _arguments(value: Any, k: int, where: str) -> str:
    if isinstance(value, (dict, list)):
        reason = check_json(value, max_depth=MAX_PART_DEPTH)
        if reason is not None:
            raise InputError(f"tool call {k} arguments: {reason}", where=where)
        return json.dumps(clean_json(value), ensure_ascii=False)
    if not isinstance(value, str):
        raise InputError(f"tool call {k} arguments must be a JSON string like '{{\"x\": 1}}', "
                         f"got {short(value)}", where=where)
    value = clean_text(value)
    if not value.strip():
        return "{}"
    try:
        json.loads(value)
    except (ValueError, RecursionError):
        raise InputError(f"tool call {k} arguments {short(value)} are not valid JSON: send the "
                         "arguments the model produced, a JSON object as a string", where=where
                         ) from None
    return value


def _check_calls(calls: Any, state: HistoryState, where: str) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise InputError(f"tool_calls must be a list, got {short(calls)}", where=where)
    out: list[dict[str, Any]] = []
    mine: set[str] = set()
    for k, call in enumerate(calls):
        if not isinstance(call, Mapping):
            raise InputError(f"tool call {k} must be an object, got {short(call)}", where=where)
        cid = call.get("id")
        if not isinstance(cid, str) or not cid:
            raise InputError(f"each tool call needs an 'id' (a non-empty string); tool call {k} "
                             f"has {short(cid)}", where=where)
        _check_id(cid, f"tool call {k} id", where)
        if cid in mine or cid in state.call_ids:
            raise InputError(f"tool call id {cid!r} is already used by an earlier call: ids "
                             "must be unique", where=where)
        mine.add(cid)
        kind = call.get("type", "function")
        if kind != "function":
            raise InputError(f"tool call {k} has type {short(kind)}: only 'function' calls are "
                             "supported", where=where)
        fn = call.get("function")
        if not isinstance(fn, Mapping):
            raise InputError(f"tool call {k} 'function' must be an object like "
                             f'{{"name": "...", "arguments": "{{}}"}}, got {short(fn)}',
                             where=where)
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"tool call {k} function needs a non-empty string 'name', got "
                             f"{short(name)}", where=where)
        args = _arguments(fn.get("arguments"), k, where)
        out.append({**call, "type": "function",
                    "function": {**fn, "name": clean_text(name), "arguments": args}})
    return out


def _check_result(msg: dict[str, Any], state: HistoryState, where: str) -> str:
    cid = msg.get("tool_call_id")
    if not isinstance(cid, str) or not cid:
        raise InputError(f"tool_call_id must be a non-empty string, got {short(cid)}",
                         where=where)
    _check_id(cid, "tool_call_id", where)
    if cid in state.waiting:
        return state.answer(cid)
    if cid in state.answered:
        raise InputError(f"tool call {cid!r} is already answered: send one result per call id",
                         where=where)
    if cid in state.call_ids:
        raise InputError(
            f"tool result for call {cid!r} comes after another message: results must directly "
            "follow their call (the assistant message with tool_calls, then one tool message "
            "per call, nothing between); move it up or remove it", where=where)
    raise InputError(
        f"tool result with tool_call_id {cid!r} has no matching assistant tool call "
        "before it: add the assistant message with that call, or remove the result",
        where=where,
    )


def _message_id(raw: Mapping[str, Any], index: int, where: str) -> str:
    given = raw.get("id")
    if given is None or given == "":
        return f"m{index + 1}"
    if isinstance(given, bool) or not isinstance(given, (str, int)) or (
            isinstance(given, int) and abs(given) >= 2**63):
        raise InputError(f"id must be a string, got {short(given)}", where=where)
    mid = str(given)
    _check_id(mid, "id", where)
    return mid


def validate_history(
    messages: Sequence[Mapping[str, Any]], *, origin: str = "history", start: int = 0,
    state: HistoryState | None = None,
) -> list[dict[str, Any]]:
    """Check and repair messages by the rules above; return normalised copies with ``id`` and
    ``group``.

    Errors name ``origin`` and the 1-based line (``start`` + index + 1) and say how to fix it.
    ``state`` carries what must be known between calls (ids used, the open tool-call group,
    interrupted calls), so a history can be validated incrementally; it is updated in place,
    message by message (wrap it with :meth:`HistoryState.layer` to keep a failed batch out).
    """
    out: list[dict[str, Any]] = []
    state = HistoryState() if state is None else state
    for i, raw in enumerate(messages, start):
        where = f"{origin}:{i + 1}"
        if not isinstance(raw, Mapping):
            raise InputError(f"a message must be a JSON object, got {type(raw).__name__}",
                             where=where)
        role = raw.get("role")
        if role not in ROLES:
            raise InputError(f"unknown role {short(role)}: use one of {list(ROLES)!r}",
                             where=where)
        msg = dict(raw)
        mid = _message_id(raw, i, where)
        if mid in state.ids:
            raise InputError(f"duplicate message id {mid!r}: ids must be unique", where=where)
        msg["id"] = mid
        msg["timestamp"] = parse_timestamp(msg.get("timestamp"), where=where)
        if msg.get("name") is not None:
            if not isinstance(msg["name"], str):
                raise InputError(f"name must be a string, got {short(msg['name'])}", where=where)
            msg["name"] = clean_text(msg["name"])
        if msg.get("tool_calls") in ([], None):
            msg.pop("tool_calls", None)
        elif role != "assistant":
            raise InputError(f"{_a(role)} message cannot carry tool_calls: only assistant "
                             "messages call tools", where=where)
        if role != "tool" and msg.get("tool_call_id") is not None:
            raise InputError(f"{_a(role)} message cannot carry tool_call_id: only tool messages "
                             "answer calls", where=where)
        _check_content(msg, role, where)
        if role == "tool":
            msg["group"] = _check_result(msg, state, where)
        else:
            state.close()
            if "tool_calls" in msg:
                msg["tool_calls"] = _check_calls(msg["tool_calls"], state, where)
                msg["group"] = f"g:{mid}"
                state.open(msg["group"], [c["id"] for c in msg["tool_calls"]])
        state.ids.add(mid)
        out.append(msg)
    return out


__all__ = [
    "INTERRUPTED_TEXT",
    "MAX_PART_DEPTH",
    "PART_TYPES",
    "ROLES",
    "HistoryState",
    "content_text",
    "message_text",
    "parse_timestamp",
    "provider_message",
    "validate_history",
]
