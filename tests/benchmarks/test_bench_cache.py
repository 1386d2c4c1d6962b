"""The prompt-cache benchmark: its replays and one quick end-to-end run (hashing embedder)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from loomctx.tokens.registry import counter_for_model

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def replays(bench_path: Path) -> ModuleType:
    return importlib.import_module("_replays")


def _locomo_file(path: Path) -> Path:
    """Three sessions of 8 lines; the second opens with speaker B; questions across them."""
    conv: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bob"}
    for s in (1, 2, 3):
        conv[f"session_{s}_date_time"] = f"1:56 pm on {s} May, 2023"
        first, second = ("Bob", "Ann") if s == 2 else ("Ann", "Bob")
        conv[f"session_{s}"] = [
            {"speaker": first if i % 2 == 0 else second, "dia_id": f"D{s}:{i + 1}",
             "text": f"line {i + 1} of session {s} about topic {s * 10 + i}"}
            for i in range(8)
        ]
    qa = [
        {"question": "What was topic 10?", "answer": "a", "evidence": ["D1:1"], "category": 4},
        {"question": "Topics 12 and 21?", "answer": "a", "evidence": ["D1:3", "D2:2"],
         "category": 1},
        {"question": "What was topic 37?", "answer": "a", "evidence": ["D3:8"], "category": 4},
    ]
    path.write_text(json.dumps([{"sample_id": "conv-t", "conversation": conv, "qa": qa}]),
                    encoding="utf-8")
    return path


def test_tool_agent_is_seeded_and_shaped_like_an_agent(replays: ModuleType) -> None:
    replay = replays.tool_agent()
    assert replay.turns == replays.tool_agent().turns
    assert replay.turns != replays.tool_agent(seed=2).turns
    assert replays.tool_agent(12).turns == replay.turns[:12]
    assert len(replay.turns) == 50
    chat = counter_for_model("gpt-4o").chat()
    assert 18_000 <= chat.messages(replay.messages) <= 28_000
    tool_sizes = [chat.message(m) for m in replay.messages if m["role"] == "tool"]
    assert sum(300 <= t <= 1500 for t in tool_sizes) >= 5
    assert 6 <= len(replay.tools) <= 10
    for turn in replay.turns:
        assert turn[0]["role"] == "user" and turn[-1]["role"] == "assistant"
        for i, msg in enumerate(turn):
            for call in msg.get("tool_calls") or []:
                json.loads(call["function"]["arguments"])
                answers = [m.get("tool_call_id") for m in turn[i + 1 : i + 4]]
                assert call["id"] in answers
    ids = [m["id"] for m in replay.messages]
    assert len(ids) == len(set(ids))


def test_tool_agent_plants_facts_it_asks_about(replays: ModuleType) -> None:
    replay = replays.tool_agent()
    texts = {m["id"]: m["content"] for m in replay.messages}
    assert len(replay.questions) == len(replays.FACTS)
    for question in replay.questions:
        (gold,) = question.gold
        assert gold in texts
        assert texts[gold].split(" ")[0] in {f.split(" ")[0] for f, _ in replays.FACTS}
    short = replays.tool_agent(3)
    assert all(set(q.gold) <= {m["id"] for m in short.messages} for q in short.questions)


def test_locomo_turns_start_at_a_user_after_someone_else(
    replays: ModuleType, tmp_path: Path
) -> None:
    replay = replays.locomo(_locomo_file(tmp_path / "locomo.json"), turns=50)
    assert [m["id"] for m in replay.messages][:10] == [f"D1:{i}" for i in range(1, 9)] + [
        "D2:1", "D2:2"]
    assert [m["id"] for m in replay.turns[3]] == ["D1:7", "D1:8", "D2:1"]
    assert all(turn[0]["role"] == "user" for turn in replay.turns)
    assert len(replay.questions) == 3
    head = replays.locomo(tmp_path / "locomo.json", turns=5)
    assert [q.text for q in head.questions] == ["What was topic 10?", "Topics 12 and 21?"]


@pytest.mark.parametrize("name", ["scan logs", "long outputs", "mixed", "no past"])
def test_held_out_replays_are_seeded_agent_conversations(name: str, bench_path: Path) -> None:
    held_out = importlib.import_module("_replays_held_out")
    make = held_out.HELD_OUT[name]
    replay = make(50)
    assert replay.name == name and len(replay.turns) == 50
    assert replay.turns == make(50).turns and replay.turns != make(50, seed=2).turns
    assert make(12).turns == replay.turns[:12]
    chat = counter_for_model("gpt-4o").chat()
    assert 10_000 <= chat.messages(replay.messages) <= 90_000
    for turn in replay.turns:
        assert turn[0]["role"] == "user" and turn[-1]["role"] == "assistant"
        for i, msg in enumerate(turn):
            for call in msg.get("tool_calls") or []:
                json.loads(call["function"]["arguments"])
                assert call["id"] in [m.get("tool_call_id") for m in turn[i + 1:]]
    ids = [m["id"] for m in replay.messages]
    assert len(ids) == len(set(ids))
    texts = {m["id"]: m["content"] for m in replay.messages}
    for question in replay.questions:  # each planted in a user message, asked in other words
        (gold,) = question.gold
        assert gold in texts and question.text not in texts[gold]


def test_held_out_replays_have_the_shapes_they_are_named_for(bench_path: Path) -> None:
    held_out = importlib.import_module("_replays_held_out")
    chat = counter_for_model("gpt-4o").chat()
    scans = held_out.scan_logs()
    logs = [m["content"] for m in scans.messages if m["role"] == "tool"
            and m["content"].startswith("2026-")]
    assert all(10 <= _lines(t) <= 120 for t in logs) and len(logs) >= 25
    assert min(map(_lines, logs)) <= 20 and max(map(_lines, logs)) >= 100
    asked = [m["content"] for m in scans.messages if m["role"] == "user"]
    shipments = [w.strip("?.,") for a in asked for w in a.split() if w.startswith("SHP-")]
    assert len(shipments) - len(set(shipments)) >= 30  # the same shipments, asked again
    long = held_out.long_outputs()
    big = [chat.message(m) for m in long.messages if m["role"] == "tool"]
    assert sum(t >= 1000 for t in big) >= 15
    listed = "\n".join(m["content"] for m in long.messages if m["role"] == "tool")
    back = [m["content"] for m in long.messages if m["role"] == "user" and "PAL-" in m["content"]]
    assert len(back) >= 15 and all(w.strip("?.,()") in listed for a in back
                                   for w in a.split() if w.startswith("PAL-"))
    firsts = [t[0]["content"].split("\n")[0] for t in held_out.mixed().turns]
    assert sum("?" in f for f in firsts) >= 10 and sum("?" not in f for f in firsts) >= 20
    assert not held_out.no_past().questions


def _lines(text: str) -> int:
    return text.count("\n") + 1


def test_quick_run_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "cache.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_cache.py"), "--quick", "--embedder", "hashing",
         "--locomo", str(_locomo_file(tmp_path / "locomo.json")), "--json", str(out)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["model"] == "gpt-4o" and data["embedder"] == "hashing" and data["quick"]
    names = ["tool agent", "LoCoMo conv 1", "scan logs", "long outputs", "mixed", "no past"]
    assert [r["name"] for r in data["replays"]] == names
    runs = {(r["replay"], r["budget"], r["system"]): r for r in data["runs"]}
    assert len(runs) == len(names) * 3 * 2
    for (replay, budget, system), run in runs.items():
        assert f"| {replay} | {budget:,} | {system} |" in proc.stdout
        assert run["builds"] == len(run["per_build"]) >= 2
        assert 0.0 <= run["min_reuse"] <= run["mean_reuse"] <= 1.0
        if system == "loomctx":  # no window of the same messages reuses more (the few
            # tokens two messages' JSON texts share at their start aside)
            assert run["mean_reuse"] <= run["ceiling"] + 0.01 <= 1.01
        else:
            assert run["ceiling"] is None
        assert all(0 <= reused <= total for reused, total in run["per_build"])
        assert run["over_budget"] == 0 and run["max_tokens"] <= budget
        ms = run["build_ms"]
        assert 0 <= ms["p25"] <= ms["median"] <= ms["p75"] <= ms["max"]
        if replay in ("long outputs", "no past"):  # no fact stated in 12 turns / none at all
            assert run["recall"] is None and run["turn_recall"] is None
            assert run["questions"] == 0
        else:
            assert run["recall"] is not None and 0.0 <= run["recall"] <= 1.0
            assert run["turn_recall"] is not None and 0.0 <= run["turn_recall"] <= 1.0
    for name in names:
        builds = {r["builds"] for k, r in runs.items() if k[0] == name}
        assert len(builds) == 1  # every system builds before the same model steps
    assert {(v["replay"], v["budget"]) for v in data["verdicts"]} == {
        (n, b) for n in names for b in (4000, 16000, 128000)}
    # At 128k everything fits: the naive request only appends, so each build reuses the whole
    # previous request, and the question is answered from the whole history.
    for replay in names:
        naive = runs[(replay, 128000, "naive")]
        pairs = naive["per_build"]
        assert all(pairs[i][0] == pairs[i - 1][1] for i in range(1, len(pairs)))
        assert naive["recall"] in (1.0, None)
    assert runs[("tool agent", 128000, "naive")]["mean_reuse"] > 0.9
    assert runs[("tool agent", 4000, "naive")]["min_reuse"] < 1.0


def test_loomctx_run_builds_turns_and_asks_questions(
    replays: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    import loomctx
    from loomctx.testing import HashingEmbedder

    calls: list[tuple[str, Any]] = []

    class Recording(loomctx.Session):
        def add_message_sync(self, role: str, content: Any = None, **kwargs: Any) -> str:
            calls.append(("add", role))
            return super().add_message_sync(role, content, **kwargs)

        def build_sync(self, query: str | None = None, **kwargs: Any) -> Any:
            calls.append(("build", query))
            return super().build_sync(query, **kwargs)

    bench = importlib.import_module("bench_cache")
    monkeypatch.setattr(loomctx, "Session", Recording)
    replay = replays.tool_agent(6)  # the first turn whose fact is asked afterwards
    run = bench.replay_one(replay, bench.LoomctxRun(replay, HashingEmbedder()), 4000,
                           counter_for_model("gpt-4o").counter)
    asked = [q.text for q in replay.questions]
    # the replay, then each question as a question build, then each as the next user turn
    # (answered, so the next follows an exchange)
    assert [c for c in calls if c[0] == "add"] == [("add", m["role"]) for m in replay.messages] \
        + [("add", role) for _ in asked for role in ("user", "assistant")]
    builds = [q for kind, q in calls if kind == "build"]
    assert builds[: run["builds"]] == [None] * run["builds"]  # turn builds
    assert builds[run["builds"]:] == [*asked, *[None] * len(asked)]
    assert run["questions"] == len(asked) > 0 and 0.0 <= run["turn_recall"] <= 1.0


@pytest.mark.parametrize("bad", ["foo=1", "recall_share=x", "recall_share", "tool_share=1.5"])
def test_a_bad_option_or_replay_is_a_usage_error(
    bad: str, bench_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = importlib.import_module("bench_cache")
    for argv in (["--option", bad], ["--replays", "scan," + bad]):
        with pytest.raises(SystemExit) as exc:
            bench.main([*argv, "--json", "-"])
        assert exc.value.code == 2
        assert bad in capsys.readouterr().err
