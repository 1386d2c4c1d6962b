"""EstimatingCounter: errs high against cl100k on a mixed corpus; calibration; truncation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.errors import ConfigError
from loomctx.testing import check_truncate
from loomctx.tokens import BPECounter, EstimatingCounter, TokenCounter

ENGLISH = [
    "The agent rebuilds its context window before every call to the language model.",
    "Budgets are counted in the target model's own tokens, with a reserve for the output.",
    "A failing source never fails the build; the report names it and the reason it failed.",
    "Recency decays exponentially, while importance and priority tiers keep pinned items in.",
    "Internationalization and antidisestablishmentarianism are long, rare words indeed.",
    "Yesterday's meeting covered the quarterly roadmap, hiring plans, and the new office.",
    "Please summarize the attached report in three bullet points and flag any open risks.",
]
CODE = [
    "def pack(items: list[Item], budget: int) -> list[Item]:\n"
    "    out, used = [], 0\n    for it in sorted(items, key=lambda i: -i.score):\n"
    "        if used + it.tokens <= budget:\n            out.append(it); used += it.tokens\n"
    "    return out\n",
    '{"role": "tool", "tool_call_id": "call_8f2a", "content": "{\\"temp_c\\": 21.5, '
    '\\"city\\": \\"Paris\\", \\"ok\\": true}"}',
    "SELECT id, content, ts FROM memory WHERE session_id = ? AND importance >= 0.6 "
    "ORDER BY ts DESC LIMIT 50;",
    "https://example.com/api/v2/items?page=3&per_page=100&sort=-created_at#results",
]
CHINESE = [
    "智能体在每次调用语言模型之前都会重新构建上下文窗口。",
    "预算按照目标模型自己的分词器来计算，并为输出预留一部分空间。",
    "记忆系统分为四层：会话窗口、会话重要信息、智能体级聚合以及全局持久化存储。",
    "检索模块会并行召回多个知识库的结果，然后统一重排序并去除重复内容。",
    "昨天的会议讨论了季度路线图、招聘计划以及新办公室的装修进度。",
    "请用三个要点总结附件中的报告，并标出所有尚未解决的风险。",
]
MIXED = [
    "用户问：How do I reset my password? 助手答：请点击“忘记密码”链接。",
    "模型 gpt-4o 的上下文窗口是 128000 个 tokens，Claude 是 200000。",
    "错误信息 BudgetError: pinned content needs 5120 tokens 但预算只有 4096。",
]
CORPUS = ENGLISH + CODE + CHINESE + MIXED


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_default_estimate_is_above_the_true_count(encoding: str) -> None:
    est = EstimatingCounter()
    exact = BPECounter(encoding)
    for text in CORPUS:
        assert est.count(text) >= exact.count(text), text
    assert sum(est.count_many(CORPUS)) >= sum(exact.count_many(CORPUS))


def test_estimate_also_holds_on_joined_documents() -> None:
    est, exact = EstimatingCounter(), BPECounter("cl100k_base")
    for block in (ENGLISH, CODE, CHINESE, MIXED):
        doc = "\n".join(block)
        assert est.count(doc) >= exact.count(doc)


def test_formula_and_rounding() -> None:
    est = EstimatingCounter(chars_per_token=4.0, cjk_chars_per_token=1.0, margin=0.0)
    assert est.count("") == 0
    assert est.count("abcd") == 1
    assert est.count("abcde") == 2
    assert est.count("中文") == 2
    assert est.count("abcd中文") == 3
    assert EstimatingCounter(chars_per_token=3.0, margin=0.0).count("x" * 9) == 3
    assert EstimatingCounter(chars_per_token=4.0, margin=0.5).count("x" * 8) == 3
    assert est.exact is False
    assert isinstance(est, TokenCounter)


def test_calibration_recovers_known_ratios() -> None:
    chars_per_token, cjk_per_token = 3.7, 0.8
    samples = []
    for text in CORPUS:
        cjk = sum(
            1
            for ch in text
            if "\u4e00" <= ch <= "\u9fff"
            or "\u3000" <= ch <= "\u303f"
            or "\uff00" <= ch <= "\uffef"
        )
        tokens = (len(text) - cjk) / chars_per_token + cjk / cjk_per_token
        samples.append((text, round(tokens)))
    fitted = EstimatingCounter(margin=0.2).calibrate(samples)
    assert fitted.chars_per_token == pytest.approx(chars_per_token, rel=0.03)
    assert fitted.cjk_chars_per_token == pytest.approx(cjk_per_token, rel=0.03)
    assert fitted.margin == 0.2
    assert fitted.calibrate(samples, margin=0.0).margin == 0.0


def test_calibration_keeps_the_default_for_an_absent_class() -> None:
    base = EstimatingCounter(cjk_chars_per_token=0.55)
    fitted = base.calibrate([("a" * 40, 10), ("b" * 80, 20)])
    assert fitted.chars_per_token == pytest.approx(4.0)
    assert fitted.cjk_chars_per_token == 0.55


def test_calibration_against_cl100k_then_errs_high_with_margin() -> None:
    exact = BPECounter("cl100k_base")
    fitted = EstimatingCounter().calibrate([(t, exact.count(t)) for t in CORPUS], margin=0.0)
    total_est = sum(fitted.count_many(CORPUS))
    total_true = sum(exact.count_many(CORPUS))
    assert abs(total_est - total_true) <= 0.1 * total_true


def test_calibration_rejects_bad_samples() -> None:
    with pytest.raises(ConfigError, match="at least one"):
        EstimatingCounter().calibrate([])
    with pytest.raises(ConfigError, match="-3"):
        EstimatingCounter().calibrate([("abc", -3)])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"chars_per_token": 0},
        {"cjk_chars_per_token": -1.0},
        {"margin": -0.1},
        {"chars_per_token": math.inf},
        {"name": ""},
    ],
)
def test_bad_options_are_config_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        EstimatingCounter(**kwargs)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab 中文，。x😀")) | st.characters(), max_size=200),
    max_tokens=st.integers(min_value=0, max_value=80),
)
def test_truncate_properties(text: str, max_tokens: int) -> None:
    check_truncate(EstimatingCounter(name="estimate:claude"), text, max_tokens)
