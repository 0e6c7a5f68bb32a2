"""The optimal policy's summary follows its status (issue 17): "proven optimal" only when the status
is OPTIMAL; FEASIBLE says so first, then what was proven and for what (with preemption: for
first-fit's evictions only) and what is best found only."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gangs  # noqa: E402

from draopt.kube.features import DEFAULT_GATES, Features  # noqa: E402
from draopt.placement import place  # noqa: E402
from draopt.placement.optimal import _summary  # noqa: E402
from draopt.placement.optimal_preemption import _lowered  # noqa: E402


def _stats(status, placed=True, preferences=True, packing=True, **more):
    return {"status": status, "proven": {"placed": placed, "preferences": preferences, "packing": packing}} | more


def test_optimal_says_proven_optimal():
    assert _summary(_stats("OPTIMAL")) == "proven optimal: placed pods, sub-request preferences, packing"


def test_feasible_never_says_proven_optimal():
    got = _summary(_stats("FEASIBLE", packing=False, gap=0.0))
    assert got == (
        "FEASIBLE, not proven optimal: proven: placed pods, sub-request preferences; "
        "best found, not proven: packing (gap of placed pods 0.00%)"
    )
    got = _summary(_stats("FEASIBLE", False, False, False, gap=0.25))
    assert got == (
        "FEASIBLE, not proven optimal: nothing proven; "
        "best found, not proven: placed pods, sub-request preferences, packing (gap of placed pods 25.00%)"
    )


def test_a_status_lowered_for_evictions_scopes_the_proofs_and_keeps_the_first_fit_named():
    stats = _stats(
        "OPTIMAL",
        first_fit_scheduler="builtin:default",
        no_better_found="no placement better than first-fit's placement (builtin:default) found",
        bound=7,
        preemption="first-fit's 3 evictions, ...",
    )
    stats["summary"] = _summary(stats)
    _lowered(stats, " for these evictions")
    assert stats["status"] == "FEASIBLE"
    assert stats["summary"] == (
        "no placement better than first-fit's placement (builtin:default) found (first-fit's placement "
        "(builtin:default) kept, bound 7); FEASIBLE, not proven optimal: proven for these evictions: "
        "placed pods, sub-request preferences, packing (first-fit's 3 evictions, ...)"
    )


def test_gangs_with_preemption_choose_their_victims_and_say_so():
    """bench_gangs at its smallest: first-fit preempts; the model chooses the victims, and says what
    it proved (the victims' level among the phases)."""
    docs = bench_gangs.generate(1, 6, 0.6, 1, True)
    features = Features.from_gates(dict(DEFAULT_GATES, TopologyAwareWorkloadScheduling=True))
    got = place(bench_gangs.objects(docs), policy="optimal", features=features, time_limit=10)
    stats = got.result.stats
    assert got.result.evictions and "victims are decisions of the model" in stats["preemption"]
    assert "victims (fewest, then lowest priority)" in stats["summary"]
    if stats["status"] == "OPTIMAL":
        assert stats["summary"].startswith("proven optimal: placed pods, victims")
    else:
        assert stats["summary"].startswith(f"{stats['status']}, not proven optimal: ")
