"""The builds the report pages are tested on: a session whose build drops items, built twice."""

from __future__ import annotations

from loomctx import Session
from loomctx.builder import BuildResult
from loomctx.sources.knowledge import Document, KnowledgeSource
from loomctx.testing import HashingEmbedder

XSS = '</script><img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
"""A message that would run script if any page forgot to escape it."""

TOOLS = [{"type": "function", "function": {
    "name": "lookup_order", "description": "Find an order by its number.",
    "parameters": {"type": "object", "properties": {"number": {"type": "string"}},
                   "required": ["number"]}}}]
DOCS = [Document(id=f"kb/{n}.md", text=f"Refund policy note {n}: " + "orders ship in two days. "
                 * (6 + 3 * n)) for n in range(8)]


def two_turns() -> tuple[Session, BuildResult, BuildResult]:
    """A session with a system prompt, a tool, knowledge and a history too large for the
    budget (so items go in and out), built twice: the second turn repeats the first's start."""
    s = Session(system_prompt="You are a careful support agent.", tools=TOOLS,
                knowledge=[KnowledgeSource(DOCS, chunk_tokens=40)], embedder=HashingEmbedder(),
                clock=iter(range(1_700_000_000, 1_800_000_000, 60)).__next__)
    for n in range(30):
        s.add_message_sync("user", f"question {n} about refunds and order {n}: " + "why? " * n)
        s.add_message_sync("assistant", f"answer {n}: orders ship in two days. " + "ok " * n)
    s.add_message_sync("user", XSS)
    first = s.build_sync(max_tokens=900)
    s.add_message_sync("assistant", "I cannot run that.")
    # A statement, not a request about the conversation's own past (that one would make the
    # window yield room to recall, and compact): the second turn repeats the first's start.
    s.add_message_sync("user", "Fine, I will read the refund policy myself.")
    second = s.build_sync(max_tokens=900)
    return s, first, second
