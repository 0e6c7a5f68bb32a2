"""`place --policy lp-guided --expect FORECAST`: today's pending pods placed so that a forecast
workload still fits, and how much of the forecast fits after each policy.

For each policy (first-fit: kube-scheduler with the given profile, the default one unless
--scheduler-config; optimal; lp-guided) today's pods are placed, then the forecast is counted on
what is left: the optimal placement model (draopt.placement.optimal.optimize) places as many
forecast pods as it can on the cluster as the policy left it, every forecast pod weighing 1, and
its bound says how many could fit at most (`status` OPTIMAL: the count is proven).

lp-guided places today's pods and the forecast in one model (the same optimal model, no other
encoding): today's pods weigh more than the whole forecast (weight(priority) * (F + 1) for F
forecast pods), so the model places what optimal would of today's pods first, then as many
forecast pods as fit beside them; the forecast pods are then dropped and today's placement kept.
Should the joint model, within its time limit, place less of today's pods than optimal did,
optimal's placement is kept, said in a note.
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any, Iterable

from draopt.cluster.result import PlacementResult, weight
from draopt.errors import InputError
from draopt.kube.loader import ObjectSet
from draopt.studies.forecast_input import LeftOut, read_forecast, shapes_that_fit
from draopt.studies.forecast_merge import placed_state, refuse_clashes, with_forecast

POLICIES = ("first-fit", "optimal", "lp-guided")


@dataclasses.dataclass
class ForecastFit:
    """How much of the forecast fits after one policy placed today's pods."""

    policy: str
    today_placed: int  # today's pending pods the policy placed
    today_pods: int
    fits: int  # forecast pods the optimal model placed on what was left
    bound: int  # the most forecast pods that could fit (the solver's proven bound)
    status: str  # the forecast solve's status: OPTIMAL (fits == bound, proven), FEASIBLE, UNKNOWN
    solve_s: float

    @property
    def gap(self) -> float:
        return round((self.bound - self.fits) / self.bound, 4) if self.bound else 0.0

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["gap"] = self.gap
        return out


@dataclasses.dataclass
class ForecastReport:
    """`place --expect`'s answer: the forecast's size, per policy how much of it fits, the shapes
    left out and the notes."""

    forecast_pods: int  # forecast pods counted (after the shapes left out)
    fits: list[ForecastFit]
    left_out: list[LeftOut]
    notes: list[str] = dataclasses.field(default_factory=list)
    time_limit: float = 60.0

    def fit(self, policy: str) -> ForecastFit:
        return next(f for f in self.fits if f.policy == policy)

    def to_json(self) -> dict[str, Any]:
        return {
            "forecast_pods": self.forecast_pods,
            "time_limit": self.time_limit,
            "policies": [f.to_json() for f in self.fits],
            "left_out": [x.to_json() for x in self.left_out],
            "notes": list(self.notes),
        }

    def table(self) -> str:
        cols = ["policy", "today placed", "forecast fits", "bound", "gap", "status"]
        rows = [
            [
                f.policy,
                f"{f.today_placed} of {f.today_pods}",
                f"{f.fits} of {self.forecast_pods}",
                str(f.bound),
                f"{f.gap:.2%}",
                f.status,
            ]
            for f in self.fits
        ]
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
        return "\n".join(lines)


def place_expecting(
    objects: ObjectSet,
    expect: str | Iterable[str] | ObjectSet,
    *,
    policy: str = "lp-guided",
    features=None,
    time_limit: float = 60.0,
    scheduler_config=None,
    seed: int = 0,
    tie_break: str = "random",
):
    """Today's pods placed by `policy`, with ForecastReport in the outcome's `forecast`: each
    policy's placement and how much of the forecast `expect` (paths of a trace CSV or manifests, or
    an ObjectSet of forecast pods as draopt.studies.forecast_input.read_forecast makes it) fits after
    it. Every solve (optimal, the joint model, each count) gets `time_limit` seconds."""
    from draopt.kube.features import Features
    from draopt.placement import place

    if policy not in POLICIES:
        raise InputError(f"--policy: unknown placement policy {policy!r} (known: {', '.join(POLICIES)})")
    features = features or Features.from_gates()
    forecast = expect if isinstance(expect, ObjectSet) else read_forecast(expect)
    refuse_clashes(objects, forecast)
    kept, left_out = shapes_that_fit(objects, forecast, features)
    flags = dict(features=features, scheduler_config=scheduler_config, seed=seed, tie_break=tie_break)
    outcomes = {
        "first-fit": place(objects, policy="first-fit", **flags),
        "optimal": place(objects, policy="optimal", time_limit=time_limit, **flags),
    }
    notes = [x.note() for x in left_out]
    fits = {name: forecast_fit(name, objects, outcomes[name], kept, features, time_limit) for name in outcomes}
    guided = lp_guided(
        objects, kept, outcomes["optimal"], fits["optimal"], features, time_limit, notes, scheduler_config
    )
    outcomes["lp-guided"], hint = guided
    fits["lp-guided"] = forecast_fit("lp-guided", objects, outcomes["lp-guided"], kept, features, time_limit, hint)
    report = ForecastReport(len(kept.pods), [fits[name][0] for name in POLICIES], left_out, notes, time_limit)
    chosen = outcomes[policy]
    chosen.forecast = report
    return chosen


def forecast_fit(name: str, objects: ObjectSet, outcome, forecast: ObjectSet, features, time_limit: float, hint=None):
    """The forecast counted on the cluster as `outcome` leaves it: (`ForecastFit`, the count's
    PlacementResult or None without forecast pods). `hint`: forecast placements to start from."""
    t0 = time.perf_counter()
    today = [p for p in outcome.result.pods if p.hold is None and not p.skipped]
    placed = sum(1 for p in today if p.placed)
    if not forecast.pods:
        return ForecastFit(name, placed, len(today), 0, 0, "OPTIMAL", 0.0), None
    result = count_forecast(placed_state(objects, outcome), forecast, features, time_limit, hint).result
    fits = sum(1 for p in result.pods if p.placed)
    bound = int(result.stats.get("bound") or fits)
    status = str(result.stats.get("status") or "UNKNOWN")
    if status == "OPTIMAL":
        bound = fits
    fit = ForecastFit(name, placed, len(today), fits, max(bound, fits), status, round(time.perf_counter() - t0, 3))
    return fit, result


def count_forecast(state: ObjectSet, forecast: ObjectSet, features, time_limit: float, hint=None):
    """The optimal model on `state` (nothing pending) with the forecast's pods pending, each weighing
    1, no preemption: a draopt.placement.PlaceOutcome whose placed pods are the forecast pods that
    fit (the outcome's cluster and workload the checker's). `hint`: a PlacementResult of the
    forecast pods the model starts from (default: first-fit's)."""
    from draopt.placement import PlaceOutcome, _no_gc_pauses, build_cluster, leave_other_schedulers_pods
    from draopt.placement.optimal import optimize
    from draopt.kube.workload import expand

    with _no_gc_pauses():
        merged = with_forecast(state, forecast)
        workload = expand(merged, features)
        cluster = build_cluster(merged, workload, features)
        leave_other_schedulers_pods(cluster, workload, None)
        for demand in workload.pending:
            demand.priority = 0  # each forecast pod counts 1
        result = optimize(cluster, workload, time_limit=time_limit, first_fit=hint)
    return PlaceOutcome(result, workload, cluster, [])


def lp_guided(objects: ObjectSet, forecast: ObjectSet, optimal, optimal_fit, features, time_limit, notes, config=None):
    """Today's pods placed by the joint model (module docstring), started from optimal's placement
    and the forecast pods its count fitted beside it: (a PlaceOutcome of today's pods alone, as
    `place` returns it, its workload and cluster without the forecast; the forecast pods the joint
    model placed, a PlacementResult to start their count from, or None)."""
    from draopt.placement import PlaceOutcome, _no_gc_pauses, _skip_deleting, build_cluster, output_objects
    from draopt.placement import waiting_placements
    from draopt.kube.workload import expand

    _fit, counted = optimal_fit
    if not forecast.pods or counted is None:
        notes.append("lp-guided: no forecast pod left to keep room for: optimal's placement")
        return _renamed(optimal, "lp-guided"), None
    start = PlacementResult("hint", optimal.result.pods + counted.pods, {**optimal.result.claims, **counted.claims})
    with _no_gc_pauses():
        joint, beside = _joint_solve(objects, forecast, features, time_limit, start, config)
        if joint.weighted_placed() < optimal.result.weighted_placed():
            notes.append(
                f"lp-guided: within the time limit the joint model placed less of today's pods "
                f"(weighted {joint.weighted_placed()}) than optimal ({optimal.result.weighted_placed()}): "
                "optimal's placement is kept"
            )
            return _renamed(optimal, "lp-guided"), None
        workload = expand(objects, features)
        deleting = _skip_deleting(workload)
        cluster = build_cluster(objects, workload, features)
        joint.pods += deleting + waiting_placements(workload)
        joint.stats["nodes"] = len(cluster.nodes)
        group_uids = {f"{g.namespace}/{g.name}": g.metadata.uid for g in objects.pod_groups if g.metadata.uid}
        written = output_objects(joint, workload, group_uids)
    return PlaceOutcome(joint, workload, cluster, written), beside


def _joint_solve(objects: ObjectSet, forecast: ObjectSet, features, time_limit: float, start, config):
    """The joint model, from the placement `start` (every pending pod of today and of the forecast):
    (today's pending pods' placement, with their own priorities and figures; the forecast pods it
    placed beside them, as a PlacementResult)."""
    from draopt.placement import _skip_deleting, build_cluster, leave_other_schedulers_pods
    from draopt.placement.optimal import optimize
    from draopt.kube.workload import expand

    merged = with_forecast(objects, forecast)
    workload = expand(merged, features)
    _skip_deleting(workload)
    cluster = build_cluster(merged, workload, features)
    leave_other_schedulers_pods(cluster, workload, config)
    expected = {f"{p.namespace}/{p.name}" for p in forecast.pods}
    scale = sum(1 for d in workload.pending if d.key in expected) + 1
    own = {d.key: d.priority for d in workload.pending}
    for d in workload.pending:  # today's pods before the whole forecast; each forecast pod 1
        d.priority = 0 if d.key in expected else weight(d.priority) * scale - 1
    try:
        result = optimize(cluster, workload, time_limit=time_limit, first_fit=start)
    finally:
        for d in workload.pending:
            d.priority = own[d.key]
    today = [dataclasses.replace(p, priority=own[p.pod]) for p in result.pods if p.pod not in expected]
    beside = [dataclasses.replace(p, priority=0) for p in result.pods if p.pod in expected]
    out = PlacementResult("lp-guided", today, _claims_of(today, result, workload))
    out.optimal_stats.update(_today_figures(result.optimal_stats, scale, out, beside))
    return out, PlacementResult("lp-guided", beside, _claims_of(beside, result, workload))


def _claims_of(pods: list, result: PlacementResult, workload) -> dict:
    keys = {use.key for p in pods if p.placed for use in workload.pod(p.pod).claims}
    return {k: v for k, v in result.claims.items() if k in keys}


def _today_figures(stats: dict, scale: int, today: PlacementResult, beside: list) -> dict[str, Any]:
    """The joint solve's figures for today's pods: the bound of today's weight is the joint bound
    divided by the scale (the whole forecast weighs less than one unit of it)."""
    placed, bound = today.weighted_placed(), int(stats.get("bound") or 0) // scale
    bound = max(bound, placed)
    status = str(stats.get("status") or "UNKNOWN")
    out = {
        "status": status,
        "objective": placed,
        "bound": bound,
        "gap": round((bound - placed) / bound, 4) if bound else 0.0,
        "solve_s": stats.get("solve_s"),
        "joint_forecast_placed": sum(1 for p in beside if p.placed),
        "joint_forecast_pods": len(beside),
    }
    if stats.get("fallback"):
        # (the model's "first-fit" here is the start: optimal's placement and its forecast count)
        out["fallback"] = re.sub(r"first-fit's placement( \([^)]*\))?", "optimal's placement", str(stats["fallback"]))
    proven = "proven" if status == "OPTIMAL" else "not proven"
    out["summary"] = (
        f"today's pods placed first ({placed} weighted, bound {bound}), then "
        f"{out['joint_forecast_placed']} of {len(beside)} forecast pods beside them ({proven})"
    )
    return out


def _renamed(outcome, policy: str):
    """`outcome` with its result under another policy's name (a copy; the outcome is not changed)."""
    result = dataclasses.replace(outcome.result, policy=policy, stats=dict(outcome.result.stats))
    return dataclasses.replace(outcome, result=result)
