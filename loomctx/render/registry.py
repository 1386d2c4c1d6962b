"""The one place output formats are found: format name → renderer.

A wire format (``openai``, its ``openai_strict`` variant, ``anthropic``, any registered
:mod:`provider <loomctx.providers>`) renders through its provider, counted by a
:class:`~loomctx.tokens.chat.ChatCounter` with the provider's rules. The text formats
(``text``, ``minimal``, ``template``) and any other renderer are registered here with
:func:`register_format`. The builder, the CLI's ``--format`` choices and the model →
default-format choice all read this table: a model's provider (from
:func:`loomctx.tokens.registry.counter_for_model`) is the format its builds use unless a format
registered with ``default_for`` claims it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loomctx import providers
from loomctx.errors import ConfigError
from loomctx.render.protocol import Renderer
from loomctx.render.seed_chat import SeedChatRenderer
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
    """Format names: the providers' (in their registration order), then the others."""
    served = providers.formats()
    return (*served, *(name for name in _FACTORIES if name not in served))


def renderer_for(tokenizer: ModelTokenizer, options: Any) -> Renderer:
    """The renderer for ``options.format``, or for the model's provider when it is None."""
    name = options.format or _DEFAULT_FOR.get(tokenizer.provider) or (
        tokenizer.provider if providers.find(tokenizer.provider) else "openai")
    factory = _FACTORIES.get(name)
    if factory is not None:
        return factory(tokenizer, options)
    provider = providers.find(name)
    if provider is None:
        raise ConfigError(f"unknown format {name!r}: use one of {list(formats())!r}, register "
                          "a renderer with loomctx.render.registry.register_format or a wire "
                          "format with loomctx.providers.register")
    placement = getattr(options, "placement", None) or providers.registry.placement(name)
    chat = provider.renderer(ChatCounter(tokenizer.counter, provider.name), placement)
    if getattr(options, "chat_style", "plain") == "seed":
        return SeedChatRenderer(chat, language=getattr(options, "text_language", "zh"))
    return chat


def _text(tok: ModelTokenizer, o: Any, *, headers: bool) -> TextRenderer:
    return TextRenderer(tok.counter, order=o.text_order, headers=headers,
                        style=getattr(o, "text_style", "plain"),
                        language=getattr(o, "text_language", "zh"),
                        overflow=getattr(o, "text_overflow", "drop"))


def _builtin() -> None:
    register_format("text", lambda tok, o: _text(tok, o, headers=True), default_for="text")
    register_format("minimal", lambda tok, o: _text(tok, o, headers=False))
    register_format("template", lambda tok, o: TemplateRenderer(o.template or "", tok.counter))


_builtin()

__all__ = ["RendererFactory", "formats", "register_format", "renderer_for"]
