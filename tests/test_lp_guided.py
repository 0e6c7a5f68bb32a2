"""`--policy lp-guided` under the FGD paper's protocol (draopt.studies.lp_guided, lp_plan): the plan's
configurations pass the one-node model and the trace's numbers; the policy is work-conserving
(every refused pod fit nowhere when it arrived); it is deterministic for a seed; the learned
source never reads the trace's frequencies. A small openb cluster (every 24th GPU node, the
trace's first 400 pods); skipped when ../shared/data/openb/ is absent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draopt.studies import lp_guided as LG
from draopt.studies import paper_protocol as P
from draopt.studies import simulate as sim
from draopt.studies import trace

OPENB = Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"
needs_openb = pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not in ../shared/data/openb")


def _cluster():
    nodes = trace.read_nodes(str(OPENB / "openb_node_list_gpu_node.csv"))[::24]
    tasks = trace.read_tasks(str(OPENB / "openb_pod_list_default.csv"))[:400]
    docs = trace.class_objects({n.model for n in nodes}) + trace.node_objects(nodes) + trace.slice_objects(nodes)
    objects = sim._object_set(docs, "nodes")
    objects.extend(sim._object_set(trace.workload_objects(tasks), "tasks"))
    return sim.build(objects), nodes, {f"openb/{t.name}": t for t in tasks}


@pytest.fixture(scope="module")
def small():
    return _cluster()


def _policy(name: str):
    return P.make_policy(name)


@needs_openb
def test_plan_configurations_fit_their_nodes(small):
    """Every configuration the known plan uses fits every node of its class by the trace's own
    numbers (trace.replay_errors: cpu, memory, GPU milli, whole GPUs alone, gpu_spec models),
    its pods dealt to GPUs whole ones first, then shared ones first-fit decreasing; and the plan
    gives no class more nodes than it has."""
    c, nodes, tasks = small
    pc = P.prepare(c)
    plan = LG.known_plan(pc, LG.HORIZON, LG.PLAN_ROUNDS)
    assert plan.configs and plan.lp_value <= plan.bound + 1e-6
    for j in set(cf.cls for cf in plan.configs):
        assert sum(cf.nodes for cf in plan.configs if cf.cls == j) <= (plan.class_of == j).sum() + 1e-6
    for cf in plan.configs:
        members = np.flatnonzero(plan.class_of == cf.cls)
        pods = [tasks[c.shapes[s].pods[0]] for s, k in cf.shapes.items() for _ in range(k)]
        for i in members:
            n = next(x for x in nodes if x.name == c.nodes[int(i)])
            whole = [t for t in pods if t.gpu_milli >= 1000]
            shared = sorted((t for t in pods if 0 < t.gpu_milli < 1000), key=lambda t: -t.gpu_milli)
            first = sum(t.num_gpu for t in whole)
            placements, free = [], 0
            for t in whole:
                placements.append((t, n.name, list(range(free, free + t.num_gpu))))
                free += t.num_gpu
            gpus = _pack([t.gpu_milli for t in shared], max(0, n.gpus - first)) or []
            placements += [(t, n.name, [first + g]) for t, g in zip(shared, gpus)]
            placements += [(t, n.name, []) for t in pods if t.num_gpu == 0]
            assert len(placements) == len(pods), (cf, n.name, "no packing of the shared pods")
            assert trace.replay_errors(nodes, placements) == [], (cf, n.name)


def _pack(milli: list[int], gpus: int) -> list[int] | None:
    """An exact packing of shared-GPU pods (decreasing) on `gpus` GPUs of 1000 milli: a GPU per pod."""
    used = [0] * gpus
    out: list[int] = []

    def place(k: int) -> bool:
        if k == len(milli):
            return True
        tried = set()
        for g in range(gpus):
            if used[g] + milli[k] <= 1000 and used[g] not in tried:
                tried.add(used[g])
                used[g] += milli[k]
                out.append(g)
                if place(k + 1):
                    return True
                used[g] -= milli[k]
                out.pop()
        return False

    return out if place(0) else None


def _refused_fit_nowhere(c, arrivals, run) -> None:
    """Replays the log on a fresh State: at every refused arrival no node was feasible."""
    state = sim.State(c)
    for si, entry in zip(arrivals.shapes, run.log):
        s = c.shapes[int(si)]
        if entry is None:
            ok, _ = state.feasible(s)
            assert not ok.any(), "a pod that fit somewhere was refused"
            continue
        state.take(s, entry[1], entry[2])


@needs_openb
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), name=st.sampled_from(["lp-guided", "bid-price"]))
def test_work_conserving(small, seed, name):
    """Every refused pod fit nowhere when it arrived; placed pods never move (the log is a
    sequence of takes the state accepts)."""
    c, _, _ = small
    a = P.paper_arrivals(c, seed)
    r = P.run_paper(c, a, _policy(name))
    assert r.failed[-1] > 0  # the run goes to 130 %: some pods are refused
    _refused_fit_nowhere(c, a, r)


@needs_openb
def test_learned_work_conserving(small):
    """Work-conserving with the learned source's plans and re-solves."""
    c, _, _ = small
    a = P.paper_arrivals(c, 7)
    p = _policy("lp-guided-learned")
    r = P.run_paper(c, a, p)
    _refused_fit_nowhere(c, a, r)
    assert p.totals["solves"] >= 1


@needs_openb
@pytest.mark.parametrize("name", ["lp-guided", "lp-guided-learned", "bid-price"])
def test_deterministic_for_a_seed(small, name):
    """The same seed, the same placements, plans included: the known plan is solved again for
    the second run (not taken from the cache) and the learned source re-solves as it goes; every
    LP solve is bounded by rounds and CP-SAT's deterministic time, never by a wall clock. The
    known source re-solves too (drift 0), so re-solves of both sources are compared."""
    c, _, _ = small
    pc = P.prepare(c)
    a = P.paper_arrivals(c, 43)
    runs, plans = [], []
    for _ in range(2):
        pc.lp_plans.clear()
        p = _policy(name)
        p.drift = 0.0
        runs.append(P.run_paper(c, a, p))
        plans.append(p.plan)
        assert p.totals["solves"] >= 1
    r1, r2 = runs
    assert r1.log == r2.log and np.array_equal(r1.allocated, r2.allocated)
    assert plans[0].columns == plans[1].columns and plans[0].rounds == plans[1].rounds


class _Untouchable(list):
    """The trace's pods: any read fails (the learned source must not read them)."""

    def _no(self, *args, **kwargs):
        raise AssertionError("the trace's pods were read")

    __iter__ = __getitem__ = __len__ = __array__ = _no  # type: ignore[assignment]


@needs_openb
def test_learned_never_reads_the_trace_frequencies(small):
    """Structural: the learned source is given nothing of the trace (LearnedExpectation takes no
    argument) and a whole learned run, its plans and re-solves included, never reads the trace's
    pods (c.pod_shape, where the frequencies come from); the known source does read them."""
    c, _, _ = small
    pc = P.prepare(c)
    a = P.paper_arrivals(c, 44)
    P.run_paper(c, a, _policy("lp-guided"))  # the cluster's model built, the known plan cached
    saved, saved_plans = c.pod_shape, dict(pc.lp_plans)
    try:
        c.pod_shape = _Untouchable()
        r = P.run_paper(c, a, _policy("lp-guided-learned"))
        assert r.placed[-1] > 0
        pc.lp_plans.clear()
        with pytest.raises(AssertionError, match="trace's pods were read"):
            P.run_paper(c, a, _policy("lp-guided"))
    finally:
        c.pod_shape = saved
        pc.lp_plans.clear()
        pc.lp_plans.update(saved_plans)
    with pytest.raises(TypeError):
        LG.LearnedExpectation(np.ones(3))  # type: ignore[call-arg]


def test_time_limit_does_not_reach_the_policy():
    """--time-limit bounds the offline optimum, not lp-guided: its solves are bounded by rounds."""
    p = P.make_policy("lp-guided", time_limit=7.0)
    assert p.rounds == LG.PLAN_ROUNDS and p.name == "lp-guided"
    assert {"lp-guided", "lp-guided-learned", "bid-price"} <= set(P.known_policies())


def test_bid_prices_equal_but_for_rounding_noise_tie():
    """bid-price: class prices per GPU milli that differ only by the LP's rounding noise (default's
    duals: every class 0.81 per milli, to 1e-14) are equal, so their ties go to the node rank as
    fgd's do, not to the noise of the dual vertex GLOP returned."""
    pol = LG.LpGuided(lambda: None, mode="prices")
    pol._gpu_milli = np.array([2000.0, 8000.0, 1000.0, 4000.0])
    pol.stats = dict.fromkeys(("solves", "unconverged", "lp_rounds", "lp_seconds"), 0)
    pol.given = {}
    noisy = np.array([1620.0000000000095, 6479.999999999987, 810.0, 3300.0])
    plan = LG.Plan([], np.array([0, 1, 2, 3]), np.zeros(1), noisy, 0.0, 0.0, True, "", 0.0, 1)
    pol._use(plan)
    assert pol.node_price[0] == pol.node_price[1] == pol.node_price[2] < pol.node_price[3]


def test_slots_pack_whole_gpus_first_then_shared_first_fit():
    """`_packs`: whole-GPU slots need fully free GPUs, shared ones fit the milli left."""
    left = np.array([1000, 500, 200])
    assert LG._packs(left, 1, [500, 200])
    assert not LG._packs(left, 2, [])
    assert not LG._packs(left, 1, [600])
    assert LG._packs(left, 0, [900, 500, 200])
    assert not LG._packs(left, 0, [900, 500, 300])


@needs_openb
def test_fitted_horizon_is_what_the_plan_places(small):
    """The known plan's horizon is cut to the share of the GPU capacity its LP places."""
    c, _, _ = small
    pc = P.prepare(c)
    h = LG.fitted_horizon(pc, LG.HORIZON, LG.PLAN_ROUNDS)
    plan = LG.known_plan(pc, LG.HORIZON, LG.PLAN_ROUNDS)
    assert 0 < h <= LG.HORIZON
    assert h == pytest.approx(min(LG.HORIZON, plan.lp_value / pc.capacity_milli))
