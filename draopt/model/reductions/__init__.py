"""Reductions of the placement problem, in the style of cvxpy's: each `apply` returns the
reduced problem and the data its `invert` needs to turn a solution of the reduced problem back
into a solution of the original. Each is applied only where it is exact.

* `CountIdenticalPods`: pods whose placement requirements are identical (same claims up to
  their names, same resources, node filters) and whose claims only use rules that stay exact
  when pods are counted (see `countable`) become one *kind*: the model counts how many of them
  go to each node, and `invert` hands out nodes and devices to the individual pods.
* `GroupDevices`: devices of one node that every request of the model sees alike (same
  candidacy, same values of every constrained attribute, no counters, not shared with other
  nodes, not multi-allocatable) become one group with a count.
* `OwnAcrossNodes`: a counted kind whose devices are all reached alike from each of its nodes
  takes them through one owner for all its nodes, not one copy per node.
* `SplitComponents`: owners linked to the nodes they may use, gangs and shared pools linking
  them, split into independent parts (networkx connected components), solved apart.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from draopt.dra.constraints import constraint_applies, normalise
from draopt.dra.problem import Problem


# ------------------------------------------------------------------ counting identical pods
def countable(problem: Problem, features, node_resources_of_devices: bool) -> str | None:
    """None if pods with these claims may be counted exactly, else why not.

    Counting is exact when each pod of a kind makes at most one choice that the model counts
    per node (one prioritized list, or one scalar matchAttribute over plain requests), a
    distinctAttribute covers one plain request (then at most `pods` devices per value on a node
    can always be dealt out so that each pod's values differ), admin access is on a request of
    count 1, there is no `All` request, and no device adds node resources."""
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
                return "All request"
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


def kind_key(book, pod, scheduling_key: Callable[[Any], str]) -> tuple:
    """Pods with equal keys are placed alike: claims (as specs), resources, node filters."""
    sig = []
    for use in pod.claims:
        alloc = book.allocation(use.key)
        sig.append(("allocated", use.key) if alloc is not None else ("pending", book.signature(use.key)))
    return (tuple(sig), tuple(sorted(pod.resources.items())), tuple(sorted(pod.node_selector.items())),
            scheduling_key(pod))


@dataclass
class Kind:
    """Identical pods, counted (`counted`), or one unit of pods that share pending claims."""
    index: int
    pods: list[Any]                         # PodDemand, queue order
    counted: bool
    why_not_counted: str = ""
    claim_keys: list[str] = field(default_factory=list)    # pending claims (a unit: every pod's)
    users: dict[str, list[str]] = field(default_factory=dict)   # claim key -> pods using it
    units: list[list[Any]] = field(default_factory=list)   # counted units alike: their pods
    unit_claims: list[list[str]] = field(default_factory=list)   # and their claims (same order)

    @property
    def unit_size(self) -> int:
        """Pods per counted unit (1: counted pods)."""
        return len(self.units[0]) if self.units else 1


class CountIdenticalPods:
    """apply(pending pods) -> kinds; invert(pods per (kind, node)) -> node per pod."""

    def apply(self, pods: list, book, scheduling_key, is_countable: Callable[[Any], str | None],
              node_local_only: bool = False) -> list[Kind]:
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
                kind = Kind(len(kinds), [pod], why is None, why or "",
                            [u.key for u in pod.claims if book.allocation(u.key) is None])
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
            return None   # a claim on devices several nodes reach may serve pods on several nodes
        first = members[0]
        for pod in members:
            own = [u.key for u in pod.claims if book.allocation(u.key) is None]
            if sorted(set(own)) != sorted(claim_keys) or pod.group is not None or pod.priority != first.priority:
                return None
            if kind_key(book, pod, scheduling_key)[1:] != kind_key(book, first, scheduling_key)[1:]:
                return None
        order = [next(u.key for u in first.claims if u.key == k) for k in claim_keys]
        return ("unit", len(members), tuple(book.signature(k) for k in order)) + \
            kind_key(book, first, scheduling_key)[1:] + (first.priority,)

    @staticmethod
    def invert(chosen: list, per_node: list[tuple[str, int]]) -> dict[str, str]:
        """The chosen pods of a kind (queue order) take the slots `per_node` counts: [(node,
        pods there)] in node order. Returns pod key -> node."""
        slots = [n for n, k in per_node for _ in range(k)]
        if len(slots) != len(chosen):
            raise RuntimeError(f"internal: {len(chosen)} pods of a kind chosen, {len(slots)} node slots")
        return {pod.key: node for pod, node in zip(chosen, slots)}


# ------------------------------------------------------------------ device groups
@dataclass(eq=False)
class DeviceRef:
    """A device, or a group of identical node-local devices, as one column of the model."""
    key: Hashable
    entries: list[Any]               # DeviceEntry, search order (any node's entry for a shared device)
    node: str | None                 # the node of a node-local device (group); None if several nodes reach it

    @property
    def size(self) -> int:
        return len(self.entries)

    @property
    def first(self):
        return self.entries[0]


def groupable(entry, node_name: str, features) -> bool:
    d = entry.device
    if d.consumes_counters and features.partitionable_devices:
        return False
    if entry.multi_allocatable and features.consumable_capacity:
        return False
    if d.node_allocatable_resources and features.node_allocatable_resources:
        return False   # what it adds to the node is counted per device and pod
    return entry.slice.spec.node_name == node_name and not entry.slice.spec.per_device_node_selection


class GroupDevices:
    """apply(node, devices with their pattern) -> DeviceRefs; invert(ref, count, taken) -> devices."""

    def apply(self, node_name: str, patterns: list[tuple[Any, tuple]], features) -> list[DeviceRef]:
        """`patterns`: [(DeviceEntry, pattern)] in search order; devices with equal patterns that
        may be grouped become one DeviceRef, others stay single."""
        groups: dict[tuple, DeviceRef] = {}
        out: list[DeviceRef] = []
        for entry, pattern in patterns:
            if groupable(entry, node_name, features):
                ref = groups.get(pattern)
                if ref is None:
                    ref = groups[pattern] = DeviceRef(("group", node_name, len(groups)), [], node_name)
                    out.append(ref)
                ref.entries.append(entry)
            else:
                out.append(DeviceRef(entry.id, [entry], node_name if entry.slice.spec.node_name == node_name else None))
        return out

    @staticmethod
    def invert(ref: DeviceRef, count: int, taken: dict, reusable: bool = False, exclude=()) -> list[Any]:
        """`count` devices of the group, the first free ones in search order (`taken` records
        them; `reusable`: admin access or shares, which may take a device others took)."""
        out = []
        for e in ref.entries:
            if len(out) == count:
                break
            if e.id in exclude:
                continue   # never the same device twice in one claim
            if reusable:
                out.append(e)   # admin access and shares neither need nor block a free device
            elif not taken.get(e.id):
                out.append(e)
                taken[e.id] = 1
        if len(out) < count:
            raise RuntimeError(f"internal: {count} devices wanted from a group of {ref.size}, {len(out)} free")
        return out


def attribute_pattern(problem: Problem, spec, entry, names: list[str]) -> tuple:
    """The values of the constrained attributes a request sees on a device (derived included)."""
    out = []
    for name in names:
        raw = problem.attribute_for_constraint(spec, entry, name)
        v = normalise(raw, problem.features.list_type_attributes) if raw is not None else None
        out.append(None if v is None else (v[0], tuple(sorted(map(repr, v[1])))))
    return tuple(out)


def device_pattern_extra(entry) -> str:
    """What else must be equal for devices to be interchangeable in the model."""
    nar = entry.device.node_allocatable_resources
    return json.dumps(nar, sort_keys=True, default=str) if nar else ""


# ------------------------------------------------------------------ devices every node reaches
class OwnAcrossNodes:
    """apply(kind, its nodes) -> whether one owner may take the kind's devices for all its nodes.

    A counted kind whose candidate columns are the same from each of its nodes and are all
    reached from each of them (pools with `allNodes` or a node selector every such node
    matches) chooses devices independently of the node its pods land on. One owner then counts
    the devices of all its placed pods (its multiplicity is the kind's pods placed), and the
    per-node counts only carry node resources: the same placements, one copy of the device
    terms instead of one per node. `invert`: every placed pod is dealt its devices from that one
    owner, whatever its node (the dealing of `CountIdenticalPods` with all pods on one owner)."""

    @staticmethod
    def apply(kind, nodes: list, refs_of: dict, candidate_columns) -> bool:
        """`refs_of`: node name -> columns; `candidate_columns(node, refs)`: the columns some
        request of the kind may take on that node (None: the kind has no problem there)."""
        if not kind.counted or kind.unit_size != 1 or len(nodes) < 2:
            return False
        seen: dict[tuple, frozenset] = {}
        first = None
        for node in nodes:
            refs = refs_of.get(node.name, [])
            sig = tuple(map(id, refs))
            got = seen.get(sig)
            if got is None:
                cols = candidate_columns(node, refs)
                if cols is None or any(r.node is not None for r in cols):
                    return False
                got = seen[sig] = frozenset(r.key for r in cols)
            if first is None:
                first = got
            elif got != first:
                return False
        return True


# ------------------------------------------------------------------ independent parts
class SplitComponents:
    """apply(owners, edges) -> parts; invert(part solutions) -> one solution."""

    def apply(self, items: list[Hashable], links: list[tuple[Hashable, Hashable]]) -> list[list[Hashable]]:
        import networkx as nx
        g = nx.Graph()
        g.add_nodes_from(items)
        g.add_edges_from(links)
        order = {x: i for i, x in enumerate(items)}
        parts = [sorted(c, key=order.__getitem__) for c in nx.connected_components(g)]
        parts.sort(key=lambda c: order[c[0]])
        return parts

    @staticmethod
    def invert(solutions: list[dict]) -> dict:
        out: dict = {}
        for s in solutions:
            out.update(s)
        return out
