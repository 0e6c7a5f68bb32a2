"""The large-neighbourhood search after phase 1 (draopt/placement/optimal_lns.py): windows of
topology domains, each solved with the rest of the incumbent fixed; a better window becomes the
incumbent; the victims (fewest) right after the placed pods; never worse than the incumbent."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

from ortools.sat.python import cp_model

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gangs  # noqa: E402

from draopt.kube.features import DEFAULT_GATES, Features  # noqa: E402
from draopt.kube.workload import expand  # noqa: E402
from draopt.placement import build_cluster  # noqa: E402
from draopt.placement.optimal_lns import improve, windows  # noqa: E402


def _solver(seconds, hard_stop):
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.max_deterministic_time = seconds
    return s


def _toy(victim: bool = False):
    """Four nodes of room 2, one counted kind, at most 7 pods in all; optionally a victim on n3
    whose eviction is needed for its node's room (room 2 - victim)."""
    m = cp_model.CpModel()
    nodes = ["n0", "n1", "n2", "n3"]
    k = {(0, n): m.new_int_var(0, 2, f"k{n}") for n in nodes}
    m.add(sum(k.values()) <= 7)
    enc = None
    if victim:
        ev = m.new_int_var(0, 1, "evicted")
        m.add(k[(0, "n3")] <= 1 + ev)
        enc = SimpleNamespace(classes=[([0], ev)], weights=[(1, ev)], variables=[ev])
    objective = sum(k.values())
    m.maximize(objective)
    b = SimpleNamespace(k=k, y={}, unit_parts={}, node_classes=[], victims=enc, objective=objective)
    values = {v: 0 for v in k.values()}
    if enc is not None:
        values[enc.classes[0][1]] = 1  # the incumbent evicts it, needed or not
    units = [SimpleNamespace(nodes=["n3"])]
    return m, b, values, SimpleNamespace(units=units)


def test_windows_improve_the_incumbent_to_the_optimum():
    m, b, values, _ = _toy()
    best, got, stats = improve(
        m, b, values, 0, 8, [["n0", "n1"], ["n2", "n3"]], 10.0, time.perf_counter() + 30, _solver
    )
    assert best == 7 and sum(got[v] for v in b.k.values()) == 7
    assert stats["lns_improved"] == 2 and stats["lns_gain"] == 7
    assert all(0 <= got[v] <= 2 for v in b.k.values())


def test_an_optimal_incumbent_is_kept():
    m, b, values, _ = _toy()
    values = {v: (2 if n != "n3" else 1) for (_, n), v in b.k.items()}
    best, got, stats = improve(
        m, b, values, 7, 8, [["n0", "n1"], ["n2", "n3"]], 10.0, time.perf_counter() + 30, _solver
    )
    assert best == 7 and got == values and stats["lns_improved"] == 0


def test_victims_right_after_the_placed_pods():
    """The placed value first, then the fewest victims: the eviction on n3 stays only if needed."""
    m, b, values, vs = _toy(victim=True)
    best, got, stats = improve(
        m, b, values, 0, 8, [["n0", "n1"], ["n2", "n3"]], 10.0, time.perf_counter() + 30, _solver, vs
    )
    ev = b.victims.classes[0][1]
    assert best == 7
    # 7 pods fit with n3 holding 1 (no eviction needed): the model keeps the victim.
    assert got[ev] == 0 and stats["lns_victim_cost"] == 0


def test_windows_are_runs_of_topology_domains():
    docs = bench_gangs.generate(8, 12, 0.2, 1, True)
    gates = dict(DEFAULT_GATES)
    gates["TopologyAwareWorkloadScheduling"] = True
    features = Features.from_gates(gates)
    objs = bench_gangs.objects(docs)
    workload = expand(objs, features)
    cluster = build_cluster(objs, workload, features)
    hoods = windows(workload, cluster, {n.name for n in cluster.nodes})
    # 8 racks of 8 nodes: 32 nodes a window, 4 whole racks each, every node once.
    assert [len(h) for h in hoods] == [32, 32]
    racks = [{n.split("-")[0] for n in h} for h in hoods]
    assert racks == [{"rack00", "rack01", "rack02", "rack03"}, {"rack04", "rack05", "rack06", "rack07"}]
    assert windows(workload, cluster, set(hoods[0][:8])) == []  # one window: no search
