"""CountIdenticalPods: pods whose placement requirements are identical (same claims up to their
names, same resources, node filters) and whose claims only use rules that stay exact when pods
are counted (`countable`) become one *kind*; the model counts how many of them go to each node,
and `invert` hands out nodes to the individual pods.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from draopt.dra.constraints import constraint_applies
from draopt.dra.problem import Problem


def countable(problem: Problem, features, node_resources_of_devices: bool) -> str | None:
    """None if pods with these claims may be counted exactly, else why not.

    Counting is exact when each pod of a kind makes at most one choice that the model counts
    per node (one prioritized list, or one scalar matchAttribute over plain requests), a
    distinctAttribute covers one plain request (then at most `pods` devices per value on a node
    can always be dealt out so that each pod's values differ), admin access is on a request of
    count 1, `All` requests are plain (see below), and no device adds node resources.

    An `All` request is counted as the exact count of its matching devices on the node (the
    problem's `count`: `len(all_devices)`), which is what it is on each node: Kubernetes' allocator
    takes every matching device, fails when one is in use or none exists (resource.k8s.io/v1
    `DeviceAllocationModeAll`: "At least one device must exist on the node for the allocation to
    succeed. Allocation will fail if some devices are already allocated"; structured/allocator.go).
    The counted model asks each pod of a kind for `count` candidate devices, in-use ones are no
    candidates, and a node without matching devices is rejected before (`_quick_reject`), so `k`
    pods on a node need `k` times all its matching devices: one at most, as in Kubernetes. Not
    counted: an `All` request in a prioritized list (an alternative with no devices would ask for
    none), under a constraint, with admin access (in-use devices are taken too), or over devices
    that several pods may share (consumable capacity)."""
    if node_resources_of_devices:
        return "devices add node-allocatable resources"
    choices = 0
    for claim in problem.claims:
        specs = [s for g in claim.requests for s in g.alternatives]
        for g in claim.requests:
            if g.has_subrequests:
                choices += 1
        for s in specs:
            if s.mode == "All":
                why = _all_not_countable(problem, claim, s, features)
                if why:
                    return why
            if s.admin_access and (s.count != 1 or len(specs) > 1):
                return "admin access on more than one device"
        for c in claim.constraints:
            names = list(c.requests)
            covered = [s for s in specs if constraint_applies(names, s.request_name, s.sub_name)]
            if features.list_type_attributes:
                return "list-type attribute constraints"
            if any(s.sub_index >= 0 for s in covered):
                return "constraint over a prioritized list"
            if any(s.fields.derived_attributes for s in covered):
                return "derived attributes"
            if c.match_attribute is not None:
                choices += 1
            elif len(covered) > 1:
                return "distinctAttribute over several requests"
            elif any(o.match_attribute is not None for o in claim.constraints):
                return "distinctAttribute next to a matchAttribute"
    if choices > 1:
        return "more than one choice per pod (prioritized lists, matchAttribute)"
    return None


def _all_not_countable(problem: Problem, claim, spec, features) -> str | None:
    """Why an `All` request cannot be counted as the exact count of its devices (see `countable`)."""
    if spec.sub_index >= 0:
        return "All request in a prioritized list"
    if spec.admin_access:
        return "All request with admin access"
    if any(constraint_applies(list(c.requests), spec.request_name, spec.sub_name) for c in claim.constraints):
        return "All request under a constraint"
    if features.consumable_capacity and any(d.multi_allocatable for d in spec.all_devices):
        return "All request over shareable devices"
    return None


def kind_key(book, pod, scheduling_key: Callable[[Any], str]) -> tuple:
    """Pods with equal keys are placed alike: claims (as specs), resources, node filters."""
    sig = []
    for use in pod.claims:
        alloc = book.allocation(use.key)
        sig.append(("allocated", use.key) if alloc is not None else ("pending", book.signature(use.key)))
    return (
        tuple(sig),
        tuple(sorted(pod.resources.items())),
        tuple(sorted(pod.node_selector.items())),
        scheduling_key(pod),
    )


@dataclass
class Kind:
    """Identical pods, counted (`counted`), or one unit of pods that share pending claims."""

    index: int
    pods: list[Any]  # PodDemand, queue order
    counted: bool
    why_not_counted: str = ""
    claim_keys: list[str] = field(default_factory=list)  # pending claims (a unit: every pod's)
    users: dict[str, list[str]] = field(default_factory=dict)  # claim key -> pods using it
    units: list[list[Any]] = field(default_factory=list)  # counted units alike: their pods
    unit_claims: list[list[str]] = field(default_factory=list)  # and their claims (same order)

    @property
    def unit_size(self) -> int:
        """Pods per counted unit (1: counted pods)."""
        return len(self.units[0]) if self.units else 1


class CountIdenticalPods:
    """accepts(a pod's problem); apply(pending pods) -> kinds; invert(pods per (kind, node)) ->
    node per pod."""

    @staticmethod
    def accepts(problem: Problem, features, node_resources_of_devices: bool) -> bool:
        """Whether pods with these claims may be counted exactly (`countable`)."""
        return countable(problem, features, node_resources_of_devices) is None

    def apply(
        self, pods: list, book, scheduling_key, is_countable: Callable[[Any], str | None], node_local_only: bool = False
    ) -> list[Kind]:
        """`node_local_only`: every device of the cluster is node-local (units can be counted)."""
        users: dict[str, list[str]] = defaultdict(list)
        for pod in pods:
            for use in pod.claims:
                if book.allocation(use.key) is None and pod.key not in users[use.key]:
                    users[use.key].append(pod.key)
        # Pods that share a pending claim are one unit (union-find over claims).
        parent = {p.key: p.key for p in pods}

        def find(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for keys in users.values():
            for other in keys[1:]:
                ra, rb = find(keys[0]), find(other)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
        units: dict[str, list] = defaultdict(list)
        for pod in pods:
            units[find(pod.key)].append(pod)
        kinds: list[Kind] = []
        by_key: dict[tuple, Kind] = {}
        for pod in pods:
            members = units[find(pod.key)]
            if members[0] is not pod:
                continue
            if len(members) == 1:
                key = kind_key(book, pod, scheduling_key)
                kind = by_key.get(key)
                if kind is not None and kind.counted:
                    kind.pods.append(pod)
                    continue
                why = is_countable(pod)
                kind = Kind(
                    len(kinds),
                    [pod],
                    why is None,
                    why or "",
                    [u.key for u in pod.claims if book.allocation(u.key) is None],
                )
                kind.users = {k: [pod.key] for k in kind.claim_keys}
                kinds.append(kind)
                if why is None:
                    by_key[key] = kind
                continue
            claim_keys = []
            for m in members:
                for u in m.claims:
                    if book.allocation(u.key) is None and u.key not in claim_keys:
                        claim_keys.append(u.key)
            # Units alike (pods alike that all use all the unit's claims, no gang, devices only
            # node-local) are counted too: a unit then lives on one node, with 1..m pods placed.
            ukey = self._unit_key(members, claim_keys, book, scheduling_key, node_local_only)
            if ukey is not None:
                kind = by_key.get(ukey)
                if kind is not None:
                    kind.pods.extend(members)
                    kind.units.append(list(members))
                    kind.unit_claims.append(claim_keys)
                    for k in claim_keys:
                        kind.users[k] = list(users[k])
                    continue
                why = is_countable(members[0])
                if why is None:
                    kind = Kind(len(kinds), list(members), True, "", claim_keys)
                    kind.units, kind.unit_claims = [list(members)], [claim_keys]
                    kind.users = {k: list(users[k]) for k in claim_keys}
                    kinds.append(kind)
                    by_key[ukey] = kind
                    continue
            kind = Kind(len(kinds), list(members), False, "claims shared between pods", claim_keys)
            kind.users = {k: list(users[k]) for k in claim_keys}
            kinds.append(kind)
        return kinds

    @staticmethod
    def _unit_key(members, claim_keys, book, scheduling_key, node_local_only: bool):
        """A key for counting units alike, or None when counting them would not be exact."""
        if not node_local_only:
            return None  # a claim on devices several nodes reach may serve pods on several nodes
        first = members[0]
        for pod in members:
            own = [u.key for u in pod.claims if book.allocation(u.key) is None]
            if sorted(set(own)) != sorted(claim_keys) or pod.group is not None or pod.priority != first.priority:
                return None
            if kind_key(book, pod, scheduling_key)[1:] != kind_key(book, first, scheduling_key)[1:]:
                return None
        order = [next(u.key for u in first.claims if u.key == k) for k in claim_keys]
        return (
            ("unit", len(members), tuple(book.signature(k) for k in order))
            + kind_key(book, first, scheduling_key)[1:]
            + (first.priority,)
        )

    @staticmethod
    def invert(chosen: list, per_node: list[tuple[str, int]]) -> dict[str, str]:
        """The chosen pods of a kind (queue order) take the slots `per_node` counts: [(node,
        pods there)] in node order. Returns pod key -> node."""
        slots = [n for n, k in per_node for _ in range(k)]
        if len(slots) != len(chosen):
            raise RuntimeError(f"internal: {len(chosen)} pods of a kind chosen, {len(slots)} node slots")
        return {pod.key: node for pod, node in zip(chosen, slots)}
