"""Every command's parser, walked: each flag has one row in docs/cli.md's table ("Every flag, one
meaning"), the row names exactly the commands that take it, the commands that read a cluster take
-R, --strict, --feature-gates and --kubernetes-version, and help shows defaults, examples and exit
codes (issue 33: kubectl's conventions, the same in every command)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from draopt.cli import build_parser, conventions

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "cli.md").read_text()
PARSER = build_parser()
SUB = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction))
PARSERS = conventions.command_parsers(SUB)
GROUPS = {path for path in PARSERS if len(path) == 1 and any(len(p) == 2 and p[0] == path[0] for p in PARSERS)}
COMMANDS = {" ".join(path): p for path, p in PARSERS.items() if path not in GROUPS}


def _shown(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS]


def _table() -> dict[str, tuple[str, set[str]]]:
    """flag -> (the row, the commands its last column names)."""
    section = DOC[DOC.index("## Every flag, one meaning") : DOC.index("## Policies")]
    rows: dict[str, tuple[str, set[str]]] = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = line.split(" | ")
        commands = set(re.findall(r"`([a-z][-a-z ]*)`", cells[-1]))
        for flag in re.findall(r"`(-[-\w]+)`", cells[0]):
            assert flag not in rows, f"{flag}: more than one row in docs/cli.md"
            rows[flag] = (line, commands)
    return rows


TABLE = _table()


def test_every_flag_has_one_row_naming_exactly_its_commands():
    taking: dict[str, set[str]] = {}
    for name, parser in COMMANDS.items():
        for action in _shown(parser):
            for flag in action.option_strings:
                taking.setdefault(flag, set()).add(name)
    missing = sorted(set(taking) - set(TABLE))
    assert not missing, f"flags not in docs/cli.md's table: {missing}"
    for flag, names in taking.items():
        if flag in ("-h", "--help"):
            continue
        line, listed = TABLE[flag]
        assert listed == names, f"{flag}: docs/cli.md names {sorted(listed)}, the parsers {sorted(names)}"
    top = {o for a in _shown(PARSER) for o in a.option_strings}
    unknown = sorted(set(TABLE) - set(taking) - top)
    assert not unknown, f"docs/cli.md lists flags no command takes: {unknown}"


def test_commands_that_read_a_cluster_take_the_same_input_flags():
    for name, parser in COMMANDS.items():
        flags = parser._option_string_actions
        if "-f" in flags or name == "sweep":
            for flag in ("--feature-gates", "--kubernetes-version"):
                assert flag in flags, f"{name}: no {flag}"
        if "-f" in flags:
            for flag in ("-R", "--strict"):
                assert flag in flags, f"{name}: no {flag}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_shows_defaults_examples_and_exit_codes(name):
    parser = COMMANDS[name]
    text = parser.format_help()
    assert "exit codes:" in text, name
    assert "examples:" in text and f"draopt {name}" in text.split("examples:")[1], name
    for action in _shown(parser):
        assert action.help, f"{name} {action.option_strings}: no help"
        default = action.default
        if default in (None, False, "", [], argparse.SUPPRESS) or isinstance(action, argparse._HelpAction):
            continue
        shown = parser._get_formatter()._expand_help(action) if "%" in action.help else action.help
        formatted = conventions.HelpFormatter(name)._get_help_string(action) or ""
        assert "default" in formatted or "default" in shown, f"{name} {action.option_strings}: default not shown"


def test_deprecated_spellings_are_hidden_and_documented():
    section = DOC[DOC.index("## Deprecated spellings") :]
    for name, parser in COMMANDS.items():
        for action in parser._actions:
            if isinstance(action, conventions._DeprecatedFlag):
                assert action.help == argparse.SUPPRESS
                for flag in action.option_strings:
                    assert f"`{flag}" in section, f"{name} {flag}: deprecated but not in docs/cli.md"


def test_top_level_help_shows_examples_and_exit_codes():
    text = PARSER.format_help()
    assert "examples:" in text and "exit codes:" in text


def test_place_wide_and_name(capsys):
    """`place -o wide`: the table with the devices each placed pod's claims hold (a column after
    the node); `-o name`: pod/NAMESPACE/NAME per placed pod, nothing else on stdout."""
    from draopt.cli import main

    gangs = str(ROOT / "examples" / "mig-gangs.yaml")
    assert main(["place", "-f", gangs]) == 1
    table = capsys.readouterr().out.splitlines()
    assert main(["place", "-f", gangs, "-o", "wide"]) == 1
    wide = capsys.readouterr().out.splitlines()
    assert len(wide) == len(table)
    assert wide[0].split()[:3] == ["ml/trainer-0-worker", "node-3", "node-3/7g"]
    assert table[0].split() == ["ml/trainer-0-worker", "node-3"]
    assert main(["place", "-f", gangs, "-o", "name"]) == 1
    names = capsys.readouterr().out.splitlines()
    assert names == ["pod/ml/trainer-0-worker", "pod/ml/trainer-0-chief", "pod/ml/notebook-0", "pod/ml/notebook-1"]
