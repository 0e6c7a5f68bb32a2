"""ClaimsOnOneNode: `allocate`'s problem (pending claims allocated together on one node, as one
pod's) as an instance of the cluster placement model: one pod that uses every claim, one
candidate node, one column per device (no device groups, no counted pods), so that the one
builder (`draopt.model.placement.build`) encodes it. `invert` reads the devices each claim took
back in Kubernetes' result order (requests, sub-requests, devices in search order; see
`allocateOne` in staging/src/k8s.io/dynamic-resource-allocation/structured/allocator.go).

Devices stay single columns because first-fit's objective is its search order device by device
(`draopt.model.objective.first_fit_order`): a group's count would take its devices before
devices of other groups that come earlier in the search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import cast

from draopt.dra.inventory import AllocatedState
from draopt.dra.problem import Problem
from draopt.dra.reference import Chosen
from draopt.kube.features import Features
from draopt.kube.models import Node, ObjectMeta
from draopt.cluster.state import NodeState
from draopt.model.prepare import Candidacy, Prepared
from draopt.model.reductions.count_identical_pods import Kind
from draopt.model.reductions.group_devices import DeviceRef

POD = "claims-of-one-pod"  # the key of the one pod (its name is never shown)


@dataclass
class ClaimsPod:
    """What the builder reads of a pending pod: no node resources, no gang, priority 0."""

    key: str = POD
    resources: dict[str, Fraction] = field(default_factory=dict)
    group: str | None = None
    priority: int = 0


@dataclass
class OneNodeCluster:
    """What the builder reads of the cluster: the gates, the allocated state, the one node."""

    features: Features
    allocated: AllocatedState
    nodes: list[NodeState]
    by_name: dict[str, NodeState]


@dataclass
class OneNodeWorkload:
    pod_demand: ClaimsPod
    groups: dict = field(default_factory=dict)

    def pod(self, key: str) -> ClaimsPod:
        return self.pod_demand


@dataclass
class OneNodeInstance:
    """The reduced problem: what `build` takes, for one kind on one node."""

    prepared: Prepared
    cluster: OneNodeCluster
    workload: OneNodeWorkload
    node_name: str


class Candidates:
    """A device is a candidate for a request when usable on its own (`Problem.usable_alone`;
    for an `All` request, only the devices it asks for). Unlike the cluster's `Candidacy`, a CEL
    runtime error is raised: allocate's caller decides (first-fit replays Kubernetes' search,
    which fails only if it reaches the device)."""

    def __init__(self):
        self._all: dict[int, set[int]] = {}

    def __call__(self, problem: Problem, spec, entry) -> bool:
        if spec.mode == "All":
            wanted = self._all.get(id(spec))
            if wanted is None:
                wanted = self._all[id(spec)] = {id(d) for d in spec.all_devices}
            if id(entry) not in wanted:
                return False
        return problem.usable_alone(spec, entry)


class ClaimsOnOneNode:
    """accepts(problem); apply(problem) -> (OneNodeInstance, problem); invert((built model,
    value of a variable in its solution), problem) -> (chosen devices per claim, chosen
    sub-request per (claim, request))."""

    @staticmethod
    def accepts(problem) -> bool:
        """Every one-node problem (its node's devices are the inventory's)."""
        return isinstance(problem, Problem)

    @staticmethod
    def apply(problem: Problem) -> tuple[OneNodeInstance, Problem]:
        node = problem.inventory.node or Node(api_version="v1", kind="Node", metadata=ObjectMeta(name=""))
        state = NodeState(node, 0, {})
        pod = ClaimsPod()
        keys = [c.key for c in problem.claims]
        kind = Kind(0, [pod], False, "claims of one pod on one node", keys, {k: [pod.key] for k in keys})
        refs = [DeviceRef(e.index, [e], state.name) for e in problem.devices]  # short keys: variable names
        prepared = Prepared(
            [kind],
            {pod.key: [state]},
            {(0, state.name): problem},
            {state.name: refs},
            {(state.name, r.first.id): r for r in refs},
            False,
            cast(Candidacy, Candidates()),  # (what the builder calls of a candidacy: __call__)
        )
        cluster = OneNodeCluster(problem.features, problem.inventory.allocated, [state], {state.name: state})
        return OneNodeInstance(prepared, cluster, OneNodeWorkload(pod), state.name), problem

    @staticmethod
    def invert(solution: tuple, problem: Problem) -> tuple[list[list[Chosen]], dict[tuple[int, int], int]]:
        built, value = solution
        chosen: list[list[Chosen]] = [[] for _ in problem.claims]
        selected: dict[tuple[int, int], int] = {}
        consumable = problem.features.consumable_capacity
        for owner in built.owners:
            claim = problem.claims[owner.claim_index]
            for group in claim.requests:
                for spec in group.alternatives:
                    if group.has_subrequests:
                        if not value(owner.sel[spec.key]):
                            continue
                        selected[(spec.claim_index, spec.request_index)] = spec.sub_index
                    for t in owner.terms.get(spec.key, []):
                        if value(t.var):
                            dev = t.entry
                            consumed = problem.consumption(spec, dev) if consumable and dev.multi_allocatable else None
                            chosen[claim.index].append(Chosen(spec, dev, consumed))
        return chosen, selected
