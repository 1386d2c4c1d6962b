"""Requests and replies in the two wire formats, as the session's OpenAI-shaped messages.

A session stores OpenAI-style messages whichever API the client speaks. An Anthropic request's
``tool_use`` blocks become an assistant's ``tool_calls`` and its ``tool_result`` blocks become
``tool`` messages, in order; its images stay image parts (the Anthropic renderer writes them
back as image blocks). A reply (JSON or streamed) becomes one assistant message the same way.

:func:`fingerprint` names a message by its content only — role, text, tool calls and their
ids — so the copy a client sends back next turn (with its SDK's extra ``null`` fields, or as
Anthropic blocks) has the fingerprint of the reply the proxy stored. A conversation is a chain
of fingerprints; the proxy finds the new messages of a whole-conversation request as the part
after the longest chain it already holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from loomctx.errors import InputError
from loomctx.text.messages import content_text

SYSTEM_ROLES = frozenset({"system", "developer"})


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      default=str)


def fingerprint(message: Mapping[str, Any]) -> str:
    """A digest of what a message says (role, content, tool calls, tool call id, name)."""
    content = message.get("content")
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text"
                                         for p in content):
        content = "".join(str(p.get("text", "")) for p in content)
    calls = [(c.get("id"), (c.get("function") or {}).get("name"),
              (c.get("function") or {}).get("arguments"))
             for c in message.get("tool_calls") or [] if isinstance(c, Mapping)]
    key = [message.get("role"), content or "", calls, message.get("tool_call_id"),
           message.get("name")]
    return hashlib.blake2b(_dump(key).encode("utf-8", "surrogatepass"),
                           digest_size=16).hexdigest()


def chain(previous: str, message_fingerprint: str) -> str:
    """The fingerprint of a conversation extended by one message."""
    return hashlib.blake2b(f"{previous}:{message_fingerprint}".encode(),
                           digest_size=16).hexdigest()


def split_openai(messages: Sequence[Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """The leading system (and developer) messages' text, and the conversation after them."""
    checked = [_object(m, f"messages[{i}]") for i, m in enumerate(messages)]
    n = 0
    while n < len(checked) and checked[n].get("role") in SYSTEM_ROLES:
        n += 1
    system = "\n\n".join(content_text(m.get("content")) for m in checked[:n]) if n else None
    return system, checked[n:]


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"a message must be an object, got {type(value).__name__}",
                         where=where)
    return dict(value)


def anthropic_system(system: Any) -> str | None:
    """The ``system`` field (a string or text blocks) as text; None when absent."""
    if system is None:
        return None
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return content_text(system)
    raise InputError("system must be a string or a list of text blocks, got "
                     f"{type(system).__name__}", where="system")


def from_anthropic(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Anthropic ``messages`` as OpenAI-style messages (tool use and results split out)."""
    out: list[dict[str, Any]] = []
    for i, raw in enumerate(messages):
        msg = _object(raw, f"messages[{i}]")
        role, content = msg.get("role"), msg.get("content")
        if role not in ("user", "assistant"):
            raise InputError(f"role must be 'user' or 'assistant', got {role!r}",
                             where=f"messages[{i}]")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        if not isinstance(content, list):
            raise InputError("content must be a string or a list of blocks, got "
                             f"{type(content).__name__}", where=f"messages[{i}]")
        if role == "assistant":
            out.append(_assistant(content, f"messages[{i}]"))
        else:
            out.extend(_user(content, f"messages[{i}]"))
    return out


def _assistant(blocks: list[Any], where: str) -> dict[str, Any]:
    texts, calls = [], []
    for k, b in enumerate(blocks):
        block = _object(b, f"{where}.content[{k}]")
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            calls.append({"id": block.get("id"), "type": "function",
                          "function": {"name": block.get("name"),
                                       "arguments": json.dumps(block.get("input") or {})}})
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def _user(blocks: list[Any], where: str) -> list[dict[str, Any]]:
    """Tool results first (they answer the previous assistant turn), then the user's parts."""
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for k, b in enumerate(blocks):
        block = _object(b, f"{where}.content[{k}]")
        kind = block.get("type")
        if kind == "tool_result":
            text = content_text(block.get("content"))
            if block.get("is_error"):
                text = f"error: {text}"
            results.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                            "content": text})
        elif kind == "text":
            parts.append({"type": "text", "text": block.get("text")})
        elif kind == "image":
            parts.append({"type": "image", "source": block.get("source")})
        elif kind == "document":
            parts.append({"type": "text", "text": content_text([block])})
    if parts and all(p["type"] == "text" for p in parts):
        results.append({"role": "user", "content": "\n".join(str(p["text"]) for p in parts)})
    elif parts:
        results.append({"role": "user", "content": parts})
    return results


__all__ = ["SYSTEM_ROLES", "anthropic_system", "chain", "fingerprint", "from_anthropic",
           "split_openai"]
