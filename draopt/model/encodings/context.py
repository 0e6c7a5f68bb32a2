"""What the model builder's steps share (`draopt.model.placement.build`): the CP-SAT model with
its literal helpers (`PlacementModel`), the owners of devices and their terms (`Owner`, `Term`),
and `ModelContext`, which holds the build's inputs, options and the variables each step adds
for the steps after it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

from ortools.sat.python import cp_model

from draopt.cluster.firstfit import ClaimBook
from draopt.cluster.state import Cluster, NodeState
from draopt.dra.problem import Problem
from draopt.kube.quantity import Quantity
from draopt.model.encodings.base import LiteralHelpers
from draopt.model.prepare import Prepared
from draopt.model.reductions import DeviceRef, Kind


@dataclass(eq=False)
class Term:
    """Devices of one column taken by one (sub-)request of one owner."""

    owner: "Owner"
    spec: Any  # RequestSpec of `problem`
    problem: Problem  # the node problem the candidacy was decided in
    ref: DeviceRef
    var: Any
    reach: set[str] = field(default_factory=set)  # nodes from which the request may use it
    entry: Any = None  # the DeviceEntry of `problem` (first device of the column)


@dataclass(eq=False)
class Owner:
    index: int
    kind: Kind
    node: NodeState | None  # counted kinds: the node; units: None (spans nodes)
    mult: Any  # counted: pods of the kind there (int var); unit claim: active (bool)
    problem: Problem  # representative problem (its claims give specs and constraints)
    claim_index: int | None  # units: the one claim of `problem` this owner allocates
    claim_key: str = ""  # units: that claim (problems are shared by claims alike)
    spans: list[str] | None = None  # counted kinds owned across nodes (OwnAcrossNodes): their nodes
    sel: dict = field(default_factory=dict)  # spec key -> selection variable (count or bool)
    witness: dict = field(default_factory=dict)  # (claim index, constraint index) -> {element: var}
    terms: dict = field(default_factory=dict)  # spec key -> [Term]
    # Decoding's index (draopt.model.solution): (spec key, constraint index) -> {element: [Term]}
    by_element: dict = field(default_factory=dict, repr=False)
    # The warm start's index (draopt.model.warm_start): (request, column key) -> (spec key, first Term)
    term_of: dict | None = field(default=None, repr=False)

    @property
    def counted(self) -> bool:
        return self.node is not None

    def claims(self):
        if self.claim_index is None:
            return self.problem.claims
        return [self.problem.claims[self.claim_index]]


class _CpModel(cp_model.CpModel):
    """CpModel without the pre-PEP8 method aliases ortools adds to every instance (about a
    hundred wrappers, 0.2-0.4 ms per model); nothing calls them."""

    def _add_pre_pep8_methods(self) -> None:
        pass


class PlacementModel(LiteralHelpers):
    """The CP-SAT model plus what the encodings' rule functions need (`add`, `at_most_one`,
    `any_of`, `positive`, `counter_value`)."""

    def __init__(self, explain: bool = False):
        self.cp = _CpModel()
        self.n_constraints = 0
        # explain: every named requirement holds only under its guard literal, so that an
        # infeasible model yields the requirements that clash (draopt.allocation.explain).
        self.explain = explain
        self.guards: dict[str, Any] = {}  # requirement text -> guard literal
        self._positive: dict[int, Any] = {}
        self._quantities: dict[str, Fraction] = {}

    def add(self, ct, requirement: str | None = None):
        self.n_constraints += 1
        if self.explain and requirement is not None:
            guard = self.guards.get(requirement)
            if guard is None:
                guard = self.guards[requirement] = self.cp.new_bool_var(f"guard[{requirement}]")
            ct.only_enforce_if(guard)
        return ct

    def at_most_one(self, lits, requirement: str | None = None):
        """AtMostOne, as a linear constraint when it may need a guard (CP-SAT's AtMostOne
        takes no enforcement literal)."""
        if self.explain and requirement is not None:
            return self.add(self.cp.add(sum(lits) <= 1), requirement)
        return self.add(self.cp.add_at_most_one(lits))

    def counter_value(self, value: str) -> Fraction:
        got = self._quantities.get(value)
        if got is None:
            got = self._quantities[value] = Quantity.parse(value).value
        return got


@dataclass(eq=False)
class NodeClassVars:
    """Interchangeable nodes counted per configuration (draopt.model.patterns): what the
    later steps read of their variables."""

    used: list = field(default_factory=list)  # the classes enumerated (patterns.NodeClass)
    pods_of_kind: dict[int, list] = field(default_factory=lambda: defaultdict(list))  # kind -> [(pods per node, var)]
    nodes: set[str] = field(default_factory=set)  # nodes the classes stand for
    node_count_terms: list = field(default_factory=list)  # packing: nodes used
    devices: list = field(default_factory=list)  # packing: [(devices per node, var)]
    fresh_sets: list = field(default_factory=list)  # packing: [(fresh counter sets per node, var)]


@dataclass(eq=False)
class ModelContext:
    """One build: its inputs and options, and the variables the steps share."""

    m: PlacementModel
    prep: Prepared
    cluster: Cluster
    workload: Any
    book: ClaimBook | None  # None: allocate's model (draopt.model.single_node)
    kinds: list[Kind]
    node_names: set[str]
    check_time: Callable[[], None]  # raises OutOfTime past the build's deadline
    one_node: bool = False  # a configuration check or allocate's model: one node alone
    across: bool = True  # OwnAcrossNodes may apply (build's `across`); each counted kind decides its own
    kubernetes_quirks: bool = False
    allocation: bool = False  # allocate's model: its one pod on its one node
    packing_terms: bool = True
    victims: Any = None  # draopt.model.victims.VictimSet
    enc: Any = None  # draopt.model.victims.Encoded
    owners: list[Owner] = field(default_factory=list)
    k: dict[tuple[int, str], Any] = field(default_factory=dict)  # counted kind, node -> pods there
    y: dict[tuple[str, str], Any] = field(default_factory=dict)  # unit pod, node -> placed there
    placed: dict[str, Any] = field(default_factory=dict)  # unit pod -> placed
    totals: dict[tuple[int, tuple], Any] = field(default_factory=dict)  # counted kind, (priority, group) -> placed
    class_pods: dict[tuple[int, tuple], list] = field(default_factory=dict)
    # node -> [(resources, var)]
    node_demand: dict[str, list] = field(default_factory=lambda: defaultdict(list))
    # Demand variable (index) -> priority of its pods, for the victims' reprieve: only pods that may
    # preempt (an eviction never serves a pod with preemptionPolicy Never).
    prio_of: dict[int, int] = field(default_factory=dict)
    unit_parts: dict[tuple[int, str], list] = field(
        default_factory=dict
    )  # counted units: (kind, node) -> [(pods, count)]
    preference: list = field(default_factory=list)
    room: dict[tuple[int, int], int] = field(default_factory=dict)  # (node, id of the demand) -> pods that fit
    node_classes: NodeClassVars = field(default_factory=NodeClassVars)
    by_ref: dict[Any, list[Term]] = field(default_factory=lambda: defaultdict(list))  # column key -> terms
    refs: dict[Any, DeviceRef] = field(default_factory=dict)  # column key -> column
    touched_nodes: list = field(default_factory=list)  # packing: node used literals
    gang_terms: dict[str, list] = field(default_factory=lambda: defaultdict(list))  # group -> placed vars

    @property
    def cp(self) -> cp_model.CpModel:
        return self.m.cp

    def free(self, node: NodeState, resources: dict) -> int:
        """Pods of `resources` that fit on the node (demands outlive the build: keyed by id)."""
        key = (node.index, id(resources))
        cap = self.room.get(key)
        if cap is None:
            cap = 10**9
            for r, v in resources.items():
                if v > 0 and r in node.allocatable:
                    cap = min(cap, int((node.allocatable[r] - node.used.get(r, 0)) // v))
            self.room[key] = cap
        return cap

    def preempts(self, pod) -> bool:
        """Whether the pod's demand counts for the victims' reprieve."""
        return self.victims is None or self.victims.preempts(pod)
