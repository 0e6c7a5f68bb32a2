"""The simulator's cluster as arrays (draopt.studies.simulate's fast path): the node resources and
the device capacity left as numpy matrices, the trace's pods grouped by shape, the state of one run,
and the FGD fragmentation model. The policies (draopt.studies.simulate, online_batch, paper_protocol)
and the optimal model (simulate_optimal) read these; this module imports none of them."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from draopt.cluster.state import pod_on
from draopt.errors import InputError
from draopt.kube.quantity import Quantity

DEFAULT_CAPACITY = "gpu.example.com/milli"
_UNLIMITED = ("cpu", "memory", "pods", "ephemeral-storage")


# ------------------------------------------------------------------ the cluster as arrays
@dataclass
class Shape:
    """Pods alike for placement: the same node resources and the same claim."""

    index: int
    demand: np.ndarray  # [R] node resources
    count: int  # devices (0: no claim)
    compat: np.ndarray  # [N, D] device may serve the request
    cons: np.ndarray  # [N, D] capacity one allocation consumes (0 where not compat)
    request: float  # requested device capacity (count x the consumption)
    claim_spec: dict | None  # the claim's spec (Kubernetes form)
    resources: dict[str, Fraction]  # node resources, exact
    node_ok: np.ndarray  # [N] the node filters (taints, selectors, affinity) pass
    placement: dict  # the pods' nodeSelector, affinity, tolerations
    pods: list[str] = field(default_factory=list)


@dataclass
class SimCluster:
    nodes: list[str]  # by name: first-fit's order
    resources: list[str]
    alloc: np.ndarray  # [N, R] allocatable (inf: unlimited)
    cap: np.ndarray  # [N, D] device capacity (0: no device)
    present: np.ndarray  # [N, D]
    devices: list[Any]  # per node: its inventory (`.devices`: DeviceEntry in search order)
    shapes: list[Shape]
    pod_shape: list[int]  # the trace's pending pods, by queue order: their shape
    pod_keys: list[str]
    capacity_name: str
    objects: Any = None
    node_objects: list = field(default_factory=list)
    res_scale: list[int] = field(default_factory=list)
    cap_scale: int = 1
    group: np.ndarray = None  # type: ignore[assignment]  # [N] kind of node: same devices, same pods pass its filters; set by build
    total: float = 0.0
    # the `kube-scheduler` policy's node choice (draopt.scheduler.trace.TraceScheduler), set by its caller
    kube_scheduler: Any = None
    # the feature gates the cluster was read with (build's; the offline optimum's model reads them too)
    features: Any = None
    # the FGD paper protocol's view of the cluster (draopt.studies.paper_protocol.prepare), made once
    paper_view: Any = field(default=None, init=False, repr=False)

    @property
    def n(self) -> int:
        return len(self.nodes)


class State:
    def __init__(self, c: SimCluster):
        self.c = c
        self.free = c.alloc.copy()
        self.left = np.where(c.present, c.cap, -1.0)
        self.allocated = 0.0
        self.placed = 0
        self.failed = 0
        # the `kube-scheduler` policy's progress over this run (draopt.scheduler.trace fills it)
        self.kube_scheduler: dict[str, Any] | None = None

    def usable(self, s: Shape) -> np.ndarray:
        return s.compat & (self.left >= s.cons)

    def feasible(self, s: Shape) -> tuple[np.ndarray, Any]:  # (nodes, usable devices [N, D] or None)
        ok = (self.free >= s.demand).all(axis=1) & s.node_ok
        if s.count == 0:
            return ok, None
        use = self.usable(s)
        return ok & (use.sum(axis=1) >= s.count), use

    def take(self, s: Shape, node: int, devs: list[int]) -> None:
        self.free[node] -= s.demand
        for d in devs:
            self.left[node, d] -= s.cons[node, d]
            self.allocated += s.cons[node, d]
        self.placed += 1


def _first(use_row: np.ndarray, k: int) -> list[int]:
    return [int(i) for i in np.flatnonzero(use_row)[:k]]


def _lcm_den(values) -> int:
    out = 1
    for v in values:
        out = math.lcm(out, Fraction(v).denominator)
    return out


@dataclass
class _Devices:
    """The nodes' devices as matrices, and the nodes grouped by identical devices."""

    inventories: list[Any]  # per node: its inventory (DeviceEntry in search order)
    cap: np.ndarray  # [N, D] capacity, in 1/cap_scale units (0: no device)
    present: np.ndarray  # [N, D]
    cap_scale: int
    group_of: np.ndarray  # [N] group of nodes with the same devices (driver, attributes, taints)
    representative: list[int]  # per group: its first node


@dataclass
class _NodeResources:
    """The node resources the pending pods request, as exact integer counts of 1/scale units."""

    names: list[str]
    scale: list[int]
    alloc: np.ndarray  # [N, R] allocatable (inf: unlimited)


def build(objects, *, capacity_name: str = DEFAULT_CAPACITY, features=None) -> SimCluster:
    """The cluster and the pending pods of `objects` as arrays (see the module docstring for
    what the fast path supports; anything else is an InputError naming the object)."""
    from draopt.kube.features import Features

    features = features or Features.from_gates()
    workload, cluster = _checked_input(objects, features)
    nodes = cluster.nodes
    devices = _device_matrices(cluster, capacity_name)
    pending = sorted(workload.pending, key=lambda p: p.queue_key)
    resources = _node_resources(pending, nodes)
    shapes: list[Shape] = []
    by_key: dict[str, int] = {}
    pod_shape: list[int] = []
    for p in pending:
        si = _shape_of(p, workload, cluster, devices, resources, capacity_name, features, shapes, by_key)
        shapes[si].pods.append(p.key)
        pod_shape.append(si)
    c = SimCluster(
        [x.name for x in nodes],
        resources.names,
        resources.alloc,
        devices.cap,
        devices.present,
        devices.inventories,
        shapes,
        pod_shape,
        [p.key for p in pending],
        capacity_name,
        objects,
        [x.node for x in nodes],
        resources.scale,
        devices.cap_scale,
    )
    c.features = features
    c.group = _node_kinds(devices.group_of, shapes)
    c.total = float(devices.cap[devices.present].sum())
    if c.total <= 0:
        raise InputError(f"simulate: the cluster publishes no device capacity {capacity_name!r}")
    return c


def _checked_input(objects, features):
    """The workload and the cluster of `objects`, refused unless the fast path simulates them."""
    from draopt.kube.workload import expand
    from draopt.placement import build_cluster

    workload = expand(objects, features)
    if workload.running:
        raise InputError(
            f"simulate: Pod {workload.running[0].key} is already bound (spec.nodeName): "
            "the simulation starts from an empty cluster"
        )
    if workload.groups:
        raise InputError(f"simulate: PodGroup {next(iter(workload.groups))}: gangs are not simulated")
    if not workload.pending:
        raise InputError("simulate: no pending Pod in --trace: nothing to simulate")
    cluster = build_cluster(objects, workload, features)
    if not cluster.nodes:
        raise InputError("simulate: no Node in -f: nothing to place on")
    for p in workload.pending:
        served = next((nd for nd in cluster.nodes if p.extended_resources and pod_on(nd, p) is not p), None)
        if served is not None:
            raise InputError(
                f"simulate: Pod {p.key}: node {served.name}'s device plugin serves its extended resources, "
                "not DRA: not simulated (a pod has one shape, its claims, on every node here)"
            )
    return workload, cluster


def _device_matrices(cluster, capacity_name: str) -> _Devices:
    """Every node's devices with their capacity `capacity_name`, and the nodes grouped by devices."""
    nodes = cluster.nodes
    invs = [cluster.inventory(n) for n in nodes]
    d_max = max((len(inv.devices) for inv in invs), default=0)
    n = len(nodes)
    cap = np.zeros((n, max(d_max, 1)))
    present = np.zeros((n, max(d_max, 1)), dtype=bool)
    groups: dict[str, int] = {}
    group_of = np.zeros(n, dtype=int)
    rep: list[int] = []
    cap_scale = _lcm_den(e.capacity.get(capacity_name, 0) for inv in invs for e in inv.devices)
    for i, inv in enumerate(invs):
        for e in inv.devices:
            c = e.capacity.get(capacity_name)
            if c is None:
                raise InputError(
                    f"simulate: {e.where}: no capacity {capacity_name!r} "
                    "(--capacity names the device capacity to measure)"
                )
            if e.index >= d_max:
                raise InputError(f"simulate: {e.where}: unexpected device order")
            if len(e.device.capacity) > 1:
                raise InputError(
                    f"simulate: {e.where}: more than one capacity; the fast path follows one ({capacity_name})"
                )
            cap[i, e.index] = float(c * cap_scale)
            present[i, e.index] = True
        sig = json.dumps(
            [[e.driver, e.device.to_k8s(), [t.to_k8s() for t in e.taints]] for e in inv.devices], sort_keys=True
        )
        g = groups.setdefault(sig, len(groups))
        if g == len(rep):
            rep.append(i)
        group_of[i] = g
    return _Devices(invs, cap, present, cap_scale, group_of, rep)


def _node_resources(pending, nodes) -> _NodeResources:
    """The node resources the pending pods request and every node's allocatable of them."""
    res_names = sorted({r for p in pending for r, v in p.resources.items() if v})
    # Every amount is held as an exact integer count of 1/scale units.
    res_scale = [
        _lcm_den([p.resources.get(r, 0) for p in pending] + [nd.allocatable.get(r, 0) for nd in nodes])
        for r in res_names
    ]
    alloc = np.zeros((len(nodes), len(res_names)))
    for i, node in enumerate(nodes):
        for j, r in enumerate(res_names):
            v = node.allocatable.get(r)
            if v is None:
                alloc[i, j] = math.inf if (r in _UNLIMITED or r.startswith("hugepages-")) else 0.0
            else:
                alloc[i, j] = float(v * res_scale[j])
    return _NodeResources(res_names, res_scale, alloc)


def _shape_of(p, workload, cluster, devices, resources, capacity_name, features, shapes, by_key) -> int:
    """The index of pod `p`'s shape in `shapes` (appended when new; `by_key`: shapes by their key)."""
    raw_spec = p.pod.spec.to_k8s()
    placement = {k: raw_spec[k] for k in ("nodeSelector", "affinity", "tolerations") if raw_spec.get(k)}
    claim = _simulated_claim(p, workload)
    claim_spec = claim.spec.to_k8s() if claim is not None else None
    res = {r: v for r, v in p.resources.items() if v}
    key = json.dumps([sorted((r, str(v)) for r, v in res.items()), claim_spec, placement], sort_keys=True)
    si = by_key.get(key)
    if si is not None:
        return si
    si = by_key[key] = len(shapes)
    demand = np.array([float(res.get(r, Fraction(0)) * resources.scale[j]) for j, r in enumerate(resources.names)])
    compat = np.zeros_like(devices.present)
    cons = np.zeros_like(devices.cap)
    count = 0
    if claim is not None:
        count = int(claim.spec.devices.requests[0].exactly.count or 1)
        _device_use(p, claim, cluster, devices, capacity_name, features, compat, cons)
    request = _requested_capacity(p, claim, count, compat, cons, devices.cap_scale, capacity_name)
    node_ok = np.array([cluster.node_rejects(node, p) is None for node in cluster.nodes], dtype=bool)
    shapes.append(Shape(si, demand, count, compat, cons, request, claim_spec, res, node_ok, placement))
    return si


def _simulated_claim(p, workload):
    """Pod `p`'s one claim (None without), refused unless the fast path simulates it."""
    if len(p.claims) > 1:
        raise InputError(
            f"simulate: Pod {p.key}: field spec.resourceClaims: {len(p.claims)} claims; "
            "the simulation supports at most one claim per pod"
        )
    claim = workload.claims[p.claims[0].key] if p.claims else None
    if claim is None:
        return None
    reqs = claim.spec.devices.requests
    where = f"simulate: ResourceClaim {p.claims[0].key} (Pod {p.key})"
    if len(reqs) != 1 or reqs[0].exactly is None:
        raise InputError(
            f"{where}: field spec.devices.requests: the simulation supports one `exactly` request per claim"
        )
    ex = reqs[0].exactly
    if (ex.allocation_mode or "ExactCount") != "ExactCount" or ex.admin_access:
        raise InputError(
            f"{where}: field spec.devices.requests[0].exactly: the simulation supports "
            "ExactCount requests without adminAccess"
        )
    if claim.spec.devices.constraints:
        raise InputError(f"{where}: field spec.devices.constraints: not simulated")
    return claim


def _device_use(p, claim, cluster, devices, capacity_name, features, compat, cons) -> None:
    """Fills `compat` (the device may serve the claim's request) and `cons` (the capacity one
    allocation takes there), per group of nodes with the same devices, by draopt's own rules."""
    from draopt.dra.problem import prepare

    cap, cap_scale = devices.cap, devices.cap_scale
    for g, ri in enumerate(devices.representative):
        inv = devices.inventories[ri]
        problem = prepare([claim], inv, cluster.classes, features, cluster.cel_env, cluster.expr_cache)
        req = problem.claims[0].requests[0].alternatives[0]
        rows = devices.group_of == g
        for e in inv.devices:
            if not problem.usable_alone(req, e):
                continue
            used = problem.consumption(req, e)
            amount = used.get(capacity_name) if used else None
            compat[rows, e.index] = True
            if e.multi_allocatable:
                units = amount.value * cap_scale if amount is not None else Fraction(0)
                if Fraction(units).denominator != 1:
                    raise InputError(
                        f"simulate: Pod {p.key}: consumes {amount} of {e.where}: "
                        "not a whole multiple of the capacity's unit"
                    )
                cons[rows, e.index] = float(units)
            else:
                cons[rows, e.index] = cap[ri, e.index]  # taken whole


def _requested_capacity(p, claim, count: int, compat, cons, cap_scale: int, capacity_name: str) -> float:
    """The device capacity a pod of the shape requests: `count` x the least it consumes anywhere."""
    nominal = cons[compat]
    if nominal.size:
        return count * float(nominal.min())
    if claim is None:
        return 0.0
    # No device anywhere serves it: it still arrives, with what it asks for.
    ex = claim.spec.devices.requests[0].exactly
    asked = ((ex.capacity.requests if ex.capacity is not None else None) or {}).get(capacity_name)
    if asked is None:
        raise InputError(
            f"simulate: Pod {p.key}: no device of the cluster can serve its claim, and "
            f"the claim asks for no {capacity_name}: its demand is unknown"
        )
    return count * float(Quantity.parse(asked).value * cap_scale)


def _node_kinds(group_of: np.ndarray, shapes: list[Shape]) -> np.ndarray:
    """[N] kind of node: the same devices, and the same shapes pass its filters."""
    kinds: dict[tuple[int, bytes], int] = {}
    ok = np.stack([s.node_ok for s in shapes], axis=1)  # [N, shapes]
    return np.array([kinds.setdefault((int(group_of[i]), ok[i].tobytes()), len(kinds)) for i in range(len(group_of))])


# ------------------------------------------------------------------ fragmentation
class FragModel:
    """Expected fragmentation of node states against the workload's shapes (see docstring)."""

    def __init__(self, c: SimCluster, weights: np.ndarray):
        keep = weights > 0
        self.p = weights[keep] / weights[keep].sum()
        shapes = [s for s, k in zip(c.shapes, keep) if k]
        self.count = np.array([s.count for s in shapes])
        self.dem = np.stack([s.demand for s in shapes]) if shapes else np.zeros((0, len(c.resources)))
        self.compat = np.stack([s.compat for s in shapes])  # [T, N, D]
        self.cons = np.stack([s.cons for s in shapes])
        self.gpu = self.count > 0
        self.node_ok = np.stack([s.node_ok for s in shapes])  # [T, N]

    def frag(self, nodes: np.ndarray, free: np.ndarray, left: np.ndarray) -> np.ndarray:
        """Fragmentation of the states (node index, free resources [C, R], device left [C, D])."""
        total = np.clip(left, 0, None).sum(axis=1)  # [C]
        out = np.full(len(nodes), float(self.p[~self.gpu].sum())) * total
        if self.gpu.any():
            g = self.gpu
            comp = self.compat[g][:, nodes, :]  # [T, C, D]
            use = comp & (left[None] >= self.cons[g][:, nodes, :]) & (left[None] > 0)
            fits = (
                (use.sum(axis=2) >= self.count[g][:, None])
                & (free[None] >= self.dem[g][:, None, :]).all(axis=2)
                & self.node_ok[g][:, nodes]
            )  # [T, C]
            lost = np.where(use, 0.0, np.clip(left, 0, None)[None]).sum(axis=2)
            per = np.where(fits, lost, total[None])
            out += self.p[g] @ per
        return out
