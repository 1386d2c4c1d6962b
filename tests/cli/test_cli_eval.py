"""``loomctx eval``: output formats and exit codes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from loomctx.cli.eval import add_eval_parser, main, run_eval

HISTORY = [
    {"id": f"m{i}", "role": "user", "content": f"note {i}: the weather was fine", "timestamp": i}
    for i in range(30)
] + [{"id": "key", "role": "assistant", "content": "The vault code is 4711", "timestamp": 30}]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "eval.jsonl"
    lines = [
        json.dumps(
            {
                "id": "q1",
                "question": "What is the vault code?",
                "history": HISTORY,
                "gold": ["key"],
                "category": "fact",
            }
        ),
        json.dumps(
            {
                "id": "q2",
                "question": "How was the weather in note 3?",
                "history": HISTORY,
                "gold": ["m3"],
                "category": "other",
            }
        ),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_json_output(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "generic",
            "--data",
            str(data),
            "--budgets",
            "16,64",
            "--json",
            "--systems",
            "recency,bm25,dense",
            "--embedder",
            "hashing",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dataset"] == "generic"
    rows = {(r["system"], r["budget"], r["category"]): r for r in doc["results"]}
    assert set(rows) == {
        (s, b, c)
        for s in ("recency", "bm25", "dense")
        for b in (16, 64)
        for c in ("all", "fact", "other", "split:dev")  # two questions: both in dev
    }
    assert rows[("bm25", 16, "fact")]["recall"] == 1.0
    assert rows[("recency", 16, "fact")]["recall"] == 1.0  # the key turn is the last one
    assert rows[("recency", 16, "other")]["recall"] == 0.0
    assert rows[("bm25", 64, "all")]["n"] == 2


def test_table_output_and_limit(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "generic",
                "--data",
                str(data),
                "--budgets",
                "64",
                "--systems",
                "recency",
                "--limit",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "evidence recall: generic (1 questions" in out
    assert "recency" in out and "bm25" not in out


@pytest.mark.parametrize(
    "extra",
    [
        ["--budgets", "0"],
        ["--budgets", "abc"],
        ["--budgets", "512,-1"],
        ["--systems", "nope"],
        ["--limit", "0"],
        ["--distractors", "2"],  # multilingual only
        ["--distractors", "-1"],
        ["--turns", "400"],  # multilingual only
    ],
)
def test_bad_options_exit_2(
    data: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["generic", "--data", str(data), "--systems", "recency", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("loomctx eval: error:") and err.count("\n") == 1


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["locomo", "--data", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


def test_malformed_record_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"id": "q", "question": "?", "history": [], "gold": ["x"]}\n', encoding="utf-8"
    )
    assert main(["generic", "--data", str(path), "--systems", "recency"]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1" in err and "'x'" in err


def test_registers_on_a_main_parser(data: Path) -> None:
    parser = argparse.ArgumentParser(prog="loomctx")
    add_eval_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", "hotpotqa", "--data", str(data)])
    assert args.func is run_eval
    assert args.budgets == "512,1024,2048,4096,8192"
    assert args.pad_tokens == 16000 and not args.json


def test_split_and_metadata_options(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["generic", "--data", str(data), "--budgets", "64", "--systems", "bm25,fusion",
            "--embedder", "hashing", "--json", "--metadata"]
    assert main([*args, "--split", "dev"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["split"] == "dev"
    rows = {(r["system"], r["category"]): r for r in doc["results"]}
    assert rows[("bm25", "split:dev")]["n"] == 2
    assert rows[("fusion", "fact")]["recall"] == 1.0  # the decorated line is what counts
    assert main([*args, "--split", "test"]) == 0  # two questions: the test split is empty
    doc = json.loads(capsys.readouterr().out)
    assert all(r["n"] == 0 for r in doc["results"])


@pytest.mark.parametrize("choice", ["use", "minilm", "default"])
def test_each_embedder_choice_finds_the_fact_in_every_system_that_embeds(
    data: Path, capsys: pytest.CaptureFixture[str], choice: str
) -> None:
    code = main(["generic", "--data", str(data), "--budgets", "64", "--json",
                 "--systems", "loomctx,dense", "--embedder", choice])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {(r["system"], r["category"]): r["recall"] for r in doc["results"]}
    # A real model finds the vault code among 30 near-identical notes at 64 tokens.
    assert rows[("dense", "fact")] == 1.0
    assert rows[("loomctx", "fact")] == 1.0


def test_an_unknown_embedder_is_a_usage_error(data: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["generic", "--data", str(data), "--embedder", "word2vec"])
    assert exit_info.value.code == 2


def test_turns_reach_the_multilingual_generator(capsys: pytest.CaptureFixture[str]) -> None:
    common = ["multilingual", "--systems", "recency", "--budgets", "256", "--limit", "2"]
    # 24 planted facts need at least 48 turns: one fewer is refused, with the reason.
    assert main([*common, "--turns", "47"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("loomctx eval: error:") and err.count("\n") == 1
    assert "turns=47 is too few" in err
    assert main([*common, "--turns", "48"]) == 0
    assert "evidence recall: multilingual (2 questions" in capsys.readouterr().out
    assert main([*common, "--turns", "0"]) == 2
    assert "--turns 0 must be a positive" in capsys.readouterr().err


def test_embed_cache_keeps_the_vectors_for_the_next_run(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from loomctx.embed.cache import text_hash
    from loomctx.embed.fake import HashingEmbedder
    from loomctx.stores.sqlite import SQLiteStore

    cache = tmp_path / "vectors.sqlite"
    args = ["generic", "--data", str(data), "--budgets", "64", "--json",
            "--systems", "loomctx,dense", "--embedder", "hashing", "--embed-cache", str(cache)]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)["results"]
    store = SQLiteStore(cache)
    hashes = [text_hash(turn["content"]) for turn in HISTORY]
    kept = store.cached_vectors(HashingEmbedder().name, hashes, tenant="default")
    store.close()
    assert set(kept) == set(hashes)
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)["results"]
    assert [r["recall"] for r in second] == [r["recall"] for r in first]


def test_embed_cache_that_is_a_folder_exits_2(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["generic", "--data", str(data), "--systems", "dense", "--embedder", "hashing",
                 "--embed-cache", str(tmp_path)])
    assert code == 2
    assert "--embed-cache" in capsys.readouterr().err
