"""The one place output formats are registered: format name → renderer factory.

A provider is one module with a :class:`~loomctx.render.protocol.Renderer` (its payload shape and
token arithmetic) plus one :func:`register_format` call; the builder, the CLI's ``--format``
choices and the model → default-format choice all read this table. A model's provider (from
:func:`loomctx.tokens.registry.counter_for_model`) picks the format registered with
``default_for``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loomctx.errors import ConfigError
from loomctx.render.chat import AnthropicRenderer, OpenAIRenderer
from loomctx.render.protocol import Renderer
from loomctx.render.text import TemplateRenderer, TextRenderer
from loomctx.tokens.chat import ChatCounter
from loomctx.tokens.registry import ModelTokenizer

RendererFactory = Callable[[ModelTokenizer, Any], Renderer]
"""(the model's tokenizer, the :class:`~loomctx.builder.BuildOptions`) → a renderer."""

_FACTORIES: dict[str, RendererFactory] = {}
_DEFAULT_FOR: dict[str, str] = {}


def register_format(name: str, factory: RendererFactory, *, default_for: str | None = None
                    ) -> None:
    """Register (or replace) a format; ``default_for`` names the model provider it serves."""
    if not name or not name.isidentifier():
        raise ConfigError(f"format name must be an identifier, got {name!r}")
    _FACTORIES[name] = factory
    if default_for is not None:
        _DEFAULT_FOR[default_for] = name


def formats() -> tuple[str, ...]:
    """Registered format names, in registration order."""
    return tuple(_FACTORIES)


def renderer_for(tokenizer: ModelTokenizer, options: Any) -> Renderer:
    """The renderer for ``options.format``, or for the model's provider when it is None."""
    name = options.format or _DEFAULT_FOR.get(tokenizer.provider, "openai")
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConfigError(f"unknown format {name!r}: use one of {list(_FACTORIES)!r} "
                          "or register it with loomctx.render.registry.register_format")
    return factory(tokenizer, options)


def _placement(options: Any, default: str) -> Any:
    return getattr(options, "placement", None) or default


def _text(tok: ModelTokenizer, o: Any, *, headers: bool) -> TextRenderer:
    return TextRenderer(tok.counter, order=o.text_order, headers=headers,
                        style=getattr(o, "text_style", "plain"),
                        language=getattr(o, "text_language", "zh"),
                        overflow=getattr(o, "text_overflow", "drop"))


def _builtin() -> None:
    register_format("openai", lambda tok, o: OpenAIRenderer(
        ChatCounter(tok.counter, "openai"), placement=_placement(o, "system")),
        default_for="openai")
    register_format("anthropic", lambda tok, o: AnthropicRenderer(
        ChatCounter(tok.counter, "anthropic"), placement=_placement(o, "user_block")),
        default_for="anthropic")
    # OpenAI's wire format for servers whose chat template takes one leading system message
    # and alternating roles (vLLM, llama.cpp and most open-model templates).
    register_format("openai_strict", lambda tok, o: OpenAIRenderer(
        ChatCounter(tok.counter, "openai"), placement=_placement(o, "user_block")))
    register_format("text", lambda tok, o: _text(tok, o, headers=True), default_for="text")
    register_format("minimal", lambda tok, o: _text(tok, o, headers=False))
    register_format("template", lambda tok, o: TemplateRenderer(o.template or "", tok.counter))


_builtin()

__all__ = ["RendererFactory", "formats", "register_format", "renderer_for"]
