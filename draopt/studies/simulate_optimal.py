"""The model the simulator's optimal policies place with (draopt.studies.simulate's
`optimal-batch` and `--offline-optimum`): the residual cluster written as Kubernetes objects (only
the nodes a batch can use), placed by the one placement model (draopt.placement.optimal), the
answer read back into the simulator's state."""

from __future__ import annotations

import copy
import math
import time
import uuid
from dataclasses import dataclass
from fractions import Fraction
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

import numpy as np

from draopt.errors import InputError

if TYPE_CHECKING:
    from draopt.studies.sim_cluster import Shape, State


def _quantity(k: float, scale: int) -> str:
    """An exact integer count of 1/scale units as a Kubernetes quantity."""
    v = Fraction(int(round(k)), scale)
    if v.denominator == 1:
        return str(v.numerator)
    for suffix, unit in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        if unit % v.denominator == 0:
            return f"{v.numerator * unit // v.denominator}{suffix}"
    raise InputError(f"simulate: {v} cannot be written as a Kubernetes quantity")


def relevant_nodes(st: State, batch: list[Shape], keep: AbstractSet[int] = frozenset()) -> list[int]:
    """Nodes the optimal model needs for `batch`, two exact reductions: a node where no pod of
    the batch fits alone can take none; of nodes in the same state (kind of node, free
    resources, capacity left per device), no more can be used than there are pods of the batch
    that fit one of them alone (each used node holds at least one)."""
    c = st.c
    fitting = np.zeros(c.n, dtype=np.int64)  # pods of the batch that fit the node alone
    per_shape: dict[int, list] = {}
    for s in batch:
        per_shape.setdefault(s.index, [s, 0])[1] += 1
    for s, n in per_shape.values():
        fitting += n * st.feasible(s)[0]
    out: list[int] = []
    per_state: dict[bytes, int] = {}
    for i in np.flatnonzero(fitting):
        key = c.group[i].tobytes() + st.free[i].tobytes() + st.left[i].tobytes()
        k = per_state.get(key, 0)
        if k < fitting[i] or i in keep:
            per_state[key] = k + 1
            out.append(int(i))
    return out


# A placed pod is worth its device capacity request in units of 1/GPU_FIRST (so pods that
# request no device, worth 1 as every placed pod, weigh 1/GPU_FIRST of a unit of capacity: the
# placed value is the capacity placed, then those pods), unless that would bring a priority
# over MAX_PRIORITY.
GPU_FIRST = 1000
MAX_PRIORITY = 10**9  # Kubernetes priorities are 32-bit integers


def value_scale(batch: list[Shape]) -> int:
    """The units of a unit of device capacity in the placed value of `batch` (see GPU_FIRST)."""
    top = max([round(s.request) for s in batch] + [1])
    return max(1, min(GPU_FIRST, MAX_PRIORITY // top))


def residual_objects(
    st: State,
    shape_counts: list[tuple[Shape, str]],
    *,
    priority: bool = True,
    keep: AbstractSet[int] = frozenset(),
    scale: int = 1,
):
    """What is left of the cluster as Kubernetes objects, and pods to place on it: every node
    with its free resources as allocatable, every device with its capacity left (no request
    policy: a pod asks for what one allocation consumes), pods asking for that consumption.
    `priority`: a pod's weight in the placed value (draopt.cluster.result.weight) is its
    request times `scale` (at least 1)."""
    c = st.c
    docs: list[dict] = [cl.to_k8s() for cl in c.objects.device_classes]
    for i in relevant_nodes(st, [s for s, _ in shape_counts], keep):
        docs += _node_docs(st, i)
    templates: dict[int, str] = {}
    for k, (s, pod_name) in enumerate(shape_counts):
        pod = _pod_doc(s, pod_name, k)
        if priority:
            pod["spec"]["priority"] = max(0, int(round(s.request)) * scale - 1)
        if s.claim_spec is not None:
            if s.index not in templates:
                templates[s.index] = f"shape-{s.index}"
                docs.append(_claim_template_doc(st.c, s, templates[s.index]))
            pod["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": templates[s.index]}]
            pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
        docs.append(pod)
    return _object_set(docs)


def _node_docs(st: State, i: int) -> list[dict]:
    """Node i with its free resources as allocatable, and its slices with the capacity left."""
    c = st.c
    name = c.nodes[i]
    free = st.free[i]
    allocatable = {}
    for j, r in enumerate(c.resources):
        if math.isfinite(c.alloc[i, j]):
            allocatable[r] = _quantity(max(free[j], 0.0), c.res_scale[j])
    node = c.node_objects[i].to_k8s()
    node["status"] = {"allocatable": allocatable}
    docs = [node]
    pools: dict[tuple[str, str], list[dict]] = {}
    for e in c.devices[i].devices:
        left = st.left[i, e.index]
        if left <= 0:
            continue
        d = e.device.to_k8s()
        d["capacity"] = {c.capacity_name: {"value": _quantity(left, c.cap_scale)}}
        pools.setdefault((e.pool.driver, e.pool.name), []).append(d)
    for (driver, pool), devs in sorted(pools.items()):
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-{driver}-{pool}"[:253]},
                "spec": {
                    "driver": driver,
                    "nodeName": name,
                    "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                    "devices": devs,
                },
            }
        )
    return docs


def _pod_doc(s: Shape, pod_name: str, k: int) -> dict[str, Any]:
    """A pod of shape `s`, the k-th to arrive."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name, "namespace": "sim", "creationTimestamp": _ts(k)},
        "spec": {
            **copy.deepcopy(s.placement),
            "containers": [
                {
                    "name": "main",
                    "image": "sim",
                    "resources": {
                        "requests": {
                            r: str(v) if v.denominator == 1 else _quantity(float(v * 10**9), 10**9)
                            for r, v in s.resources.items()
                            if r != "pods"
                        }
                    },
                }
            ],
        },
    }


def _claim_template_doc(c, s: Shape, name: str) -> dict[str, Any]:
    """The claim of shape `s` as a template asking for what one allocation consumes."""
    spec = copy.deepcopy(s.claim_spec)
    assert spec is not None  # a shape with a claim
    ex = spec["devices"]["requests"][0]["exactly"]
    amounts = s.cons[s.compat]
    if amounts.size and (amounts != amounts[0]).any():
        raise InputError(
            f"simulate: claims of pod {s.pods[0]} consume different amounts on "
            "different devices: the optimal policies need one amount"
        )
    ex.setdefault("capacity", {}).setdefault("requests", {})[c.capacity_name] = _quantity(
        float(amounts[0]) if amounts.size else 0.0, c.cap_scale
    )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "sim"},
        "spec": {"spec": spec},
    }


def _ts(k: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_672_531_200 + k))


def _object_set(docs: list[dict], source: str = "<simulate>"):
    """Objects made here, parsed as the loader parses them (without a YAML round trip)."""
    from draopt.kube.loader import ObjectSet, parse_object

    objects = ObjectSet(made_by_draopt=True)
    for i, doc in enumerate(docs):
        objects.add(parse_object(doc, f"{source} object {i + 1}"))
    return objects


@dataclass
class OptimalSolve:
    """The optimal model's answer for a batch (`solve_optimal`), in units of device capacity."""

    placed_request: float  # device capacity the placed pods request
    bound: float  # the solver's bound of the placed value (0: none)
    objective: float  # the placed value found (pods without devices add 1/value_scale each)
    gap: float | None  # the solver's relative gap
    status: str | None  # the solver's status (OPTIMAL, FEASIBLE, ...)
    solve_s: float | None  # the solve's wall time
    colgen: dict[str, Any]  # column generation's figures (colgen_*), the values in capacity units


def solve_optimal(
    st: State, batch: list[Shape], *, time_limit: float, apply: bool = True, hint: list | None = None
) -> OptimalSolve:
    """Place `batch` on what is left with draopt's optimal model, maximising device capacity
    placed (then pods without devices: GPU_FIRST); update the state when `apply`. `hint`: a placement of the batch ((node, devices) or
    None per pod) the model starts from instead of first-fit's (it never returns less).
    Returns the solver's summary."""
    from draopt.placement import place

    names = [f"p{k:06d}" for k in range(len(batch))]
    keep = {h[0] for h in hint if h is not None} if hint else frozenset()
    scale = value_scale(batch)
    objs = residual_objects(st, list(zip(batch, names)), keep=keep, scale=scale)
    if hint is None:
        outcome = place(objs, policy="optimal", time_limit=time_limit)
    else:
        outcome = _optimize_from(st, objs, batch, names, hint, time_limit)
    c = st.c
    index = {name: i for i, name in enumerate(c.nodes)}
    placed_request = 0.0
    for pl, s in zip(sorted(outcome.result.pods, key=lambda p: p.pod), batch):
        if not pl.placed:
            if apply:
                st.failed += 1
            continue
        placed_request += s.request
        if not apply:
            continue
        assert pl.node is not None  # placed
        node = index[pl.node]
        devs: list[int] = []
        demand = outcome.workload.pod(pl.pod)
        for use in demand.claims:
            alloc, _ = outcome.result.claims[use.key]
            for r in alloc.devices.results:
                devs.append(next(e.index for e in c.devices[node].devices if e.device.name == r.device))
        st.take(s, node, devs)
    stats = outcome.result.stats
    colgen = {k: v for k, v in stats.items() if k.startswith("colgen_")}
    for k in ("colgen_lp_value", "colgen_rounded_value"):
        if k in colgen:
            colgen[k] = round(colgen[k] / scale, 3)
    # The placed value and its bound in units of device capacity: pods without devices add
    # 1/scale each, so the bound is a bound of the capacity placed.
    return OptimalSolve(
        placed_request,
        float(stats.get("bound", 0) or 0) / scale,
        float(stats.get("objective", 0) or 0) / scale,
        stats.get("gap"),
        stats.get("status"),
        stats.get("solve_s"),
        colgen,
    )


def _optimize_from(st: State, objs, batch: list[Shape], names: list[str], hint: list, time_limit: float):
    """draopt's optimal model (`draopt.placement.optimal.optimize`) warm-started from `hint`."""
    from types import SimpleNamespace

    from draopt.kube.features import Features
    from draopt.kube.models import AllocationResult
    from draopt.placement import _no_gc_pauses, build_cluster
    from draopt.placement.optimal import optimize
    from draopt.cluster.result import PlacementResult, PodPlacement
    from draopt.kube.workload import expand

    c = st.c
    started = time.perf_counter()
    with _no_gc_pauses():
        features = c.features or Features.from_gates()
        workload = expand(objs, features)
        cluster = build_cluster(objs, workload, features)
        pods = []
        for name, s, h in zip(names, batch, hint):
            demand = workload.pod(f"sim/{name}")
            if h is None:
                pods.append(PodPlacement(demand.key, None, demand.priority))
                continue
            node, devs = h
            claims = {}
            for use in demand.claims:
                assert s.claim_spec is not None  # a pod with a claim is of a shape with one
                request = s.claim_spec["devices"]["requests"][0]["name"]
                results = []
                for k, d in enumerate(devs):
                    e = c.devices[node].devices[d]
                    r = {
                        "request": request,
                        "driver": e.pool.driver,
                        "pool": e.pool.name,
                        "device": e.device.name,
                        "consumedCapacity": {c.capacity_name: _quantity(s.cons[node, d], c.cap_scale)},
                    }
                    if e.multi_allocatable:
                        r["shareID"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"draopt:{use.key}:{request}:{k}"))
                    results.append(r)
                claims[use.key] = AllocationResult.model_validate(
                    {
                        "devices": {"results": results},
                        "nodeSelector": {
                            "nodeSelectorTerms": [
                                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [c.nodes[node]]}]}
                            ]
                        },
                    }
                )
            pods.append(PodPlacement(demand.key, c.nodes[node], demand.priority, None, claims))
        hint_result = PlacementResult(
            "hint", pods, {ck: (a, pl.node) for pl in pods if pl.node is not None for ck, a in pl.new_claims.items()}
        )
        result = optimize(cluster, workload, time_limit=time_limit, first_fit=hint_result, started=started)
    return SimpleNamespace(result=result, workload=workload)


# ------------------------------------------------------------------ the protocol
