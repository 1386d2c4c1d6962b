"""counter_for_model: family mapping, context windows, fallback and errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from loomctx.errors import ConfigError
from loomctx.tokens import CachedCounter, ChatCounter, ModelTokenizer, counter_for_model


@pytest.mark.parametrize(
    ("model", "encoding", "window"),
    [
        ("gpt-4o", "o200k_base", 128_000),
        ("gpt-4o-mini-2024-07-18", "o200k_base", 128_000),
        ("chatgpt-4o-latest", "o200k_base", 128_000),
        ("gpt-4.1", "o200k_base", 1_047_576),
        ("gpt-4.1-nano", "o200k_base", 1_047_576),
        ("gpt-4.5-preview", "o200k_base", 128_000),
        ("gpt-5", "o200k_base", 400_000),
        ("gpt-5-mini", "o200k_base", 400_000),
        ("o1", "o200k_base", 200_000),
        ("o3-mini", "o200k_base", 200_000),
        ("o4-mini", "o200k_base", 200_000),
        ("gpt-4", "cl100k_base", 8_192),
        ("gpt-4-0613", "cl100k_base", 8_192),
        ("gpt-4-turbo", "cl100k_base", 128_000),
        ("gpt-4-turbo-2024-04-09", "cl100k_base", 128_000),
        ("gpt-3.5-turbo", "cl100k_base", 16_385),
        ("gpt-oss-120b", "o200k_harmony", 131_072),
        ("openai/gpt-oss-20b", "o200k_harmony", 131_072),
        ("llama-3.1-8b-instruct", "llama3", 131_072),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama3", 131_072),
        ("meta-llama/Meta-Llama-3-8B", "llama3", 8_192),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen3", 32_768),
        ("qwen3-32b", "qwen3", 32_768),
        ("cl100k_base", "cl100k_base", None),
        ("o200k_base", "o200k_base", None),
    ],
)
def test_known_models_map_to_exact_cached_counters(
    model: str, encoding: str, window: int | None
) -> None:
    info = counter_for_model(model)
    assert info.model == model
    assert info.counter.name == encoding
    assert info.counter.exact is True
    assert isinstance(info.counter, CachedCounter)
    assert info.provider == "openai"
    assert info.context_window == window
    assert info.fallback is None


def test_claude_gets_the_estimator_and_anthropic_format() -> None:
    info = counter_for_model("claude-sonnet-4-5")
    assert info.provider == "anthropic"
    assert info.counter.exact is False
    assert info.counter.name == "estimate:claude"
    assert info.context_window == 200_000
    chat = info.chat()
    assert isinstance(chat, ChatCounter)
    assert chat.provider == "anthropic"


def test_counters_are_shared_between_calls() -> None:
    assert counter_for_model("gpt-4o").counter is counter_for_model("gpt-5").counter


@pytest.mark.parametrize(
    "model",
    ["mistral-large", "llama-2-7b", "meta-llama/Llama-4-Scout", "qwen-7b", "gpt-3", "o200k"],
)
def test_unknown_models_name_the_families_and_the_fallback(model: str) -> None:
    with pytest.raises(ConfigError) as info:
        counter_for_model(model)
    text = str(info.value)
    assert repr(model) in text
    assert "gpt-4o" in text and "claude-" in text
    assert "fallback='cl100k_base'" in text


def test_explicit_fallback_is_exact_and_recorded() -> None:
    info = counter_for_model("my-finetune", fallback="cl100k_base")
    assert info.counter.name == "cl100k_base"
    assert info.counter.exact is True
    assert info.fallback == "cl100k_base"
    assert info.context_window is None
    assert counter_for_model("gpt-4o", fallback="cl100k_base").fallback is None


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="p50k"):
        counter_for_model("x", fallback="p50k_base")
    with pytest.raises(ConfigError, match="non-empty"):
        counter_for_model("  ")


def test_model_tokenizer_is_frozen_and_validated() -> None:
    info = counter_for_model("gpt-4o")
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.model = "x"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="context_window"):
        ModelTokenizer(model="m", counter=info.counter, provider="openai", context_window=0)
    with pytest.raises(ConfigError, match="provider"):
        ModelTokenizer(model="m", counter=info.counter, provider="x", context_window=None)  # type: ignore[arg-type]


def test_tokenizer_json_path(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(
        tokenizers.models.WordLevel({"hello": 0, "[UNK]": 1}, unk_token="[UNK]")
    )
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    info = counter_for_model(str(path))
    assert info.counter.exact is True
    assert info.counter.count("hello hello world") == 3
    assert info.provider == "openai"
