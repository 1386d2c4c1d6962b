"""The provider registry: lookups by name and variant, clear errors, registration rules."""

from __future__ import annotations

from typing import ClassVar

import pytest

from loomctx import providers
from loomctx.errors import ConfigError
from loomctx.providers.registry import placement
from loomctx.render.registry import formats
from loomctx.tokens.chat import ChatCounter


def test_builtins_and_their_variants() -> None:
    assert providers.names()[:2] == ("openai", "anthropic")
    assert providers.get("openai_strict") is providers.get("openai")
    assert placement("openai_strict") == "user_block" and placement("openai") == "system"
    assert placement("anthropic") == "user_block"
    assert formats()[:3] == ("openai", "openai_strict", "anthropic")
    assert providers.find("text") is None and "text" in formats()


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown provider 'gemini': use one of "
                                          r"\['openai', 'anthropic'.*register"):
        providers.get("gemini")
    with pytest.raises(ConfigError, match=r"unknown chat provider 'gemini'.*openai, anthropic"):
        ChatCounter(object(), "gemini")  # type: ignore[arg-type]


def test_a_name_must_be_an_identifier_and_a_variant_keeps_its_owner() -> None:
    class Bad:
        name = "not a name"
        variants: ClassVar[dict[str, str]] = {}

    with pytest.raises(ConfigError, match="identifier"):
        providers.register(Bad())  # type: ignore[arg-type]

    class Thief:
        name = "openai_strict"
        variants: ClassVar[dict[str, str]] = {}

    with pytest.raises(ConfigError, match="already a variant of provider 'openai'"):
        providers.register(Thief())  # type: ignore[arg-type]
    assert providers.get("openai_strict") is providers.get("openai")
