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


def _run(capsys, *argv: str) -> tuple[int, list[str]]:
    from draopt.cli import main

    code = main(list(argv))
    return code, capsys.readouterr().out.splitlines()


def test_name_lists_kind_namespace_name(capsys):
    """`-o name` on the commands that place or report objects: KIND/NAMESPACE/NAME lines only."""
    cluster, gangs = str(ROOT / "examples" / "cluster.yaml"), str(ROOT / "examples" / "gang-stranding.yaml")
    assert _run(capsys, "allocate", "-f", cluster, "-o", "name") == (
        0,
        ["resourceclaim/ml/trainer", "resourceclaim/ml/notebook"],
    )
    assert _run(capsys, "explain", "-f", gangs, "-o", "name") == (0, ["pod/ml/trainer-0", "pod/ml/trainer-1"])
    assert _run(capsys, "explain", "-f", cluster, "--claim", "ml/trainer", "-o", "name") == (
        0,
        ["resourceclaim/ml/trainer"],
    )
    taints = str(ROOT / "tests" / "data" / "taint_impact.yaml")
    code, names = _run(capsys, "taint-impact", "-f", taints, "--rule", "broken-gpu-0", "-o", "name")
    assert (code, names) == (0, ["pod/admin/debugger", "pod/ml/trainer"])
    code, names = _run(capsys, "validate", "-f", gangs, "-f", gangs, "-o", "name")  # every object twice
    assert code == 1 and names[0] == "node/node-1" and "pod/ml/trainer-1" in names and len(set(names)) == len(names)


def test_wide_adds_columns(capsys):
    gangs = str(ROOT / "examples" / "gang-stranding.yaml")
    code, table = _run(capsys, "validate", "-f", gangs, "-f", gangs)
    code, wide = _run(capsys, "validate", "-f", gangs, "-f", gangs, "-o", "wide")
    findings = [(t, w) for t, w in zip(table, wide, strict=True) if t != w]
    assert findings and findings[0][1] == f"{findings[0][0]}  [{gangs} document 1]"  # the finding, then where
    assert all(w.startswith(f"{t}  [{gangs} document ") for t, w in findings)
    mig = str(ROOT / "examples" / "mig-gangs.yaml")
    policies = ("--policy", "first-fit", "--policy", "first-fit:builtin:most-allocated")
    code, table = _run(capsys, "compare", "-f", mig, *policies)
    code, wide = _run(capsys, "compare", "-f", mig, *policies, "-o", "wide")
    measures = [line.split()[0] for line in table]
    assert [line.split()[0] for line in wide[: len(table)]] == measures  # (solve_s differs run to run)
    assert [line.split()[-2:] for line in wide[len(table) :]] == [["1/3", "0/3"]] + [["1/3", "2/3"]] * 3
    assert wide[-1].startswith("node node-3 devices (used/total)")


@pytest.mark.parametrize(("command", "fmt"), [("plan", "name"), ("explain", "wide"), ("crosscheck", "name")])
def test_a_format_a_command_does_not_have_exits_2(command, fmt, capsys):
    with pytest.raises(SystemExit) as stop:
        PARSER.parse_args([command, "-f", "x.yaml", "-o", fmt])
    assert stop.value.code == 2
    assert f"invalid choice: '{fmt}'" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(n for n, p in COMMANDS.items() if "-f" in p._option_string_actions))
def test_filename_takes_several_files_after_one_flag_and_repeated(name):
    """`-f a b -f c` is three files in that order, on every command that reads (issue 30: `-f FILES...`)."""
    parser = COMMANDS[name]
    required = [
        s
        for a in parser._actions
        if a.required and a.option_strings and "-f" not in a.option_strings
        for s in a.option_strings[:1]
    ]
    extra = [arg for flag in required for arg in (flag, "x")]
    args = parser.parse_args(["-f", "a.yaml", "b.yaml", "-f", "c.yaml", *extra])
    assert args.filename == ["a.yaml", "b.yaml", "c.yaml"]
