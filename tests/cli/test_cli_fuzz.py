"""Hundreds of malformed inputs to ``loomctx build``: each is one clear error line or a valid build.

The cases are mutations of the bundled example (its conversation and tools): truncated lines,
wrong types in every field, deep nesting, lone surrogates, byte order marks, junk content parts,
bad tool sequences, huge and non-finite numbers, hostile tool schemas. Each runs through
``main()`` in-process; a few also run as a subprocess to show that no traceback escapes.

An error must be exit 2 with exactly one stderr line that names the file, and, when it names a
line, never a line before the mutated one. A success must be exit 0 with one JSON document within
the budget whose messages follow the provider's tool-call rules.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loomctx.cli.build import example_dir
from loomctx.cli.main import main
from loomctx.sources.messages import INTERRUPTED_TEXT

EXAMPLE = example_dir()
LINES = (EXAMPLE / "conversation.jsonl").read_text(encoding="utf-8").splitlines()
ROWS: list[dict[str, Any]] = [json.loads(line) for line in LINES]
TOOLS: list[dict[str, Any]] = json.loads((EXAMPLE / "tools.json").read_text(encoding="utf-8"))
BUDGET = 1500
WRONG: list[Any] = [None, 0, -1, 2.5, True, [], {}, "", "x", [1], {"a": 1}]


@dataclass(frozen=True)
class Case:
    """One malformed input and what it must give."""

    name: str
    history: bytes | None = None
    """History file bytes (None: the example's)."""
    tools: bytes | None = None
    """Tools file bytes (None: the example's)."""
    expect: str = "either"
    """``error``, ``ok`` or ``either`` (generated mutations whose outcome depends on the value)."""
    line: int | None = None
    """First mutated history line: an error naming a line must name this one or a later one."""
    blame: str = "history"
    """Which file an error must name."""
    fragment: str = ""
    """Text the error line (or, for ``ok``, the output) must contain."""


def jsonl(rows: list[Any]) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def raw_lines(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def with_row(k: int, row: Any) -> list[Any]:
    """The example rows with row ``k`` (1-based) replaced."""
    return [row if i == k else r for i, r in enumerate(ROWS, 1)]


def with_line(k: int, text: str) -> list[str]:
    return [text if i == k else line for i, line in enumerate(LINES, 1)]


def tools(value: Any) -> bytes:
    return json.dumps(value).encode()


def nested_schema(depth: int) -> bytes:
    inner = '{"type": "string"}'
    for _ in range(depth):
        inner = '{"type": "object", "properties": {"a": ' + inner + "}}"
    return ('[{"type": "function", "function": {"name": "f", "parameters": ' + inner +
            "}}]").encode()


def generated() -> list[Case]:
    out: list[Case] = []
    for k, line in enumerate(LINES, 1):
        out.append(Case(f"truncated-line-{k}", raw_lines(with_line(k, line[: len(line) // 2])),
                        expect="error", line=k, fragment=f":{k}:"))
    for k in (1, 2, 3, 15):
        for key in ROWS[k - 1]:
            for n, value in enumerate(WRONG):
                out.append(Case(f"row{k}-{key}-{n}", jsonl(with_row(k, {**ROWS[k - 1],
                                                                          key: value})), line=k))
    call = ROWS[1]["tool_calls"][0]
    for key in ("id", "type", "function"):
        for n, value in enumerate(WRONG):
            row = {**ROWS[1], "tool_calls": [{**call, key: value}]}
            out.append(Case(f"call-{key}-{n}", jsonl(with_row(2, row)), line=2))
    for key in ("name", "arguments"):
        for n, value in enumerate(WRONG):
            row = {**ROWS[1], "tool_calls": [{**call, "function": {**call["function"],
                                                                    key: value}}]}
            out.append(Case(f"function-{key}-{n}", jsonl(with_row(2, row)), line=2))
    fn = TOOLS[0]["function"]
    for key in ("type", "properties", "required"):
        for n, value in enumerate(WRONG):
            params = {**fn["parameters"], key: value}
            bad = [{"type": "function", "function": {**fn, "parameters": params}}, *TOOLS[1:]]
            out.append(Case(f"schema-{key}-{n}", tools=tools(bad), blame="tools"))
    return out


def named() -> list[Case]:
    first, call_row = ROWS[0], ROWS[1]
    call = call_row["tool_calls"][0]
    bom = "\ufeff"
    return [
        Case("deep-line", raw_lines(with_line(3, "[" * 100_000 + "]" * 100_000)),
             expect="error", line=3, fragment="nested too deeply"),
        Case("deep-content", raw_lines(with_line(1, '{"role": "user", "content": ' +
                                                 "[" * 500 + "]" * 500 + "}")),
             expect="error", line=1, fragment="content part 0"),
        Case("deep-arguments", raw_lines(with_line(2, json.dumps(
            {**call_row, "tool_calls": [{**call, "function": {
                "name": "f", "arguments": "[" * 5000 + "]" * 5000}}]}))),
             expect="error", line=2, fragment="not valid JSON"),
        Case("surrogate-content", raw_lines(with_line(1, '{"role": "user", "content": '
                                                      '"lone \\ud800 half"}')),
             expect="ok", fragment="lone \ufffd half"),
        Case("surrogate-id", raw_lines(with_line(4, '{"id": "m\\udc00", "role": "assistant", '
                                                 '"content": "x"}')),
             expect="error", line=4, fragment="lone surrogate"),
        Case("surrogate-arguments", jsonl(with_row(2, {**call_row, "tool_calls": [
            {**call, "function": {"name": "f", "arguments": {"q": "\ud800"}}}]})),
             expect="ok"),
        Case("bom-history", (bom + "\n".join(LINES) + "\n").encode(), expect="ok"),
        Case("bom-tools", tools=(bom + json.dumps(TOOLS)).encode(), expect="ok"),
        Case("bom-mid-file", raw_lines(with_line(5, bom + LINES[4])), expect="error", line=5),
        Case("crlf", "\r\n".join(LINES).encode() + b"\r\n", expect="ok"),
        Case("timestamp-digits", raw_lines(with_line(1, '{"role": "user", "content": "x", '
                                                     '"timestamp": ' + "9" * 5000 + "}")),
             expect="error", line=1, fragment="number too large"),
        Case("timestamp-1e400", raw_lines(with_line(1, '{"role": "user", "content": "x", '
                                                    '"timestamp": 1e400}')),
             expect="error", line=1, fragment="not finite"),
        Case("timestamp-nan", raw_lines(with_line(1, '{"role": "user", "content": "x", '
                                                  '"timestamp": NaN}')),
             expect="error", line=1, fragment="not finite"),
        Case("timestamp-inf-string", jsonl(with_row(1, {**first, "timestamp": "Infinity"})),
             expect="error", line=1, fragment="not finite"),
        Case("id-huge", raw_lines(with_line(1, '{"role": "user", "content": "x", "id": ' +
                                            "1" * 4400 + "}")), expect="error", line=1),
        Case("latin-1", raw_lines(LINES[:3]) + "caf\u00e9\n".encode("latin-1"),
             expect="error", fragment="UTF-8"),
        Case("empty-file", b"", expect="error", fragment="does not end with a user message"),
        Case("blank-lines-only", b"\n\n  \n", expect="error"),
        Case("json-array-file", json.dumps(ROWS).encode(), expect="error", line=1),
        Case("null-byte", raw_lines(with_line(2, LINES[1] + "\x00")), expect="error", line=2),
        Case("junk-part", jsonl(with_row(1, {**first, "content": [{"type": "text", "text": "a"},
                                                                  42]})),
             expect="error", line=1, fragment="content part 1"),
        Case("unknown-part", jsonl(with_row(1, {**first, "content": [{"type": "video"}]})),
             expect="error", line=1, fragment="unknown type 'video'"),
        Case("result-after-user", raw_lines([*LINES[:2], LINES[3], LINES[2], *LINES[4:]]),
             expect="error", line=3, fragment="must directly follow their call"),
        Case("result-twice", raw_lines([*LINES[:3], LINES[2].replace("msg-03", "msg-03b"),
                                        *LINES[3:]]),
             expect="error", line=4, fragment="already answered"),
        Case("empty-tool-calls", jsonl(with_row(2, {**call_row, "tool_calls": []})),
             expect="error", line=2, fragment="needs content"),
        Case("empty-tool-calls-with-text", jsonl(with_row(2, {**call_row, "content": "Let me",
                                                               "tool_calls": []})),
             expect="error", line=3, fragment="no matching assistant tool call"),
        Case("arguments-object", jsonl(with_row(2, {**call_row, "tool_calls": [
            {**call, "function": {"name": call["function"]["name"],
                                  "arguments": {"shipment_id": "SHP-40233"}}}]})),
             expect="ok"),
        Case("result-never-came", raw_lines([*LINES[:2], *LINES[3:]]), expect="ok",
             fragment=INTERRUPTED_TEXT),
        Case("function-string", jsonl(with_row(2, {**call_row, "tool_calls": [
            {**call, "function": "track_shipment"}]})),
             expect="error", line=2, fragment="'function' must be an object"),
        Case("tools-not-a-list", tools={"tools": TOOLS}.__repr__().encode(), expect="error",
             blame="tools"),
        Case("tools-object", tools=tools({"tools": TOOLS}), expect="error", blame="tools",
             fragment="JSON list"),
        Case("tools-properties-list", tools=tools([{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "properties": ["a"]}}}]),
             expect="error", blame="tools", fragment="[0]"),
        Case("tools-required-number", tools=tools([{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "required": 3}}}]),
             expect="error", blame="tools", fragment="required"),
        Case("tools-deep-schema", tools=nested_schema(350), expect="error", blame="tools",
             fragment="nested"),
        Case("tools-deeper-than-parser", tools=nested_schema(700), expect="error",
             blame="tools", fragment="nested too deeply"),
        Case("tools-bad-name", tools=tools([{"type": "function", "function": {
            "name": "track shipment"}}]), expect="error", blame="tools", fragment="tool name"),
        Case("tools-duplicate", tools=tools([TOOLS[0], TOOLS[0]]), expect="error",
             blame="tools", fragment="duplicate"),
        Case("tools-empty-file", tools=b"", expect="error", blame="tools"),
        Case("tools-function-string", tools=tools([{"type": "function", "function": "f"}]),
             expect="error", blame="tools", fragment="needs a name"),
        Case("tools-surrogate", tools=b'[{"name": "f", "description": "x\\ud800"}]',
             expect="ok"),
        Case("tools-huge-number", tools=('[{"name": "f", "parameters": {"type": "object", '
                                         '"properties": {"a": {"default": ' + "7" * 5000 +
                                         "}}}}]").encode(), expect="error", blame="tools"),
        Case("tools-nan-default", tools=b'[{"name": "f", "parameters": {"type": "object", '
                                        b'"properties": {"a": {"default": NaN}}}}]',
             expect="error", blame="tools", fragment="nan"),
    ]


CASES = [*generated(), *named()]


def check_sent(messages: list[dict[str, Any]]) -> None:
    waiting: list[str] = []
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in waiting, f"orphan or repeated result {m!r}"
            waiting.remove(m["tool_call_id"])
            continue
        assert not waiting, f"calls {waiting} left unanswered before {m!r}"
        if m.get("tool_calls"):
            for c in m["tool_calls"]:
                assert c["type"] == "function"
                json.loads(c["function"]["arguments"])
            waiting = [c["id"] for c in m["tool_calls"]]
    assert not waiting


def files(tmp_path: Path, case: Case) -> tuple[Path, Path]:
    hist, tool_file = tmp_path / "h.jsonl", tmp_path / "t.json"
    hist.write_bytes(case.history if case.history is not None
                     else (EXAMPLE / "conversation.jsonl").read_bytes())
    tool_file.write_bytes(case.tools if case.tools is not None
                          else (EXAMPLE / "tools.json").read_bytes())
    return hist, tool_file


def check(case: Case, code: int, out: str, err: str, hist: Path, tool_file: Path) -> str:
    """Assert the outcome is a clear error or a valid build; return which it was."""
    if code == 0:
        assert case.expect != "error", f"{case.name}: expected an error, got a build"
        assert err == ""
        doc = json.loads(out)
        assert doc["tokens"] <= BUDGET
        check_sent(doc["messages"])
        assert case.fragment in out
        return "ok"
    assert code == 2, f"{case.name}: exit {code}\n{err}"
    assert case.expect != "ok", f"{case.name}: expected a build, got {err}"
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, f"{case.name}: {err}"
    line = lines[0]
    assert line.startswith("loomctx: error: ") and "Traceback" not in line
    blamed = hist if case.blame == "history" else tool_file
    assert str(blamed) in line, f"{case.name}: {line}"
    at = re.search(re.escape(str(blamed)) + r":(\d+):", line)
    if case.line is not None and at is not None:
        assert int(at.group(1)) >= case.line, f"{case.name}: {line}"
    assert case.fragment in line, f"{case.name}: {line}"
    return "error"


def argv(hist: Path, tool_file: Path) -> list[str]:
    return ["build", "--history", str(hist), "--tools", str(tool_file), "--max-tokens",
            str(BUDGET), "--report", "json"]


def test_there_are_hundreds_of_cases() -> None:
    assert len(CASES) >= 300
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_input_is_a_clear_error_or_a_valid_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Case) -> None:
    hist, tool_file = files(tmp_path, case)
    code = main(argv(hist, tool_file))
    out, err = capsys.readouterr()
    check(case, code, out, err, hist, tool_file)


SUBPROCESS = ["deep-line", "surrogate-content", "function-string", "tools-properties-list",
              "tools-deeper-than-parser", "timestamp-digits", "latin-1", "result-never-came"]


@pytest.mark.parametrize("name", SUBPROCESS)
def test_no_traceback_from_a_real_process(tmp_path: Path, name: str) -> None:
    (case,) = [c for c in CASES if c.name == name]
    hist, tool_file = files(tmp_path, case)
    proc = subprocess.run([sys.executable, "-m", "loomctx.cli.main", *argv(hist, tool_file)],
                          capture_output=True, env=dict(os.environ), timeout=120)
    err = proc.stderr.decode("utf-8")
    assert "Traceback" not in err
    check(case, proc.returncode, proc.stdout.decode("utf-8"), err, hist, tool_file)
