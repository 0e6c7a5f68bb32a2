"""The optimal policy's figures as typed records (issue 32): the parts' figures summed as
`optimize` always summed them, and the records flattened into the keys `PlacementResult.stats`
and the CLI's summary line have always had."""

from __future__ import annotations

from draopt.cluster.result import PlacementResult, PodPlacement
from draopt.placement.solver_stats import PartStats, PartsTotal, SolverStats


def test_parts_are_summed_and_the_status_follows_the_proofs():
    total = PartsTotal(SolverStats(kinds=2, pinned_pods=0, components=2), with_victims=False)
    total.add(
        PartStats(
            status="OPTIMAL",
            objective=5,
            bound=5,
            variables=10,
            constraints=4,
            cheap_bound=5,
            proven={"placed": True, "preferences": True, "packing": True},
            build_s=0.1,
            phase_s={"packing": 0.2},
            phase_value={"preferences": 1},
            lns={"lns_windows": 2, "lns_stopped": "hard stop (wall time)"},
            first_fit_in_model=True,
        ),
        pods=3,
    )
    total.add(
        PartStats(
            status="UNKNOWN",
            objective=2,
            bound=4,
            cheap_bound=4,
            proven={"placed": False, "preferences": False, "packing": False},
            fallback="out of time: first-fit's placement is returned",
            lns={"lns_windows": 1},
        ),
        pods=4,
    )
    stats = total.close()
    assert (stats.objective, stats.bound, stats.variables, stats.constraints) == (7, 9, 10, 4)
    assert stats.cheap_bound == 9 and stats.subrequest_index_sum == 1
    assert stats.build_s == 0.1 and stats.packing_s == 0.2 and stats.count_s is None
    assert stats.lns == {"lns_windows": 3, "lns_stopped": "hard stop (wall time)"}
    assert stats.pinned_pods == 4 and stats.fallback is not None
    assert stats.status == "UNKNOWN" and stats.part_status == {"OPTIMAL": 1, "UNKNOWN": 1}
    assert stats.gap == round(2 / 9, 4)
    flat = stats.to_dict()
    assert flat["lns_windows"] == 3 and "lns" not in flat and "victim_cost" not in flat
    assert "count_s" not in flat and flat["first_fit_in_model"] is True


def test_no_part_leaves_the_parts_figures_out():
    stats = PartsTotal(SolverStats(components=0), with_victims=False).close()
    flat = stats.to_dict()
    assert "cheap_bound" not in flat and "subrequest_index_sum" not in flat and "first_fit_in_model" not in flat
    assert flat["objective"] == 0 and flat["bound"] == 0 and flat["gap"] == 0.0 and flat["status"] == "OPTIMAL"


def test_summary_is_a_record_and_flattens_as_before():
    result = PlacementResult("optimal", [PodPlacement("ns/a", "n1"), PodPlacement("ns/b", None)], {}, {"status": "X"})
    summary = result.summary()
    assert (summary.pods, summary.placed, summary.evicted, summary.waiting) == (2, 1, None, None)
    assert summary.to_dict() == {
        "policy": "optimal",
        "pods": 2,
        "placed": 1,
        "weighted_placed": 1,
        "devices_used": 0,
        "nodes_used": 1,
        "status": "X",
    }
