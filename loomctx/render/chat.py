"""The chat renderers, re-exported from their providers: :mod:`loomctx.providers.openai.render`
and :mod:`loomctx.providers.anthropic.render`."""

from loomctx.providers._chat import EVIDENCE_HEADER
from loomctx.providers.anthropic.render import AnthropicRenderer
from loomctx.providers.openai.render import OpenAIRenderer, tools_of

__all__ = ["EVIDENCE_HEADER", "AnthropicRenderer", "OpenAIRenderer", "tools_of"]
