"""The generated English / Chinese / mixed conversations are parallel, question for question."""

from __future__ import annotations

import pytest

from loomctx.errors import ConfigError
from loomctx.eval.datasets import iter_dataset
from loomctx.eval.multilingual import LANGUAGES, multilingual_questions
from loomctx.eval.splits import with_splits


def is_cjk_char(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


def _by_language(**kwargs: int) -> dict[str, list]:
    out: dict[str, list] = {lang: [] for lang in LANGUAGES}
    for q in multilingual_questions(**kwargs):
        out[q.category].append(q)
    return out


def test_the_languages_share_structure_gold_and_times() -> None:
    langs = _by_language(conversations=2, turns=80)
    en, zh, mixed = (langs[lang] for lang in LANGUAGES)
    assert len(en) == len(zh) == len(mixed) == 2 * 24
    for a, b, c in zip(en, zh, mixed, strict=True):
        assert a.gold == b.gold == c.gold
        assert [t.timestamp for t in a.history] == [t.timestamp for t in b.history]
        assert len(c.history) == len(a.history)
    gold_en = {t.id: t.content for t in en[0].history}[en[0].gold[0]]
    gold_zh = {t.id: t.content for t in zh[0].history}[zh[0].gold[0]]
    assert not any(is_cjk_char(ch) for ch in gold_en)
    assert any(is_cjk_char(ch) for ch in gold_zh)
    mixed_texts = [t.content for t in mixed[0].history]
    assert any(any(is_cjk_char(ch) for ch in t) for t in mixed_texts)
    assert any(not any(is_cjk_char(ch) for ch in t) for t in mixed_texts)


def test_every_fact_is_planted_once_and_deterministic() -> None:
    first = [(q.question, q.gold) for q in multilingual_questions(turns=60, seed=3)]
    again = [(q.question, q.gold) for q in multilingual_questions(turns=60, seed=3)]
    other = [(q.question, q.gold) for q in multilingual_questions(turns=60, seed=4)]
    assert first == again and first != other
    en = [gold for q, gold in first[:24]]
    assert len(set(en)) == 24  # one gold turn per fact


def test_near_misses_share_the_key_and_never_the_value() -> None:
    import re

    plain = _by_language(conversations=1, turns=160, seed=2)
    hard = _by_language(conversations=1, turns=160, seed=2, distractors=2)
    for lang in LANGUAGES:
        # The same questions and gold turns: near misses only replace chit-chat.
        assert [(q.question, q.gold) for q in hard[lang]] == \
            [(q.question, q.gold) for q in plain[lang]]
    texts = [t.content for t in hard["en"][0].history]
    # Distractor 1 of each fact tells its key of someone else ...
    assert sum(t.split(": ", 1)[1].startswith(("My cousin adopted", "My boss flew",
                                               "My neighbour takes", "People say the best"))
               for t in texts) == 24
    # ... distractor 2 is the fact's own sentence from the other speaker, with another value.
    adopted = [re.fullmatch(r"(\w+): I adopted a (\w+) last week and named it (\w+)\.", t)
               for t in texts]
    by_animal: dict[str, list[tuple[str, str]]] = {}
    for m in filter(None, adopted):
        by_animal.setdefault(m[2], []).append((m[1], m[3]))
    assert len(by_animal) == 6
    for told in by_animal.values():
        (speaker_a, name_a), (speaker_b, name_b) = told
        assert speaker_a != speaker_b and name_a != name_b


def test_splits_and_the_cli_loader() -> None:
    questions = list(with_splits(iter_dataset("multilingual", None, seed=1), "multilingual"))
    assert {q.extras["split"] for q in questions if q.extras["conversation"] == 0} == {"dev"}
    assert {q.extras["split"] for q in questions if q.extras["conversation"] == 1} == {"test"}


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="'xx'"):
        list(multilingual_questions(languages=("xx",)))
    with pytest.raises(ConfigError, match="too few"):
        list(multilingual_questions(turns=10))
    with pytest.raises(ConfigError, match="too few"):
        list(multilingual_questions(turns=100, distractors=2))  # 72 planted turns
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigError, match="distractors"):
            list(multilingual_questions(distractors=bad))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="--data"):
        list(iter_dataset("locomo", None))


def test_chinese_and_mixed_recall_stay_within_two_points_of_english() -> None:
    """loomctx with its default embedder on a generated conversation: no language may trail
    English by more than 0.02 where the budget holds a few turns. (The fast fake embedder is
    not multilingual, so this check runs the shipped one.)"""
    from loomctx.eval.loomctx_system import LoomctxSystem
    from loomctx.eval.runner import evaluate

    questions = multilingual_questions(conversations=1, turns=72, seed=5)
    report = evaluate(questions, [LoomctxSystem()], [512])
    en = report.get("loomctx", 512, "en").recall
    assert en > 0.5  # the check means something only if English finds most facts
    for lang in ("zh", "mixed"):
        assert report.get("loomctx", 512, lang).recall >= en - 0.02, lang


def test_with_near_misses_no_language_trails_english_at_256_tokens() -> None:
    """The hard form of the check: 8 look-alikes per fact fill more than the budget, so the
    ranking decides. A reranker that let small talk next to a look-alike outrank the fact lost
    Chinese facts here (0.958 against English's 1.000) and nowhere in the easy form."""
    from loomctx.eval.loomctx_system import LoomctxSystem
    from loomctx.eval.runner import evaluate

    questions = multilingual_questions(conversations=1, turns=440, seed=5, distractors=8)
    report = evaluate(questions, [LoomctxSystem()], [256])
    en = report.get("loomctx", 256, "en").recall
    assert en > 0.5
    for lang in ("zh", "mixed"):
        assert report.get("loomctx", 256, lang).recall >= en - 0.02, lang
