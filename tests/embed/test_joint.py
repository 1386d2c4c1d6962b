"""The joint embedder: one vector whose dot product is a weighted sum of two models' cosines."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.embed import HashingEmbedder
from loomctx.embed.joint import JointEmbedder, latin_share
from loomctx.errors import ConfigError

A, B = HashingEmbedder(48), HashingEmbedder(32)


def _joint(weight: float = 0.3) -> JointEmbedder:
    return JointEmbedder(A, B, weight=weight)


def test_latin_texts_score_a_weighted_sum_of_both_cosines() -> None:
    texts = ["the deploy failed with a timeout", "deploy failed: timeout again"]
    x, y = _joint(0.3).embed(texts)
    a, b = A.embed(texts), B.embed(texts)
    expected = 0.3 * float(a[0] @ a[1]) + 0.7 * float(b[0] @ b[1])
    assert float(x @ y) == pytest.approx(expected, abs=1e-5)


def test_other_scripts_keep_the_multilingual_cosine_whole() -> None:
    zh = ["我喜欢周末去爬山", "周末爬山很开心"]
    x, y = _joint(0.3).embed(zh)
    assert np.all(x[A.dim:] == 0.0)  # no English part
    a = A.embed(zh)
    assert float(x @ y) == pytest.approx(float(a[0] @ a[1]), abs=1e-5)
    (en,) = _joint(0.3).embed(["I love hiking on weekends"])
    a_en = A.embed(["I love hiking on weekends"])[0]
    assert float(en @ x) == pytest.approx(math.sqrt(0.3) * float(a_en @ a[0]), abs=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=6))
def test_rows_are_unit_length_in_input_order(texts: list[str]) -> None:
    joint = _joint(0.6)
    vecs = joint.embed(texts)
    assert vecs.shape == (len(texts), A.dim + B.dim)
    assert vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    for i, text in enumerate(texts):
        assert np.allclose(vecs[i], joint.embed([text])[0], atol=1e-6)


def test_the_name_carries_both_models_and_the_weight() -> None:
    assert _joint(0.3).name != _joint(0.6).name  # a cache never mixes two weightings
    assert A.name in _joint().name and B.name in _joint().name


@pytest.mark.parametrize("weight", [0, 1, -0.5, 1.5, "0.5", None])
def test_a_weight_outside_the_open_interval_is_refused(weight: object) -> None:
    with pytest.raises(ConfigError, match="between 0 and 1"):
        JointEmbedder(A, B, weight=weight)  # type: ignore[arg-type]


def test_latin_share() -> None:
    assert latin_share("hello world") == 1.0
    assert latin_share("12345 !!") == 1.0  # no letters: nothing to say it is not English
    assert latin_share("我喜欢 hiking") == pytest.approx(6 / 9)
    assert latin_share("Привет") == 0.0


class _Recording:
    """An embedder that records the thread it ran on, and fails when told to."""

    def __init__(self, inner: HashingEmbedder, fail: bool = False) -> None:
        self.inner, self.fail = inner, fail
        self.name, self.dim = inner.name, inner.dim
        self.threads: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        if self.fail:
            raise RuntimeError(f"{self.name} failed")
        return self.inner.embed(texts)


def test_a_question_embeds_with_both_models_at_once_and_a_batch_one_after_the_other() -> None:
    a, b = _Recording(A), _Recording(B)
    joint = JointEmbedder(a, b, weight=0.3)
    few = ["when did the deploy fail", "我喜欢爬山", "and the timeout?"]
    many = [f"turn {i} about the deploy" for i in range(40)]
    assert np.array_equal(joint.embed(few), _joint(0.3).embed(few))
    assert np.array_equal(joint.embed(many), _joint(0.3).embed(many))
    main = threading.current_thread().name
    assert a.threads == [main, main]  # the multilingual model runs on the caller's thread
    assert b.threads[0] != main and b.threads[1] == main  # the English one beside it, then not
    assert all(t.name != "loomctx-joint" for t in threading.enumerate())  # none outlives a call
    a.threads.clear()
    b.threads.clear()
    serial = JointEmbedder(a, b, weight=0.3, at_once=0)
    assert np.array_equal(serial.embed(few), _joint(0.3).embed(few))
    assert a.threads == b.threads == [main]


def test_with_overlap_a_batch_embeds_with_both_models_at_once() -> None:
    # Ingest: USE on the caller's thread, MiniLM (and its own workers) beside it.
    a, b = _Recording(A), _Recording(B)
    many = [f"turn {i} about the deploy" for i in range(40)] + ["我喜欢爬山"]
    joint = JointEmbedder(a, b, weight=0.3, overlap=True)
    assert np.array_equal(joint.embed(many), _joint(0.3).embed(many))
    main = threading.current_thread().name
    assert a.threads == [main] and b.threads[0] != main
    assert all(t.name != "loomctx-joint" for t in threading.enumerate())


def test_a_failing_model_in_a_batch_fails_the_call_and_leaves_no_thread() -> None:
    many = [f"turn {i} about the deploy" for i in range(40)]
    for a, b in ((_Recording(A, fail=True), _Recording(B)), (_Recording(A), _Recording(B, True))):
        with pytest.raises(RuntimeError, match="failed"):
            JointEmbedder(a, b, weight=0.3, overlap=True).embed(many)
        assert all(t.name != "loomctx-joint" for t in threading.enumerate())


@pytest.mark.parametrize("overlap", [0, 1, None, "yes"])
def test_a_bad_overlap_is_refused(overlap: object) -> None:
    with pytest.raises(ConfigError, match="overlap must be True or False"):
        JointEmbedder(A, B, overlap=overlap)  # type: ignore[arg-type]


class _TwoSteps(_Recording):
    """An embedder with ``embed_later``: records where each of its two steps ran."""

    def __init__(self, inner: HashingEmbedder) -> None:
        super().__init__(inner)
        self.steps: list[tuple[str, str]] = []

    def embed_later(self, texts: Sequence[str]) -> Callable[[], np.ndarray]:
        self.steps.append(("first", threading.current_thread().name))

        def rest() -> np.ndarray:
            self.steps.append(("rest", threading.current_thread().name))
            return self.inner.embed(texts)

        return rest


def test_the_english_models_first_step_runs_before_the_thread_starts() -> None:
    b = _TwoSteps(B)
    joint = JointEmbedder(A, b, weight=0.3)
    few = ["when did the deploy fail", "and the timeout?"]
    assert np.array_equal(joint.embed(few), _joint(0.3).embed(few))
    main = threading.current_thread().name
    assert b.steps[0] == ("first", main)
    assert b.steps[1][0] == "rest" and b.steps[1][1] != main
    assert b.threads == []  # embed itself is not called for a question
    b.steps.clear()
    joint.embed([f"turn {i}" for i in range(20)])  # a batch: embed, one model after the other
    assert b.steps == [] and b.threads == [main]


@pytest.mark.parametrize("at_once", [-1, 2.5, True, "8", None])
def test_a_bad_at_once_is_refused(at_once: object) -> None:
    with pytest.raises(ConfigError, match="at_once must be an int >= 0"):
        JointEmbedder(A, B, at_once=at_once)  # type: ignore[arg-type]


@pytest.mark.parametrize("failing", ["multilingual", "english"])
@pytest.mark.parametrize("count", [1, 40])
def test_an_error_of_either_model_reaches_the_caller(failing: str, count: int) -> None:
    a = _Recording(A, fail=failing == "multilingual")
    b = _Recording(B, fail=failing == "english")
    with pytest.raises(RuntimeError, match=f"{(a if failing == 'multilingual' else b).name}"):
        JointEmbedder(a, b).embed(["the deploy failed"] * count)
    assert all(t.name != "loomctx-joint" for t in threading.enumerate())
