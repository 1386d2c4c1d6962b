"""``loomctx --help`` lists every subcommand without importing it; the list must say what each
subcommand's own parser says."""

from __future__ import annotations

import pytest

from loomctx.cli.main import COMMANDS, main, parser


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_listed_help_is_the_subcommands_own(command: str) -> None:
    """The top-level help reads the same whether ``command``'s real parser is declared or only
    listed: its one-line help in :data:`COMMANDS` is the one its module gives."""
    assert parser(declare=(command,)).format_help() == parser(declare=()).format_help()


def test_the_full_parser_declares_every_subcommand() -> None:
    args = parser().parse_args(["build", "--example", "--max-tokens", "900"])
    assert args.command == "build" and args.max_tokens == 900


def test_each_subcommand_parses_its_own_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["build", "--help"])
    assert exc.value.code == 0
    assert "--max-tokens" in capsys.readouterr().out


def test_an_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["biuld"])
    assert exc.value.code == 2
    assert "invalid choice: 'biuld'" in capsys.readouterr().err
