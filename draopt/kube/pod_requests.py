"""What kube-scheduler counts of a pod: its requests (NodeResourcesFit's PodRequests), and the
containers that use a claim.

Used by the expansion (draopt.kube.workload) and by the devices' node-allocatable resources
(draopt.kube.node_allocatable).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable

from draopt.kube.models.workload import Container, Pod, ResourceRequirements
from draopt.kube.quantity import Quantity

# PodLevelResources: resources a pod-level `spec.resources` may set.
_POD_LEVEL = ("cpu", "memory")


def q(value: Any) -> Fraction:
    """Exact value of a Kubernetes quantity string (cpu in cores, memory in bytes)."""
    return Quantity.parse(str(value)).value


def _add(into: dict[str, Fraction], more: dict[str, Fraction]) -> None:
    for k, v in more.items():
        old = into.get(k)
        into[k] = v if old is None else old + v  # (Fraction(0) + v is v: a Fraction sum is Python, slow)


def _max(into: dict[str, Fraction], other: dict[str, Fraction]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def effective_container_requests(res: ResourceRequirements | None) -> dict[str, str]:
    """Requests after API defaulting: a resource with a limit and no request requests its limit."""
    if res is None:
        return {}
    out = dict(res.limits)
    out.update(res.requests)
    return out


def _parsed(reqs: dict[str, str], skip: set[str]) -> dict[str, Fraction]:
    return {k: q(v) for k, v in reqs.items() if k not in skip}


def pod_requests(pod: Pod, skip: Iterable[str] = (), *, pod_level: bool = True) -> dict[str, Fraction]:
    """kube-scheduler's PodRequests (component-helpers/resource): sum(containers) and sidecars
    (restartable init containers) against each init container's peak; pod-level requests for
    cpu/memory when set (unless `pod_level` is False: SkipPodLevelResources); plus
    spec.overhead. Resources in `skip` are left out."""
    skip = set(skip)
    reqs: dict[str, Fraction] = {}
    for c in pod.spec.containers:
        _add(reqs, _parsed(effective_container_requests(c.resources), skip))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for c in pod.spec.init_containers:
        creqs = _parsed(effective_container_requests(c.resources), skip)
        if c.restart_policy == "Always":
            _add(reqs, creqs)
            _add(sidecars, creqs)
            peak = dict(sidecars)
        else:
            peak = dict(creqs)
            _add(peak, sidecars)
        _max(init_peak, peak)
    _max(reqs, init_peak)
    level = effective_container_requests(pod.spec.resources) if pod_level else {}
    for name in _POD_LEVEL:
        if name in level and name not in skip:
            reqs[name] = q(level[name])
    _add(reqs, _parsed(dict(pod.spec.overhead), skip))
    return reqs


def _resources_key(res: ResourceRequirements | None) -> tuple | None:
    """What of `res` pod_requests reads, in order (equal keys: equal requests, in the same order)."""
    return None if res is None else (tuple(res.requests.items()), tuple(res.limits.items()))


def _container_requests(c: Container) -> tuple:
    return (c.restart_policy, _resources_key(c.resources))


def requests_shape(pod: Pod) -> tuple | None:
    """Everything of a pod that its requests are worked out from (containers', init containers'
    with their restart policies, pod-level and overhead requests), as a key: pods alike in it get
    the same requests (pods of one template differ in names only). None when a value is not
    hashable."""
    spec = pod.spec
    key = (
        tuple(map(_container_requests, spec.init_containers)),
        tuple(map(_container_requests, spec.containers)),
        _resources_key(spec.resources),
        tuple(spec.overhead.items()),
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


def containers_referencing(pod: Pod, claim_name: str) -> int:
    """How many containers (init and regular) list `claim_name` in resources.claims."""
    return sum(
        1
        for c in list(pod.spec.init_containers) + list(pod.spec.containers)
        if any(r.name == claim_name for r in c.resources.claims)
    )
