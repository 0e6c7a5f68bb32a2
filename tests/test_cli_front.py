"""The front door: the version, the licence, and kubectl's conventions on every command (issue 33)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import draopt
from draopt.cli.conventions import EXAMPLES
from tests.test_progress import spread  # noqa: F401 (a fixture)
import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    p = subprocess.run([sys.executable, "-m", "draopt", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def test_version_flag_and_attribute():
    p = run("--version")
    assert p.returncode == 0
    assert p.stdout.strip() == f"draopt {draopt.__version__}"
    assert draopt.__version__[0].isdigit()


def test_licence_is_apache_2():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


# ------------------------------------------------------------------ help: defaults, examples, exit codes
def _parsers():
    import argparse

    from draopt import cli
    from draopt.cli import conventions

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, conventions.command_parsers(sub)


def test_every_command_help_has_examples_defaults_and_exit_codes():
    top, parsers = _parsers()
    assert "examples:" in top.format_help() and "exit codes:" in top.format_help()
    for path, parser in parsers.items():
        text = parser.format_help()
        assert "exit codes: 0" in text, path
        assert "examples:\n  draopt " + " ".join(path) in text, path
    assert "(default: 60.0)" in parsers[("place",)].format_help()
    assert "(default: table)" in parsers[("validate",)].format_help()


def test_docs_cli_table_lists_every_flag():
    import argparse

    table = (ROOT / "docs" / "cli.md").read_text()
    _, parsers = _parsers()
    for path, parser in parsers.items():
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert f"`{option}`" in table, (path, option)


EXAMPLE_COMMANDS = sorted(
    {
        line
        for lines in EXAMPLES.values()
        for line in lines
        if "examples/" in line and not line.startswith("draopt crosscheck")  # crosscheck needs Go
    }
)


@pytest.mark.parametrize("command", EXAMPLE_COMMANDS)
def test_help_examples_run(command):
    p = run(*command.split()[1:])
    assert p.returncode in (0, 1), p.stderr


# ------------------------------------------------------------------ -o is a format; files: --output-file
NODES_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn-1,32000,262144,2,T4\n"


def test_trace_import_output_file_and_deprecated_o_file(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODES_CSV)
    new, old = tmp_path / "new.yaml", tmp_path / "old.yaml"
    p = run("trace", "import", "--nodes", str(nodes), "--output-file", str(new))
    assert p.returncode == 0 and p.stderr == ""
    p = run("trace", "import", "--nodes", str(nodes), "-o", str(old))
    assert p.returncode == 0
    assert "-o" in p.stderr and "deprecated" in p.stderr and "--output-file" in p.stderr
    assert new.read_text() == old.read_text()
    p = run("trace", "import", "--nodes", str(nodes), "-o", "yaml")
    assert p.returncode == 0 and p.stdout == new.read_text()


def test_trace_import_bad_output_flags_exit_2(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODES_CSV)
    p = run("trace", "import", "--nodes", str(nodes), "-o", "json")
    assert p.returncode == 2 and "not an output format" in p.stderr
    p = run("trace", "import", "--nodes", str(nodes), "-o", str(tmp_path / "a.yaml"), "--output-file", "b.yaml")
    assert p.returncode == 2 and "--output-file" in p.stderr


def test_sweep_output_file_required_and_deprecated_o_file(tmp_path):
    base = ("sweep", "--cluster", "examples/gang-stranding.yaml", "--study", "place", "--engine", "serial", "--quiet")
    p = run(*base)
    assert p.returncode == 2 and "--output-file" in p.stderr
    p = run(*base, "-o", "csv")
    assert p.returncode == 2 and "not an output format" in p.stderr
    old = tmp_path / "sweep.csv"
    p = run(*base, "-o", str(old))
    assert p.returncode == 0, p.stderr
    assert "deprecated" in p.stderr and "written as parquet" in p.stderr
    assert old.read_bytes()[:4] == b"PAR1"  # Parquet, as the note says
    new = tmp_path / "sweep.parquet"
    p = run(*base, "-o", "parquet", "--output-file", str(new))
    assert p.returncode == 0 and "deprecated" not in p.stderr and new.read_bytes()[:4] == b"PAR1"


def test_dask_scheduler_flag_and_its_help():
    from draopt import cli

    parser = cli.build_parser()
    args = parser.parse_args(["sweep", "--grid", "g.yaml", "--dask-scheduler", "tcp://h:8786"])
    assert args.scheduler == "tcp://h:8786"
    p = run("sweep", "--help")
    assert "--dask-scheduler" in p.stdout and "--scheduler " not in p.stdout.replace("--scheduler-config", "")


def test_deprecated_scheduler_flag_sets_the_same_value(capsys):
    from draopt import cli

    args = cli.build_parser().parse_args(["sweep", "--grid", "g.yaml", "--scheduler", "tcp://h:8786"])
    assert args.scheduler == "tcp://h:8786"
    assert "--scheduler is deprecated" in capsys.readouterr().err


# ------------------------------------------------------------------ -o table everywhere, text deprecated
@pytest.mark.parametrize("command", [["validate"], ["taint-impact"], ["explain", "--claim", "ml/trainer"]])
def test_table_output_and_deprecated_text(command):
    args = [*command, "-f", "examples/cluster.yaml"]
    table = run(*args, "-o", "table")
    text = run(*args, "-o", "text")
    default = run(*args)
    assert table.returncode == text.returncode == default.returncode
    assert table.stdout == text.stdout == default.stdout
    assert "deprecated" in text.stderr and "-o table" in text.stderr
    assert "deprecated" not in table.stderr
    assert run(*args, "-o", "bogus").returncode == 2


# ------------------------------------------------------------------ -R and --strict on validate and taint-impact
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
DRAIN = """apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {name: drain-gpu-node-1}
spec:
  deviceSelector: {driver: gpu.example.com, pool: gpu-node-1}
  taint: {key: example.com/maintenance, value: "true", effect: NoExecute}
"""


@pytest.mark.parametrize("command", ["validate", "taint-impact"])
def test_recursive_and_strict(command, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "cluster.yaml").write_text((ROOT / "examples" / "cluster.yaml").read_text() + "---\n" + DRAIN)
    flat, deep = run(command, "-f", str(tmp_path)), run(command, "-R", "-f", str(tmp_path))
    assert flat.returncode == deep.returncode == 0
    assert flat.stdout != deep.stdout
    assert deep.stdout == run(command, "-f", str(tmp_path / "sub" / "cluster.yaml")).stdout
    (tmp_path / "cm.yaml").write_text(CONFIGMAP)
    assert run(command, "-f", str(tmp_path)).returncode == 0
    p = run(command, "-f", str(tmp_path), "--strict")
    assert p.returncode == 2 and "ConfigMap" in p.stderr and "--strict" in p.stderr
    assert run(command, "-R", "-f", str(tmp_path / "sub"), "--strict").returncode == 0


def test_strict_reads_stdin_once():
    text = (ROOT / "examples" / "cluster.yaml").read_text()
    p = subprocess.run(
        [sys.executable, "-m", "draopt", "validate", "-f", "-", "--strict"],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 0 and p.stdout == "11 object(s) valid\n", p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "draopt", "validate", "-f", "-", "--strict"],
        input=text + "---\n" + CONFIGMAP,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 2 and "ConfigMap" in p.stderr


# ------------------------------------------------------------------ bad input still exits 2
@pytest.mark.parametrize(
    "args",
    [
        ["place", "-f", "examples/no-such-file.yaml"],
        ["place", "-f", "examples/cluster.yaml", "--no-such-flag"],
        ["plan", "-f", "examples/cluster.yaml", "-o", "wide"],
        ["sweep", "--grid", "no-such-grid.yaml", "--output-file", "x.parquet"],
        ["trace", "import", "--output-file", "x.yaml"],
        [],
    ],
)
def test_bad_input_exits_2(args):
    assert run(*args).returncode == 2


# ------------------------------------------------------------------ --progress into a log: plain lines
def test_forced_progress_on_a_pipe_is_plain_lines():
    p = run("place", "-f", "examples/mig-gangs.yaml", "--policy", "optimal", "--progress")
    assert p.returncode == 1
    assert "\r" not in p.stderr and "\x1b" not in p.stderr
    lines = p.stderr.splitlines()
    assert "place: optimal  started" in lines
    assert any(line.startswith("optimal: phase 1 of 3") and "gap " in line for line in lines)
    assert lines[-1].startswith("place: optimal  done")


def test_progress_at_80_columns_shows_the_gap(spread, tmp_path):  # noqa: F811 (the fixture, imported)
    import re

    from tests.test_progress import _on_terminal, _optimal

    code, shown, _ = _on_terminal(_optimal(spread), tmp_path, size=(24, 80))
    assert code == 1
    lines = [re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", line) for line in re.split(r"[\r\n]", shown)]
    with_gap = [line for line in lines if "gap " in line]
    assert with_gap and all(len(line) <= 80 for line in with_gap)


# ------------------------------------------------------------------ shell completion
def test_bash_completion_completes_commands_flags_and_values(tmp_path):
    import shutil

    if shutil.which("bash") is None:
        pytest.skip("no bash")
    p = run("completion", "bash")
    assert p.returncode == 0
    script = tmp_path / "draopt.bash"
    script.write_text(p.stdout)
    probe = f"""
source {script}
t() {{ COMP_WORDS=("$@"); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); COMPREPLY=(); _draopt; echo "${{COMPREPLY[*]}}"; }}
t draopt pl
t draopt place --pol
t draopt validate -o ""
t draopt trace import --output-
t draopt sweep --dask
"""
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "place plan",
        "--policy",
        "table wide name json yaml",
        "--output-file",
        "--dask-scheduler",
    ]
    assert run("completion", "zsh").stdout.startswith("autoload -U +X bashcompinit")
    assert run("completion", "fish").returncode == 2


# ------------------------------------------------------------------ -n, -A, -l: which pending pods to place
def test_parse_selector():
    from draopt.cli.conventions import parse_selector

    assert parse_selector("app=web,tier!=db, env in (a, b),gpu,!spot,x==1,y notin (c)") == {
        "matchExpressions": [
            {"key": "app", "operator": "In", "values": ["web"]},
            {"key": "tier", "operator": "NotIn", "values": ["db"]},
            {"key": "env", "operator": "In", "values": ["a", "b"]},
            {"key": "gpu", "operator": "Exists"},
            {"key": "spot", "operator": "DoesNotExist"},
            {"key": "x", "operator": "In", "values": ["1"]},
            {"key": "y", "operator": "NotIn", "values": ["c"]},
        ]
    }


@pytest.fixture
def labelled(tmp_path) -> str:
    """examples/mig-gangs.yaml with its two notebook pods labelled app=notebook."""
    text = (ROOT / "examples" / "mig-gangs.yaml").read_text()
    text = text.replace("metadata: {name: notebook-", "metadata: {labels: {app: notebook}, name: notebook-")
    assert text.count("app: notebook") == 2
    path = tmp_path / "labelled.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "flags, selected, code",
    [
        (["-l", "app=notebook"], 2, 0),
        (["-l", "app in (notebook)"], 2, 0),
        (["-l", "!app"], 8, 1),
        (["-n", "ml", "-l", "app!=notebook"], 8, 1),
        (["-n", "other"], 0, 0),
        (["-A", "-n", "other"], 10, 1),
    ],
)
def test_place_selects_the_pending_pods(labelled, flags, selected, code):
    p = run("place", "-f", labelled, *flags)
    assert p.returncode == code, p.stderr
    pods = [line.split()[0] for line in p.stdout.splitlines() if line.startswith("ml/")]
    assert len(pods) == selected
    if flags[:2] == ["-l", "app=notebook"]:
        assert sorted(pods) == ["ml/notebook-0", "ml/notebook-1"]


def test_plan_takes_the_selection_and_bad_selectors_exit_2(labelled):
    p = run("plan", "-f", labelled, "--node-template", "node-0", "-l", "app=notebook")
    assert p.returncode == 0 and "places 2 of 2 pending pod(s)" in p.stdout, p.stdout
    assert run("place", "-f", labelled, "-l", "a~b").returncode == 2


def test_explain_takes_the_selection(labelled):
    """-n/-A/-l on `explain`: only the pending pods they select are placed, so only their failures
    are explained (without the notebooks, trainer-1's gang fits)."""
    every = run("explain", "-f", labelled, "-o", "name")
    assert every.returncode == 0 and "pod/ml/trainer-1-worker" in every.stdout, every.stderr
    p = run("explain", "-f", labelled, "-o", "name", "-l", "!app")
    assert p.returncode == 0 and "note: 8 of 10 pending pod(s) selected (-n/-l)" in p.stderr, p.stderr
    assert "trainer-1" not in p.stdout and "pod/ml/trainer-2-worker" in p.stdout
    p = run("explain", "-f", labelled, "-o", "name", "-n", "other")
    assert p.returncode == 0 and p.stdout == "" and "first-fit places every pending pod" in p.stderr
    assert run("explain", "-f", labelled, "-o", "name", "-A", "-n", "other").stdout == every.stdout
    p = run("explain", "-f", labelled, "--pod", "ml/trainer-1-worker", "-l", "app=notebook")
    assert p.returncode == 2 and "no Pod ml/trainer-1-worker in the input among the pods -n/-l select" in p.stderr


def test_explain_selects_the_pending_claims(tmp_path):
    """Without pods, -n/-l choose the pending ResourceClaims explained (their namespace, labels)."""
    text = (ROOT / "examples" / "cluster.yaml").read_text()
    text = text.replace(
        "  name: notebook\n  namespace: ml\n", "  name: notebook\n  namespace: ml\n  labels: {app: nb}\n"
    )
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    assert run("explain", "-f", str(path), "-o", "name").stdout.split() == [
        "resourceclaim/ml/trainer",
        "resourceclaim/ml/notebook",
    ]
    p = run("explain", "-f", str(path), "-o", "name", "-l", "app=nb")
    assert p.returncode == 0 and p.stdout.split() == ["resourceclaim/ml/notebook"], p.stderr
    assert "note: 1 of 2 pending claim(s) selected (-n/-l)" in p.stderr
    p = run("explain", "-f", str(path), "-n", "default")
    assert p.returncode == 0 and p.stdout == "" and "-n/-l select no pending ResourceClaim" in p.stderr
    # a named claim must be among those selected, as allocate and crosscheck require
    p = run("explain", "-f", str(path), "--claim", "ml/trainer", "-l", "app=nb")
    assert p.returncode == 2 and "--claim ml/trainer: not among the claims -n/-l select" in p.stderr


def test_compare_takes_the_selection(labelled):
    import json

    policies = ["--policy", "first-fit,first-fit:builtin:most-allocated", "-o", "json"]
    every = json.loads(run("compare", "-f", labelled, *policies).stdout)
    assert [r["pods"] for r in every["policies"]] == [10, 10]
    p = run("compare", "-f", labelled, *policies, "-l", "app=notebook")
    assert p.returncode == 0 and "note: 2 of 10 pending pod(s) selected (-n/-l)" in p.stderr, p.stderr
    assert [(r["pods"], r["placed"]) for r in json.loads(p.stdout)["policies"]] == [(2, 2), (2, 2)]
    p = run("compare", "-f", labelled, *policies, "-n", "other")
    assert [r["pods"] for r in json.loads(p.stdout)["policies"]] == [0, 0]


@pytest.mark.parametrize("command", ["compare", "explain"])
def test_a_bad_selector_exits_2_with_the_reason(labelled, command):
    p = run(command, "-f", labelled, "-l", "app~web")
    assert p.returncode == 2 and p.stdout == "", p.stdout
    assert "draopt: error: --selector 'app~web': cannot read 'app~web'" in p.stderr
    assert "Traceback" not in p.stderr


def test_allocate_selects_the_pending_claims(tmp_path):
    """-n/-A/-l on `allocate`: only the pending claims they select are allocated; named claims
    must be among them; none selected: an empty List, exit 0."""
    text = (ROOT / "examples" / "cluster.yaml").read_text()
    text = text.replace(
        "  name: notebook\n  namespace: ml\n", "  name: notebook\n  namespace: ml\n  labels: {app: nb}\n"
    )
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    p = run("allocate", "-f", str(path), "-o", "name", "-l", "app=nb")
    assert p.returncode == 0 and p.stdout.split() == ["resourceclaim/ml/notebook"], p.stderr
    assert "note: 1 of 2 pending claim(s) selected (-n/-l)" in p.stderr
    p = run("allocate", "-f", str(path), "-o", "name", "-n", "ml", "-l", "!app")
    assert p.stdout.split() == ["resourceclaim/ml/trainer"], p.stderr
    assert run("allocate", "-f", str(path), "-o", "name", "-A", "-n", "x").stdout.split() == [
        "resourceclaim/ml/trainer",
        "resourceclaim/ml/notebook",
    ]
    p = run("allocate", "-f", str(path), "-o", "json", "-n", "other")
    assert p.returncode == 0 and json.loads(p.stdout)["items"] == [], p.stderr
    assert "-n/-l select no pending ResourceClaim" in p.stderr
    p = run("allocate", "-f", str(path), "--claim", "ml/trainer", "-l", "app=nb")
    assert p.returncode == 2 and "--claim ml/trainer: not among the claims -n/-l select" in p.stderr
    assert run("allocate", "-f", str(path), "-l", "a~b").returncode == 2


def test_crosscheck_takes_the_selection(labelled):
    """-n/-A/-l on `crosscheck`: the pending pods they leave out are left out of the input both
    draopt and the oracle read (place mode); with --node, the pending claims both allocate."""
    p = run("crosscheck", "-f", labelled, "-l", "app=notebook", "-o", "json")
    if p.returncode == 2 and "Go" in p.stderr:
        pytest.skip("no Go oracle")
    assert p.returncode == 0 and "note: 2 of 10 pending pod(s) selected (-n/-l)" in p.stderr, p.stderr
    report = json.loads(p.stdout)
    assert report["identical"] and [r["pod"] for r in report["pods"]] == ["ml/notebook-0", "ml/notebook-1"]
    cluster = str(ROOT / "examples" / "cluster.yaml")
    p = run("crosscheck", "-f", cluster, "--node", "gpu-node-1", "-n", "ml", "-o", "json")
    assert p.returncode == 0 and [c["claim"] for c in json.loads(p.stdout)["claims"]] == ["ml/trainer", "ml/notebook"]
    p = run("crosscheck", "-f", cluster, "--node", "gpu-node-1", "-n", "other")
    assert p.returncode == 2 and "-n/-l select no pending ResourceClaim" in p.stderr
    assert run("crosscheck", "-f", labelled, "-l", "a~b").returncode == 2


# ------------------------------------------------------------------ -o: the formats of each command
def test_output_formats_table_matches_the_parsers():
    """docs/cli.md's "Output formats": each command's -o choices as its parser has them, and each of
    kubectl's five formats either taken or listed as refused (argparse refuses it: exit 2)."""
    import re

    from tests.test_cli_flags import COMMANDS, DOC

    section = DOC[DOC.index("## Output formats") : DOC.index("### Provenance")]
    rows = [line.rstrip()[1:-1].split("|") for line in section.splitlines() if line.startswith("| `")]
    assert {re.findall(r"`([-a-z ]+)`", row[0])[0] for row in rows} == set(COMMANDS) - {"completion"}
    for row in rows:
        name = re.findall(r"`([-a-z ]+)`", row[0])[0]
        taken = re.findall(r"`([a-z]+)`", row[1])
        refused = [f for f in re.findall(r"`([a-z]+)`", row[4]) if f in ("table", "wide", "name", "yaml", "json")]
        output = COMMANDS[name]._option_string_actions["-o"]
        if output.choices is not None:
            assert sorted(taken) == sorted(c for c in output.choices if c != "text"), name
        assert not set(taken) & set(refused), name
        assert {"table", "wide", "name", "yaml", "json"} <= set(taken) | set(refused), name
        if output.choices is not None:
            for format in refused:
                assert run(name, "-f", "examples/cluster.yaml", "-o", format).returncode == 2, (name, format)


def test_yaml_is_the_json_document(tmp_path):
    """-o yaml where -o json is: the same document (the provenance's command line aside)."""
    import yaml

    gangs, cluster = "examples/gang-stranding.yaml", "examples/cluster.yaml"
    for argv in (
        ["explain", "-f", gangs],
        ["explain", "-f", cluster, "--claim", "ml/trainer"],
        ["validate", "-f", gangs],
        ["compare", "-f", "examples/mig-gangs.yaml", "--policy", "first-fit,first-fit:builtin:most-allocated"],
    ):
        as_json, as_yaml = run(*argv, "-o", "json"), run(*argv, "-o", "yaml")
        assert as_json.returncode == as_yaml.returncode == 0, as_yaml.stderr
        from_json, from_yaml = json.loads(as_json.stdout), yaml.safe_load(as_yaml.stdout)
        for doc in (from_json, from_yaml):
            doc["provenance"].pop("command")
            doc["provenance"].pop("date")
            for policy in doc.get("policies", []):
                policy.pop("solve_s")
        assert from_yaml == from_json, argv


def test_allocate_table(capsys):
    """`allocate -o table`: a line per claim allocated, its node and each request's devices."""
    code, lines = _run_main(capsys, "allocate", "-f", str(ROOT / "examples" / "cluster.yaml"), "-o", "table")
    assert code == 0
    assert [line.split() for line in lines] == [
        ["ml/trainer", "gpu-node-1", "gpu=gpu-node-1/gpu-4", "gpu=gpu-node-1/gpu-5", "nic=gpu-node-1/nic-1"],
        ["ml/notebook", "gpu-node-1", "gpu/h100=gpu-node-1/gpu-2"],
    ]


def test_crosscheck_yaml(capsys):
    import yaml

    p = run("crosscheck", "-f", "examples/cluster.yaml", "--node", "gpu-node-1", "-o", "yaml")
    if p.returncode == 2 and "Go" in p.stderr:
        pytest.skip("no Go oracle")
    q = run("crosscheck", "-f", "examples/cluster.yaml", "--node", "gpu-node-1", "-o", "json")
    assert p.returncode == 0 and yaml.safe_load(p.stdout) == json.loads(q.stdout)


def _run_main(capsys, *argv: str) -> tuple[int, list[str]]:
    from draopt.cli import main

    code = main(list(argv))
    return code, capsys.readouterr().out.splitlines()


# ------------------------------------------------------------------ --output-file on every command with -o
def test_every_command_with_o_has_output_file():
    _, parsers = _parsers()
    with_o = [path for path, parser in parsers.items() if "-o" in parser._option_string_actions]
    assert len(with_o) >= 8
    for path in with_o:
        assert "--output-file" in parsers[path]._option_string_actions, path


def test_output_file_holds_what_stdout_would(tmp_path):
    example = str(ROOT / "examples" / "gang-stranding.yaml")
    plain = run("place", "-f", example, "--policy", "optimal", "-o", "name")
    target = tmp_path / "placed.txt"
    filed = run("place", "-f", example, "--policy", "optimal", "-o", "name", "--output-file", str(target))
    assert (plain.returncode, filed.returncode) == (0, 0)
    assert filed.stdout == "" and target.read_text() == plain.stdout != ""
    answer = tmp_path / "compare.json"
    assert run("compare", "-f", example, "-o", "json", "--output-file", str(answer)).returncode == 0
    assert set(json.loads(answer.read_text())) >= {"policies", "provenance"}


def test_output_file_is_not_written_on_an_error(tmp_path):
    target = tmp_path / "never.yaml"
    bad = run("place", "-f", str(tmp_path / "missing.yaml"), "--output-file", str(target))
    assert bad.returncode == 2 and not target.exists()
    nowhere = run(
        "place", "-f", str(ROOT / "examples" / "gang-stranding.yaml"), "--output-file", str(tmp_path / "no" / "x")
    )
    assert nowhere.returncode == 2 and "--output-file" in nowhere.stderr and "no such directory" in nowhere.stderr
