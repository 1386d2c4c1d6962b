"""The :class:`Renderer` contract, re-exported from where the providers define it.

A renderer turns chosen items into what is sent to the model; the shapes it reads and writes
(:class:`Layout`, :class:`Rendered`) live in :mod:`loomctx.providers.layout`, below both the
providers' renderers and the text renderers here.
"""

from loomctx.providers.layout import SECTION_FIELD, Layout, Rendered, Renderer, stable_hash

__all__ = ["SECTION_FIELD", "Layout", "Rendered", "Renderer", "stable_hash"]
