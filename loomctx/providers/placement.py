"""Where per-turn context goes in an OpenAI-shaped conversation: the placement modes.

The OpenAI renderer lays out the system prompt, then the summary of compacted history, the
history (recall notes inside it), the turn's evidence block and the input. The summary, the
recall notes and the evidence block are system messages of their own, in the middle of the
conversation. OpenAI accepts that; many open-model chat templates (served by vLLM, llama.cpp,
TGI) do not: they allow one system message, first, and then user and assistant turns that
alternate, with tool results only after an assistant's tool call. A placement mode says how the
extra system messages go in:

- ``"system"``: as they are, mid-conversation system messages (OpenAI's default; the history's
  bytes never change, so the prefix reused across turns runs up to the evidence block).
- ``"first_system"``: joined into the one system message at the top. Every template accepts
  it, but that message changes every turn, so only the tools stay a reusable prefix.
- ``"user_block"``: the system prompt and summary make the first system message; every later
  system message becomes user-side text joined with the user's turn it belongs to: the
  evidence block goes before the input, in the same user message; after a tool run (an agent's
  next call in the same turn) it is appended to that turn's user message, since a user message
  right after tool results breaks the alternation of most templates. The history keeps its
  bytes from one turn to the next up to the current turn's user message, and the roles
  alternate.

Both strict modes also join two user messages in a row and open with a short user turn when the
conversation would otherwise start with the assistant (a window cut before a user message). The
rendered token count is counted on the final messages, so it stays exact in every mode.
"""

from __future__ import annotations

from typing import Any, Literal

Placement = Literal["system", "first_system", "user_block"]
PLACEMENTS: tuple[Placement, ...] = ("system", "first_system", "user_block")
CONTINUES = "[conversation continues]"
"""The user turn a strict mode opens with when the kept history starts with the assistant."""
JOIN = "\n\n"


def place(messages: list[dict[str, Any]], placement: Placement, *, lead: int
          ) -> list[dict[str, Any]]:
    """``messages`` rearranged for ``placement``; the first ``lead`` messages are the stable
    system part (system prompt, summary), every later system message is per-turn context."""
    if placement == "system":
        return messages
    head, rest = list(messages[:lead]), messages[lead:]
    if placement == "first_system":
        head += [m for m in rest if m.get("role") == "system"]
        rest = [m for m in rest if m.get("role") != "system"]
    out: list[dict[str, Any]] = []
    if head:
        out.append({"role": "system", "content": JOIN.join(_text(m.get("content"))
                                                           for m in head)})
    for m in rest:
        if m.get("role") == "system":  # user_block: the note becomes user-side text
            _add_note(out, {"role": "user", "content": m.get("content")})
        else:
            _append(out, m)
    first = next((i for i, m in enumerate(out) if m.get("role") != "system"), None)
    if first is not None and out[first].get("role") != "user":
        out.insert(first, {"role": "user", "content": CONTINUES})
    return out


def _turn(m: dict[str, Any]) -> bool:
    """A message that takes a turn: a user message or an assistant reply without tool calls
    (templates check that these alternate; a tool call and its results sit between them)."""
    return m.get("role") == "user" or (m.get("role") == "assistant" and not m.get("tool_calls"))


def _add_note(out: list[dict[str, Any]], note: dict[str, Any]) -> None:
    """Join ``note`` to the user's turn it follows (also across a tool run, where a new user
    message would break the alternation), else start a user turn with it."""
    last = next((k for k in range(len(out) - 1, -1, -1) if _turn(out[k])), None)
    if last is not None and out[last].get("role") == "user":
        out[last] = _join_user(out[last], note)
    else:
        _append(out, note)


def _append(out: list[dict[str, Any]], m: dict[str, Any]) -> None:
    if out and m.get("role") == "user" and out[-1].get("role") == "user":
        out[-1] = _join_user(out[-1], m)
    else:
        out.append(m)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return JOIN.join(p.get("text", "") for p in content
                         if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else str(content)


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": _text(content)}]


def _join_user(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two user messages as one: text joined by a blank line, parts (images) kept in order;
    the later message's other fields (its ``name``) win."""
    ca, cb = a.get("content"), b.get("content")
    if isinstance(ca, list) or isinstance(cb, list):
        content: Any = _parts(ca) + _parts(cb)
    else:
        content = JOIN.join(t for t in (_text(ca), _text(cb)) if t)
    return {**a, **b, "content": content}


__all__ = ["CONTINUES", "PLACEMENTS", "Placement", "place"]
