"""``loomctx build``: JSON output, table output, and one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loomctx.cli.main import main

OK = [
    {"role": "user", "content": "Where is SHP-1?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "track", "arguments": "{\"id\": \"SHP-1\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "customs hold in Lyon"},
    {"role": "assistant", "content": "It is on customs hold in Lyon."},
    {"role": "user", "content": "What do I tell the customer?"},
]


def write_jsonl(path: Path, rows: list[object], *, raw: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) for r in rows]
    for n, text in (raw or {}).items():
        lines.insert(n - 1, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["build", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_report_is_one_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", OK)
    code, out, err = run(capsys, "--history", hist, "--max-tokens", 300, "--report", "json")
    assert code == 0 and err == ""
    doc = json.loads(out)  # exactly one JSON document
    assert set(doc) == {"messages", "tokens", "report"}
    assert doc["messages"][-1] == {"role": "user", "content": "What do I tell the customer?"}
    assert doc["tokens"] == doc["report"]["tokens"] <= 300
    assert doc["report"]["budget"] == 300
    items = {i["id"]: i for i in doc["report"]["items"]}
    assert items["m5"]["kind"] == "input" and items["m5"]["reason"] == "pinned"
    assert items["m2"]["included"] and items["m3"]["included"]


@pytest.mark.parametrize(("fmt", "keys"), [("anthropic", {"system", "messages"}),
                                           ("text", {"text"}), ("minimal", {"text"})])
def test_json_report_in_other_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      fmt: str, keys: set[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", OK)
    system = tmp_path / "sys.txt"
    system.write_text("You are Atlas.\n", encoding="utf-8")
    code, out, _ = run(capsys, "--history", hist, "--system", system, "--max-tokens", 2000,
                       "--format", fmt, "--report", "json", "--query", "And the refund?")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == keys | {"tokens", "report"}
    assert doc["report"]["format"] == fmt
    if "text" in doc:
        assert "You are Atlas." in doc["text"] and doc["text"].endswith("And the refund?")
        assert "You are Atlas.\n\n\n" not in doc["text"]


def test_table_report_names_the_sources(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--example", "--format", "text")
    assert code == 0
    assert out.startswith("[Role & Policies]\nYou are Atlas")
    for name in ("system_prompt", "user_input", "L1_recent", "tools", "RAG_knowledge"):
        assert name in out
    assert "budget 1500" in out


def test_window_and_reserve_set_the_budget(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", OK)
    code, out, _ = run(capsys, "--history", hist, "--window", 1000, "--reserve", 0.2,
                       "--report", "json")
    assert code == 0 and json.loads(out)["report"]["budget"] == 800


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("loomctx: error: ")
    return lines[0]


def test_malformed_json_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", OK, raw={3: '{"role": "user", "content": '})
    msg = _error(capsys, "--history", hist, "--max-tokens", 300)
    assert f"{hist}:3:" in msg and "malformed JSON" in msg


def test_unknown_role_names_the_file_line(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    rows = [*OK[:4], {"role": "robot", "content": "beep"}, OK[4]]
    hist = write_jsonl(tmp_path / "h.jsonl", rows, raw={2: ""})  # a blank line 2 counts
    msg = _error(capsys, "--history", hist, "--max-tokens", 300)
    assert f"{hist}:6:" in msg and "unknown role 'robot'" in msg


def test_unknown_role_on_the_last_line(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", [*OK, {"role": "robot", "content": "beep"}])
    msg = _error(capsys, "--history", hist, "--max-tokens", 300)
    assert f"{hist}:6:" in msg and "unknown role" in msg


def test_tool_result_without_its_call(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    rows = [OK[0], OK[2], OK[4]]
    hist = write_jsonl(tmp_path / "h.jsonl", rows)
    msg = _error(capsys, "--history", hist, "--max-tokens", 300)
    assert f"{hist}:2:" in msg and "'c1'" in msg and "no matching assistant tool call" in msg


@pytest.mark.parametrize("value", ["-5", "0", "3"])
def test_negative_or_tiny_max_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     value: str) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", OK)
    msg = _error(capsys, "--history", hist, "--max-tokens", value)
    assert "max_tokens" in msg and value in msg


def test_unknown_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", OK)
    msg = _error(capsys, "--history", hist, "--max-tokens", 300, "--model", "acme-llm-9")
    assert "unknown model 'acme-llm-9'" in msg
    code, out, _ = run(capsys, "--history", hist, "--max-tokens", 300, "--model", "acme-llm-9",
                       "--fallback-encoding", "cl100k_base", "--report", "json")
    assert code == 0 and json.loads(out)["report"]["counter"] == "cl100k_base"


def test_unreadable_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    msg = _error(capsys, "--history", missing, "--max-tokens", 300)
    assert str(missing) in msg and "cannot read" in msg
    hist = write_jsonl(tmp_path / "h.jsonl", OK)
    msg = _error(capsys, "--history", hist, "--max-tokens", 300, "--knowledge", hist)
    assert "--knowledge" in msg and "not a folder" in msg
    msg = _error(capsys, "--history", hist, "--max-tokens", 300, "--system", missing)
    assert str(missing) in msg
    bad_tools = tmp_path / "tools.json"
    bad_tools.write_text("{not json", encoding="utf-8")
    msg = _error(capsys, "--history", hist, "--max-tokens", 300, "--tools", bad_tools)
    assert str(bad_tools) in msg and "malformed JSON" in msg


def test_budget_and_query_usage_errors(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", OK[:4])
    assert "no budget" in _error(capsys, "--history", hist)
    assert "not both" in _error(capsys, "--history", hist, "--max-tokens", 100,
                                "--window", 1000)
    assert "--query" in _error(capsys, "--history", hist, "--max-tokens", 300)
    msg = _error(capsys, "--history", hist, "--max-tokens", 20, "--format", "anthropic",
                 "--query", "q")
    assert "raise max_tokens" in msg


def test_budgets_past_the_model_window_are_refused(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", OK)
    msg = _error(capsys, "--history", hist, "--max-tokens", 500_000)
    assert "500000" in msg and "128000" in msg
    msg = _error(capsys, "--history", hist, "--window", 500_000)
    assert "--window 500000" in msg and "128000" in msg
    code, out, _ = run(capsys, "--history", hist, "--max-tokens", 128_000, "--report", "json")
    assert code == 0 and json.loads(out)["report"]["budget"] == 128_000


def test_reserve_next_to_max_tokens_is_an_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", OK)
    msg = _error(capsys, "--history", hist, "--max-tokens", 300, "--reserve", 0.2)
    assert "--reserve 0.2" in msg and "--max-tokens" in msg
    code, out, _ = run(capsys, "--history", hist, "--window", 1000, "--report", "json")
    assert code == 0 and json.loads(out)["report"]["budget"] == 900  # the default reserve


def test_byte_order_marks_are_accepted(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    hist = tmp_path / "h.jsonl"
    hist.write_text("\ufeff" + "\n".join(json.dumps(r) for r in OK) + "\n", encoding="utf-8")
    system = tmp_path / "s.txt"
    system.write_text("\ufeffYou are Atlas.", encoding="utf-8")
    code, out, _ = run(capsys, "--history", hist, "--system", system, "--max-tokens", 500,
                       "--report", "json")
    assert code == 0
    assert json.loads(out)["messages"][0] == {"role": "system", "content": "You are Atlas."}


def test_a_call_left_unanswered_before_the_question_is_answered_as_interrupted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hist = write_jsonl(tmp_path / "h.jsonl", [OK[0], OK[1], OK[4]])
    code, out, _ = run(capsys, "--history", hist, "--max-tokens", 500, "--report", "json")
    assert code == 0
    roles = [(m["role"], m.get("tool_call_id")) for m in json.loads(out)["messages"]]
    assert roles == [("user", None), ("assistant", None), ("tool", "c1"), ("user", None)]


def test_a_multimodal_question_is_the_input_with_its_parts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    question = [{"type": "text", "text": "What is in this photo?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    hist = write_jsonl(tmp_path / "h.jsonl", [
        {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": question}])
    for fmt, image_key in (("openai", "image_url"), ("anthropic", "source")):
        code, out, _ = run(capsys, "--history", hist, "--max-tokens", 3000, "--format", fmt,
                           "--report", "json")
        assert code == 0
        last = json.loads(out)["messages"][-1]
        assert last["role"] == "user"
        assert "What is in this photo?" in json.dumps(last)
        assert any(image_key in part for part in last["content"])
        assert json.dumps(json.loads(out)["messages"]).count("What is in this photo?") == 1


def test_placement_and_the_seed_text_style_from_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from loomctx.testing.strict_template import template_problems

    hist = write_jsonl(tmp_path / "h.jsonl", OK)
    docs = tmp_path / "kb"
    docs.mkdir()
    (docs / "refunds.md").write_text("Refund policy: customs holds get no refund from us.\n",
                                     encoding="utf-8")
    system = tmp_path / "sys.txt"
    system.write_text("You are Atlas.\n", encoding="utf-8")
    common = ["--history", hist, "--system", system, "--knowledge", docs, "--max-tokens", 2000,
              "--report", "json", "--query", "Customs refund?"]
    code, out, _ = run(capsys, *common)
    default = json.loads(out)["messages"]
    assert code == 0 and template_problems(default)  # the evidence: a system message mid-way
    for args in (["--format", "openai_strict"], ["--placement", "first_system"]):
        code, out, _ = run(capsys, *common, *args)
        messages = json.loads(out)["messages"]
        assert code == 0 and template_problems(messages) == []
        assert "customs holds get no refund" in json.dumps(messages)
    code, out, _ = run(capsys, *common, "--format", "text", "--text-style", "seed")
    text = json.loads(out)["text"]
    assert code == 0 and "[来源: " in text and "用户问题：" in text
