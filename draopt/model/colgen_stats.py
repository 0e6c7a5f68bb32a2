"""The figures both column generations report (colgen.py's `Solution.stats`, colgen_plan.py's
`PlanSolution.stats`), as a typed dict: a typo in a key is a type error.

Still a plain dict at runtime (same keys, same order): `draopt/placement/optimal.py` copies every
`colgen_*` key into the placement's stats, `draopt/studies/planning.py` merges them into the
plan's stats (`stats.update`), `draopt/studies/simulate_optimal.py` and `benchmarks/bench_plan.py`,
`benchmarks/bench_offline.py` read them by name.
"""

from __future__ import annotations

from typing import TypedDict


class ColgenStats(TypedDict, total=False):
    """Keys present on every finished run: rounds, columns, classes, s, integer_status, integer_s,
    converged, fast_classes, fast_checked, substitutions (and lp_value in the plan's). The others
    only when what they describe happened."""

    colgen_rounds: int  # restricted master LPs solved
    colgen_greedy_rounds: int  # plan only: rounds priced by the greedy fill alone (no bound from them)
    colgen_exact_rounds: int  # plan only: rounds that priced every class exactly (each gives a bound)
    colgen_farley_bound: float  # plan only: the best single round's Farley bound (the bound combines them all)
    colgen_theta: float  # plan only: Farley's theta at the last exact round (1: no copy worth more than its cost)
    colgen_greedy_columns: int  # plan only: columns the greedy fill found
    colgen_residual_columns: int  # plan only: columns the dive's greedy fill found for the residual demand
    colgen_dive_s: float  # plan only: seconds of the last dive (the LP rounded, the residual priced)
    colgen_dive_priced: bool  # plan only: the dive that priced the residual demand was the cheaper
    colgen_dive_cost: float  # plan only: the last dive's cost (absent: it found no cover in time)
    colgen_columns: int  # columns generated (warm start's and realized substitutions' included)
    colgen_classes: int  # classes of interchangeable nodes
    colgen_kinds: int  # kinds of pending pods (pods alike) that have a node (draopt plan)
    colgen_s: float  # seconds of the generation (setup included)
    colgen_integer_status: str  # the integer placement's CP-SAT status, or WARM, ROUNDED, REJECTED, UNKNOWN, DIVE, DIVE_CHAINS (plan: the rounding with moves along chains), DIVE_LAST (plan: the plain rounding past the deadline)
    colgen_integer_s: float  # seconds after the generation (integer placement, checks)
    colgen_converged: bool  # no column with a positive reduced value is left (proven)
    colgen_lp_value: float | None  # the last restricted master's LP value (placement: rounded to 3 places)
    colgen_rounded_value: int  # placement only: the placed value of the LP's rounding (diving)
    colgen_stopped: str  # why the generation stopped early
    colgen_resumed_rounds: int  # plan only: rounds after the rounding came within NEAR_LP of the LP (CP-SAT's time)
    colgen_covered_deadline: bool  # plan only: the columns cover every kind, the caller's later deadline taken
    colgen_warm_kept: str  # placement only: why the warm start's placement is kept
    colgen_fast_classes: int  # classes priced by the compact model (colgen_pricing.py)
    colgen_fast_not_used: str  # placement only: why the first class without the compact model lacks it
    colgen_dominated_classes: int  # plan only: classes priced by a cheaper class that holds all they hold
    colgen_fast_checked: int  # compact pricing's columns checked by the one model
    colgen_fast_disagreed: int  # of those, rejected by the one model (the class then priced by it)
    colgen_fast_undecided: int  # of those, not decided in time (not used)
    colgen_substitutions: int  # (larger kind, smaller kind) pairs whose places may be exchanged
    colgen_substitution_rejected: bool  # a realized substitution the one model rejected (solved without)
    colgen_substituted_pods: int  # pods placed in places of a larger kind


class PricingCounts(TypedDict, total=False):
    """One class's pricing counts (`price_classes`), added into `ColgenStats` by key."""

    colgen_fast_checked: int
    colgen_fast_disagreed: int
    colgen_fast_undecided: int
