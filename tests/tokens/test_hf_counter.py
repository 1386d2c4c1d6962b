"""HFTokenizerCounter on a tiny tokenizer.json built in the test (no download)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError, MissingDependencyError
from loomctx.testing import check_truncate
from loomctx.tokens import HFTokenizerCounter, TokenCounter

tokenizers = pytest.importorskip("tokenizers")

TRAIN = [
    "hello world, hello there. The context window is finite.",
    "上下文窗口是有限的，智能体必须选择内容。你好世界",
    "def count(text): return len(text)  # tokens",
] * 20


def _build(tmp_path: Path) -> tuple[Path, object]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TRAIN, trainer)
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    return path, tok


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    return _build(tmp_path_factory.mktemp("tok"))


SAMPLES = ["", "hello world", "你好，世界", "brand new wörds ✨", "<s> is a special token", "  "]


def test_counts_match_the_tokenizers_own_encode(built: tuple[Path, object]) -> None:
    path, tok = built
    counter = HFTokenizerCounter.from_file(path)
    assert isinstance(counter, TokenCounter)
    assert counter.exact is True
    assert counter.name.endswith("/tokenizer.json")
    for text in SAMPLES:
        expected = tok.encode(text, add_special_tokens=False).ids  # type: ignore[attr-defined]
        assert counter.encode(text) == expected
        assert counter.count(text) == len(expected)
    assert counter.count_many(SAMPLES) == [counter.count(t) for t in SAMPLES]
    assert counter.count_many([]) == []


def test_from_str_gives_the_same_counts(built: tuple[Path, object]) -> None:
    path, _ = built
    a = HFTokenizerCounter.from_file(path)
    b = HFTokenizerCounter.from_str(path.read_text(encoding="utf-8"), name="tiny")
    assert b.name == "tiny"
    assert [b.count(t) for t in SAMPLES] == [a.count(t) for t in SAMPLES]


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=120), max_tokens=st.integers(min_value=0, max_value=50))
def test_truncate_properties(built: tuple[Path, object], text: str, max_tokens: int) -> None:
    check_truncate(HFTokenizerCounter.from_file(built[0]), text, max_tokens)


def test_missing_file_and_bad_json_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        HFTokenizerCounter.from_file(tmp_path / "nope.json")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read"):
        HFTokenizerCounter.from_file(bad)


def test_missing_tokenizers_package_names_the_package(
    built: tuple[Path, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tokenizers`` is a dependency of every install (no extra): the fix names the package."""
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(MissingDependencyError, match=r"pip install tokenizers \(") as info:
        HFTokenizerCounter.from_file(built[0])
    assert info.value.package == "tokenizers"
    assert isinstance(info.value, ImportError)
