"""`plan --time-limit` (issue 34): wall-clock seconds bounding the whole plan, the best mix found so
far returned with its bound; the same answer for the same input when the limit is not hit; large
inputs (column generation) skip the first-fit check where it would only confirm; bad costs name
their type; the scaled fleet of benchmarks/bench_plan.py --scale is seeded."""

from __future__ import annotations

import os
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from draopt.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
OPENB = ROOT.parent / "shared" / "data" / "openb"


def _answer(p) -> dict:
    return p.to_json()


def test_same_input_same_answer_when_the_limit_is_not_hit():
    """Small inputs: CP-SAT's phases stop at deterministic-time shares of the limit, one worker,
    seeded: two runs that finish inside the wall-clock limit give the same plan, bit for bit."""
    from draopt.studies.planning import plan
    from draopt.testing.plan_scenarios import scenario

    objs, types = scenario("mixed", 40)
    first = plan(objs, types, time_limit=60)
    assert first.stats.solve_s < 60  # the limit was not hit
    again = plan(objs, types, time_limit=60)
    assert _answer(again) == _answer(first)
    assert first.proven_minimal and first.placed == first.pods


def test_the_deadline_caps_every_cp_sat_solve(monkeypatch):
    """The wall clock of each CP-SAT solve is cut to what is left of the command's limit (and the
    deterministic share, which decides when the limit is not hit, is kept)."""
    import time

    from draopt.studies import plan_model

    solver = plan_model._solver(40.0, time.perf_counter() + 2.0)
    assert solver.parameters.max_deterministic_time == 40.0
    assert 0.1 <= solver.parameters.max_time_in_seconds <= 2.0
    late = plan_model._solver(40.0, time.perf_counter() - 5.0)
    assert late.parameters.max_time_in_seconds == pytest.approx(0.1)
    free = plan_model._solver(4.0)
    assert free.parameters.max_time_in_seconds == pytest.approx(13.0)


def test_columns_bound_the_whole_plan_and_skip_the_confirming_check(monkeypatch):
    """Column generation (forced on 40 inference pods: no gangs): the mix comes with its bound
    (never above its cost), and the first-fit check, which would only confirm what the model
    encodes, is skipped and said so."""
    from draopt.studies import planning
    from draopt.studies.planning import plan
    from draopt.testing.plan_scenarios import scenario

    objs, types = scenario("inference", 40)
    monkeypatch.setattr(planning, "COLUMNS_MIN_PODS", 0)
    p = plan(objs, types, time_limit=8)
    assert p.stats.columns_not_used is None and p.stats.columns.get("colgen_rounds", 0) >= 1
    assert 0 <= p.bound <= p.cost and p.placed == p.pods
    assert p.first_fit is None and "not checked with first-fit" in p.table()
    assert p.stats.to_dict()["first_fit_skipped"].startswith("the model encodes every rule")


def test_a_cost_missing_zero_or_negative_names_its_type(tmp_path):
    from draopt.studies.node_types import check_node_types, load_node_types
    from draopt.studies.planning import NodeType
    from draopt.testing.plan_scenarios import scenario

    path = tmp_path / "types.yaml"
    path.write_text("- {name: big, template: gpu-8}\n")
    with pytest.raises(InputError, match=r"field cost: required \(node type big\)"):
        load_node_types(str(path))
    for cost in ("0", "-3"):
        path.write_text(f"- {{name: big, template: gpu-8, cost: '{cost}'}}\n")
        with pytest.raises(InputError, match="node type big.*the cost must be more than 0"):
            load_node_types(str(path))
    objs, _ = scenario("training", 4)
    with pytest.raises(InputError, match="node type big: the cost must be more than 0"):
        check_node_types(objs, [NodeType("big", "gpu-8", Fraction(-1))])


@pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not in ../shared/data/openb")
def test_the_scaled_fleet_is_seeded_with_forty_types(tmp_path):
    sys.path.insert(0, os.fspath(ROOT / "benchmarks"))
    import bench_plan

    types = bench_plan.scale_node_types()
    assert len(types) == 40 and len({t[0] for t in types}) == 40
    assert all(t[5] > 0 and t[3] >= 1 for t in types)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    ia, _ = bench_plan.write_scale_fleet(300, 7, a)
    ib, _ = bench_plan.write_scale_fleet(300, 7, b)
    assert ia.read_bytes() == ib.read_bytes()
    assert (a / "pods.csv").read_text().count("\n") == 301


def test_columns_that_place_every_pod_need_no_estimate(monkeypatch):
    """With no time left for them, the estimates are all skipped (the columns' mix is the answer,
    placing every pod): no cheapest estimate, the table and JSON say so."""
    from draopt.studies import planning
    from draopt.studies.planning import plan
    from draopt.testing.plan_scenarios import scenario

    objs, types = scenario("inference", 40)
    monkeypatch.setattr(planning, "COLUMNS_MIN_PODS", 0)
    monkeypatch.setattr(planning, "ESTIMATES_UNTIL", 0.0)
    p = plan(objs, types, time_limit=8)
    assert p.placed == p.pods == 40 and 0 <= p.bound <= p.cost
    assert all(e.skipped for e in p.ffd) and p.stats.ffd_skipped == len(types)
    assert p.ffd_best() is None and p.to_json()["ffd_best"] is None
    assert "first-fit decreasing (cluster-autoscaler's estimator)" not in p.table()


def test_estimates_for_the_table_keep_to_their_share_of_the_limit(monkeypatch):
    """When the columns place every pod the estimates are for the table only: their deadline is
    ESTIMATES_SHARE of --time-limit from when they start (never past ESTIMATES_UNTIL of it), an
    estimate whose guessed time does not fit is not started (counted), and one stopped before it
    grows is reported not made, never as a partial figure."""
    import time

    from draopt.studies import planning
    from draopt.studies.plan_model import PlanOptions, PlanStats
    from draopt.testing.plan_scenarios import scenario

    objs, types = scenario("inference", 40)
    opts = PlanOptions(planning.Features.from_gates(), 600.0, 256, 0.0, ())
    first = planning._FirstOnCluster(objs, opts.features)
    seen: dict = {}

    def record(*args, **kwargs):
        seen["deadline"], seen["optional"] = args[6], kwargs["optional"]
        return []

    monkeypatch.setattr(planning, "_estimates", record)
    t0 = time.perf_counter()
    planning._table_estimates(objs, types, opts, first, PlanStats(), True, False, t0)
    assert seen["optional"] and seen["deadline"] <= time.perf_counter() + planning.ESTIMATES_SHARE * 600.0
    planning._table_estimates(objs, types, opts, first, PlanStats(), False, False, t0)
    assert not seen["optional"] and seen["deadline"] == t0 + planning.ESTIMATES_UNTIL * 600.0
    monkeypatch.undo()

    calls = []
    monkeypatch.setattr(planning, "ffd_estimate", lambda *a, **k: calls.append(a))
    stats = PlanStats(pending_pods=40)
    # A first guess of 5 s against a deadline 1 s away: nothing starts.
    got = planning._estimates(
        objs, types, None, lambda: None, 256, stats, time.perf_counter() + 1.0, optional=True, first_guess=5.0
    )
    assert calls == [] and all(e.skipped for e in got) and stats.ffd_skipped == len(types)
    assert stats.ffd_skipped_why == "their share of --time-limit ran out"

    stopped = planning.FfdEstimate(types[0], 0, 0, 40, skipped=True)
    monkeypatch.setattr(planning, "ffd_estimate", lambda *a, **k: calls.append(k["deadline"]) or stopped)
    stats = PlanStats(pending_pods=40)
    deadline = time.perf_counter() + 3600.0
    got = planning._estimates(objs, types[:1], None, lambda: None, 256, stats, deadline, optional=True)
    assert calls == [deadline] and got[0].skipped and stats.ffd_skipped == 1


def test_an_estimate_past_its_deadline_is_not_a_partial_figure():
    """ffd_estimate with a deadline already past: if its first simulation used its last copy (it
    would grow), it is returned skipped; otherwise it is the estimate made without a deadline."""
    import time

    from draopt.studies.ffd_estimate import ffd_estimate
    from draopt.testing.plan_scenarios import scenario

    objs, types = scenario("inference", 200)  # gpu-2's first simulation uses its last copy
    cuts = []
    for t in types:
        whole = ffd_estimate(objs, t, max_nodes=256)
        cut = ffd_estimate(objs, t, max_nodes=256, deadline=time.perf_counter() - 1.0)
        assert cut.skipped or (cut.nodes, cut.placed, cut.used) == (whole.nodes, whole.placed, whole.used)
        if cut.skipped:
            assert (cut.nodes, cut.placed, cut.cost) == (0, 0, 0) and not cut.placement
        cuts.append(cut.skipped)
    assert cuts == [False, True, False]


def test_baselines_that_place_every_pod_make_the_estimates_unneeded(monkeypatch):
    """Columns that place every pod, with a baseline that places every pod: no estimate is made
    (the baselines give the table its comparison), and the table and stats say so."""
    from draopt.studies import planning
    from draopt.studies.baselines import run_baselines
    from draopt.testing.plan_scenarios import scenario

    objs, types = scenario("inference", 40)
    monkeypatch.setattr(planning, "COLUMNS_MIN_PODS", 0)
    done = run_baselines(objs, types, ["karpenter"])
    assert done[0].placed == done[0].pods == 40

    def never(*a, **k):
        raise AssertionError("an estimate was made")

    monkeypatch.setattr(planning, "ffd_estimate", never)
    p = planning.plan(objs, types, time_limit=8, incumbents=done)
    assert p.placed == p.pods == 40 and all(e.skipped for e in p.ffd) and p.ffd_best() is None
    assert p.stats.to_dict()["ffd_skipped_why"] == "the baselines give the comparison"
    assert f"estimates not made for {len(types)} of {len(types)} node type(s) ('-'): the baselines" in p.table()


def test_columns_that_cover_take_the_time_no_estimate_will_use():
    """When the columns place every pod, their deadline is the limit less PLAN_MARGIN, less the
    estimates' share only where an estimate can start (no baseline gives the comparison and the
    first one's guess, ESTIMATE_GUESS build times, fits the share): at 80,000 pods none could,
    and the plan ended at COLUMNS_SHARE of the limit."""
    from draopt.studies import planning
    from draopt.studies.plan_model import PlanOptions, PlanStats

    opts = PlanOptions(planning.Features.from_gates(), 570.0, 256, 0.0, ())
    whole = (1 - planning.PLAN_MARGIN) * 570.0
    share = planning.ESTIMATES_SHARE * 570.0
    quick, slow = PlanStats(build_s=1.0), PlanStats(build_s=share)  # the guess: 3 s, then past the share
    assert planning._covered_deadline(opts, quick, False, 10.0) == pytest.approx(10.0 + whole - share)
    assert planning._covered_deadline(opts, slow, False, 10.0) == pytest.approx(10.0 + whole)
    assert planning._covered_deadline(opts, quick, True, 10.0) == pytest.approx(10.0 + whole)
    assert planning._covered_deadline(opts, quick, False, 0.0) > planning.COLUMNS_SHARE * 570.0
