"""Ctrl-C on the command line (draopt.interrupt): exit 130 at once, with the best answer found so
far where the command has one (the optimal placement), and no traceback from the command or any
of its worker processes (sweep keeps its finished rows). Each test runs draopt in a subprocess of
its own process group and sends SIGINT to the group, as a terminal does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "draopt", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )


def _interrupt(p: subprocess.Popen, timeout: float = 60) -> tuple[float, str, str]:
    os.killpg(p.pid, signal.SIGINT)
    t0 = time.monotonic()
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"still running {timeout} s after Ctrl-C: {err[-2000:]}")
    return time.monotonic() - t0, out, err


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """A placement whose optimal search runs well past a few seconds (phase 3 packs for long)."""
    import yaml

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import placement_clusters
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    docs = placement_clusters.gpu_fleet(nodes=40, pods=330, gang_pod_share=0.3, feature_share=0.3, distinct_nodes=True)
    path = tmp_path_factory.mktemp("fleet") / "fleet.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs["docs"]}))
    return path


def test_place_optimal_keeps_the_best_found_and_exits_130(fleet, tmp_path):
    p = _start(
        ["place", "-f", str(fleet), "--policy", "optimal", "--time-limit", "120", "--progress", "-o", "name"], tmp_path
    )
    seen = ""
    assert p.stderr is not None
    for line in p.stderr:  # the solver has started: Ctrl-C now stops a search with an answer at hand
        seen += line
        if "optimal: phase 1 of 3" in line and "started" in line:
            break
    else:
        pytest.fail(f"no phase 1 seen: {seen}")
    time.sleep(1.0)
    waited, out, err = _interrupt(p)
    assert p.returncode == 130, seen + err
    assert waited < 30, f"{waited:.1f} s from Ctrl-C to exit"
    assert "interrupted: the answer above is the best found before Ctrl-C" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    placed = out.splitlines()
    assert len(placed) > 100 and all(line.startswith("pod/") for line in placed)
    assert "phase 3 of 3" not in seen + err  # no phase after Ctrl-C


def test_plan_prints_the_best_mix_with_its_bound_and_exits_130(fleet, tmp_path):
    """Ctrl-C while CP-SAT looks for a cheaper mix: the mix found so far, its lower bound and gap,
    the one-fewer checks left out; exit 130."""
    types = ["--node-type", "gpu-node-000=3", "--node-type", "gpu-node-001=2", "--node-type", "gpu-node-002=5"]
    p = _start(["plan", "-f", str(fleet), *types, "--time-limit", "120", "--progress"], tmp_path)
    seen = ""
    assert p.stderr is not None
    for line in p.stderr:
        seen += line
        if "plan: phase 2 of 2" in line and "started" in line:
            break
    else:
        pytest.fail(f"no phase 2 seen: {seen}")
    time.sleep(0.5)
    waited, out, err = _interrupt(p)
    assert p.returncode == 130, seen + err
    assert waited < 30, f"{waited:.1f} s from Ctrl-C to exit"
    assert "interrupted: the answer above is the best found before Ctrl-C" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "cheapest mix: " in out and "lower bound" in out and "CP-SAT stopped by Ctrl-C" in out, out
    assert "one-fewer" not in seen + err + out


def _consolidate_until(fleet: Path, tmp_path: Path, phase: str, *extra: str) -> tuple[str, str, str, int]:
    """`plan --consolidate` on the fleet (its nodes priced 1, 2, 3 in turn: the least-cost phase
    searches for some 20 s), Ctrl-C 0.5 s after `phase` started: (what was seen, stdout, stderr, exit)."""
    costs = tmp_path / "costs.yaml"
    costs.write_text("".join(f"gpu-node-{i:03d}: {1 + i % 3}\n" for i in range(40)))
    args = ["plan", "--consolidate", "-f", str(fleet), "--node-costs", str(costs), "--time-limit", "120"]
    p = _start([*args, "--progress", *extra], tmp_path)
    seen = ""
    assert p.stderr is not None
    for line in p.stderr:
        seen += line
        if phase in line and "started" in line:
            break
    else:
        pytest.fail(f"no {phase} seen: {seen}")
    time.sleep(0.5)
    waited, out, err = _interrupt(p)
    assert waited < 30, f"{waited:.1f} s from Ctrl-C to exit"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    return seen, out, err, p.returncode


def test_consolidate_prints_the_best_found_with_its_bound_and_exits_130(fleet, tmp_path):
    """Ctrl-C while CP-SAT looks for a cheaper set of nodes: the answer found so far (nodes to
    drain, pods moved, cost) with its lower bound and gap, marked interrupted and not proven."""
    seen, out, err, code = _consolidate_until(fleet, tmp_path, "plan --consolidate: least cost")
    assert code == 130, seen + err
    assert "interrupted: the answer above is the best found before Ctrl-C" in err
    assert "drain " in out and "pod(s) moved" in out and "cost 79 -> " in out, out
    assert "not proven minimal: interrupted by Ctrl-C" in out and "lower bound" in out and "gap" in out, out
    assert "proven minimal: no cheaper" not in out


def test_consolidate_before_any_answer_prints_what_is_known_and_exits_130(fleet, tmp_path):
    """Ctrl-C during Karpenter's simulated consolidation, before the model has any answer: the cost
    of the nodes as they run (and the bound, not computed yet), in the -o format asked."""
    seen, out, err, code = _consolidate_until(fleet, tmp_path, "Karpenter's consolidation", "-o", "json")
    assert code == 130, seen + err
    assert "no consolidation was found before Ctrl-C" in err and "the answer above" not in err
    assert json.loads(out) == {"answer": None, "bound": None, "cost_before": 79, "interrupted": True, "nodes": 40}
    assert "least cost" not in seen + err  # no search after Ctrl-C


@pytest.mark.parametrize("after", [0.3, 0.8])
def test_ctrl_c_before_any_answer_is_130_without_a_traceback(fleet, tmp_path, after):
    """While the libraries load (a Ctrl-C inside OR-Tools' initialisation once came back as an
    ImportError and a traceback: draopt.launch) or while the input does; first-fit answers within
    1.5 s on a quiet machine."""
    p = _start(["place", "-f", str(fleet), "--policy", "optimal", "--time-limit", "120"], tmp_path)
    time.sleep(after)
    waited, out, err = _interrupt(p)
    assert p.returncode == 130 and out == "" and "Traceback" not in err, err
    assert waited < 10


@pytest.fixture(scope="module")
def trace_cluster(tmp_path_factory) -> Path:
    from draopt.studies import trace

    d = tmp_path_factory.mktemp("sweep")
    (d / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn-0,16000,65536,2,T4\nn-1,64000,262144,8,G2\n")
    (d / "tasks.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nt-0,4000,8192,1,1000,\nt-1,2000,4096,1,300,\n"
        "t-2,8000,16384,2,1000,\n"
    )
    (d / "cluster.yaml").write_text(trace.dump_yaml(trace.import_trace(str(d / "nodes.csv"), None)))
    return d


@pytest.mark.parametrize("engine", ["processes", "dask"])
def test_sweep_keeps_finished_rows_with_no_worker_traceback(trace_cluster, tmp_path, engine):
    if engine == "dask":
        pytest.importorskip("dask.distributed")
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "rows.parquet"
    args = ["sweep", "--cluster", str(trace_cluster / "cluster.yaml"), "--trace", str(trace_cluster / "tasks.csv")]
    args += ["--policy", "first-node", "--policy", "fgd", "--seed", "0:5000", "--inflation", "0.5,1.0"]
    args += ["--engine", engine, "--workers", "2", "--output-file", str(out)]
    p = _start(args, tmp_path)
    deadline = time.monotonic() + 120
    while not out.exists() and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.2)  # rows are written once a second: the workers are running
    assert out.exists(), "no row written"
    time.sleep(1.0)
    waited, _, err = _interrupt(p)
    assert p.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "ERROR" not in err, err[-3000:]
    assert waited < 30
    rows = pq.read_table(out).num_rows
    assert 0 < rows < 2 * 5000 * 2


def test_simulate_prints_the_runs_finished(trace_cluster, tmp_path):
    args = ["simulate", "-f", str(trace_cluster / "cluster.yaml"), "--trace", str(trace_cluster / "tasks.csv")]
    args += ["--runs", "1000000", "--policy", "first-node", "--policy", "fgd", "--inflation", "0.5,1.0", "--quiet"]
    p = _start(args + ["-o", "csv"], tmp_path)
    time.sleep(6)  # loaded, some runs done
    waited, out, err = _interrupt(p)
    assert p.returncode == 130 and "Traceback" not in err, err
    assert "interrupted: the rows above hold the runs finished before Ctrl-C" in err
    rows = out.splitlines()
    assert rows[0].startswith("inflation,policy,runs,") and len(rows) == 5
    assert 0 < int(rows[1].split(",")[2]) < 1000000


def test_refining_keeps_the_answer_under_the_command_line_only():
    """interrupt.refining: under `installed` (the command line) Ctrl-C ends the block and is
    recorded; in the Python API it raises as usual."""
    from draopt import interrupt

    with pytest.raises(KeyboardInterrupt), interrupt.refining():
        raise KeyboardInterrupt
    with interrupt.installed():
        with interrupt.refining():
            raise KeyboardInterrupt
        assert interrupt.requested()
    with interrupt.installed():
        assert not interrupt.requested()  # a new command starts afresh
