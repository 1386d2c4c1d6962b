"""loomctx's own eval system: finds a planted fact, stays within budget, reports ids."""

from loomctx.eval.loomctx_system import LoomctxSystem
from loomctx.eval.metric import count_tokens
from loomctx.eval.records import EvalQuestion, Turn
from loomctx.eval.runner import evaluate


def _history():
    turns = [Turn(id=f"t{i}", role="user" if i % 2 == 0 else "assistant",
                  content=f"We chatted about the weather on day {i}.", timestamp=1e9 + 60 * i)
             for i in range(300)]
    turns[40] = Turn(id="fact", role="user", timestamp=1e9 + 2400,
                     content="My sister Ingrid moved to Trondheim last spring.")
    return tuple(turns)


def test_finds_the_planted_fact_within_budget(embedder):
    history = _history()
    q = EvalQuestion(id="q", question="Where did Ingrid move?", history=history, gold=("fact",))
    system = LoomctxSystem(embedder)
    system.prepare(history)
    for budget in (128, 512, 2048):
        out = system.run(q, budget)
        assert count_tokens(out.context) <= budget
        assert "fact" in out.included_ids
        assert "My sister Ingrid moved to Trondheim last spring." in out.context


def test_runner_scores_it_like_the_baselines(embedder):
    history = _history()
    qs = [EvalQuestion(id="q", question="Where did Ingrid move?", history=history,
                       gold=("fact",), category="single-hop")]
    report = evaluate(qs, [LoomctxSystem(embedder)], [256], dataset="synthetic")
    row = report.get("loomctx", 256, "all")
    assert row.recall == 1.0 and row.n == 1
