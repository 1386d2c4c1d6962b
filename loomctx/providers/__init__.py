"""Wire formats: one provider per format, and the registry everything else asks.

A provider (:class:`~loomctx.providers.protocol.Provider`) holds all loomctx knows about one
wire format: its renderer, its structural rules, its counting rules, how its replies (whole
and streamed) and its errors read. Built in: ``openai`` (Chat Completions, with the
``openai_strict`` variant for strict open-model chat templates) and ``anthropic`` (Messages).
A new format is one module and one :func:`register` call; builds, counters, model clients and
the proxy then serve it.

This package is core: it imports only ``errors``, ``text`` and ``items`` below it, never the
tokenizers, the pipeline or the apps (the chat counter and the renderers above ask it).
"""

from __future__ import annotations

from loomctx.providers import anthropic as _anthropic
from loomctx.providers import openai as _openai
from loomctx.providers.protocol import CountingRules, Provider, StreamReply
from loomctx.providers.registry import (
    find,
    formats,
    get,
    names,
    register,
    registered,
    unregister,
)

register(_openai.PROVIDER)
register(_anthropic.PROVIDER)

__all__ = ["CountingRules", "Provider", "StreamReply", "find", "formats", "get", "names",
           "register", "registered", "unregister"]
