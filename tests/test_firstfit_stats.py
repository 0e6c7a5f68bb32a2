"""First-fit's stats are a typed record (FirstFitStats) read as the mapping they always were."""

from draopt.cluster.result import FirstFitStats, PlacementResult
from draopt.kube.loader import load_files
from draopt.placement import place


def test_keys_in_the_order_they_were_set_none_left_out():
    stats = FirstFitStats(solve_s=0.5, pods_per_s=None, scheduler="builtin:default")
    assert stats.to_dict() == {"solve_s": 0.5, "pods_per_s": None, "scheduler": "builtin:default"}
    stats.evicted, stats.evicted_by_priority, stats.tie_break, stats.nodes = 2, {0: 2}, "name", 3
    assert list(stats) == ["solve_s", "pods_per_s", "scheduler", "evicted", "evicted_by_priority", "tie_break", "nodes"]
    assert stats["nodes"] == 3 and stats.get("summary") is None and "gap" not in stats
    assert dict(stats) == stats.to_dict()


def test_place_first_fit_fills_the_record():
    out = place(load_files(["examples/gang-preemption.yaml"]), policy="first-fit")
    stats = out.result.stats
    assert isinstance(stats, FirstFitStats)
    assert stats.nodes == len(out.cluster.nodes) and stats.tie_break == "random (seed 0)"
    assert stats.scheduler == "builtin:default"
    assert (stats.evicted or 0) == len(out.result.evictions)
    assert out.result.summary().to_dict()["nodes"] == stats.nodes


def test_optimal_stats_is_the_dict_of_other_policies():
    result = PlacementResult("optimal", [], {}, {"status": "OPTIMAL"})
    result.optimal_stats["gap"] = 0.0
    assert result.stats == {"status": "OPTIMAL", "gap": 0.0}
