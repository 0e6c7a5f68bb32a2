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
import time
from typing import Any, Iterable

from draopt.cluster.result import PlacementResult, weight
from draopt.errors import InputError
from draopt.kube.loader import ObjectSet
from draopt.studies.forecast_input import PREFIX, LeftOut, read_forecast, shapes_that_fit
from draopt.studies.forecast_merge import placed_state, with_forecast

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
    kept, left_out = shapes_that_fit(objects, forecast, features)
    flags = dict(features=features, scheduler_config=scheduler_config, seed=seed, tie_break=tie_break)
    outcomes = {
        "first-fit": place(objects, policy="first-fit", **flags),
        "optimal": place(objects, policy="optimal", time_limit=time_limit, **flags),
    }
    notes = [x.note() for x in left_out]
    outcomes["lp-guided"] = lp_guided(objects, kept, outcomes["optimal"], features, time_limit, notes)
    fits = [forecast_fit(name, objects, outcomes[name], kept, features, time_limit) for name in POLICIES]
    report = ForecastReport(len(kept.pods), fits, left_out, notes, time_limit)
    chosen = outcomes[policy]
    chosen.forecast = report
    return chosen


def forecast_fit(name: str, objects: ObjectSet, outcome, forecast: ObjectSet, features, time_limit: float):
    """The forecast counted on the cluster as `outcome` leaves it (`ForecastFit`)."""
    t0 = time.perf_counter()
    today = [p for p in outcome.result.pods if p.hold is None and not p.skipped]
    placed = sum(1 for p in today if p.placed)
    if not forecast.pods:
        return ForecastFit(name, placed, len(today), 0, 0, "OPTIMAL", 0.0)
    result = count_forecast(placed_state(objects, outcome), forecast, features, time_limit).result
    fits = sum(1 for p in result.pods if p.placed)
    bound = int(result.stats.get("bound") or fits)
    status = str(result.stats.get("status") or "UNKNOWN")
    if status == "OPTIMAL":
        bound = fits
    return ForecastFit(name, placed, len(today), fits, bound, status, round(time.perf_counter() - t0, 3))


def count_forecast(state: ObjectSet, forecast: ObjectSet, features, time_limit: float):
    """The optimal model on `state` (nothing pending) with the forecast's pods pending, each weighing
    1, no preemption: a draopt.placement.PlaceOutcome whose placed pods are the forecast pods that
    fit (the outcome's cluster and workload the checker's)."""
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
        result = optimize(cluster, workload, time_limit=time_limit)
    return PlaceOutcome(result, workload, cluster, [])


def _is_forecast(key: str) -> bool:
    return key.split("/", 1)[1].startswith(PREFIX)


def lp_guided(objects: ObjectSet, forecast: ObjectSet, optimal, features, time_limit: float, notes: list[str]):
    """Today's pods placed by the joint model (module docstring): a PlaceOutcome of today's pods
    alone, as `place` returns it (its workload and cluster without the forecast)."""
    from draopt.placement import PlaceOutcome, _no_gc_pauses, build_cluster, output_objects, waiting_placements
    from draopt.kube.workload import expand

    if not forecast.pods:
        notes.append("lp-guided: no forecast pod left to keep room for: optimal's placement")
        return _renamed(optimal, "lp-guided")
    with _no_gc_pauses():
        joint = _joint_solve(objects, forecast, features, time_limit)
        if joint.weighted_placed() < optimal.result.weighted_placed():
            notes.append(
                f"lp-guided: within the time limit the joint model placed less of today's pods "
                f"(weighted {joint.weighted_placed()}) than optimal ({optimal.result.weighted_placed()}): "
                "optimal's placement is kept"
            )
            return _renamed(optimal, "lp-guided")
        workload = expand(objects, features)
        cluster = build_cluster(objects, workload, features)
        joint.pods.extend(waiting_placements(workload))
        joint.stats["nodes"] = len(cluster.nodes)
        group_uids = {f"{g.namespace}/{g.name}": g.metadata.uid for g in objects.pod_groups if g.metadata.uid}
        written = output_objects(joint, workload, group_uids)
    return PlaceOutcome(joint, workload, cluster, written)


def _joint_solve(objects: ObjectSet, forecast: ObjectSet, features, time_limit: float) -> PlacementResult:
    """The joint model's placement of today's pending pods (their own priorities), its figures those
    of today's pods: the forecast pods it placed beside them in `joint_forecast_placed`."""
    from draopt.placement import build_cluster, leave_other_schedulers_pods
    from draopt.placement.optimal import optimize
    from draopt.kube.workload import expand

    merged = with_forecast(objects, forecast)
    workload = expand(merged, features)
    cluster = build_cluster(merged, workload, features)
    leave_other_schedulers_pods(cluster, workload, None)
    scale = sum(1 for d in workload.pending if _is_forecast(d.key)) + 1
    own = {d.key: d.priority for d in workload.pending}
    for d in workload.pending:  # today's pods before the whole forecast; each forecast pod 1
        d.priority = 0 if _is_forecast(d.key) else weight(d.priority) * scale - 1
    try:
        result = optimize(cluster, workload, time_limit=time_limit)
    finally:
        for d in workload.pending:
            d.priority = own[d.key]
    today = [dataclasses.replace(p, priority=own[p.pod]) for p in result.pods if not _is_forecast(p.pod)]
    keys = {use.key for p in today if p.placed for use in workload.pod(p.pod).claims}
    claims = {k: v for k, v in result.claims.items() if k in keys}
    out = PlacementResult("lp-guided", today, claims, {})
    out.stats.update(_today_figures(result.stats, scale, out, len(result.pods) - len(today)))
    return out


def _today_figures(stats: dict, scale: int, today: PlacementResult, forecast_pods: int) -> dict[str, Any]:
    """The joint solve's figures for today's pods: the bound of today's weight is the joint bound
    divided by the scale (the whole forecast weighs less than one unit of it)."""
    placed, bound = today.weighted_placed(), int(stats.get("bound") or 0) // scale
    bound = max(bound, placed)
    joint_objective = int(stats.get("objective") or 0)
    status = str(stats.get("status") or "UNKNOWN")
    out = {
        "status": status,
        "objective": placed,
        "bound": bound,
        "gap": round((bound - placed) / bound, 4) if bound else 0.0,
        "solve_s": stats.get("solve_s"),
        "joint_forecast_placed": joint_objective - placed * scale,
        "joint_forecast_pods": forecast_pods,
    }
    proven = "proven" if status == "OPTIMAL" else "not proven"
    out["summary"] = (
        f"today's pods placed first ({placed} weighted, bound {bound}), then "
        f"{out['joint_forecast_placed']} of {forecast_pods} forecast pods beside them ({proven})"
    )
    return out


def _renamed(outcome, policy: str):
    """`outcome` with its result under another policy's name (a copy; the outcome is not changed)."""
    result = dataclasses.replace(outcome.result, policy=policy, stats=dict(outcome.result.stats))
    return dataclasses.replace(outcome, result=result)
