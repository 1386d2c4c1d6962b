"""Messages named by what they say, so a conversation is found again whatever its format.

A session stores OpenAI-style messages whichever API the client speaks; each provider reads its
requests into them (:meth:`Provider.read_request <loomctx.providers.protocol.Provider>`;
``split_openai``, ``anthropic_system`` and ``from_anthropic`` are re-exported from there).

:func:`fingerprint` names a message by its content only — role, text, tool calls and their
ids — so the copy a client sends back next turn (with its SDK's extra ``null`` fields, or as
Anthropic blocks) has the fingerprint of the reply the proxy stored. A conversation is a chain
of fingerprints; the proxy finds the new messages of a whole-conversation request as the part
after the longest chain it already holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from loomctx.providers.anthropic.request import anthropic_system, from_anthropic
from loomctx.providers.openai.request import SYSTEM_ROLES, split_openai


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      default=str)


def fingerprint(message: Mapping[str, Any]) -> str:
    """A digest of what a message says (role, content, tool calls, tool call id, name)."""
    content = message.get("content")
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text"
                                         for p in content):
        content = "".join(str(p.get("text", "")) for p in content)
    # A digest, not a check: a malformed shape is refused later with the message's own error
    # (a request is routed by its digests first), so anything that is not a list of calls with
    # a function object counts as none; well-formed messages keep the digest they always had.
    raw = message.get("tool_calls")
    calls = [(c.get("id"), *_name_and_arguments(c.get("function")))
             for c in (raw if isinstance(raw, list) else ()) if isinstance(c, Mapping)]
    key = [message.get("role"), content or "", calls, message.get("tool_call_id"),
           message.get("name")]
    return hashlib.blake2b(_dump(key).encode("utf-8", "surrogatepass"),
                           digest_size=16).hexdigest()


def _name_and_arguments(function: Any) -> tuple[Any, Any]:
    if not isinstance(function, Mapping):
        return None, None
    return function.get("name"), function.get("arguments")


def chain(previous: str, message_fingerprint: str) -> str:
    """The fingerprint of a conversation extended by one message."""
    return hashlib.blake2b(f"{previous}:{message_fingerprint}".encode(),
                           digest_size=16).hexdigest()


__all__ = ["SYSTEM_ROLES", "anthropic_system", "chain", "fingerprint", "from_anthropic",
           "split_openai"]
