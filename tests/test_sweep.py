"""Sweeps: the same rows on a Dask local cluster, a process pool and here; resumable; the
rows are what `draopt simulate` / `draopt compare` give for the same inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from draopt.studies import simulate as sim
from draopt.studies import sweep as sw
from draopt.studies import trace
from draopt.errors import InputError
from draopt.kube.loader import load_files

ROOT = Path(__file__).resolve().parents[1]
GANG = ROOT / "examples" / "gang-stranding.yaml"

MODELS = ("T4", "V100M16", "P100")
NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"n-{i:02d},{16000 * (1 + i % 3)},{65536 * (1 + i % 3)},{(1, 2, 4, 8)[i % 4]},{MODELS[i % 3]}\n" for i in range(12)
)
TASKS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n" + "".join(
    f"t-{i:02d},{1000 * (1 + i % 4)},{2048 * (1 + i % 3)},{(1, 1, 2, 1, 4)[i % 5]},"
    f"{(1000, 300, 1000, 600, 1000)[i % 5]},{'T4' if i % 7 == 0 else ''}\n"
    for i in range(20)
)


def strip(rows):
    return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in rows]


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    (d / "nodes.csv").write_text(NODES)
    (d / "tasks.csv").write_text(TASKS)
    cluster = d / "cluster.yaml"
    cluster.write_text(trace.dump_yaml(trace.import_trace(str(d / "nodes.csv"), None)))
    return sw.Grid(
        study="simulate",
        clusters=[[str(cluster)]],
        traces=[str(d / "tasks.csv")],
        nodes=[6, 0],
        policies=["first-node", "best-fit", "fgd"],
        seeds=[0, 1],
        inflation=[0.8, 1.0],
    )


@pytest.fixture(scope="module")
def serial_rows(grid):
    return sw.run_sweep(grid.scenarios(), engine="serial", progress=False)


def test_grid_order_and_inputs_in_rows(grid, serial_rows):
    assert len(serial_rows) == 2 * 3 * 2 * 2
    first = serial_rows[0]
    assert (first["nodes"], first["policy"], first["seed"], first["inflation"]) == (6, "first-node", 0, 0.8)
    assert all(r["key"] == sw.scenario_key(r) for r in serial_rows)
    assert {r["nodes_in_cluster"] for r in serial_rows} == {6, 12}
    assert all(0 <= r["unallocated_pct"] <= 100 and r["status"] == "heuristic" for r in serial_rows)


def test_rows_are_draopt_simulate_runs(grid, serial_rows):
    """A row with seed S and level L is run 0 of `draopt simulate --seed S --runs 1`."""
    objects = load_files(grid.clusters[0])
    objects.extend(sim._object_set(trace.workload_objects(trace.read_tasks(grid.traces[0]))))
    c = sim.build(objects)
    for seed in grid.seeds:
        records = sim.simulate(c, levels=grid.inflation, policies=grid.policies, runs=1, seed=seed)
        for rec in records:
            row = next(
                r
                for r in serial_rows
                if (r["nodes"], r["seed"], r["policy"], r["inflation"]) == (0, seed, rec.policy, rec.level)
            )
            assert row["unallocated_pct"] == pytest.approx(rec.unallocated * 100, abs=1e-6)
            assert (row["placed"], row["failed"]) == (rec.placed, rec.failed)


def test_dask_local_cluster_equals_process_pool(grid, serial_rows, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    scenarios = grid.scenarios()
    pool = sw.run_sweep(scenarios, str(tmp_path / "pool.parquet"), engine="processes", workers=2, progress=False)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = sw.run_sweep(scenarios, str(tmp_path / "dask.parquet"), engine="dask", client=client, progress=False)
    assert strip(on_dask) == strip(pool) == strip(serial_rows)
    # The files hold the same rows (in the order they finished).
    key = lambda r: r["key"]  # noqa: E731
    assert sorted(strip(sw.read_rows(str(tmp_path / "dask.parquet"))), key=key) == sorted(
        strip(sw.read_rows(str(tmp_path / "pool.parquet"))), key=key
    )


def test_resume_runs_only_what_is_missing(grid, serial_rows, tmp_path):
    out = str(tmp_path / "out.parquet")
    scenarios = grid.scenarios()
    sw.run_sweep(scenarios[:5], out, engine="serial", progress=False)
    ran = []

    def recording(s):
        ran.append(sw.scenario_key(s))
        return sw.run_scenario(s)

    rows = sw.run_sweep(scenarios, out, engine="serial", progress=False, run=recording)
    assert ran == [sw.scenario_key(s) for s in scenarios[5:]]
    assert strip(rows) == strip(serial_rows)
    assert len(sw.read_rows(out)) == len(scenarios)
    ran.clear()
    sw.run_sweep(scenarios, out, engine="serial", progress=False, run=recording)
    assert ran == []


def test_place_study_measures_as_compare(tmp_path):
    from draopt.kube.features import Features
    from draopt.studies.report import measure_policy

    g = sw.Grid(
        study="place",
        clusters=[[str(GANG)]],
        policies=["first-fit", "optimal", "first-fit:builtin:name-order"],
        time_limit=20,
    )
    rows = sw.run_sweep(g.scenarios(), engine="serial", progress=False)
    assert [(r["policy"], r["placed"]) for r in rows] == [
        ("first-fit", 0),
        ("optimal", 2),
        ("first-fit:builtin:name-order", 0),
    ]
    direct = measure_policy(load_files([str(GANG)]), "optimal", features=Features.from_gates(), time_limit=20)
    assert rows[1]["stranded_devices"] == direct.stranded_devices and rows[1]["status"] == direct.status == "OPTIMAL"
    assert rows[0]["seed"] is None and rows[0]["inflation"] is None


def test_with_nodes_spreads_over_the_names():
    objects = load_files([str(ROOT / "examples" / "cluster.yaml")])
    names = sorted(n.name for n in objects.nodes)
    if len(names) < 2:
        pytest.skip("examples/cluster.yaml has one node")
    sub = sw.with_nodes(objects, 1)
    assert [n.name for n in sub.nodes] == names[:1]
    assert all(not s.spec.node_name or s.spec.node_name == names[0] for s in sub.resource_slices)
    with pytest.raises(InputError, match="cluster has"):
        sw.with_nodes(objects, len(names) + 1)


def test_generic_sweep_keeps_order_on_every_engine():
    assert sw.sweep([3, 1, 2], np.negative) == [-3, -1, -2]
    assert sw.sweep([3, 1, 2], abs, engine="processes", workers=2) == [3, 1, 2]
    with pytest.raises(InputError, match="unknown engine"):
        sw.sweep([1], abs, engine="slurm")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "draopt", "sweep", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_runs_resumes_and_reads_a_grid_file(grid, serial_rows, tmp_path):
    out = str(tmp_path / "cli.parquet")
    spec = tmp_path / "grid.yaml"
    spec.write_text(
        f"study: simulate\nclusters: {grid.clusters[0][0]}\ntraces: {grid.traces[0]}\n"
        "nodes: [6, 0]\npolicies: first-fit,best-fit,fgd\nseeds: '0:2'\ninflation: [0.8, 1.0]\n"
    )
    p = _cli("--grid", str(spec), "--engine", "serial", "--quiet", "-o", out)
    assert p.returncode == 0, p.stderr
    assert strip(sw.read_rows(out)) == strip(serial_rows)
    assert "24 scenarios (0 already in" in p.stderr
    assert "--policy first-fit is deprecated in simulate and sweep" in p.stderr  # the grid's old name, said
    import json

    import pyarrow.parquet as pq

    made = json.loads(pq.read_schema(out).metadata[b"draopt.provenance"])  # the run's record
    assert made["command"][-2:] == ["-o", out] and str(spec) in made["inputs"] and made["time_limit"] == 60.0
    p = _cli("--grid", str(spec), "--seeds", "0:3", "--engine", "serial", "--quiet", "-o", out)
    assert p.returncode == 0, p.stderr
    assert "--seeds is deprecated" in p.stderr and "use --seed" in p.stderr  # one spelling: --seed
    assert "36 scenarios (24 already in" in p.stderr and len(sw.read_rows(out)) == 36


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cluster", "nope.yaml", "--trace", "x.csv"], "nope.yaml: no such file"),
        (["--cluster", str(GANG), "--study", "place", "--policy", "fgd"], "unknown policy 'fgd' for the place study"),
        (["--cluster", str(GANG), "--study", "place", "--nodes", "two"], "--nodes 'two'"),
        (["--cluster", str(GANG), "--study", "place", "--nodes", "5"], "5 nodes asked for, the cluster has 1"),
        (["--cluster", str(GANG), "--study", "simulate"], "needs a task pool"),
        (["--cluster", str(GANG), "--study", "place", "--engine", "serial", "--workers", "0"], "--workers 0"),
    ],
)
def test_cli_bad_input_exits_2(args, message, tmp_path, capsys):
    from draopt.cli import main

    code = main(["sweep", *args, "--quiet", "--engine", "serial", "-o", str(tmp_path / "x.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_cli_bad_grid_file_exits_2(tmp_path, capsys):
    from draopt.cli import main

    spec = tmp_path / "grid.yaml"
    spec.write_text("study: simulate\nspeed: 3\n")
    assert main(["sweep", "--grid", str(spec), "-o", str(tmp_path / "x.parquet")]) == 2
    assert "unknown field 'speed'" in capsys.readouterr().err


def test_input_error_in_a_worker_is_raised_here(tmp_path):
    g = sw.Grid(study="place", clusters=[[str(GANG)]], nodes=[5])
    with pytest.raises(InputError, match="5 nodes asked for, the cluster has 1"):
        sw.run_sweep(g.scenarios(), str(tmp_path / "x.parquet"), engine="processes", workers=1, progress=False)
    assert not (tmp_path / "x.parquet").exists()


def test_rows_finished_before_a_failure_are_kept(grid, serial_rows, tmp_path):
    out = str(tmp_path / "out.parquet")
    scenarios = grid.scenarios()

    def failing_at_4(s):
        if s is scenarios[3]:
            raise InputError("stop")
        return sw.run_scenario(s)

    with pytest.raises(InputError, match="stop"):
        sw.run_sweep(scenarios, out, engine="serial", progress=False, run=failing_at_4)
    assert strip(sw.read_rows(out)) == strip(serial_rows[:3])
    assert strip(sw.run_sweep(scenarios, out, engine="serial", progress=False)) == strip(serial_rows)


@pytest.mark.parametrize(
    "text, message",
    [
        ("inflation: [abc]\n", "inflation: ['abc']: levels are numbers"),
        ("clusters:\n", "clusters: no value given"),
        ("clusters: [[a.yaml, {a: 1}]]\n", "clusters: {'a': 1}: expected file names"),
        ("batch: true\n", "batch: True: a whole number"),
        ("time_limit: '10'\n", "time_limit: '10': a number of seconds"),
    ],
)
def test_cli_malformed_grid_values_exit_2(text, message, tmp_path, capsys):
    """Values of the wrong type in a grid file name the field (a list of inflation levels with
    a word in it was a ValueError traceback; `clusters:` left empty read as a file named None)."""
    from draopt.cli import main

    spec = tmp_path / "grid.yaml"
    spec.write_text(f"study: place\n{'' if text.startswith('clusters') else f'clusters: {GANG}' + chr(10)}{text}")
    assert main(["sweep", "--grid", str(spec), "--quiet", "-o", str(tmp_path / "x.parquet")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("where, message", [("dir", "is a directory"), ("missing", "cannot write: no directory")])
def test_cli_unwritable_output_fails_before_running(where, message, tmp_path, capsys, monkeypatch):
    """An output that cannot be written is an error before any scenario runs (it was found when the
    first rows were written, after running them; a directory was read as a Parquet dataset)."""
    from draopt.cli import main

    out = tmp_path if where == "dir" else tmp_path / "no" / "x.parquet"
    ran = []
    monkeypatch.setattr(sw, "_run_place", lambda s: ran.append(s) or {"placed": 0})
    code = main(["sweep", "--cluster", str(GANG), "--study", "place", "--engine", "serial", "--quiet", "-o", str(out)])
    assert code == 2 and message in capsys.readouterr().err and ran == []
    # The same scenario with a writable output does run (the patch is in the path).
    assert (
        main(
            [
                "sweep",
                "--cluster",
                str(GANG),
                "--study",
                "place",
                "--engine",
                "serial",
                "--quiet",
                "-o",
                str(tmp_path / "ok.parquet"),
            ]
        )
        == 0
        and len(ran) == 1
    )


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:1", "nowhere:x"])
def test_cli_unreachable_dask_scheduler_exits_2(address, tmp_path, capsys):
    """--scheduler at an address nobody listens on (or no address at all): exit 2 naming it (it was
    an OSError traceback after the connect timeout)."""
    pytest.importorskip("distributed")
    import dask
    from draopt.cli import main

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code = main(
            [
                "sweep",
                "--cluster",
                str(GANG),
                "--study",
                "place",
                "--quiet",
                "--scheduler",
                address,
                "-o",
                str(tmp_path / "x.parquet"),
            ]
        )
    err = capsys.readouterr().err
    assert code == 2 and f"--scheduler {address}: cannot connect" in err and "Traceback" not in err


def test_rows_of_both_studies_in_one_file_keep_their_columns(grid, serial_rows, tmp_path):
    """A place sweep written into a file of simulate rows keeps the place measures (the file took
    the first row's columns only: devices_used, free_devices, ... were dropped)."""
    out = str(tmp_path / "both.parquet")
    sw.write_rows(out, serial_rows[:2])
    place = sw.Grid(study="place", clusters=[[str(GANG)]], policies=["first-fit", "optimal"], time_limit=10)
    rows = sw.run_sweep(place.scenarios(), out, engine="serial", progress=False)
    back = sw.read_rows(out)
    assert len(back) == 4
    assert strip(back[:2]) == strip([{**r, **{k: None for k in back[0] if k not in r}} for r in serial_rows[:2]])
    assert [r["devices_used"] for r in back[2:]] == [r["devices_used"] for r in rows] == [0, 2]
    assert back[0]["devices_used"] is None and back[2]["unallocated_pct"] is None


def test_cli_progress_into_a_log_is_plain_lines(grid, tmp_path):
    """stderr not a terminal (a CI log): the sweep's progress is plain lines, no carriage returns
    or cursor moves (a tqdm bar is for a terminal)."""
    spec = tmp_path / "grid.yaml"
    spec.write_text(
        f"study: simulate\nclusters: {grid.clusters[0][0]}\ntraces: {grid.traces[0]}\n"
        "nodes: [6]\npolicies: first-node\nseeds: '0:1'\ninflation: [0.8]\n"
    )
    p = _cli("--grid", str(spec), "--engine", "serial", "--output-file", str(tmp_path / "log.parquet"))
    assert p.returncode == 0, p.stderr
    assert "\r" not in p.stderr and "\x1b" not in p.stderr
    lines = p.stderr.splitlines()
    assert "sweep  started  0/1 scenarios" in lines and any(
        line.startswith("sweep  done") and "1/1 scenarios" in line for line in lines
    )


def test_feature_gates_and_kubernetes_version_reach_every_scenario(grid, tmp_path):
    """sweep takes --feature-gates and --kubernetes-version as every command that reads a cluster
    does: the scenarios carry them (and their keys differ from the ungated ones, which stay as
    they were, so earlier files resume); an unknown gate is refused before any scenario runs."""
    import dataclasses

    plain = grid.scenarios()
    gated = dataclasses.replace(grid, feature_gates="DRAPrioritizedList=true", kubernetes_version="1.36").scenarios()
    assert all(s["feature_gates"] == "DRAPrioritizedList=true" and s["kubernetes_version"] == "1.36" for s in gated)
    assert all("feature_gates" not in s for s in plain)
    assert {sw.scenario_key(s) for s in plain}.isdisjoint(sw.scenario_key(s) for s in gated)
    assert sw.scenario_key(plain[0]) == json.dumps({k: plain[0][k] for k in sw.INPUTS}, sort_keys=True)
    assert sw.run_scenario(gated[0]) | {"elapsed_s": 0} == sw.run_scenario(plain[0]) | {"elapsed_s": 0}
    with pytest.raises(InputError, match="unknown feature gate 'NoSuchGate'"):
        dataclasses.replace(grid, feature_gates="NoSuchGate=true").scenarios()
    out = str(tmp_path / "x.parquet")
    p = _cli("--study", "place", "--cluster", str(GANG), "--feature-gates", "NoSuchGate=true", "--output-file", out)
    assert p.returncode == 2 and "unknown feature gate 'NoSuchGate'" in p.stderr and "Traceback" not in p.stderr


def test_optimal_batch_scenario_runs(grid):
    """The simulate study hands optimal-batch its fragmentation model, as `simulate` does."""
    import dataclasses

    scenario = dataclasses.replace(grid, policies=["optimal-batch"], seeds=[0], nodes=[0]).scenarios()[0]
    got = sw.run_scenario(scenario)
    assert got["status"] == "heuristic" and got["placed"] > 0


def test_cli_recursive_and_strict(tmp_path, capsys, monkeypatch):
    """-R and --strict as on the commands that read -f: -R makes a cluster directory its files,
    subdirectories included; --strict refuses a kind draopt does not use, before any scenario runs."""
    from draopt.cli import main

    (tmp_path / "c" / "sub").mkdir(parents=True)
    (tmp_path / "c" / "sub" / "gang.yaml").write_text(GANG.read_text())
    ran: list = []
    monkeypatch.setattr(sw, "_run_place", lambda s: ran.append(s["cluster"]) or {"placed": 0})
    flags = ["--cluster", str(tmp_path / "c"), "--study", "place", "--engine", "serial", "--quiet"]
    assert main(["sweep", *flags, "--output-file", str(tmp_path / "flat.parquet")]) == 0
    assert main(["sweep", *flags, "-R", "--output-file", str(tmp_path / "deep.parquet")]) == 0
    assert ran == [str(tmp_path / "c"), str(tmp_path / "c" / "sub" / "gang.yaml")]
    (tmp_path / "c" / "sub" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    capsys.readouterr()
    code = main(["sweep", *flags, "-R", "--strict", "--output-file", str(tmp_path / "strict.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and "1 ConfigMap object(s)" in err and "--strict" in err and len(ran) == 2
    assert main(["sweep", *flags, "--strict", "--output-file", str(tmp_path / "top.parquet")]) == 0
