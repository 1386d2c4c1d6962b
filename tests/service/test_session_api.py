"""The service uses a session through its public API only.

The service (``loomctx/service``) is an app built on :class:`~loomctx.session.Session`: it
asks the session (``model``, ``context_window``, ``system_prompt``, ``least_framing()``) and
never reaches past it into the builder (``.builder``) or into anyone's private attributes
(``x._name`` on anything but ``self`` or ``cls``). Held as a rule over the source: an AST scan
of every module of the package. Names are what an AST sees, not types, so the rule is the
stricter one: no ``.builder`` attribute at all, and no private attribute of another object,
whatever its type. A planted violation in a copy shows the scan catches both.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from loomctx import BuildOptions, Session
from loomctx.errors import ConfigError

SERVICE = Path(__file__).resolve().parents[2] / "loomctx" / "service"


def reaches_past_the_session(root: Path) -> list[str]:
    """``file:line: expression`` for every ``.builder`` and every private attribute read or
    written on an object other than ``self`` / ``cls`` under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Attribute):
                continue
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if node.attr == "builder" or (private and not own):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_service_uses_only_the_public_session_api() -> None:
    assert SERVICE.is_dir()
    assert reaches_past_the_session(SERVICE) == []


def test_the_scan_fails_on_a_planted_reach(tmp_path: Path) -> None:
    for path in SERVICE.rglob("*.py"):
        copy = tmp_path / path.relative_to(SERVICE)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    core = tmp_path / "core.py"
    core.write_text(core.read_text(encoding="utf-8") + (
        "\n\ndef planted(conv):\n"
        "    conv.session._prompt.text = 'x'\n"
        "    return conv.session.builder.options.model\n"), encoding="utf-8")
    found = reaches_past_the_session(tmp_path)
    assert len(found) == 2
    assert found[0].endswith("conv.session._prompt") and "core.py:" in found[0]
    assert found[1].endswith("conv.session.builder")


def test_the_session_answers_what_the_service_asks(make_session: Callable[..., Session]) -> None:
    s = make_session(options=BuildOptions(model="gpt-4o", format="text"),
                     system_prompt="Be brief.")
    assert s.model == "gpt-4o"
    assert s.context_window == 128_000
    assert s.system_prompt == "Be brief."
    s.system_prompt = "Answer in French."
    s.add_message_sync("user", "Hello there")
    result = s.build_sync(max_tokens=500)
    assert "Answer in French." in result.text and "Be brief." not in result.text
    assert 0 < s.least_framing() <= result.tokens
    with pytest.raises(ConfigError, match="system_prompt must be a string"):
        s.system_prompt = None  # type: ignore[assignment]


def test_the_output_section_adds_to_the_least_framing(
        make_session: Callable[..., Session]) -> None:
    plain = make_session(options=BuildOptions(model="gpt-4o", format="text"))
    told = make_session(options=BuildOptions(model="gpt-4o", format="text",
                                             output_instructions="Answer in one line."))
    assert told.least_framing() > plain.least_framing()
