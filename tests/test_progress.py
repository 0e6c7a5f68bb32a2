"""Progress on stderr for the long commands (`place --policy optimal`, `plan`, `simulate`,
`compare`; draopt.progress): shown when stderr is a terminal (a pseudo-terminal here: the pty
module, the command in a subprocess), absent on a pipe and with --quiet, forced on a pipe with
--progress; the placement printed on stdout is the same either way."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
import yaml

from draopt import progress
from draopt.cli import main
from tests.test_report_html import gpu_cluster

ROOT = Path(__file__).resolve().parent.parent

NODES = """sn,cpu_milli,memory_mib,gpu,model
n-0,16000,65536,2,T4
n-1,64000,262144,8,G2
n-2,32000,131072,4,P100
"""
TASKS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
t-00,4000,8192,1,1000,
t-01,2000,4096,1,300,
t-02,8000,16384,2,1000,
t-03,1000,2048,1,250,
"""


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")
    env.pop("DRAOPT_PROGRESS", None)
    return env


def _on_terminal(args: list[str], tmp_path: Path, *, size: tuple[int, int] | None = (40, 160)) -> tuple[int, str, str]:
    """Run `python -m draopt ARGS` with stderr on a pseudo-terminal (`size`: rows, columns; None:
    a terminal that reports no size): exit code, what the terminal got, stdout."""
    leader, follower = pty.openpty()
    if size is not None:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    out = tmp_path / "stdout.txt"
    with open(out, "w") as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-m", "draopt", *args],
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=follower,
            cwd=tmp_path,
            env=_env(),
        )
    os.close(follower)
    got = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the command ended and closed its end
            break
        if not chunk:
            break
        got += chunk
    os.close(leader)
    code = proc.wait(timeout=120)
    return code, got.decode(errors="replace"), out.read_text()


def _on_pipe(args: list[str], capsys) -> tuple[int, str, str]:
    """Run the command in this process, its stderr and stdout captured (not terminals)."""
    code = main(args)
    got = capsys.readouterr()
    return code, got.err, got.out


@pytest.fixture(scope="module")
def spread(tmp_path_factory) -> Path:
    """More GPUs asked than there are: 9 nodes of 8 GPUs, 12 pods of 3 GPUs and 12 of 5. Every pod
    has a node on its own, so first-fit's count is no proof and the optimal model searches (phase 1)."""
    path = tmp_path_factory.mktemp("progress") / "spread.yaml"
    path.write_text(
        yaml.safe_dump_all(gpu_cluster(9, 8, [("three", 12, 3, "1"), ("five", 12, 5, "1")]), sort_keys=False)
    )
    return path


UNPLACED = 1  # place's exit code: some pods fit nowhere (more GPUs asked than there are)


def _pods(table: str) -> str:
    """The pod table of `place`'s output: pod, node, reason."""
    pods = table.split("\n\n")[0]
    assert "ml/three-000" in pods
    return pods


def _optimal(spread: Path) -> list[str]:
    return ["place", "-f", str(spread), "--policy", "optimal", "--time-limit", "20"]


def test_place_optimal_on_a_terminal_shows_phases_best_bound_gap(spread, tmp_path, capsys):
    code, shown, stdout = _on_terminal(_optimal(spread), tmp_path)
    assert code == UNPLACED, shown
    for text in (
        "optimal: preparing the model",
        "optimal: building the model",
        "optimal: phase 1 of 3, placed pods",
        "best ",
        "bound ",
        "gap ",
    ):
        assert text in shown, text
    assert "Traceback" not in shown
    # the same placement as without progress (the pod table; the summary under it has timings)
    assert _pods(stdout) == _pods(_on_pipe(_optimal(spread), capsys)[2])


def test_nothing_extra_on_a_pipe(spread, capsys):
    code, err, _ = _on_pipe(_optimal(spread), capsys)
    assert code == UNPLACED and err == ""


def test_quiet_on_a_terminal_shows_nothing(spread, tmp_path):
    code, shown, _ = _on_terminal(_optimal(spread) + ["--quiet"], tmp_path)
    assert code == UNPLACED and shown == ""


def test_progress_forces_it_on_a_pipe(spread, capsys):
    code, err, stdout = _on_pipe(_optimal(spread) + ["--progress"], capsys)
    assert code == UNPLACED and "optimal: phase 1 of 3, placed pods" in err and "gap " in err
    assert _pods(stdout) == _pods(_on_pipe(_optimal(spread), capsys)[2])


def test_progress_and_quiet_together_is_an_error(spread, capsys):
    code, err, _ = _on_pipe(_optimal(spread) + ["--progress", "--quiet"], capsys)
    assert code == 2 and "--progress and --quiet" in err


def test_compare_on_a_terminal_without_a_size(spread, tmp_path):
    """A pseudo-terminal that reports no size (0 x 0) still gets the lines (tqdm would hide them)."""
    code, shown, _ = _on_terminal(["compare", "-f", str(spread), "--time-limit", "20"], tmp_path, size=None)
    assert code == 0 and "compare: first-fit (1 of 2)" in shown and "compare: optimal (2 of 2)" in shown
    assert "optimal: phase 1 of 3" in shown


def test_plan_shows_its_phases(spread, tmp_path, capsys):
    args = ["plan", "-f", str(spread), "--node-template", "node-00", "--time-limit", "10"]
    code, shown, _ = _on_terminal(args, tmp_path)
    assert code == 0 and "plan: first-fit-decreasing estimates" in shown and "plan: building the model" in shown
    assert "plan: phase" in shown and "plan: one-fewer checks" in shown
    assert _on_pipe(args, capsys)[1] == ""


@pytest.mark.parametrize(
    "protocol, line", [("draopt", "simulate: run 0: first-node"), ("fgd-paper", "simulate: seed 0: fgd")]
)
def test_simulate_shows_arrivals_and_levels(tmp_path, protocol, line, capsys, monkeypatch):
    from draopt.studies import trace

    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "tasks.csv").write_text(TASKS)
    (tmp_path / "cluster.yaml").write_text(trace.dump_yaml(trace.import_trace(str(tmp_path / "nodes.csv"), None)))
    args = [
        "simulate",
        "-f",
        "cluster.yaml",
        "--trace",
        "tasks.csv",
        "--inflation",
        "0.5,1.0",
        "--runs",
        "1",
        "--protocol",
        protocol,
    ] + (["--policy", "first-node"] if protocol == "draopt" else ["--policy", "fgd"])
    code, shown, stdout = _on_terminal(args, tmp_path)
    assert code == 0, shown
    assert line in shown and "arrivals" in shown and "level " in shown
    monkeypatch.chdir(tmp_path)
    code, err, piped = _on_pipe(args, capsys)
    # the pipe keeps the lines simulate always printed (one per run), without the status lines
    assert code == 0 and "\r" not in err and "level " not in err and "%|" not in err and piped == stdout
    code, err, _ = _on_pipe(args + ["--quiet"], capsys)
    assert code == 0 and err == ""


def test_progress_is_silent_unless_installed():
    assert progress.current().active is False
    with progress.current().task("anything", total=3) as task:
        task.update_to(2)
        task.solver(1, 2)
        assert progress.solver_callback(object(), task) is None  # the solve is left untouched


@pytest.mark.parametrize("best, bound, gap", [(90, 100, 0.1), (100, 90, 0.1), (0, 0, 0.0), (None, 5, None)])
def test_gap(best, bound, gap):
    got = progress.gap(best, bound)
    assert got == pytest.approx(gap) if gap is not None else got is None


class _Stream:
    def __init__(self, tty):
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize(
    "force, quiet, tty, shown",
    [(False, False, True, True), (False, False, False, False), (True, False, False, True), (False, True, True, False)],
)
def test_wanted(force, quiet, tty, shown):
    assert progress.wanted(force=force, quiet=quiet, stream=_Stream(tty)) is shown


def test_kubectl_plugin_entry_point(capsys):
    """`kubectl draopt ...` runs the `kubectl-draopt` on PATH (krew's naming): pyproject declares
    it, and it is the same command line, its usage saying `kubectl draopt`."""
    import tomllib

    from draopt.cli import kubectl_main

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-draopt"] == "draopt.launch:kubectl_main"
    with pytest.raises(SystemExit) as done:
        kubectl_main(["place", "--help"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("usage: kubectl draopt place ")


def test_the_clock_runs_against_the_time_limit(spread, tmp_path):
    code, shown, _ = _on_terminal(_optimal(spread), tmp_path, size=(24, 80))
    assert code == UNPLACED
    assert "/00:20  place: optimal" in shown  # elapsed/limit (--time-limit 20)
    buf = io.StringIO()
    lines = progress.LineProgress(buf, interval=0)
    with lines.task("place: optimal") as task:
        task.time_limit(60)
        task.solver(1234, 1260)
    assert re.search(r"^place: optimal  \d+\.\ds of 60s  gap 2\.06%  best 1,234  bound 1,260$", buf.getvalue(), re.M)


def test_one_unit_for_gaps():
    """The progress line, the tables and the summaries show a gap as a percentage (data files keep
    the fraction)."""
    from draopt.placement.solver_stats import _gap

    assert progress.format_gap(0.0245) == "2.45%" and progress.format_gap(None) == "-"
    assert progress._solver_fields(90, 100)["gap"] == "10.00%"
    assert _gap(0.25) == "25.00%"


def test_a_long_phase_is_shortened_so_that_its_figures_fit():
    figures = "gap 1.59%  best 1,240  bound 1,260"
    line = progress._fit("optimal: phase 1 of 3, placed pods (priority-weighted)", figures, 80)
    assert line.endswith("…  " + figures) and 2 * progress._CLOCK + len(line) <= 80
    assert progress._fit("plan: one-fewer checks", figures, 80) == "plan: one-fewer checks  " + figures
