"""The one table of wire formats: provider name → :class:`~loomctx.providers.protocol.Provider`.

The built-in providers (``openai``, ``anthropic``) are registered when :mod:`loomctx.providers`
is imported; a new format is one module with a provider object and one :func:`register` call.
The render registry, the chat counter, the model clients and the proxy look providers up here,
so a registered format is buildable, countable, checkable and readable everywhere at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loomctx.errors import ConfigError

if TYPE_CHECKING:
    from loomctx.providers.protocol import Provider

_PROVIDERS: dict[str, Provider] = {}
_VARIANTS: dict[str, tuple[str, str]] = {}
"""Variant format name → (its provider's name, its default placement)."""


def register(provider: Provider) -> Provider:
    """Register (or replace) ``provider`` under its ``name`` and its variants' names; returns
    it, so a module can register its provider where it defines it."""
    names = [provider.name, *provider.variants]
    for name in names:
        if not isinstance(name, str) or not name.isidentifier():
            raise ConfigError(f"a provider's format name must be an identifier, got {name!r}")
        owner = _VARIANTS[name][0] if name in _VARIANTS else None
        if owner is not None and owner != provider.name:
            raise ConfigError(f"format {name!r} is already a variant of provider {owner!r}: "
                              "give the new provider another name")
    _PROVIDERS[provider.name] = provider
    for variant, placement in provider.variants.items():
        _VARIANTS[variant] = (provider.name, placement)
    return provider


def unregister(name: str) -> None:
    """Remove provider ``name`` and its variants (a test's provider, when the test ends)."""
    _PROVIDERS.pop(name, None)
    for variant in [v for v, (owner, _) in _VARIANTS.items() if owner == name]:
        del _VARIANTS[variant]


def get(name: str) -> Provider:
    """The provider of format ``name`` (a variant's name gives its provider)."""
    provider = _PROVIDERS.get(_VARIANTS[name][0] if name in _VARIANTS else name)
    if provider is None:
        raise ConfigError(f"unknown provider {name!r}: use one of {list(names())!r} or register "
                          "it with loomctx.providers.register")
    return provider


def find(name: str) -> Provider | None:
    """The provider of format ``name``, or None when no provider serves it."""
    return _PROVIDERS.get(_VARIANTS[name][0] if name in _VARIANTS else name)


def placement(name: str) -> str:
    """The default placement of format ``name`` (a variant's own, else its provider's)."""
    return _VARIANTS[name][1] if name in _VARIANTS else get(name).default_placement


def names() -> tuple[str, ...]:
    """Provider names, in registration order."""
    return tuple(_PROVIDERS)


def formats() -> tuple[str, ...]:
    """Every format a provider serves: each provider's name followed by its variants."""
    return tuple(n for p in _PROVIDERS.values() for n in (p.name, *p.variants))


def registered() -> tuple[Provider, ...]:
    """The registered providers, in registration order."""
    return tuple(_PROVIDERS.values())


__all__ = ["find", "formats", "get", "names", "placement", "register", "registered",
           "unregister"]
