"""The column generation's lower bound (draopt/model/colgen_plan.py: Farley's bound at smoothed
duals, each class priced with a cap of its own) never exceeds the optimum that the CP-SAT
placement model over candidate copies proves on the same small input."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "mix,pods", [("inference", 20), ("inference", 40), ("inference", 60), ("mixed", 40), ("mixed", 80)]
)
def test_the_columns_bound_never_exceeds_the_proven_optimum(mix, pods, monkeypatch):
    from draopt.studies import planning
    from draopt.studies.planning import plan
    from draopt.testing.plan_scenarios import scenario

    objs, types = scenario(mix, pods)
    exact = plan(objs, types, time_limit=60)  # under COLUMNS_MIN_PODS: the placement model proves it
    assert exact.proven_minimal and exact.placed == exact.pods, exact.why_not_proven
    monkeypatch.setattr(planning, "COLUMNS_MIN_PODS", 0)
    columns = plan(objs, types, time_limit=30)
    assert columns.stats.columns.get("colgen_rounds", 0) >= 1, columns.stats
    assert columns.placed == columns.pods
    assert 0 < columns.bound <= exact.cost <= columns.cost
