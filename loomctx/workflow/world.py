"""Lookups: what an action that needs the world (a search, a knowledge base) is given besides
the model.

A model alone cannot search the web or read a company's documents, so a team may give an action
a *lookup*: a function of the instruction that returns text (sync or async). The action's model
then writes its note from that text, shown in its context under ``Labels.results``
(:func:`~loomctx.workspace.build_action_context`'s ``found``). A failing lookup does not stop
the run: the model is told what failed, as a failing source is named in a build's report.

:func:`knowledge_lookup` makes one from a folder of text files, searched with the project's
:class:`~loomctx.sources.knowledge.KnowledgeSource` (BM25 over token-sized chunks); each passage
is tagged with the file it came from (``[来源: …]``), so a writing can cite it.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Awaitable, Callable

from loomctx.errors import ConfigError, LoomctxError
from loomctx.sources.knowledge import KnowledgeSource
from loomctx.sources.protocol import SourceRequest
from loomctx.tokens import counter_for_model

Lookup = Callable[[str], "str | Awaitable[str]"]
"""A function of an action's instruction that returns what it found (sync or async)."""

LOOKUP_ACTIONS = ("websearch", "knowledge")
"""The actions that need the world (a search, a knowledge folder)."""


async def run_lookup(lookup: Lookup, action: str, instruction: str) -> str:
    """The lookup's text; a failure becomes a line saying so (the run goes on)."""
    try:
        out = lookup(instruction)
        if inspect.isawaitable(out):
            out = await out
    except (LoomctxError, OSError, ValueError, RuntimeError, TimeoutError) as exc:
        return f"(the {action} lookup failed: {type(exc).__name__}: {exc})"
    if not isinstance(out, str):
        raise ConfigError(f"the {action} lookup returned {type(out).__name__}, not str: "
                          "return the text found")
    return out


def knowledge_lookup(folder: str | os.PathLike[str], *, top_k: int = 5,
                     chunk_tokens: int = 200, model: str = "gpt-4o") -> Lookup:
    """A lookup over the text/markdown files of ``folder``: the ``top_k`` best passages for
    the instruction, each tagged with its file. An unreadable folder is an ``InputError``
    now, not at the first call."""
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise ConfigError(f"top_k must be an int >= 1, got {top_k!r}")
    source = KnowledgeSource.from_folder(folder, chunk_tokens=chunk_tokens, recall_limit=top_k)
    counter = counter_for_model(model).counter

    async def lookup(instruction: str) -> str:
        items = await source.collect(SourceRequest(query=instruction, now=time.time(),
                                                   counter=counter, budget=0))
        if not items:
            return "(nothing in the knowledge folder matches)"
        return "\n\n".join(f"[来源: {it.id}]\n{it.content}" for it in items[:top_k])

    return lookup


__all__ = ["LOOKUP_ACTIONS", "Lookup", "knowledge_lookup", "run_lookup"]
