"""Object sets for `place --expect`: today's cluster with a forecast's pods added, and the cluster
as a placement leaves it (today's placed pods bound, their claims allocated)."""

from __future__ import annotations

import dataclasses
from typing import Any

from draopt.kube.loader import ObjectSet, parse_object

# The kinds a forecast brings along with its pods, added where today's input has none of the name.
_ALONG = ("claim_templates", "resource_claims", "pod_groups", "workloads", "composite_pod_groups")
_CLUSTER_WIDE = ("priority_classes", "namespaces", "device_classes")


def _key(obj) -> tuple[str, str | None, str]:
    return (obj.kind, getattr(obj, "namespace", None), obj.name)


def with_forecast(base: ObjectSet, forecast: ObjectSet) -> ObjectSet:
    """`base` with the forecast's pods pending, and the objects they name that `base` lacks."""
    merged = dataclasses.replace(
        base,
        pods=list(base.pods) + list(forecast.pods),
        creation_order={**base.creation_order, **forecast.creation_order},
        simulated_groups=set(base.simulated_groups) | set(forecast.simulated_groups),
    )
    for attr in _ALONG + _CLUSTER_WIDE:
        have = {_key(o) for o in getattr(base, attr)}
        extra = [o for o in getattr(forecast, attr) if _key(o) not in have]
        setattr(merged, attr, list(getattr(base, attr)) + extra)
    return merged


def placed_state(objects: ObjectSet, outcome) -> ObjectSet:
    """The input as the placement `outcome` (a draopt.placement.PlaceOutcome) leaves it: the placed
    pods bound to their nodes, their claims allocated, evicted pods gone, and no pod pending (today's
    pods it did not place are left out: the forecast is counted on what the placement left free)."""
    written: dict[str, dict[str, Any]] = {"Pod": {}, "ResourceClaim": {}}
    for i, doc in enumerate(outcome.objects):
        kind = doc.get("kind")
        if kind in written:
            obj = parse_object(doc, f"<placement> object {i + 1}")
            written[kind][f"{obj.namespace}/{obj.name}"] = obj
    evicted = {e.pod for e in outcome.result.evictions}
    placed = {p.pod for p in outcome.result.pods if p.placed}
    pods = []
    for pod in objects.pods:
        key = f"{pod.namespace}/{pod.name}"
        if key in evicted:
            continue
        if key in placed:
            pods.append(written["Pod"][key])
        elif pod.spec.node_name:
            pods.append(pod)
    claims = [written["ResourceClaim"].pop(f"{c.namespace}/{c.name}", c) for c in objects.resource_claims]
    claims += list(written["ResourceClaim"].values())  # claims made from templates
    return dataclasses.replace(objects, pods=pods, resource_claims=claims)


def refuse_clashes(today: ObjectSet, forecast: ObjectSet) -> None:
    """A forecast object of the same kind and name as one of today's that is not the same object:
    its pods would use today's (a template's other spec, a gang already half placed). Refused,
    named, rather than merged silently."""
    from draopt.errors import InputError

    pods = {f"{p.namespace}/{p.name}" for p in today.pods}
    for pod in forecast.pods:
        if f"{pod.namespace}/{pod.name}" in pods:
            raise InputError(
                f"--expect: Pod {pod.namespace}/{pod.name}: metadata.name: a pod of today's input has the name "
                "draopt gives this forecast pod: rename one of them"
            )
    for attr in _ALONG:
        have = {_key(o): o for o in getattr(today, attr)}
        for obj in getattr(forecast, attr):
            same = have.get(_key(obj))
            if same is None:
                continue
            groups = attr in ("pod_groups", "workloads", "composite_pod_groups")
            if groups or same.to_k8s().get("spec") != obj.to_k8s().get("spec"):
                where = f"{obj.namespace}/{obj.name}" if getattr(obj, "namespace", None) else obj.name
                raise InputError(
                    f"--expect: {obj.kind} {where}: metadata.name: today's input has a {obj.kind} of this name "
                    f"{'(a gang cannot be both today and forecast)' if groups else 'with another spec'}: "
                    "give the forecast's its own name"
                )
