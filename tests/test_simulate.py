"""`draopt simulate`: the incremental simulator against draopt's own placement, the policies'
choices on small cases, seeded sampling, the optimal bounds, the command line."""

from __future__ import annotations

import dataclasses
import io

from pathlib import Path

import numpy as np
import pytest

from draopt.studies import simulate as sim
from draopt.studies import simulate_optimal as so
from draopt.studies import trace
from draopt.cli import main
from draopt.kube.loader import load_files
from draopt.placement import place
from draopt.kube.quantity import Quantity

OPENB = Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"

NODES = """sn,cpu_milli,memory_mib,gpu,model
n-0,16000,65536,2,T4
n-1,64000,262144,8,G2
n-2,8000,32768,1,V100M16
n-3,32000,131072,4,P100
n-4,4000,16384,0,
"""
TASKS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
t-00,4000,8192,1,1000,
t-01,2000,4096,1,300,
t-02,2000,4096,1,700,
t-03,8000,16384,2,1000,
t-04,1000,2048,0,0,
t-05,6000,8192,1,500,T4
t-06,12000,32768,4,1000,G2|P100
t-07,1000,2048,1,250,
t-08,3000,4096,1,1000,V100M16
t-09,16000,32768,0,0,
t-10,2000,8192,1,600,P100
t-11,1000,1024,1,150,
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.fixture
def files(tmp_path):
    nodes = write(tmp_path, "nodes.csv", NODES)
    tasks = write(tmp_path, "tasks.csv", TASKS)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(trace.dump_yaml(trace.import_trace(nodes, None)))
    return str(cluster), tasks


def objects_with(cluster: str, tasks: list[trace.Task]):
    objects = load_files([cluster])
    objects.extend(sim._object_set(trace.workload_objects(tasks)))
    return objects


def test_first_node_matches_place_by_name_order(files):
    """Arrivals sampled from the trace, placed one by one by the simulator's first-node, land on
    the nodes and devices draopt's kube-scheduler simulation (`place`) gives the same pods
    created in arrival order."""
    cluster, tasks_csv = files
    pool = trace.read_tasks(tasks_csv)
    rng = np.random.default_rng(7)
    arrived = [
        trace.Task(f"a-{k:03d}", t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, t.gpu_spec, k)
        for k, t in enumerate(pool[i] for i in rng.integers(0, len(pool), size=40))
    ]
    objects = objects_with(cluster, arrived)
    c = sim.build(objects)
    assert c.pod_keys == [f"openb/{t.name}" for t in arrived]  # queue order = arrival order
    st = sim.State(c)
    ours = {}
    for key, si in zip(c.pod_keys, c.pod_shape):
        got = sim.place_one(st, c.shapes[si], "first-node", None)
        if got is None:
            ours[key] = None
            continue
        st.take(c.shapes[si], *got)
        ours[key] = (c.nodes[got[0]], sorted(c.devices[got[0]].devices[d].device.name for d in got[1]))
    outcome = place(objects, policy="first-fit", scheduler_config="builtin:name-order")  # first node by name
    theirs = {}
    for pl in outcome.result.pods:
        if not pl.placed:
            theirs[pl.pod] = None
            continue
        devs = []
        for use in outcome.workload.pod(pl.pod).claims:
            devs += [r.device for r in outcome.result.claims[use.key][0].devices.results]
        theirs[pl.pod] = (pl.node, sorted(devs))
    assert ours == theirs
    assert sum(v is None for v in ours.values()) > 0 and sum(v is not None for v in ours.values()) > 10
    assert st.allocated == sum(
        Quantity.parse(r.consumed_capacity["gpu.example.com/milli"]).value
        for a, _ in outcome.result.claims.values()
        for r in a.devices.results
    )


def small(tmp_path, nodes: str, tasks: str):
    cluster = tmp_path / "c.yaml"
    cluster.write_text(trace.dump_yaml(trace.import_trace(write(tmp_path, "n.csv", nodes), None)))
    return sim.build(objects_with(str(cluster), trace.read_tasks(write(tmp_path, "t.csv", tasks))))


def shape_of(c, name):
    return c.shapes[c.pod_shape[c.pod_keys.index(f"openb/{name}")]]


def test_best_fit_packs_least_allocated_spreads(tmp_path):
    c = small(
        tmp_path,
        "sn,cpu_milli,memory_mib,gpu,model\na,8000,8192,2,T4\nb,8000,8192,2,T4\n",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nw,1000,1024,1,1000\n",
    )
    w = shape_of(c, "w")
    for policy, second in (("best-fit", "a"), ("least-allocated", "b"), ("first-node", "a")):
        st = sim.State(c)
        first = sim.place_one(st, w, policy, None)
        assert c.nodes[first[0]] == "a" and first[1] == [0]  # a tie: the first node by name
        st.take(w, *first)
        got = sim.place_one(st, w, policy, None)
        assert c.nodes[got[0]] == second, policy


def test_fgd_chooses_the_less_fragmenting_gpu(tmp_path):
    c = small(
        tmp_path,
        "sn,cpu_milli,memory_mib,gpu,model\na,8000,8192,1,T4\nb,8000,8192,1,T4\n",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np4,100,128,1,400\np5,100,128,1,500\nw,100,128,1,1000\n",
    )
    st = sim.State(c)
    st.take(shape_of(c, "p4"), c.nodes.index("b"), [0])  # b's GPU has 600 left
    frag = sim.FragModel(c, np.array([len(s.pods) for s in c.shapes], dtype=float))
    # a: 1000 left, every shape fits (0); b: 600 left, the whole-GPU shape cannot use it (600/3).
    before = frag.frag(np.array([0, 1]), st.free, st.left)
    assert before == pytest.approx([0.0, 200.0])
    p5 = shape_of(c, "p5")
    assert c.nodes[sim.place_one(st, p5, "first-node", None)[0]] == "a"
    # On a: 500 left, lost to the whole-GPU shape (+166.7); on b: 100 left, lost to all (-100).
    assert c.nodes[sim.place_one(st, p5, "fgd", frag)[0]] == "b"


def test_arrivals_are_seeded_and_stop_at_the_level(files):
    cluster, tasks_csv = files
    c = sim.build(objects_with(cluster, trace.read_tasks(tasks_csv)))
    a, ca = sim.arrivals(c, 1.2, np.random.default_rng([3, 0]))
    b, cb = sim.arrivals(c, 1.2, np.random.default_rng([3, 0]))
    d, _ = sim.arrivals(c, 1.2, np.random.default_rng([4, 0]))
    assert a.tolist() == b.tolist() and a.tolist() != d.tolist()
    assert ca[-1] <= 1.2 * c.total
    assert np.all(np.diff(ca) >= 0)
    requests = {s.request for s in c.shapes}
    assert ca[-1] + min(r for r in requests if r > 0) > 1.2 * c.total - max(requests)


def test_offline_optimum_bounds_the_online_policies(files):
    cluster, tasks_csv = files
    c = sim.build(objects_with(cluster, trace.read_tasks(tasks_csv)))
    records = sim.simulate(
        c,
        levels=[0.9, 1.2],
        policies=["first-node", "best-fit", "fgd", "optimal-batch"],
        runs=1,
        seed=1,
        batch=4,
        time_limit=5,
        offline_optimum=True,
    )
    by = {(r.level, r.policy): r for r in records}
    for level in (0.9, 1.2):
        best = by[(level, sim.OFFLINE)]
        assert best.status in ("OPTIMAL", "FEASIBLE")
        for policy in ("first-node", "best-fit", "fgd", "optimal-batch"):
            r = by[(level, policy)]
            assert 0.0 <= r.unallocated <= 1.0
            assert best.unallocated <= r.unallocated + 1e-9, (level, policy)
            assert r.arrived == best.arrived
    assert by[(1.2, "first-node")].failed > 0


def test_cli_table_csv_plot_deterministic(files, tmp_path, capsys):
    cluster, tasks_csv = files
    args = [
        "simulate",
        "-f",
        cluster,
        "--trace",
        tasks_csv,
        "--inflation",
        "0.8,1.0",
        "--runs",
        "2",
        "--policy",
        "first-node,fgd",
        "--quiet",
        "-o",
        "csv",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert lines[0].startswith("inflation,policy,runs,unallocated_pct,std_pct")
    assert [ln.split(",")[:3] for ln in lines[1:]] == [
        ["0.8", "first-node", "2"],
        ["0.8", "fgd", "2"],
        ["1.0", "first-node", "2"],
        ["1.0", "fgd", "2"],
    ]
    assert main(args) == 0
    assert capsys.readouterr().out == out
    assert main(args[:-2]) == 0
    assert "unallocated_pct" in capsys.readouterr().out
    pytest.importorskip("matplotlib")
    png = tmp_path / "curve.png"
    assert main(args + ["--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_unwritable_plot_fails_before_the_run(files, tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    cluster, tasks_csv = files
    ran = []
    monkeypatch.setattr(sim, "simulate", lambda *a, **k: ran.append(1) or [])
    assert (
        main(
            [
                "simulate",
                "-f",
                cluster,
                "--trace",
                tasks_csv,
                "--quiet",
                "--plot",
                str(tmp_path / "missing-dir" / "x.png"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--plot" in err and "no directory" in err and "Traceback" not in err
    assert ran == []


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--inflation", "1.3:0.5:0.1"], "needs 0 < START <= STOP"),
        (["--inflation", "a:b:c"], "expected START:STOP:STEP"),
        (["--inflation", "0"], "more than 0"),
        (["--policy", "first-node,random"], "unknown policy random"),
    ],
)
def test_cli_bad_flags_exit_2(files, capsys, extra, needle):
    cluster, tasks_csv = files
    assert main(["simulate", "-f", cluster, "--trace", tasks_csv, "--quiet", *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_cli_bad_inputs_exit_2(files, tmp_path, capsys):
    cluster, tasks_csv = files
    assert main(["simulate", "-f", cluster, "--trace", str(tmp_path / "none.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = write(tmp_path, "bad.csv", "name,cpu_milli,memory_mib,num_gpu\nx,1,1,1\n")
    assert main(["simulate", "-f", cluster, "--trace", bad]) == 2
    assert "missing column(s) gpu_milli" in capsys.readouterr().err
    assert main(["simulate", "-f", cluster, "--trace", tasks_csv, "--capacity", "example.com/bytes"]) == 2
    assert "no capacity 'example.com/bytes'" in capsys.readouterr().err
    two = tmp_path / "two.yaml"
    two.write_text(
        """apiVersion: v1
kind: Pod
metadata: {name: two, namespace: openb}
spec:
  containers: [{name: main, image: x}]
  resourceClaims:
  - {name: a, resourceClaimTemplateName: gpu-1x1000}
  - {name: b, resourceClaimTemplateName: gpu-1x1000}
---
"""
        + trace.dump_yaml([trace.template_object(trace.Task("x", 1, 1, 1, 1000))])
    )
    assert main(["simulate", "-f", cluster, "--trace", str(two)]) == 2
    assert "at most one claim per pod" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["simulate", "-f", cluster, "--trace", tasks_csv, "--runs", "0"])
    assert e.value.code == 2


@pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not in ../shared/data/openb")
def test_openb_shapes_and_capacity(tmp_path):
    """The default trace on a slice of the openb GPU nodes: its shapes and capacity read as the
    paper counts them, and one run's first-node curve has its knee past 90 %."""
    nodes = trace.read_nodes(str(OPENB / "openb_node_list_gpu_node.csv"))[::10]
    cluster = tmp_path / "c.yaml"
    objs = trace.class_objects({n.model for n in nodes}) + trace.node_objects(nodes) + trace.slice_objects(nodes)
    cluster.write_text(trace.dump_yaml(objs))
    c = sim.build(objects_with(str(cluster), trace.read_tasks(str(OPENB / "openb_pod_list_default.csv"))))
    assert c.total == 1000 * sum(n.gpus for n in nodes)
    assert len(c.pod_keys) == 8152
    records = sim.simulate(c, levels=[0.5, 0.9, 1.0], policies=["first-node"], runs=1)
    u = {r.level: r.unallocated for r in records}
    assert u[0.5] == pytest.approx(1 - records[0].arrived)  # all placed: unallocated = 1 - arrived
    assert 0 < u[1.0] < 0.2


def test_task_no_node_can_serve_still_arrives(tmp_path):
    c = small(
        tmp_path,
        "sn,cpu_milli,memory_mib,gpu,model\na,8000,8192,2,T4\n",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nv,100,128,2,1000,V100M32\nt,100,128,1,500,\n",
    )
    v = shape_of(c, "v")
    assert v.request == 2000 and not v.compat.any()
    assert sim.place_one(sim.State(c), v, "first-node", None) is None


def test_trace_as_yaml_equals_trace_as_csv(files, tmp_path, capsys):
    cluster, tasks_csv = files
    pods = tmp_path / "pods.yaml"
    assert main(["trace", "import", "--pods", tasks_csv, "-o", str(pods)]) == 0
    args = [
        "simulate",
        "-f",
        cluster,
        "--inflation",
        "0.9,1.1",
        "--runs",
        "2",
        "--seed",
        "5",
        "--quiet",
        "--policy",
        "first-node,best-fit,least-allocated,fgd",
        "-o",
        "csv",
    ]
    assert main(args + ["--trace", tasks_csv]) == 0
    from_csv = capsys.readouterr().out
    assert main(args + ["--trace", str(pods)]) == 0
    assert capsys.readouterr().out == from_csv
    assert len(from_csv.strip().splitlines()) == 1 + 2 * 4


def test_offline_optimum_places_capacity_before_pods_without_devices(tmp_path):
    """The offline optimum's placed value is capacity first (simulate_optimal.GPU_FIRST): 60
    pods without GPUs (worth 1 each as placed pods) do not outweigh one task of 50 milli-GPU
    that needs the same cpus, and the bound it returns is a bound of the capacity placed."""
    nodes = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn-0,64000,262144,1,T4\n")
    tasks = write(
        tmp_path,
        "tasks.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nt-0,64000,1024,1,50,\nt-1,1000,1024,0,0,\n",
    )
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(trace.dump_yaml(trace.import_trace(nodes, None)))
    c = sim.build(objects_with(str(cluster), trace.read_tasks(tasks)))
    gpu, cpu = sorted(c.shapes, key=lambda s: -s.request)
    batch = [gpu] + [cpu] * 60
    assert so.value_scale(batch) == so.GPU_FIRST
    st = sim.State(c)
    got = sim.solve_optimal(st, batch, time_limit=10)
    assert st.allocated == 50 and st.placed == 1
    assert got.objective == 50 and 50 <= got.bound < 60
    # A request so large that its priority would pass Kubernetes' 32-bit range: a smaller scale.
    assert so.value_scale([dataclasses.replace(gpu, request=5e6)]) == so.MAX_PRIORITY // 5_000_000


def test_old_first_fit_name_is_first_node_with_a_deprecation_note(files, capsys):
    """simulate's `first-fit` (the first node by name) is `first-node`: the old name gives the same
    rows under the new name, with a note on the command line and a FutureWarning in the API; the
    policy list may be repeated or comma-separated (docs/cli.md, "Policies")."""
    import warnings

    import draopt

    cluster, tasks_csv = files
    base = ["simulate", "-f", cluster, "--trace", tasks_csv, "--inflation", "0.8", "--runs", "1", "--quiet"]
    assert main(base + ["--policy", "first-node,fgd", "-o", "csv"]) == 0
    new = capsys.readouterr()
    assert "deprecated" not in new.err
    assert main(base + ["--policy", "first-fit", "--policy", "fgd", "-o", "csv"]) == 0
    old = capsys.readouterr()
    assert old.out == new.out and [ln.split(",")[1] for ln in old.out.splitlines()[1:]] == ["first-node", "fgd"]
    assert old.err.count("note: --policy first-fit is deprecated") == 1 and "first-node" in old.err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = draopt.simulate(cluster, tasks_csv, levels=[0.8], policies=["first-fit"], runs=1)
    assert [r["policy"] for r in rows] == ["first-node"]
    assert [w.category for w in caught] == [FutureWarning] and caught[0].filename == __file__


def test_feature_gates_and_kubernetes_version(files, tmp_path, capsys):
    """simulate takes --feature-gates and --kubernetes-version as every command that reads a
    cluster does: an unknown gate is refused (exit 2), the release is the one recorded."""
    import json

    cluster, tasks_csv = files
    base = ["simulate", "-f", cluster, "--trace", tasks_csv, "--inflation", "0.8", "--runs", "1", "--quiet"]
    assert main(base + ["--feature-gates", "NoSuchGate=true"]) == 2
    assert "unknown feature gate 'NoSuchGate'" in capsys.readouterr().err
    out = tmp_path / "rows.csv"
    args = base + ["--kubernetes-version", "1.36", "--feature-gates", "DRAPrioritizedList=true", "-o", "csv"]
    assert main(args + ["--output-file", str(out)]) == 0
    assert json.loads((tmp_path / "rows.csv.provenance.json").read_text())["kubernetes_version"] == "1.36"


def test_per_run_rows(files, tmp_path, capsys):
    """`simulate -o csv --per-run`: a row per level, run and policy, whose means are the
    aggregated rows'; refused without -o csv and under --protocol fgd-paper (exit 2)."""
    import csv as csvlib

    cluster, tasks_csv = files
    base = ["simulate", "-f", cluster, "--trace", tasks_csv, "--inflation", "0.8,1.0", "--runs", "2", "--quiet"]
    base += ["--policy", "first-node", "--policy", "fgd", "-o", "csv"]
    assert main(base) == 0
    means = list(csvlib.DictReader(io.StringIO(capsys.readouterr().out)))
    out = tmp_path / "runs.csv"
    assert main(base + ["--per-run", "--output-file", str(out)]) == 0
    runs = list(csvlib.DictReader(out.open()))
    assert list(runs[0]) == list(sim.PER_RUN_COLUMNS)
    assert [(r["inflation"], r["run"], r["policy"]) for r in runs[:4]] == [
        ("0.8", "0", "first-node"),
        ("0.8", "0", "fgd"),
        ("0.8", "1", "first-node"),
        ("0.8", "1", "fgd"),
    ]
    assert len(runs) == 2 * 2 * 2 and (tmp_path / "runs.csv.provenance.json").exists()
    for m in means:
        mine = [
            float(r["unallocated_pct"]) for r in runs if (r["inflation"], r["policy"]) == (m["inflation"], m["policy"])
        ]
        assert sum(mine) / len(mine) == pytest.approx(float(m["unallocated_pct"]), abs=2e-3)  # rounded to 0.001
    assert main(base[:-2] + ["--per-run"]) == 2
    assert "--per-run: the rows of each run are CSV" in capsys.readouterr().err
    assert main(base[:-4] + ["--protocol", "fgd-paper", "--policy", "fgd", "-o", "csv", "--per-run"]) == 2
    assert "draopt's protocol only" in capsys.readouterr().err
