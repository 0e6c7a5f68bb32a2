"""What a pod-group cycle's trial of one placement does, remembered (draopt/cluster/podgroup_placement.py).

A gang with a topology constraint is tried in every domain (a rack, say) one cycle after the other,
pod by pod, and taken back; between two cycles most domains did not change. A trial's step - one pod
through the filters and scores of the domain's nodes, committed to the best node - is remembered
as a transition between states of the domain: (state, kind of pod) -> (the tie-break draws it made,
the state after it). A later trial whose every step is known is not run: its draws are made again on
the scheduler's random source (so everything after it draws what it drew), and its outcome is read
off the states. Only the placement a cycle chooses is needed node by node; it is run again for real
from the random state it started with.

Exact because:
* a domain's state is the multiset of its nodes' states, each node's state being everything the
  filters and scores read of it for pods of a remembered kind: free resources (node and scheduler
  view), which of its devices are held, and what never changes (allocatable, taints, devices without
  their names). Kinds are pods whose filters and scores read nothing else: no node selector or
  affinity, no inter-pod (anti-)affinity or topology spread (their own or, for the cluster, other
  pods' terms), own unshared claims not yet allocated, with plain requests (ExactCount, no admin
  access, no capacity, no derived attributes, no constraints, no prioritized list), no
  node-allocatable resources;
* the multiset is all a step reads: every node of the domain is filtered (the profile's
  numFeasibleNodesToFind covers the domain) and scores are per node, normalised over the feasible
  ones; the state after the step is a function of the multiset when the best nodes (the ties) all
  have one state, which is checked when a step is remembered (a step with unlike ties is not);
* a node whose devices are all alike (one description, all on its own slices, no counters, shares,
  taints or binding conditions) is described by how many are held: the allocator takes the first free
  ones in order, and for plain requests alike devices make alike results; other nodes by which ones.
"""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from typing import Any

_UNSUPPORTED = object()


class TrialMemo:
    """Transitions of domain states under one pod each, for one first-fit run (simulate)."""

    def __init__(self, scheduler, cluster, book, shared_claims: set[str], to_find):
        self.sched = scheduler
        self.to_find = to_find  # numFeasibleNodesToFind(percentage, nodes)
        self.rng = scheduler.rng
        self.cluster = cluster
        self.book = book
        self.shared_claims = shared_claims
        # States and kinds are numbered (their tuples hold Fractions and long texts: slow to hash).
        # (state, kind) -> (draws, state after, device results allocated, state of the node taken)
        self.transitions: dict[tuple, tuple[tuple[int, ...], tuple, int, int]] = {}
        self.bounds: dict[tuple, int] = {}  # (state, kinds) -> GroupCycle._capacity_bound
        self.best_free: dict[tuple, int] = {}  # (state, class, selectors) -> GroupCycle._best_free
        self._kinds: dict[str, int | None] = {}  # pod -> its kind's number
        self._kind_ids: dict[tuple, int] = {}
        self._classes: dict[int, Any] = {}  # node index -> (class id, alike devices) or _UNSUPPORTED
        self._class_ids: dict[tuple, int] = {}
        self._sigs: dict[int, tuple[int, int]] = {}  # node index -> (version, number of its state)
        self._sig_ids: dict[tuple, int] = {}
        self._sig_list: list[tuple] = []
        self._sums: dict[tuple, dict[str, Fraction]] = {}
        self._tracked = sorted(scheduler.used)
        self._ties: list[int] | None = None  # draws of the step being recorded; None: not recordable
        self.replays = 0  # trials answered

    # ------------------------------------------------------------------ pods
    def usable(self) -> bool:
        """The cluster-wide part of a kind: no pod on any node has inter-pod (anti-)affinity terms
        (they would make the filters and scores read other nodes)."""
        s = self.sched
        if s._n_anti:
            return False
        return not any(where for (kind, _, _), (_, where) in s.affinity_groups.items() if kind != "anti")

    def kind(self, pod) -> int | None:
        """What the filters and scores read of the pod (numbered), or None when they read more than
        the memo keeps (see the module docstring)."""
        if pod.key in self._kinds:
            got = self._kinds[pod.key]
        else:
            kind = self._static_kind(pod)
            got = self._kinds[pod.key] = None if kind is None else self._kind_ids.setdefault(kind, len(self._kind_ids))
        if got is None:
            return None
        for use in pod.claims:
            if self.book.allocation(use.key) is not None:
                return None
        return got

    def _static_kind(self, pod) -> tuple | None:
        s = self.sched
        spec = pod.pod.spec
        if pod.node_selector or spec.affinity is not None or pod.extended_resources:
            return None
        if self.cluster.features.node_allocatable_resources:
            return None
        prof = s.profile(pod)
        if prof is None or not prof.score_weights:
            return None
        info = s.info(pod)
        if info.has_pod_affinity or info.spread or info.preferred_node_terms:
            return None
        if s.default_rules(info, prof, "DoNotSchedule") or s.default_rules(info, prof, "ScheduleAnyway"):
            return None
        claims = self.book.claims
        first: dict[str, int] = {}
        specs = []
        for use in pod.claims:
            claim = claims.get(use.key)
            if claim is None or use.for_group is not None or use.key in self.shared_claims:
                return None
            if claim.status.allocation is not None or not _plain_requests(claim):
                return None
            first.setdefault(use.key, len(first))
            specs.append((first[use.key], self.book.signature(use.key)))
        return (
            prof.name,
            tuple(specs),
            tuple(sorted(pod.resources.items())),
            s.nonzero(pod),
            json.dumps([t.to_k8s() for t in spec.tolerations], sort_keys=True),
        )

    def full_scan(self, pod, n: int) -> bool:
        """Every node of an n-node domain is filtered for the pod (numFeasibleNodesToFind >= n)."""
        prof = self.sched.profile(pod)
        pct = prof.percentage_of_nodes_to_score
        if pct is None:
            pct = self.sched.config.percentage_of_nodes_to_score
        return self.to_find(pct, n) >= n

    # ------------------------------------------------------------------ nodes
    def _node_class(self, node) -> Any:
        got = self._classes.get(node.index)
        if got is None:
            got = self._classes[node.index] = self._static_class(node)
        return got

    def _static_class(self, node) -> Any:
        inv = self.cluster.inventory(node)
        if inv.invalid_pools:
            return _UNSUPPORTED
        devices = []
        for e in inv.devices:
            d = e.device
            pool = e.pool
            if (
                e.slice.spec.node_name != node.name
                or pool.other_slices
                or pool.counter_sets
                or pool.has_binding_conditions
                or pool.incomplete
                or pool.invalid
                or e.taints
                or d.consumes_counters
                or d.binding_conditions
                or d.allow_multiple_allocations
            ):
                return _UNSUPPORTED
            text = d.to_k8s()
            text.pop("name", None)
            devices.append(json.dumps([pool.driver, text], sort_keys=True))
        alike = len(set(devices)) <= 1
        spec = node.node.spec
        key = (
            tuple(sorted(node.allocatable.items())),
            bool(spec.unschedulable),
            json.dumps([t.to_k8s() for t in spec.taints], sort_keys=True),
            (devices[0] if devices else "", len(devices)) if alike else tuple(devices),
        )
        cid = self._class_ids.setdefault(key, len(self._class_ids))
        return (cid, alike)

    def node_state(self, node) -> int | None:
        """The number of the node's state (see the module docstring); None: not described."""
        got = self._sigs.get(node.index)
        if got is not None and got[0] == node.version:
            return got[1]
        cls = self._node_class(node)
        if cls is _UNSUPPORTED:
            return None
        cid, alike = cls
        s = self.sched
        idx = node.index
        holds = self.cluster.allocated.holds
        devices = self.cluster.inventory(node).devices
        held = sum(1 for e in devices if holds(e.id)) if alike else tuple(holds(e.id) for e in devices)
        sig = (
            cid,
            tuple(sorted((r, v) for r, v in node.used.items() if v)),
            tuple(int(s.used[r][idx]) for r in self._tracked),
            int(s.nz_cpu[idx]),
            int(s.nz_mem[idx]),
            held,
        )
        got_id = self._sig_ids.get(sig)
        if got_id is None:
            got_id = self._sig_ids[sig] = len(self._sig_list)
            self._sig_list.append(sig)
        self._sigs[idx] = (node.version, got_id)
        return got_id

    def state(self, nodes: list) -> tuple | None:
        """The domain's state: its nodes' states as a multiset (sorted); None when a node is not
        described by the memo."""
        sigs = []
        known = self._sigs
        for node in nodes:
            got = known.get(node.index)
            if got is not None and got[0] == node.version:
                sigs.append(got[1])
                continue
            sig = self.node_state(node)
            if sig is None:
                return None
            sigs.append(sig)
        sigs.sort()
        return tuple(sigs)

    def used_sums(self, state: tuple) -> dict[str, Fraction]:
        """Node resources in use, summed over the domain's nodes (exact: Fractions)."""
        out = self._sums.get(state)
        if out is None:
            out = self._sums[state] = {}
            for sig in state:
                for r, v in self._sig_list[sig][1]:
                    out[r] = out.get(r, Fraction(0)) + v
        return out

    # ------------------------------------------------------------------ recording a step
    def begin(self) -> None:
        """A step of a trial is about to run: watch its tie-breaks."""
        self._ties = []
        self.sched.on_tie = self._on_tie

    def _on_tie(self, tied: list[int]) -> None:
        if self._ties is None:
            return
        nodes = self.sched.nodes
        first = self.node_state(nodes[tied[0]])
        if first is None or any(self.node_state(nodes[i]) != first for i in tied[1:]):
            self._ties = None  # unlike ties: which one is drawn matters
            return
        if self.sched.tie_break == "random":
            self._ties.append(len(tied))

    def end(self, before: tuple, kind: int, pl, nodes: list) -> tuple | None:
        """The step ran (`pl` its placement, `before` the domain's state then): remember it when it
        placed the pod and its ties were alike. Returns the domain's state now."""
        self.sched.on_tie = None
        ties, self._ties = self._ties, None
        if not pl.placed:
            return before
        after = self.state(nodes)
        if after is not None and ties is not None:
            taken = Counter(before)
            taken.subtract(after)
            chosen = [sig for sig, n in taken.items() if n > 0]
            if len(chosen) == 1:  # (else the node's state did not change: not remembered)
                results = sum(len(a.devices.results) for a in pl.new_claims.values())
                self.transitions[(before, kind)] = (tuple(ties), after, results, chosen[0])
        return after

    def choose(self, state: tuple, kind: int, nodes: list):
        """The node a known step from `state` takes among `nodes` (the placement's, in the
        cluster's order), drawing as the step did; and the state after it."""
        ties, after, _, chosen = self.transitions[(state, kind)]
        candidates = [n for n in nodes if self.node_state(n) == chosen]  # the tied nodes, in order
        if ties:
            if len(candidates) != ties[0]:
                raise RuntimeError("internal: a remembered step's ties differ from the nodes' states")
            return candidates[self.rng.randrange(ties[0])], after
        if len(candidates) != 1 and self.sched.tie_break != "name":
            raise RuntimeError("internal: a remembered step's node is not one node")
        return candidates[0], after

    # ------------------------------------------------------------------ replaying a trial
    def replay(self, state: tuple, kinds: tuple) -> tuple[Any, tuple, int] | None:
        """A trial placing pods of `kinds` in turn from `state`, if each step is known: the random
        state it started from, the state it ends in and the device results it allocated; its draws
        are made now. None: not known (run it)."""
        draws: list[int] = []
        results = 0
        at = state
        for kind in kinds:
            step = self.transitions.get((at, kind))
            if step is None:
                return None
            draws.extend(step[0])
            at = step[1]
            results += step[2]
        self.replays += 1
        start = self.rng.getstate()
        for n in draws:
            self.rng.randrange(n)
        return start, at, results


def _plain_requests(claim) -> bool:
    """Requests the allocator fills with the first free devices that fit (see the module docstring)."""
    devices = claim.spec.devices
    if devices.constraints:
        return False
    for request in devices.requests:
        exact = request.exactly
        if exact is None or request.first_available:
            return False
        if (exact.allocation_mode or "ExactCount") != "ExactCount" or exact.admin_access:
            return False
        if exact.capacity is not None or exact.derived_attributes:
            return False
    return True


__all__ = ["TrialMemo"]
