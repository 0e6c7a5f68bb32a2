"""`simulate --protocol fgd-paper` (draopt.studies.paper_protocol): arrivals, scorers, binning, replay.

Rules are from hkust-adsl/kubernetes-scheduler-simulator (cited per test); the openb trace
tests use every 8th GPU node and skip when ../shared/data/openb/ is absent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from draopt.studies import paper_policies as pp
from draopt.studies import paper_protocol as P
from draopt.studies import simulate as sim
from draopt.studies import trace
from draopt.cli import main

OPENB = Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"
needs_openb = pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not in ../shared/data/openb")


@pytest.fixture(scope="module")
def small():
    nodes = trace.read_nodes(str(OPENB / "openb_node_list_gpu_node.csv"))[::8]
    tasks = trace.read_tasks(str(OPENB / "openb_pod_list_default.csv"))
    docs = trace.class_objects({n.model for n in nodes}) + trace.node_objects(nodes) + trace.slice_objects(nodes)
    objects = sim._object_set(docs, "nodes")
    objects.extend(sim._object_set(trace.workload_objects(tasks), "tasks"))
    return sim.build(objects), nodes, {f"openb/{t.name}": t for t in tasks}


# ------------------------------------------------------------------ arrivals
@needs_openb
def test_arrivals_sorted_shuffled_tuned_down(small):
    """SortClusterPods (name order, then a seeded shuffle); tuneDownPods removes uniformly drawn
    pods until the request is within 1.3 x capacity (the trace asks ~8x this small cluster)."""
    c, _, _ = small
    pc = P.prepare(c)
    names = sorted(k.split("/", 1)[1] for k in c.pod_keys)
    order = P.trace_order(c)
    by_name = dict(zip((k.split("/", 1)[1] for k in c.pod_keys), c.pod_shape))
    assert list(order) == [by_name[n] for n in names]
    a = P.paper_arrivals(c, 42)
    b = P.paper_arrivals(c, 42)
    assert np.array_equal(a.shapes, b.shapes) and np.array_equal(a.node_rank, b.node_rank)
    assert not np.array_equal(a.shapes, P.paper_arrivals(c, 43).shapes)
    shuffled = order[np.random.default_rng(42).permutation(len(order))]
    # What is left is a subsequence of the shuffled trace, within 1.3 x, and removing stopped
    # as soon as it was (one more pod back would pass it, unless that pod asks no GPU).
    it = iter(shuffled)
    assert all(any(s == x for x in it) for s in a.shapes)
    assert a.arrived[-1] <= 1.3 * pc.capacity_milli
    assert a.arrived[-1] > 1.3 * pc.capacity_milli - 8000
    assert np.array_equal(a.arrived, np.cumsum(pc.shape_request[a.shapes]))
    assert sorted(a.node_rank) == list(range(c.n))


@needs_openb
def test_arrivals_tuned_up_stop_rule(small):
    """tuneUpPods: the whole shuffled trace, then copies drawn from the name-sorted trace while
    request + the copy's milli per GPU stays within tune x capacity (checked per GPU, added in
    total)."""
    c, _, _ = small
    pc = P.prepare(c)
    order = P.trace_order(c)
    a = P.paper_arrivals(c, 7, tune=9.0)
    n = len(order)
    assert np.array_equal(a.shapes[:n], order[np.random.default_rng(7).permutation(n)])
    target = 9.0 * pc.capacity_milli
    before = np.concatenate([[0], a.arrived[:-1]])
    tail = slice(n, None)
    assert (before[tail] + pc.shape_milli[a.shapes[tail]] <= target).all()
    assert len(a.shapes) > n and a.arrived[-1] > target - 8000


# ------------------------------------------------------------------ scorers
def test_gpu_packing_cases_of_their_test():
    """pkg/simulator/plugin/gpu_packing_score_test.go (case-2 48, case-3 4-GPU 29, 8-GPU 25),
    and case-1 for one shared GPU: 100 - (200 x 100 / 1000) / 10 = 98."""
    left = np.array([[200, 1000, 1000, 500, 0, 0, 0, 0], [1000] * 4 + [0] * 4, [1000] * 8])
    present = np.array([[True] * 4 + [False] * 4, [True] * 4 + [False] * 4, [True] * 8])
    assert list(pp.score_gpu_packing(left, present, 1000, 2)) == [48, 29, 25]
    assert pp.score_gpu_packing(left[:1], present[:1], 200, 1)[0] == 98
    assert pp.score_gpu_packing(left[:1], present[:1], 600, 1)[0] == 49  # must use a free GPU
    assert list(pp.score_gpu_packing(left, present, 0, 0)) == [0, 0, 0]


def test_best_fit_and_dot_product():
    """best_fit_score.go: int(100 x (1 - 0.5 (cpu free - req)/128000 - 0.5 (gpu free - req)/8000));
    dot_product_score.go (merge, max): int(100 x (1 - dot / 2))."""
    cpu_left = np.array([64000.0, 32000.0])
    gpu_left = np.array([8000.0, 1000.0])
    assert list(pp.score_best_fit(cpu_left, gpu_left, 16000.0, 1000.0)) == [
        37,
        93,
    ]  # 100 x (1 - 0.1875 - 0.4375), 100 x (1 - 0.0625)
    dot = (64000 / 128000) * (16000 / 128000) + 1 * (1000 / 8000)
    assert pp.score_dot_product(cpu_left[:1], gpu_left[:1], 16000.0, 1000.0)[0] == int(100 * (1 - dot / 2))


def test_gpu_clustering():
    """gpu_clustering_score.go: 25 x (8000 - left) / 8000 + 75 (only the pod's affinity),
    + 50 (it and others), + 25 (no GPU pod), + 0 (others only)."""
    left = np.array([4000, 4000, 8000, 0])
    same = np.array([True, True, False, False])
    n_tags = np.array([1, 2, 0, 1])
    assert list(pp.score_gpu_clustering(left, same, n_tags, True)) == [87, 62, 25, 25]
    assert pp.gpu_tag(460, 1) == 0 and pp.gpu_tag(1000, 1) == 1 and pp.gpu_tag(1000, 8) == 8


def test_frag_and_fgd_score():
    """frag.go NodeGpuShareFragAmount: a pod that fits counts the milli on GPUs with less left
    than it asks per GPU; one that does not fit (GPU, CPU or type) counts all; a CPU-only pod
    counts all (XL is summed except Q3). fgd_score.go: int(sigmoid(delta / 1000) x 100)."""
    # typical: 500m share (weight 2), 2 whole GPUs (weight 1), CPU-only (weight 1); one kind of node
    fm = pp.FragModel(
        np.array([4000, 8000, 1000]),
        np.array([500, 1000, 0]),
        np.array([1, 2, 0]),
        np.array([2, 1, 1]),
        np.ones((3, 1), bool),
    )
    left = np.array([[1000, 300, 0, 0], [1000, 1000, 0, 0], [1000, 1000, 0, 0]])
    cpu = np.array([16000, 16000, 6000])
    got = fm.frag(cpu, left, np.zeros(3, int))
    # node 0: share fits -> 300 lost; 2-GPU does not -> 1300; cpu-only -> 1300
    assert list(got) == [2 * 300 + 1300 + 1300, 0 + 0 + 2000, 0 + 2000 + 2000]
    assert list(fm.score(np.array([0, 4000]), np.array([0, 0]))) == [50, int(100 / (1 + np.exp(-1.0)))]


def test_gpu_selection():
    """open_gpu_share.go: best = least left that fits (first by index); whole GPUs: first free."""
    left = np.array([1000, 300, 600, 300])
    usable = left >= 300
    assert pp.gpus_best(left, usable, 300, 1) == [1]
    assert pp.gpus_best(left, left == 1000, 1000, 1) == [0]
    rng = np.random.default_rng(0)
    assert {pp.gpus_random(left, usable, 300, 1, rng)[0] for _ in range(50)} == {0, 1, 2, 3}


# ------------------------------------------------------------------ binning
def test_bin_seed_as_merge_alloc_discrete():
    """merge_alloc_discrete.py: bin by round(arrived % , 0) (half to even), mean of the
    allocation % rounded to 2 decimals, the bins either side when a bin is empty."""
    gpus = 10
    arrived = np.array([100, 150, 250, 4000]) * 10  # 10 %, 15 % (-> 16? no: 15 -> 15), 25 %, 400 %
    allocated = np.array([90, 140, 240, 3000]) * 10
    got = P.bin_seed(arrived, allocated, gpus, [10, 15, 24, 25, 26, 30, 400])
    assert got == {10: 9.0, 15: 14.0, 24: 24.0, 25: 24.0, 26: 24.0, 400: 300.0}
    assert np.round(12.5) == 12 and np.round(13.5) == 14  # the half-to-even rounding it relies on
    curve = P.bin_curve([{100: 95.0}, {100: 93.0}])
    assert curve[100]["unallocated_pct"] == pytest.approx(6.0) and curve[100]["std_pct"] == pytest.approx(2**0.5)


# ------------------------------------------------------------------ replay
@needs_openb
@pytest.mark.parametrize("policy", P.PAPER_POLICIES)
def test_replay_never_over_capacity(small, policy):
    """Replay every placement from the CSV's numbers alone: no node over cpu or memory, no GPU
    over 1000 milli, whole GPUs not shared; the recorded allocation is what the log holds."""
    c, nodes, tasks = small
    pc = P.prepare(c)
    a = P.paper_arrivals(c, 42)
    r = P.run_paper(c, a, policy)
    by_name = {n.name: n for n in nodes}
    cpu = dict.fromkeys(by_name, 0)
    mem = dict.fromkeys(by_name, 0)
    gpu: dict[tuple[str, int], list[int]] = {}
    milli = 0
    for entry in r.log:
        if entry is None:
            continue
        si, node, devs = entry
        t = tasks[c.shapes[si].pods[0]]
        n = by_name[c.nodes[node]]
        cpu[n.name] += t.cpu_milli
        mem[n.name] += t.memory_mib
        assert cpu[n.name] <= n.cpu_milli and mem[n.name] <= n.memory_mib
        assert len(devs) == t.num_gpu == len(set(devs))
        for d in devs:
            shares = gpu.setdefault((n.name, d), [])
            shares.append(t.gpu_milli)
            assert d < n.gpus and sum(shares) <= 1000 and not (len(shares) > 1 and 1000 in shares)
            milli += t.gpu_milli
    assert milli == r.allocated[-1]
    assert r.failed[-1] == sum(e is None for e in r.log) and r.failed[-1] > 0
    assert np.all(np.diff(r.allocated) >= 0) and r.allocated[-1] <= pc.capacity_milli


@needs_openb
def test_batch_policy_interface(small):
    """A batch policy gets K arrivals at once; a placement that breaks a rule is an InputError."""
    c, _, _ = small
    a = P.paper_arrivals(c, 42)
    a.shapes, a.arrived = a.shapes[:30], a.arrived[:30]

    class Nothing:
        name, batch = "nothing", 7

        def choose_batch(self, ctx, shapes):
            assert 1 <= len(shapes) <= 7
            return [None] * len(shapes)

    r = P.run_paper(c, a, Nothing())
    assert r.failed[-1] == 30 and r.allocated[-1] == 0

    class Bad(Nothing):
        def choose_batch(self, ctx, shapes):
            return [(0, [0, 1, 2, 3, 4, 5, 6, 7, 8])] * len(shapes)

    with pytest.raises(P.InputError, match="policy nothing"):
        P.run_paper(c, a, Bad())


# ------------------------------------------------------------------ bad input
def test_bad_protocol_and_policy(tmp_path, capsys):
    nodes = tmp_path / "n.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,8000,16384,2,T4\n")
    pods = tmp_path / "p.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,1024,1,500\np2,1000,1024,1,1000\n")
    cluster = tmp_path / "c.yaml"
    assert main(["trace", "import", "--nodes", str(nodes), "-o", str(cluster)]) == 0
    with pytest.raises(SystemExit) as e:
        main(["simulate", "-f", str(cluster), "--trace", str(pods), "--protocol", "nope"])
    assert e.value.code == 2 and "fgd-paper" in capsys.readouterr().err
    assert (
        main(
            [
                "simulate",
                "-f",
                str(cluster),
                "--trace",
                str(pods),
                "--protocol",
                "fgd-paper",
                "--policy",
                "least-allocated",
                "--quiet",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "least-allocated" in err and "gpu-packing" in err and "--protocol draopt" in err
    assert (
        main(
            [
                "simulate",
                "-f",
                str(cluster),
                "--trace",
                str(pods),
                "--protocol",
                "fgd-paper",
                "--inflation",
                "0.925",
                "--quiet",
            ]
        )
        == 2
    )
    assert "whole arrived percent" in capsys.readouterr().err
    assert (
        main(
            [
                "simulate",
                "-f",
                str(cluster),
                "--trace",
                str(pods),
                "--protocol",
                "fgd-paper",
                "--tie-break",
                "name",
                "--quiet",
            ]
        )
        == 2
    )
    assert "random node order" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("name,cpu_milli,memory_mib,num_gpu\np1,1000,1024,1\n")
    assert main(["simulate", "-f", str(cluster), "--trace", str(bad), "--protocol", "fgd-paper", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "gpu_milli" in err
    # A good run: CSV with today's columns.
    assert (
        main(
            [
                "simulate",
                "-f",
                str(cluster),
                "--trace",
                str(pods),
                "--protocol",
                "fgd-paper",
                "--quiet",
                "--inflation",
                "1.0",
                "-o",
                "csv",
                "--policy",
                "fgd,random",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ",".join(sim.COLUMNS)
    assert [line.split(",")[:2] for line in out[1:]] == [["1.0", "fgd"], ["1.0", "random"]]
    # --offline-optimum: a row after the online ones, its bound and status from the solver.
    assert (
        main(
            [
                "simulate",
                "-f",
                str(cluster),
                "--trace",
                str(pods),
                "--protocol",
                "fgd-paper",
                "--quiet",
                "--inflation",
                "1.0",
                "-o",
                "csv",
                "--policy",
                "random",
                "--offline-optimum",
                "--time-limit",
                "2",
                "--stats",
            ]
        )
        == 0
    )
    got = capsys.readouterr()
    # --stats: each offline solve's figures, its column generation's among them
    stats = json.loads(got.err.strip().splitlines()[-1])
    (offline,) = stats["offline"]
    assert offline["bin"] == 100 and offline["status"] and offline["seconds"] > 0
    # (this small solve needs no column generation; one that ran it gives its figures)
    solve = P.OfflineSolve(1, 100, 5, 0, "fgd", 0, 0, 0, None, None, "FEASIBLE", colgen={"colgen_rounds": 7})
    assert P.offline_stats(solve)["colgen_rounds"] == 7
    rows = [dict(zip(sim.COLUMNS, line.split(","))) for line in got.out.splitlines()[1:]]
    assert (
        [r["policy"] for r in rows] == ["random", "offline-optimum"]
        and "3 solve(s)" in got.err
        and "up to 6 s" in got.err
    )
    off = rows[1]
    assert off["status"] and float(off["bound_unallocated_pct"]) <= float(off["unallocated_pct"])
    assert float(off["unallocated_pct"]) <= float(rows[0]["unallocated_pct"]) + 1e-9


@needs_openb
def test_offline_optimum_rows_bound_replay(small):
    """--offline-optimum under fgd-paper: the arrivals up to bin 100's last one (arrived %
    rounded <= 100, as merge_alloc_discrete.py rounds) placed at once from fgd's placement: a row per bin, bound <= unallocated, never
    below fgd on the same arrivals, and the placement passes the independent replay."""
    c, nodes, tasks = small
    pc = P.prepare(c)
    a = P.paper_arrivals(c, 42)
    r = P.run_paper(c, a, "fgd")
    (o,) = P.offline_paper(c, a, [r], [100], time_limit=3)
    assert o.arrivals == int(np.flatnonzero(np.round(a.arrived / pc.gpus / 10) == 100)[-1]) + 1 and o.warm == "fgd"
    assert o.allocated >= int(r.allocated[o.arrivals - 1]) == o.warm_allocated
    assert o.bound is not None and o.bound >= o.allocated
    (row,) = P.offline_rows([o], pc.gpus, pc.capacity_milli)
    assert row.policy == "offline-optimum" and row.inflation == 1.0 and row.status
    assert row.bound_unallocated_pct <= row.unallocated_pct
    assert row.unallocated_pct <= round(100 * (1 - r.allocated[o.arrivals - 1] / pc.capacity_milli), 3)
    fgd_bin = 100 - P.bin_seed(r.arrived, r.allocated, pc.gpus, [100])[100]
    assert row.unallocated_pct <= fgd_bin + 0.01  # the bin's figure: 2-decimal rounding
    assert o.placed == len(o.log) > 0
    assert replay_errors(c, nodes, tasks, o.log) == []
    used = sum(c.shapes[si].cons[n, d] for si, n, ds in o.log for d in ds) * pc.gpu_scale
    assert abs(used - o.allocated) < 1e-6


def replay_errors(c, nodes, tasks, log) -> list[str]:
    """(shape, node, devices) placements replayed with the CSV's numbers alone (draopt.studies.trace.replay_errors)."""
    return trace.replay_errors(nodes, ((tasks[c.shapes[si].pods[0]], c.nodes[node], devs) for si, node, devs in log))


def test_batch_flag_reaches_optimal_batch_under_the_paper_protocol():
    # --batch K was read and dropped under --protocol fgd-paper (optimal-batch kept 500)
    from draopt.studies.paper_batch import DEFAULT_BATCH

    assert P.make_policy("optimal-batch").batch == DEFAULT_BATCH
    assert P.make_policy("optimal-batch", batch=120).batch == 120
    assert P.make_policy("fgd", batch=120).name == "fgd"
