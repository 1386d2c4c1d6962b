"""``--count-as estimate``: a build for a model loomctx has no tokenizer for.

Without the flag an unknown model is a one-line error: a guessed tokenizer could let the request
overflow without a word. With it, tokens are counted by the character estimator (ratios that err
high, +10 % margin), the report says the counts are estimates, and the request measured with
each real tokenizer bundled (o200k, cl100k, Llama 3, Qwen 3) stays within the budget, in English,
Chinese and code, with the budget binding (items left out for it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import loomctx.select.packer
from loomctx import BuildOptions, ContextBuilder, HistorySource, UserInputSource
from loomctx.cli.main import main
from loomctx.stores import Scope, SQLiteStore
from loomctx.testing import FakeModelServer, ToolFollower
from loomctx.tokens import ChatCounter, counter_for_model
from loomctx.tokens.bpe import BUNDLED_ENCODINGS
from loomctx.workflow.record import load_calls

ENGLISH = ("Shipment {n} left the Rotterdam hub on Tuesday and is waiting for a customs "
           "inspection in Lyon; the customer asked twice whether the refund covers the "
           "expedited fee, and the carrier's reference is RTM-{n}-77.")
CHINESE = ("第{n}批货物周二从鹿特丹仓库发出，目前在里昂等待海关查验；客户两次询问退款"
           "是否包括加急费用，承运商的参考编号是 RTM-{n}-77。"
           "请在今天下班前给出答复，并说明预计的送达时间。")
CODE = Path(loomctx.select.packer.__file__).read_text(encoding="utf-8")
BUDGET = 600


def _history(kind: str) -> list[dict[str, str]]:
    if kind == "code":
        chunks = [CODE[i:i + 700] for i in range(0, 700 * 14, 700)]
    else:
        template = ENGLISH if kind == "english" else CHINESE
        chunks = [" ".join(template.format(n=n * 10 + k) for k in range(3)) for n in range(14)]
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": c} for i, c in enumerate(chunks)]


@pytest.mark.parametrize("kind", ["english", "chinese", "code"])
def test_build_with_the_estimate_stays_within_the_budget_under_real_tokenizers(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hist = tmp_path / "h.jsonl"
    hist.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in _history(kind)) + "\n",
                    encoding="utf-8")
    argv = ["build", "--history", str(hist), "--max-tokens", str(BUDGET), "--model",
            "acme-llm-9", "--query", "What should I tell the customer?"]
    assert main([*argv, "--count-as", "estimate", "--report", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    report = doc["report"]
    assert report["counter"] == "estimate" and report["exact"] is False
    assert doc["tokens"] <= BUDGET
    assert any(i["reason"] == "budget" for i in report["items"])  # the budget was binding
    for encoding in BUNDLED_ENCODINGS:
        real = ChatCounter(counter_for_model(encoding).counter, "openai")
        assert real.messages(doc["messages"]) <= doc["tokens"], encoding

    assert main([*argv, "--count-as", "estimate"]) == 0  # the table says so too
    assert "(estimate, estimated)" in capsys.readouterr().out

    assert main(argv) == 2  # without the choice: the one-line error naming the flag
    err = capsys.readouterr().err
    assert "unknown model 'acme-llm-9'" in err and "--count-as" in err and "'estimate'" in err
    assert err.count("\n") == 1


def test_the_python_option_is_the_fallback() -> None:
    messages = _history("chinese")
    builder = ContextBuilder([UserInputSource(), HistorySource(messages)],
                             options=BuildOptions(model="acme-llm-9",
                                                  fallback_encoding="estimate"))
    result = builder.build_sync("还要多久？", max_tokens=BUDGET)
    assert builder.tokenizer.fallback == "estimate"
    assert result.report.exact is False and result.report.counter == "estimate"
    real = ChatCounter(counter_for_model("cl100k_base").counter, "openai")
    assert real.messages(result.messages) <= result.tokens <= BUDGET
    assert counter_for_model("estimate").counter.exact is False


@pytest.mark.parametrize("task", [
    "Plan a short campaign for our cold-brew oolong: research it, then find one hitpoint.",
    "为我们的冷泡乌龙茶策划一个小红书推广方案：先调研，再找一个爆点。"])
def test_workspace_run_on_an_unlisted_model_with_the_estimate(
        task: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "loomi.db"
    argv = ["workspace", "run", task, "--model", "my-local-model", "--db", str(db),
            "--session", "s1", "--actions", "websearch,hitpoint", "--retries", "0"]
    with FakeModelServer(respond=ToolFollower()) as server:
        url = server.url + "/v1"
        assert main([*argv, "--base-url", url]) == 2  # no count, no run
        assert "pass --count-as" in capsys.readouterr().err and server.requests == []
        assert main([*argv, "--base-url", url, "--count-as", "estimate"]) == 0
        bodies = [r.body for r in server.requests]
    out = capsys.readouterr().out
    assert "token counts are estimates (estimate:" in out
    assert len(bodies) == 8
    calls = load_calls(SQLiteStore(db), Scope(agent="loomi", session="s1"))
    assert all(c["tokens"] <= c["budget"] for c in calls)
    estimated = sorted(c["tokens"] for c in calls)  # each request as the team counted it
    for encoding in BUNDLED_ENCODINGS:
        real = ChatCounter(counter_for_model(encoding).counter, "openai")
        measured = sorted(real.messages(b["messages"], b.get("tools")) for b in bodies)
        # sorted pairwise <=: each request's real size is at most its estimate
        assert all(r <= e for r, e in zip(measured, estimated, strict=True)), encoding
    assert main(["workspace", "show", "--db", str(db), "--session", "s1", "--contexts"]) == 0
    shown = capsys.readouterr().out
    assert shown.count(" tokens (estimated); report: ") == 8
    page = tmp_path / "calls.html"
    assert main(["workspace", "show", "--db", str(db), "--session", "s1", "--html",
                 str(page)]) == 0
    assert "tokens sent (estimated: " in page.read_text(encoding="utf-8")
