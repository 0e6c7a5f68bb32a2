"""A faster exact pricing for column generation, on nodes of shareable devices only.

The one model prices a class of openb GPU nodes slowly (a node of 8 GPUs and 120 kinds: no
proof in 15 s) because it assigns every kind to every device. Where a class has the simple
structure of the trace (checked by `DevicePricing.for_class`, else None and the one model
prices it), the same problem has a compact form that CP-SAT proves quickly:

* every pod of a kind has at most one claim of one request (no sub-requests, no constraints,
  no admin access), asking ExactCount `count` devices among the same candidate set: every
  device of the representative that any kind may use;
* the devices are alike: one capacity, no counters, no allocated share, no device-derived node
  resources; a request consumes `a` of it per device (the requestPolicy's rounding, as
  `draopt.dra.rules.consumption` computes it), the same on every device;
* a request either takes its devices whole (`a` is the whole capacity, or the device is not
  multi-allocatable), or takes a share of one device (count 1).

Then one node holds counts n_k if and only if: sum_k r_k n_k <= free r for every node resource
r (cpu, memory, pods: the pod's `resources`, as the one model reads them); W = sum over whole
kinds of count_k n_k devices are taken whole; and the shares fit the other D - W devices as a
bin packing: y[v, g] shares of size v on device g, sum_v v y[v, g] <= capacity, and the kinds
of share size v get at most sum_g y[v, g] of them. Devices are alike, so their loads are
ordered (symmetry). The model's optimum is the one model's: both describe exactly the same
feasible counts (ResourceClaim allocation on a node of alike shareable devices: KEP-5075
consumable capacity, kubernetes pkg/scheduler/framework/plugins/dynamicresources and
staging/src/k8s.io/dynamic-resource-allocation/structured/internal/experimental allocator:
a device's consumed capacity is the sum of its allocations' consumption). The one model stays
the rule source: colgen.py checks every column this pricing returns with it and drops the
pricing for the class on the first disagreement.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cached_property

from ortools.sat.python import cp_model

from draopt import interrupt

PRICE_SCALE = 10**6
ARC_FLOW_ARCS = 4000  # a device's share patterns as a flow graph up to this many arcs
ARC_FLOW_DEVICES = 4  # from this many devices


class DevicePricing:
    """The compact pricing model of one class (see the module docstring)."""

    def __init__(
        self,
        kinds: list[int],
        ub: list[int],
        demand: list[dict],
        free: dict,
        whole: list[int],
        share: list[Fraction | int],
        devices: int,
        capacity: Fraction,
    ):
        self.kinds = kinds  # class kinds order
        self.ub = ub  # pods of a kind one node may take (the one model's bound)
        self.demand = demand  # per kind: node resource -> amount per pod
        self.free = free  # node resource -> free amount
        self.whole = whole  # per kind: devices taken whole per pod (0: none)
        self.share = share  # per kind: share of one device per pod (0: none)
        self.devices = devices
        self.capacity = capacity
        self.stats = {"solves": 0}
        # CP-SAT's linearization level for `price` (its default: 1). The plan sets 2 (the full
        # LP relaxation, cuts included): 35-40 % fewer cpu seconds to prove the openb-shaped
        # classes of the 8,000-pod scale fleet (50 solves of two exact rounds: 7.0 s against 11.2).
        self.linearization = 1

    # ------------------------------------------------------------------ structure
    @staticmethod
    def for_class(nc, prep, vars_) -> tuple[DevicePricing | None, str]:
        """The compact model of class `nc` (`vars_`: the one model's count variable per kind,
        None where the kind cannot use the representative), or None and why not."""
        rep = nc.nodes[0]
        refs = prep.refs.get(rep.name, [])
        entries = [e for r in refs for e in r.entries]
        ub: list[int] = []
        demand: list[dict] = []
        whole: list[int] = []
        share: list[Fraction | int] = []
        candidates_seen: set[int] | None = None
        amount_cap: Fraction | None = None
        cap_name: str | None = None
        for ki, var in zip(nc.kinds, vars_):
            kind = prep.kinds[ki]
            ub.append(0 if var is None else int(var.proto.domain[1]))
            demand.append({r: Fraction(v) for r, v in kind.pods[0].resources.items() if v})
            whole.append(0)
            share.append(0)
            if var is None:
                continue
            p = prep.problems.get((ki, rep.name))
            claims = [] if p is None else p.claims
            if len(claims) > 1:
                return None, "a pod with several claims"
            if not claims:
                continue
            cl = claims[0]
            if cl.constraints or len(cl.requests) != 1 or cl.requests[0].has_subrequests:
                return None, "a claim with constraints, several requests or sub-requests"
            s = cl.requests[0].alternatives[0]
            if s.mode != "ExactCount" or s.admin_access or s.count < 1:
                return None, "a request that is not ExactCount without admin access"
            cands = {i for i, e in enumerate(entries) if prep.candidacy(p, s, e)}
            if not cands:
                ub[-1] = 0
                continue
            if candidates_seen is None:
                candidates_seen = cands
            elif cands != candidates_seen:
                return None, "kinds with different candidate devices"
            amounts = _amounts(p, s, [entries[i] for i in cands])
            if isinstance(amounts, str):
                return None, amounts
            if len(amounts) != 1:
                return None, "devices alike serve a request differently"
            ((name, a, capv),) = amounts
            if name == "whole" or (a is not None and capv is not None and a >= capv):
                whole[-1] = s.count
                if name != "whole":
                    if cap_name not in (None, name) or amount_cap not in (None, capv):
                        return None, "devices of different capacities"
                    cap_name, amount_cap = name, capv
            else:
                if s.count != 1:
                    return None, "a request for shares of several devices"
                if a is None or a <= 0:
                    return None, "a request that consumes nothing"
                if cap_name not in (None, name) or amount_cap not in (None, capv):
                    return None, "devices of different capacities"
                cap_name, amount_cap = name, capv
                share[-1] = a
        if candidates_seen is None:
            return None, "no kind uses a device"
        free = {}
        for r in sorted({r for d in demand for r in d}):  # sorted: the model's rows in one order every run
            if r in rep.allocatable:
                free[r] = Fraction(rep.allocatable[r]) - Fraction(rep.used.get(r, 0))
        if any(share) and amount_cap is None:
            return None, "no capacity"
        return DevicePricing(
            list(nc.kinds),
            ub,
            demand,
            free,
            whole,
            share,
            len(candidates_seen),
            amount_cap if amount_cap is not None else Fraction(1),
        ), ""

    # ------------------------------------------------------------------ pricing
    def price(
        self,
        reduced: dict[int, float],
        seconds: float,
        hint: tuple[int, ...] | None = None,
        *,
        hard=True,
        wall: float | None = None,
    ):
        """(counts, proven upper bound of the reduced value, proven, other solutions found) of the
        best configuration under `reduced`, or None if nothing was found in `seconds` (deterministic
        time; `hard`: also stopped at three times that in wall-clock seconds, or at `wall` seconds
        if sooner)."""
        top = max([abs(v) for v in reduced.values()] + [1e-9])
        scale = PRICE_SCALE / top
        m = cp_model.CpModel()
        n, terms, slack = [], [], 0.0
        for i, ki in enumerate(self.kinds):
            r = reduced.get(ki, 0.0)
            hi = self.ub[i] if r > 0 else 0
            for res, amount in self.demand[i].items():
                if res in self.free:
                    hi = min(hi, int(self.free[res] // amount))
            if self.whole[i]:
                hi = min(hi, self.devices // self.whole[i])
            if self.share[i]:
                hi = min(hi, self.devices * int(self.capacity // self.share[i]))
            v = m.new_int_var(0, max(0, hi), f"n{i}")
            n.append(v)
            if hi > 0:
                coef = int(round(r * scale))
                terms.append((coef, v))
                # The price lost to its rounding (none where it was rounded up): what a
                # configuration's reduced value can exceed its rounded one by.
                slack += max(0.0, r - coef / scale) * hi
        if not any(c > 0 for c, _ in terms):
            return tuple(0 for _ in self.kinds), 0.0, True, []
        for res, cap in self.free.items():
            row = [(self.demand[i][res], v) for i, v in enumerate(n) if res in self.demand[i]]
            if row and sum(a * _hi(v) for a, v in row) > cap:
                ints = _ints([a for a, _ in row] + [cap])
                m.add(sum(k * v for k, (_, v) in zip(ints, row)) <= ints[-1])
        whole_devices = sum(w * v for w, v in zip(self.whole, n) if w)
        sizes = sorted({s for s in self.share if s})
        if sizes:
            cap = self.capacity
            ints = _ints(sizes + [cap])
            size_int, cap_int = dict(zip(sizes, ints[:-1])), ints[-1]
            # Few devices: the per-device form is the smaller model.
            arcs = _arc_flow_graph([size_int[s] for s in sizes], cap_int) if self.devices >= ARC_FLOW_DEVICES else None
            if arcs is not None:
                slots = _arc_flow(m, arcs, sizes, self.devices, whole_devices)
            else:
                slots = _per_device(m, sizes, size_int, cap_int, cap, self.devices, whole_devices)
            for s in sizes:
                m.add(sum(v for v, sh in zip(n, self.share) if sh == s) <= slots[s])
        else:
            m.add(whole_devices <= self.devices)
        m.maximize(sum(c * v for c, v in terms))
        if hint is not None:
            for v, h in zip(n, hint):
                m.add_hint(v, h)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = 0
        solver.parameters.max_deterministic_time = max(0.05, seconds)  # same input, same columns
        solver.parameters.linearization_level = self.linearization
        if hard:
            solver.parameters.max_time_in_seconds = max(0.05, min(seconds * 3, wall if wall is not None else math.inf))
        found = _Solutions(n)
        status = interrupt.watch(solver).solve(m, found)
        self.stats["solves"] += 1
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        counts = tuple(solver.value(v) for v in n)
        upper = max(0.0, solver.best_objective_bound / scale + slack)
        # The solutions met on the way, best first: several columns from one solve.
        others = [c for c in reversed(found.seen) if c != counts]
        return counts, upper, status == cp_model.OPTIMAL, others

    def holds(self, other: DevicePricing) -> bool:
        """Every configuration `other`'s model accepts, this one accepts (its node is at least as
        large in every resource and device, and takes every kind of `other` the same way)."""
        if self.capacity != other.capacity or self.devices < other.devices or set(self.free) != set(other.free):
            return False
        if any(self.free[r] < other.free[r] for r in other.free):
            return False
        index = {ki: i for i, ki in enumerate(self.kinds)}
        for i, ki in enumerate(other.kinds):
            if other.ub[i] == 0:
                continue
            k = index.get(ki)
            if (
                k is None
                or self.ub[k] < other.ub[i]
                or (self.whole[k], self.share[k]) != (other.whole[i], other.share[i])
            ):
                return False
        return True

    # ------------------------------------------------------------------ greedy pricing
    def greedy(self, reduced: dict[int, float], most: dict[int, int]) -> list[tuple[int, ...]]:
        """Configurations the compact model accepts, filled greedily under `reduced` values per pod
        (a heuristic: cheap rounds while columns come; the exact `price` proves when none is
        left): kinds of positive value in a few orders of value per size, each taking as many
        pods as still fit (at most `most[kind]`, its pods), shares best-fit on the devices.
        Distinct configurations, best value first; deterministic."""
        g = self._integral
        pos = [i for i, ki in enumerate(self.kinds) if reduced.get(ki, 0.0) > 0 and self.ub[i] > 0]
        if not pos:
            return []
        value = {i: reduced[self.kinds[i]] for i in pos}

        def by_density(size: list[float]) -> list[int]:
            return sorted(pos, key=lambda i: (-value[i] / max(size[i], 1e-12), i))

        orders = [by_density(g.size_sum), by_density(g.size_max), by_density(g.size_devices)]
        orders.append(sorted(pos, key=lambda i: (-value[i], i)))
        out: dict[tuple[int, ...], float] = {}
        for order in orders:
            counts = g.fill(order, [min(self.ub[i], most.get(self.kinds[i], 0)) for i in range(len(self.kinds))])
            if any(counts) and counts not in out:
                out[counts] = sum(value.get(i, 0.0) * n for i, n in enumerate(counts))
        return sorted(out, key=lambda c: (-out[c], c))

    @cached_property
    def _integral(self) -> _Integral:
        return _Integral(self)


class _Integral:
    """A DevicePricing in integers (common denominators), for the greedy fill."""

    def __init__(self, f: DevicePricing):
        self.resources = list(f.free)
        self.need = []
        for r in self.resources:
            ints = _ints([f.demand[i].get(r, 0) for i in range(len(f.kinds))] + [f.free[r]])
            self.need.append(ints)
        self.free = [row[-1] for row in self.need]
        sizes = _ints([s for s in f.share] + [f.capacity])
        self.share, self.capacity = sizes[:-1], sizes[-1]
        self.whole, self.devices = list(f.whole), f.devices
        k = len(f.kinds)
        usage = [
            [row[i] / max(row[-1], 1) for row in self.need]
            + [self.whole[i] / max(self.devices, 1), self.share[i] / max(self.capacity * self.devices, 1)]
            for i in range(k)
        ]
        self.size_sum = [sum(u) for u in usage]
        self.size_max = [max(u) for u in usage]
        self.size_devices = [u[-2] + u[-1] or sum(u) for u in usage]

    def fill(self, order: list[int], most: list[int]) -> tuple[int, ...]:
        free = list(self.free)
        loads = [0] * self.devices
        counts = [0] * len(most)
        cap = self.capacity
        for i in order:
            need = [row[i] for row in self.need]
            whole, share = self.whole[i], self.share[i]
            while counts[i] < most[i] and all(a <= b for a, b in zip(need, free)):
                if whole:
                    empty = [g for g, load in enumerate(loads) if load == 0]
                    if len(empty) < whole:
                        break
                    for g in empty[:whole]:
                        loads[g] = cap
                elif share:
                    fits = [g for g, load in enumerate(loads) if load + share <= cap]
                    if not fits:
                        break
                    g = max(fits, key=lambda g: (loads[g], -g))  # best fit: empty devices kept whole
                    loads[g] += share
                free = [b - a for a, b in zip(need, free)]
                counts[i] += 1
        return tuple(counts)


def _arc_flow_graph(sizes: list[int], capacity: int) -> list[tuple[int, int, int]] | None:
    """The arc-flow graph of one device's shares (Valerio de Carvalho's bin-packing model): nodes
    are loads in units of the sizes' common divisor, an arc (load, load + size, size index) adds
    one share, sizes taken in decreasing order (each pattern is one path), and a loss arc from
    every load to the full one; None when it has more than ARC_FLOW_ARCS arcs."""
    from math import gcd

    unit = gcd(capacity, *sizes)
    top = capacity // unit
    reach = {0}
    arcs: list[tuple[int, int, int]] = []
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        step = sizes[i] // unit
        for v in range(top + 1):  # increasing: a share of this size may follow one of its own
            if v in reach and v + step <= top:
                arcs.append((v, v + step, i))
                reach.add(v + step)
        if len(arcs) > ARC_FLOW_ARCS:
            return None
    arcs += [(v, top, -1) for v in sorted(reach) if v < top]
    return arcs


def _arc_flow(m, arcs, sizes, devices: int, whole_devices) -> dict:
    """The shares on the devices not taken whole as a flow of one unit per device through the
    arc-flow graph (exact for alike devices; a strong LP relaxation whatever their number):
    size -> the shares of that size the devices hold."""
    flow = [m.new_int_var(0, devices, f"a{a}_{b}_{i}") for a, b, i in arcs]
    top = max(b for _, b, _ in arcs)
    into: dict[int, list] = {}
    out: dict[int, list] = {}
    for (a, b, _), f in zip(arcs, flow):
        out.setdefault(a, []).append(f)
        into.setdefault(b, []).append(f)
    m.add(sum(out[0]) + whole_devices == devices)
    for v in sorted(set(into) | set(out)):
        if v not in (0, top):
            m.add(sum(into.get(v, [])) == sum(out.get(v, [])))
    slots: dict = {s: 0 for s in sizes}
    for (_, _, i), f in zip(arcs, flow):
        if i >= 0:
            slots[sizes[i]] += f
    return slots


def _per_device(m, sizes, size_int, cap_int: int, cap, devices: int, whole_devices) -> dict:
    """The shares per device (the form for graphs too large): size -> the shares of that size."""
    full = [m.new_bool_var(f"f{g}") for g in range(devices)]
    m.add(sum(full) == whole_devices)
    loads = []
    slots: dict = {s: [] for s in sizes}
    for g in range(devices):
        ys = []
        for s in sizes:
            y = m.new_int_var(0, int(cap // s), f"y{s}_{g}")
            slots[s].append(y)
            ys.append(size_int[s] * y)
        load = m.new_int_var(0, cap_int, f"l{g}")
        m.add(load == sum(ys) + cap_int * full[g])
        loads.append(load)
    for g in range(devices - 1):
        m.add(loads[g] >= loads[g + 1])
        m.add(full[g] >= full[g + 1])
    return {s: sum(v) for s, v in slots.items()}


class _Solutions(cp_model.CpSolverSolutionCallback):
    def __init__(self, variables):
        super().__init__()
        self.variables = variables
        self.seen: list[tuple[int, ...]] = []

    def on_solution_callback(self) -> None:
        self.seen.append(tuple(self.value(v) for v in self.variables))


def _amounts(p, s, devices) -> set[tuple[str, Fraction | None, Fraction | None]] | str:
    """How request `s` of problem `p` uses each of its candidate `devices` (entries): ("whole",
    None, None) for a device taken whole, (capacity name, amount consumed, capacity) for a share;
    or why the compact model does not apply."""
    amounts: set[tuple[str, Fraction | None, Fraction | None]] = set()
    for e in devices:
        d = e.device
        if d.consumes_counters or e.device.node_allocatable_resources:
            return "devices with counters or node resources"
        if p.inventory.allocated.capacity.get(e.id) or e.id in p.inventory.allocated.devices:
            return "a device with an allocation"
        if not e.multi_allocatable:
            amounts.add(("whole", None, None))
            continue
        if len(d.capacity) != 1:
            return "a shareable device without exactly one capacity"
        used = p.consumption(s, e)
        if used is None:
            return "a request its devices cannot serve"
        ((name, q),) = used.items()
        capv = _quantity(d.capacity[name].value)
        amounts.add((name, q.value, capv))
    return amounts


def _quantity(value) -> Fraction:
    from draopt.kube.quantity import Quantity

    return Quantity.parse(value).value if isinstance(value, str) else Fraction(value)


def _hi(v) -> int:
    dom = v.proto.domain  # a protobuf repeated field: no negative indexing
    return int(dom[len(dom) - 1])


def _ints(values: list[Fraction | int]) -> list[int]:
    """Exact integers in the same ratio (common denominator)."""
    from math import lcm

    den = 1
    for v in values:
        den = lcm(den, Fraction(v).denominator)
    return [int(Fraction(v) * den) for v in values]
