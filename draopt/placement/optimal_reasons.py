"""Why the optimal placement leaves a pod pending, said of the optimum's own final state.

The model's decode (draopt.model.solution) can only copy first-fit's reasons, which describe the
state first-fit left: other pods on other nodes. Here the pods the optimum places are bound and
its claims allocated (the written objects, as `place -o yaml` gives them), and the scheduler's
filters are run again for the pods left pending, in queue order, without preemption: their
reasons (and device explanations) are those of the optimum's final state."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable

from draopt.cluster.result import PlacementResult
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.kube.models import Pod, ResourceClaim


def _key(doc: dict[str, Any]) -> str:
    meta = doc["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def final_state(objects: ObjectSet, result: PlacementResult, written: list[dict[str, Any]]) -> ObjectSet:
    """The input with the placement applied: placed pods bound, evicted pods gone, the claims as
    written (allocated, reserved, or deallocated)."""
    evicted = {e.pod for e in result.evictions}
    placed = {p.pod for p in result.pods if p.placed}
    pods = {_key(d): d for d in written if d["kind"] == "Pod" and _key(d) in placed}
    claims = {_key(d): d for d in written if d["kind"] == "ResourceClaim"}
    new_pods = []
    for pod in objects.pods:
        key = f"{pod.namespace}/{pod.name}"
        if key not in evicted:
            new_pods.append(Pod.model_validate(pods[key]) if key in pods else pod)
    kept = [c for c in objects.resource_claims if f"{c.namespace}/{c.name}" not in claims]
    return dataclasses.replace(
        objects,
        pods=new_pods,
        resource_claims=kept + [ResourceClaim.model_validate(d) for d in claims.values()],
    )


def reason_in_final_state(
    objects: ObjectSet,
    features: Features,
    result: PlacementResult,
    written: list[dict[str, Any]],
    build_cluster: Callable[..., Any],
    scheduler: Callable[..., Any],
) -> bool:
    """Replace the reasons (and explanations) of `result`'s pending pods by those of its final
    state; returns whether any pod was pending. A pod that first-fit would place in that state
    (the optimum honours a rule this replay does not, such as a gang's minCount) says so.
    `build_cluster(objects, workload, features)` and `scheduler(cluster, workload)` (the profile's
    scheduler, or None) come from draopt.placement, which calls this."""
    pending = [pl for pl in result.pods if not pl.placed]
    if not pending:
        return False
    from draopt.allocation.explain import explain_failed_pod
    from draopt.cluster.firstfit import simulate
    from draopt.kube.workload import expand

    state = final_state(objects, result, written)
    workload = expand(state, features)
    cluster = build_cluster(state, workload, features)
    sched = scheduler(cluster, workload)
    replay = {p.pod: p for p in simulate(cluster, workload, scheduler=sched, explain_failures=explain_failed_pod).pods}
    for pl in pending:
        again = replay.get(pl.pod)
        if again is None:
            continue
        if again.placed:
            pl.reasons = Counter(
                {
                    f"not placed by the optimum (it would fit on {again.node} in the optimum's final state)": len(
                        cluster.nodes
                    )
                }
            )
            pl.explanation = ""
        else:
            pl.reasons = Counter(again.reasons)
            pl.explanation = again.explanation
    return True
