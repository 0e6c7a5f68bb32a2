"""Column generation (draopt/model/colgen.py): its placements pass the checker, its bound
is at least what it places and equals the optimum the one model proves on small cases, and a
stop for time is said."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ortools.linear_solver import pywraplp

from draopt.studies import simulate as sim
from draopt.studies import trace
from draopt.kube.loader import load_files
from draopt.placement import place
from draopt.model import colgen
from draopt.cluster.check import check_placement

OPENB = Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"

NODES = (
    "sn,cpu_milli,memory_mib,gpu,model\n"
    + "".join(f"a-{i},32000,131072,4,T4\n" for i in range(3))
    + "".join(f"b-{i},64000,262144,8,G2\n" for i in range(2))
    + "c-0,16000,65536,2,P100\n"
)
TASKS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
t-00,4000,8192,1,1000,
t-01,2000,4096,1,300,
t-02,2000,4096,1,700,
t-03,8000,16384,2,1000,
t-05,6000,8192,1,500,T4
t-06,12000,32768,4,1000,G2|P100
t-07,1000,2048,1,250,
t-11,1000,1024,1,150,
"""


def _cluster(tmp_path, nodes_csv: str):
    p = tmp_path / "nodes.csv"
    p.write_text(nodes_csv)
    out = tmp_path / "cluster.yaml"
    out.write_text(trace.dump_yaml(trace.import_trace(str(p), None)))
    return str(out)


def _objects(cluster: str, tasks):
    objects = load_files([cluster])
    objects.extend(sim._object_set(trace.workload_objects(tasks)))
    return objects


def _batch(tmp_path, nodes_csv, tasks_csv, level, seed=0):
    p = tmp_path / "tasks.csv"
    p.write_text(tasks_csv)
    c = sim.build(_objects(_cluster(tmp_path, nodes_csv), trace.read_tasks(str(p))))
    seq, _ = sim.arrivals(c, level, np.random.default_rng([seed, 0]))
    return c, [c.shapes[i] for i in seq]


def _place(c, batch, time_limit=20.0):
    objs = sim.residual_objects(sim.State(c), [(s, f"p{k:05d}") for k, s in enumerate(batch)])
    return place(objs, policy="optimal", time_limit=time_limit)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A small cluster past its capacity and the one model's proven optimum there."""
    c, batch = _batch(tmp_path_factory.mktemp("small"), NODES, TASKS, 1.6, 1)
    return c, batch, _place(c, batch)


def test_bound_equals_the_one_models_optimum_on_small_clusters(small, monkeypatch):
    c, batch, exact = small
    assert exact.result.stats["proven"]["placed"]
    assert "colgen_rounds" not in exact.result.stats
    monkeypatch.setattr(colgen, "MIN_NODES", 0)
    got = _place(c, batch, time_limit=10.0)  # a loaded machine still converges
    st = got.result.stats
    assert st["colgen_rounds"] >= 1 and st["colgen_converged"]
    assert check_placement(got) == []
    assert st["objective"] <= st["bound"]
    assert st["objective"] == got.result.weighted_placed()
    # The LP bound of a cutting-stock master may exceed the integer optimum, never fall below it.
    assert st["bound"] >= exact.result.stats["objective"]
    assert st["bound"] - exact.result.stats["objective"] <= 0.05 * st["bound"]
    if st["proven"]["placed"]:
        assert st["objective"] == exact.result.stats["objective"]


def test_stopped_early_is_said_and_the_bound_still_holds(small, monkeypatch):
    c, batch, exact = small
    monkeypatch.setattr(colgen, "MIN_NODES", 0)
    monkeypatch.setattr(colgen, "LP_SHARE", 0.0)  # no time for the generation at all
    got = _place(c, batch, time_limit=2.0)
    st = got.result.stats
    assert "time limit" in st["colgen_stopped"] and not st["colgen_converged"]
    assert st["bound"] >= exact.result.stats["objective"] >= st["objective"]
    assert check_placement(got) == []


@pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not in ../shared/data/openb")
def test_openb_cut_passes_the_checker(tmp_path, monkeypatch):
    """Every 8th openb GPU node, a small sample of the default trace past its capacity."""
    nodes = trace.read_nodes(str(OPENB / "openb_node_list_gpu_node.csv"))[::8]
    cluster = tmp_path / "c.yaml"
    objs = trace.class_objects({n.model for n in nodes}) + trace.node_objects(nodes) + trace.slice_objects(nodes)
    cluster.write_text(trace.dump_yaml(objs))
    tasks = trace.read_tasks(str(OPENB / "openb_pod_list_default.csv"))[::40]
    c = sim.build(_objects(str(cluster), tasks))
    seq, _ = sim.arrivals(c, 1.0, np.random.default_rng([0, 0]))
    batch = [c.shapes[i] for i in seq]
    monkeypatch.setattr(colgen, "MIN_NODES", 0)
    got = _place(c, batch, time_limit=30.0)  # first-fit (kube-scheduler profile) counts too
    st = got.result.stats
    assert st["colgen_rounds"] >= 1
    # Smaller tasks may take larger ones' places in the LP (colgen_substitution.py); a placement
    # that moves some is realized from checked configurations, and the checker passes it.
    assert st["colgen_substitutions"] > 0
    assert check_placement(got) == []
    if "colgen_warm_kept" in st:  # a loaded machine: first-fit's placement, said why
        assert "time" in st["colgen_warm_kept"] and st["objective"] == st["first_fit_objective"]
    else:  # placed from the generated columns (invert)
        assert st["first_fit_objective"] < st["objective"]
    assert st["objective"] <= st["bound"]


@pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not in ../shared/data/openb")
def test_compact_pricing_agrees_with_the_one_model_on_the_openb_cut(tmp_path, monkeypatch):
    """colgen_pricing.DevicePricing (the compact exact pricing of alike shareable GPUs) against the
    one model (the rule source) on every pricing problem of a run: the same optimum where both are
    proven, and every column it returns passes the one model and the checker."""
    nodes = trace.read_nodes(str(OPENB / "openb_node_list_gpu_node.csv"))[::8]
    cluster = tmp_path / "c.yaml"
    objs = trace.class_objects({n.model for n in nodes}) + trace.node_objects(nodes) + trace.slice_objects(nodes)
    cluster.write_text(trace.dump_yaml(objs))
    # multigpu50: shares of one GPU and whole GPUs (1, 2, 4, 8) side by side.
    tasks = trace.read_tasks(str(OPENB / "openb_pod_list_multigpu50.csv"))[::60]
    c = sim.build(_objects(str(cluster), tasks))
    seq, _ = sim.arrivals(c, 1.0, np.random.default_rng([0, 0]))
    compared = []
    real_fast, real_one = colgen._price_fast, colgen._price

    def both(fast, one, reduced, seconds, stats, wanted, hard=True):
        got = real_fast(fast, one, reduced, 5.0, stats, wanted)
        assert got != "disagree"
        exact = real_one(one, reduced, fast.kinds, 5.0, wall=10.0)
        if got is not None and exact is not None and got[2] and exact[2]:
            # Both proven: the same best reduced value (each bound is the optimum plus the
            # rounding of the prices to integers, at most that slack apart).
            best_one = (
                sum(reduced.get(k, 0.0) * n for k, n in zip(fast.kinds, exact[0].counts))
                if exact[0] is not None
                else 0.0
            )
            assert abs(got[1] - exact[1]) <= 1e-3 * max(1.0, exact[1])
            assert got[1] >= best_one - 1e-6
            compared.append(len(fast.kinds))
        return got

    monkeypatch.setattr(colgen, "_price_fast", both)
    monkeypatch.setattr(colgen, "MIN_NODES", 0)
    got = _place(c, [c.shapes[i] for i in seq], time_limit=20.0)
    st = got.result.stats
    assert st["colgen_fast_classes"] >= 1 and "colgen_fast_disagreed" not in st
    assert compared
    assert check_placement(got) == []
    assert st["objective"] <= st["bound"]


def test_compact_pricing_bound_holds_and_carries_only_the_rounding():
    """DevicePricing.price's upper bound of the best reduced value: never below the true optimum
    (every configuration enumerated), and above it by no more than the rounding of the prices
    to integers moves a configuration's value (not half a unit per pod of every kind: the
    bound of the offline optimum is the sum of these over 1,213 nodes)."""
    from fractions import Fraction
    from itertools import product

    from draopt.model.colgen_pricing import PRICE_SCALE, DevicePricing

    # A node of 2 GPUs of 1000 and 10 cpus: kind 0 takes a whole GPU, kinds 1-2 a share of one
    # (500, 300), kind 3 no GPU; each pod 1 cpu.
    kinds = [0, 1, 2, 3]
    ub = [2, 4, 6, 10]
    demand = [{"cpu": Fraction(1)} for _ in kinds]
    whole, share = [1, 0, 0, 0], [0, Fraction(500), Fraction(300), 0]
    f = DevicePricing(kinds, ub, demand, {"cpu": Fraction(10)}, whole, share, 2, Fraction(1000))

    def fits(n):
        if sum(n) > 10 or n[0] > 2:
            return False
        free = 2 - n[0]  # devices left for shares: 500 x a + 300 x b on each, at most 1000
        per = [(a, b) for a in range(3) for b in range(4) if 500 * a + 300 * b <= 1000]
        return any(sum(x[0] for x in c) >= n[1] and sum(x[1] for x in c) >= n[2] for c in product(per, repeat=free))

    rng = np.random.default_rng(0)
    for _ in range(20):
        reduced = dict(zip(kinds, rng.uniform(-0.2, 1.0, size=4) * 1000))
        counts, upper, proven, _ = f.price(reduced, 5.0)
        assert proven and fits(counts)
        best = max(
            sum(reduced[k] * x for k, x in zip(kinds, n)) for n in product(*(range(u + 1) for u in ub)) if fits(n)
        )
        assert upper >= best - 1e-9
        scale = PRICE_SCALE / max(abs(v) for v in reduced.values())
        moved = sum(abs(r - round(r * scale) / scale) * u for r, u in zip(reduced.values(), ub) if r > 0)
        assert upper <= best + moved + 1e-9


class _AbnormalOnce:
    """A master LP whose warm-started solve fails numerically once (GLOP's ABNORMAL)."""

    def __init__(self, then: int, first: int = pywraplp.Solver.ABNORMAL) -> None:
        self.then, self.first = then, first
        self.calls: list[object] = []
        self.params: list[str] = []  # GLOP parameters set, in order

    def SetSolverSpecificParametersAsString(self, text: str) -> bool:  # noqa: N802 (pywraplp's name)
        self.params.append(text)
        return True

    def Solve(self, params=None):  # noqa: N802 (pywraplp's name)
        self.calls.append(params)
        return self.first if len(self.calls) == 1 else self.then


def test_an_abnormal_master_solve_is_retried_from_scratch():
    from draopt.model.colgen_master import solve_master

    lp = _AbnormalOnce(then=pywraplp.Solver.OPTIMAL)
    solve_master(lp, "restricted master")  # type: ignore[arg-type]
    retry = lp.calls[1]
    assert len(lp.calls) == 2 and retry is not None
    assert retry.GetIntegerParam(retry.INCREMENTALITY) == retry.INCREMENTALITY_OFF
    # failing from scratch too: a third solve under the dual simplex, the LP's parameters back
    # after it; failing again, an error naming the LP
    twice = _AbnormalOnce(then=pywraplp.Solver.ABNORMAL)
    with pytest.raises(RuntimeError, match="restricted master LP ended with status"):
        solve_master(twice, "restricted master", params="max_deterministic_time: 20")  # type: ignore[arg-type]
    assert len(twice.calls) == 3 and twice.params == [colgen.STALLED_PARAMS, "max_deterministic_time: 20"]


def test_a_master_solve_stopped_by_its_work_limit_is_retried_from_scratch():
    """relax bounded by rounds caps GLOP's deterministic time per master solve (MASTER_WORK): a
    solve stopped there (not optimal) is solved again from scratch, as an abnormal one."""
    from draopt.model.colgen_master import solve_master

    lp = _AbnormalOnce(then=pywraplp.Solver.OPTIMAL, first=pywraplp.Solver.NOT_SOLVED)
    solve_master(lp, "restricted master")  # type: ignore[arg-type]
    assert len(lp.calls) == 2 and lp.calls[1] is not None


def _tiny_master(work, stalled):
    """A real master LP (GLOP) of two classes and two kinds, its columns added."""
    from types import SimpleNamespace as NS

    classes = [NS(nodes=[0] * 3, kinds=[0, 1]), NS(nodes=[0] * 2, kinds=[0, 1])]
    lp = colgen._Master(classes, [NS(index=0), NS(index=1)], {0: 7, 1: 5}, work, stalled)
    lp.add_columns(
        [colgen.Column(0, (2, 0), 2, None), colgen.Column(0, (1, 1), 2, None)]
        + [colgen.Column(1, (0, 3), 3, None), colgen.Column(1, (3, 1), 4, None)]
    )
    return lp


def test_a_stalled_master_solve_is_made_again_by_the_dual_simplex():
    """apply's master: a solve stopped by its work limit (here at once: a stall) is made again
    from scratch under STALLED_PARAMS, to the LP's optimum; the work limit is back after it.
    relax's retry keeps its parameters first (its work limit again: a stall again), then solves
    under STALLED_PARAMS (it raised "ended with status" before)."""
    value = _tiny_master(None, None).solve()[0]
    relaxed = _tiny_master(1e-12, None)
    assert relaxed.solve()[0] == pytest.approx(value)
    relaxed.add_columns([colgen.Column(1, (2, 2), 4, None)])
    assert relaxed.lp.Solve() != pywraplp.Solver.OPTIMAL  # its work limit restored
    lp = _tiny_master(1e-12, colgen.STALLED_PARAMS)
    assert lp.solve()[0] == pytest.approx(value) == 12.0
    lp.add_columns([colgen.Column(1, (2, 2), 4, None)])
    assert lp.lp.Solve() != pywraplp.Solver.OPTIMAL  # the work limit restored


def test_apply_bounds_its_master_solves_by_work_with_the_dual_simplex_retry(small, monkeypatch):
    """apply's masters get APPLY_MASTER_WORK and the dual simplex's retry (its placement checked)."""
    c, batch, _ = small
    monkeypatch.setattr(colgen, "MIN_NODES", 0)
    made: list[tuple] = []
    init = colgen._Master.__init__

    def spy(self, classes, kinds, pods_of, work=None, stalled=None):
        made.append((work, stalled))
        init(self, classes, kinds, pods_of, work, stalled)

    monkeypatch.setattr(colgen._Master, "__init__", spy)
    got = _place(c, batch, time_limit=10.0)
    assert made and made[0] == (colgen.APPLY_MASTER_WORK, colgen.STALLED_PARAMS)
    assert check_placement(got) == []


class _SlowMaster(_AbnormalOnce):
    """A master LP whose solve outlasts its wall-clock limit and reports it unsolved."""

    def __init__(self, seconds: float) -> None:
        super().__init__(then=pywraplp.Solver.NOT_SOLVED, first=pywraplp.Solver.NOT_SOLVED)
        self.seconds = seconds
        self.limits: list[int] = []

    def SetTimeLimit(self, ms: int) -> None:  # noqa: N802 (pywraplp's name)
        self.limits.append(ms)

    def Solve(self, params=None):  # noqa: N802
        import time

        time.sleep(self.seconds)
        return super().Solve(params)


def test_a_master_solve_is_stopped_at_its_time_limit():
    """The offline optimum's master solves stop at the time limit (one ran 15 minutes past it
    on gpuspec33): the limit is handed to GLOP, and a solve it stopped is not retried past it."""
    import time

    from draopt.model.colgen_master import MasterTimeUp, solve_master

    lp = _SlowMaster(0.05)
    with pytest.raises(MasterTimeUp):
        solve_master(lp, "restricted master", until=time.perf_counter() + 0.01)  # type: ignore[arg-type]
    assert len(lp.calls) == 1 and 1 <= lp.limits[0] <= 10
    late = _SlowMaster(0.0)
    with pytest.raises(MasterTimeUp):
        solve_master(late, "restricted master", until=time.perf_counter() - 1.0)  # type: ignore[arg-type]
    assert late.calls == []
    # Without a stop (relax, bounded by GLOP's deterministic work), no time limit is set.
    free = _SlowMaster(0.0)
    with pytest.raises(RuntimeError, match="ended with status"):
        solve_master(free, "restricted master")  # type: ignore[arg-type]
    assert free.limits == [] and len(free.calls) == 3  # warm, from scratch, the dual simplex


def test_a_master_solve_cut_by_the_time_limit_ends_the_generation(small, monkeypatch):
    """A master solve still running at the generation's stop ends it (here the first: on this
    cluster the warm start converges in one round): the placement is the integer phase's from
    the warm start, checked, not claimed converged, and the bound still holds."""
    c, batch, exact = small
    monkeypatch.setattr(colgen, "MIN_NODES", 0)
    solve = colgen._Master.solve
    calls: list[float | None] = []

    def cut(self, until=None):
        calls.append(until)
        if until is not None:
            raise colgen.MasterTimeUp("restricted master")
        return solve(self, until)

    monkeypatch.setattr(colgen._Master, "solve", cut)
    got = _place(c, batch, time_limit=10.0)
    st = got.result.stats
    assert calls[0] is not None  # apply's master solves are bounded by the clock
    assert "master LP" in st["colgen_stopped"] and not st["colgen_converged"]
    assert st["colgen_rounds"] == 0 and "colgen_lp_value" not in st
    assert not st["proven"]["placed"] or st["objective"] == exact.result.stats["objective"]
    assert check_placement(got) == []
    assert st["bound"] >= exact.result.stats["objective"] >= st["objective"]


def test_a_plan_master_solve_cut_by_its_time_limit_ends_the_generation(monkeypatch):
    """The plan's covering master (colgen_plan, `draopt plan`'s column generation) is bounded by
    the generation's stop too, as apply's is: the limit reaches GLOP, and a solve it cuts ends
    the generation, said so, with a mix that still places every pod and a bound under its cost."""
    import math

    from draopt.model import colgen_plan
    from draopt.studies import planning
    from draopt.studies.planning import plan
    from draopt.testing.plan_scenarios import scenario

    solve = colgen_plan._CoverMaster.solve
    calls: list[float | None] = []

    def cut(self, until=None):
        calls.append(until)
        if len(calls) > 1:  # the first LP solved, the next one cut by the clock
            raise colgen.MasterTimeUp("covering master")
        return solve(self, until)

    objs, types = scenario("inference", 40)
    monkeypatch.setattr(planning, "COLUMNS_MIN_PODS", 0)
    monkeypatch.setattr(colgen_plan._CoverMaster, "solve", cut)
    p = plan(objs, types, time_limit=20)
    st = p.stats.columns
    assert len(calls) == 2 and all(u is not None and math.isfinite(u) for u in calls)
    assert st["colgen_rounds"] == 1 and not st["colgen_converged"]
    assert st["colgen_stopped"] == colgen_plan.MASTER_LATE
    assert p.placed == p.pods and 0 <= p.bound <= p.cost


def test_an_infinite_stop_sets_no_time_limit():
    """A master solve with no finite stop (an infinite deadline) sets no wall-clock limit."""
    import math

    from draopt.model.colgen_master import solve_master

    lp = _SlowMaster(0.0)
    with pytest.raises(RuntimeError, match="ended with status"):
        solve_master(lp, "covering master", until=math.inf)  # type: ignore[arg-type]
    assert lp.limits == [] and len(lp.calls) == 3
