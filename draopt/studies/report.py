"""`draopt compare`: several placement policies on one cluster and workload, measured side by side.

For each policy, :func:`compare` places the pending pods (:func:`draopt.placement.place`), rebuilds
the cluster in the state the placement leaves (the input's allocations plus the policy's, node
resources of running and placed pods) and measures it:

* ``placed`` / ``weighted_placed``: pods placed, and the sum of ``max(1, 1 + priority)`` over
  them (the quantity the optimal policy maximises first);
* ``devices_used``: devices allocated (each device once, however many claims share it), out of
  ``devices_total`` (the devices of usable pools any node can reach);
* ``counters``: per counter name, what allocated devices consume of their pools' shared counter
  sets, and the sets' total; ``capacity``: per capacity name, what shares consume of devices
  with ``allowMultipleAllocations``, and those devices' total;
* ``free_devices``: device units still allocatable, each device taken alone: a device nobody
  holds whose counters are still available counts 1 (partitions that share a counter set may
  not all fit together: see ``counters`` for what is left of the sets); a device with ``allowMultipleAllocations`` counts the share of its
  capacity left (the smallest over its capacities); anything else 0;
* a *pod shape* is the pending pods alike in claims (their specs), node resources, node
  selector, affinity and tolerations. A shape *can use* a free device when, on a node that
  reaches the device, the first-fit filters (node filters, node resources, the kube-scheduler's
  device allocator) accept a new pod like it, with claims of its own, in that state, and one of
  its requests could take that device on its own (class and request selectors, capacity left,
  taints: ``Problem.usable_alone``);
* ``stranded_devices``: free device units that no pod shape of the workload can use;
* ``fragmentation``: the expected free device units a pod drawn from the workload cannot use,
  shapes weighted by their number of pods: ``sum_d free(d) * P(the shape cannot use d)``: the
  FGD paper's measure (Weng et al., USENIX ATC '23, section 4: a task that does not fit a node
  fragments all its free GPU capacity; one that fits, the capacity on GPUs it cannot use), for
  any device; ``fragmentation_pct`` is its share of ``free_devices``;
* ``solve_s``: wall time of the policy's placement; ``status`` / ``gap``: the optimal policy's
  own (``OPTIMAL`` is proven; ``FEASIBLE`` is the best found within the time limit, with the
  gap to its bound); first-fit is a heuristic and proves nothing (``proven`` is false).
"""

from __future__ import annotations

import html
import io
import json
import re
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draopt import progress
from draopt.errors import InputError
from draopt.kube.features import Features, add_version_flag, features_from_flags
from draopt.kube.listflags import CommaList
from draopt.kube.loader import ObjectSet
from draopt.kube.optionfiles import check_writable, save_figure
from draopt.provenance import Provenance, record
from draopt.studies.report_map import (  # noqa: F401  (MAP_NODES, MAP_UNPLACED, Hold, PLACED: re-exported)
    MAP_NODES,
    MAP_UNPLACED,
    PLACED,
    DeviceCell,
    Hold,
    _device_map,
    placement_map,
)

DEFINITIONS = {
    "placed": "pending pods placed",
    "weighted_placed": "sum of max(1, 1 + priority) over placed pods (what the optimal policy maximises first)",
    "devices_used": "devices allocated after the placement (input allocations included), each device once",
    "free_devices": "device units still allocatable, each device alone: 1 per device nobody holds whose counters "
    "are available (partitions sharing counters may not all fit together), the share of capacity "
    "left on devices with allowMultipleAllocations",
    "stranded_devices": "free device units no pod shape of the workload can use (the shape fits on a node "
    "reaching the device under the first-fit filters and the kube-scheduler's allocator, "
    "and one of its requests could take the device on its own)",
    "fragmentation": "expected free device units a pod drawn from the workload (shapes weighted by pod "
    "count) cannot use: sum over devices of free(d) x P(the shape cannot use d); FGD's measure "
    "(a shape that does not fit a node fragments all its free capacity, one that fits the "
    "devices it cannot take)",
    "solve_s": "wall time of the policy's placement (seconds)",
    "status": "OPTIMAL: proven; FEASIBLE: best found within the time limit (gap to the bound); "
    "heuristic: first-fit, nothing proven",
}
PLOTTED = ("placed", "weighted_placed", "devices_used", "free_devices", "stranded_devices", "fragmentation", "solve_s")


@dataclass
class PolicyReport:
    """One policy's placement measured (`draopt compare`; the measures are defined in the module
    docstring and DEFINITIONS)."""

    policy: str  # the policy as given (first-fit:CONFIG included)
    pods: int  # pending pods of the input
    placed: int
    weighted_pods: int  # sum of max(1, 1 + priority) over the pending pods
    weighted_placed: int  # ... over the placed ones
    devices_total: int
    devices_used: int
    free_devices: float
    stranded_devices: float
    fragmentation: float
    shapes: int  # pod shapes of the workload
    solve_s: float
    status: str  # the optimal policy's solver status; "heuristic" for first-fit
    gap: float | None  # the optimal policy's gap to its bound
    counters: dict[str, dict[str, float]] = field(default_factory=dict)  # name -> {"used", "total"}
    capacity: dict[str, dict[str, float]] = field(default_factory=dict)  # name -> {"used", "total"}
    summary: str = ""  # what the optimal model proved, in words
    # The placement map: node -> its devices in search order, each (device, holder, how held);
    # not part of to_json (the measures), drawn by to_html.
    device_map: dict[str, list[DeviceCell]] = field(default_factory=dict, repr=False)
    unplaced: list[str] = field(default_factory=list, repr=False)

    @property
    def proven(self) -> bool:
        return self.status == "OPTIMAL"

    @property
    def fragmentation_pct(self) -> float:
        return round(100 * self.fragmentation / self.free_devices, 3) if self.free_devices else 0.0

    def __repr__(self) -> str:
        gap = "" if self.gap is None else f", gap {progress.format_gap(self.gap)}"
        return (
            f"<PolicyReport {self.policy}: {self.placed} of {self.pods} pods placed, {self.devices_used} of "
            f"{self.devices_total} devices used, {rounded(self.stranded_devices)} stranded, {self.status}{gap}>"
        )

    def _repr_html_(self) -> str:
        return PolicyReports([self])._repr_html_()

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("device_map", "unplaced")}
        out["proven"] = self.proven
        out["fragmentation_pct"] = self.fragmentation_pct
        return out


class PolicyReports(list[PolicyReport]):
    """What :func:`compare` returns: a list of PolicyReport, one per policy in order, that a
    notebook shows as a table and turns into a DataFrame."""

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per policy: `policy`, then ROWS (pods, placed,
        weighted_pods, weighted_placed, devices_total, devices_used, free_devices,
        stranded_devices, fragmentation, fragmentation_pct, shapes, solve_s, status, gap,
        proven), defined in DEFINITIONS and the module docstring."""
        from draopt.studies.frames import frame

        return frame(("policy",) + ROWS, ([r.policy] + [r.to_json()[c] for c in ROWS] for r in self))

    def __repr__(self) -> str:
        return (
            f"<PolicyReports: {len(self)} policies: "
            + "; ".join(f"{r.policy} {r.placed}/{r.pods} placed" for r in self)
            + ">"
        )

    def _repr_html_(self) -> str:
        from draopt.studies.frames import html_table

        rows = _rows(self, human=True)  # titles with units, rounded values (as the HTML report)
        return html_table("draopt compare", rows[0], rows[1:])


def _num(v: Fraction) -> float | int:
    return int(v) if v.denominator == 1 else round(float(v), 6)


def compare(
    objects: ObjectSet,
    policies: list[str],
    *,
    features: Features | None = None,
    time_limit: float = 60.0,
    **first_fit: Any,
) -> PolicyReports:
    """Place the workload with each policy and measure the state each leaves (module docstring).
    `first_fit`: place()'s scheduler_config, seed, tie_break (first-fit's node choice). A policy
    `first-fit:CONFIG` is first-fit with its own scheduler configuration (`builtin:NAME` or a
    KubeSchedulerConfiguration file): compare scoring profiles side by side."""
    from draopt.placement import PLACE_POLICIES

    if len(policies) < 2:
        raise InputError(
            f"--policy: compare needs two or more policies (got {len(policies)}; "
            f"known: {', '.join(PLACE_POLICIES)}, first-fit:CONFIG)"
        )
    twice = sorted({p for p in policies if policies.count(p) > 1})
    if twice:
        raise InputError(f"--policy {twice[0]}: given twice")
    for spec in policies:
        _, config = parse_policy(spec)
        if config:  # a bad configuration fails before any placement, naming the policy
            from draopt.scheduler import load_config

            try:
                load_config(config)
            except InputError as e:
                raise InputError(f"--policy {spec}: {e}") from None
    features = features or Features.from_gates()
    reports = PolicyReports()
    for spec in policies:
        with progress.current().task(f"compare: {spec} ({len(reports) + 1} of {len(policies)})") as shown:
            shown.time_limit(time_limit if parse_policy(spec)[0] == "optimal" else None)
            reports.append(measure_policy(objects, spec, features=features, time_limit=time_limit, **first_fit))
    return reports


def parse_policy(spec: str) -> tuple[str, str | None]:
    """`first-fit`, `optimal`, or `first-fit:CONFIG` -> (policy, scheduler configuration or None)."""
    from draopt.placement import PLACE_POLICIES

    base, _, config = spec.partition(":")
    if base not in PLACE_POLICIES or (config and base != "first-fit") or (":" in spec and not config):
        raise InputError(
            f"--policy: unknown placement policy {spec!r} (known: {', '.join(PLACE_POLICIES)}, "
            "first-fit:CONFIG with CONFIG builtin:NAME or a KubeSchedulerConfiguration file)"
        )
    return base, config or None


def measure_policy(
    objects: ObjectSet, policy: str, *, features: Features, time_limit: float, **first_fit: Any
) -> PolicyReport:
    """One policy (a spec as :func:`parse_policy` reads it) placed and measured."""
    from draopt.placement import place
    from draopt.cluster.result import weight

    spec = policy
    policy, config = parse_policy(spec)
    if config:
        first_fit = dict(first_fit, scheduler_config=config)
    t0 = time.perf_counter()
    outcome = place(objects, policy=policy, features=features, time_limit=time_limit, **first_fit)
    solve_s = time.perf_counter() - t0
    result, workload = outcome.result, outcome.workload
    with progress.current().task(f"compare: {spec}: measuring the state it leaves"):
        state = _final_state(objects, workload, result, features)
        m = _measure_state(state, workload)
    stats = result.stats
    status = stats.get("status") or "heuristic"
    return PolicyReport(
        policy=spec,
        pods=len(result.pods),
        placed=len(result.placed_pods()),
        weighted_pods=sum(weight(p.priority) for p in result.pods),
        weighted_placed=result.weighted_placed(),
        solve_s=round(solve_s, 3),
        status=status,
        gap=stats.get("gap") if status != "heuristic" else None,
        summary=str(stats.get("summary") or ""),
        device_map=_device_map(state.cluster, workload, result),
        unplaced=sorted(p.pod for p in result.pods if not p.placed),
        **m,
    )


@dataclass
class _State:
    cluster: Any
    book: Any


def _final_state(objects: ObjectSet, workload, result, features: Features) -> _State:
    """A fresh cluster holding the input's allocations plus the placement's, and the node
    resources of running and placed pods (as first-fit would hold them)."""
    from draopt.placement import build_cluster
    from draopt.cluster.firstfit import ClaimBook, _plus, device_resources

    cluster = build_cluster(objects, workload, features)
    book = ClaimBook(cluster, workload.claims)
    for key, (allocation, node) in sorted(result.claims.items()):
        book.commit(key, allocation, node)
    for pl in result.pods:
        if pl.placed:
            pod, node = workload.pod(pl.pod), cluster.by_name[pl.node]
            node.take(_plus(pod.resources, device_resources(cluster, book, pod, node, None)))
    return _State(cluster, book)


def _shape_key(pod, workload) -> str:
    from draopt.cluster.firstfit import _scheduling_constraints

    claims = []
    for use in pod.claims:
        claim = workload.claims[use.key]
        # A claim allocated in the input is that claim, not a kind of claim.
        claims.append(use.key if claim.status.allocation is not None else claim.spec.to_k8s())
    return json.dumps(
        [
            claims,
            sorted((k, str(v)) for k, v in pod.resources.items()),
            sorted(pod.node_selector.items()),
            _scheduling_constraints(pod),
        ],
        sort_keys=True,
    )


def _measure_state(state: _State, workload) -> dict[str, Any]:
    cluster, alloc = state.cluster, state.cluster.allocated
    entries, reach = _devices_reached(cluster)
    counters = _Counters(alloc)
    free, used, capacity = _free_devices(entries, alloc, counters)
    counter_use = _counters_used(entries, counters)
    probes = _Probes(cluster, state, workload)
    stranded, fragmentation = _stranding(free, reach, probes)
    return {
        "devices_total": len(entries),
        "devices_used": used,
        "free_devices": _num(sum(free.values(), Fraction(0))),
        "stranded_devices": _num(stranded),
        "fragmentation": _num(fragmentation),
        "shapes": len(probes.probes),
        "counters": {n: {"used": _num(u), "total": _num(t)} for n, (u, t) in sorted(counter_use.items())},
        "capacity": {n: {"used": _num(u), "total": _num(t)} for n, (u, t) in sorted(capacity.items())},
    }


def _devices_reached(cluster) -> tuple[dict, dict]:
    """Every device once, with the nodes that can reach it."""
    entries: dict = {}
    reach: dict = {}
    for node in cluster.nodes:
        for e in cluster.inventory(node).devices:
            entries.setdefault(e.id, e)
            reach.setdefault(e.id, []).append(node)
    return entries, reach


class _Counters:
    """The counters a pool has left after the allocations (each pool read once)."""

    def __init__(self, alloc):
        self.alloc = alloc
        self.cache: dict = {}

    def available(self, pool):
        from draopt.dra.inventory import available_counters

        key = (pool.driver, pool.name)
        if key not in self.cache:
            self.cache[key] = available_counters(pool, self.alloc)
        return self.cache[key]

    def fit(self, e) -> bool:
        avail = self.available(e.pool)
        for c in e.device.consumes_counters:
            cs = avail.get(c.counter_set, {})
            for n, v in c.counters.items():
                if n in cs and Fraction(_parse(v.value)) > cs[n]:
                    return False
        return True


def _free_devices(entries: dict, alloc, counters: _Counters) -> tuple[dict, int, dict[str, list[Fraction]]]:
    """The free share of each device (a device not free is left out), the devices held, and the
    capacity taken and published per capacity name of the shared devices."""
    free: dict = {}
    used = 0
    capacity: dict[str, list[Fraction]] = {}
    for did, e in entries.items():
        held = alloc.holds(did)
        used += held
        if e.multi_allocatable:
            taken = alloc.capacity.get(did, {})
            for n, cap in e.capacity.items():
                tot = capacity.setdefault(n, [Fraction(0), Fraction(0)])
                tot[0] += taken.get(n, Fraction(0))
                tot[1] += cap
            if did in alloc.devices or (not held and not counters.fit(e)):
                f = Fraction(0)
            else:
                shares = [(cap - taken.get(n, Fraction(0))) / cap for n, cap in e.capacity.items() if cap > 0]
                f = max(Fraction(0), min(shares)) if shares else Fraction(1)
        else:
            f = Fraction(0) if held or not counters.fit(e) else Fraction(1)
        if f:
            free[did] = f
    return free, used, capacity


def _counters_used(entries: dict, counters: _Counters) -> dict[str, list[Fraction]]:
    """Per counter name: used and total over the pools (each pool once)."""
    out: dict[str, list[Fraction]] = {}
    seen_pools = set()
    for e in entries.values():
        key = (e.pool.driver, e.pool.name)
        if key in seen_pools:
            continue
        seen_pools.add(key)
        avail = counters.available(e.pool)
        for set_name, values in e.pool.counter_sets.items():
            for n, total in values.items():
                tot = out.setdefault(n, [Fraction(0), Fraction(0)])
                tot[0] += total - avail[set_name][n]
                tot[1] += total
    return out


class _Probes:
    """Pod shapes of the workload, weighted by their number of pods; one pod stands for each:
    where it fits, and which devices it could use there (both memoised)."""

    def __init__(self, cluster, state: _State, workload):
        from draopt.cluster.firstfit import ClaimBook

        self.cluster = cluster
        shapes: dict[str, list] = {}
        for pod in workload.pending:
            shapes.setdefault(_shape_key(pod, workload), []).append(pod)
        n_pods = sum(len(v) for v in shapes.values())
        self.probes: list[tuple[Any, Any, Fraction]] = []  # (pod, its book, its weight)
        for key in sorted(shapes):
            rep = shapes[key][0]
            book = ClaimBook(cluster, workload.claims)
            own = {u.key for u in rep.claims if workload.claims[u.key].status.allocation is None}
            book.allocations.update({k: v for k, v in state.book.allocations.items() if k not in own})
            self.probes.append((rep, book, Fraction(len(shapes[key]), n_pods)))
        self.cache: dict = {}
        self.fits_memo: dict = {}
        self.usable_memo: dict = {}

    def fits(self, i: int, node) -> bool:
        from draopt.cluster.firstfit import try_node

        got = self.fits_memo.get((i, node.name))
        if got is None:
            rep, book, _ = self.probes[i]
            reason, _fit = try_node(self.cluster, book, rep, node, self.cache, None)
            got = self.fits_memo[(i, node.name)] = reason is None
        return got

    def usable(self, i: int, node, free: dict) -> frozenset:
        """Devices of the node (of `free`) one of shape i's requests could take, each on its own."""
        got = self.usable_memo.get((i, node.name))
        if got is None:
            from draopt.errors import AllocationError
            from draopt.cluster.firstfit import pending_claims
            from draopt.dra.problem import prepare

            cluster = self.cluster
            rep, book, _ = self.probes[i]
            todo = pending_claims(book, rep)
            inv = cluster.inventory(node)
            ids = set()
            if todo:
                problem = prepare(
                    [book.claims[k] for k in todo],
                    inv,
                    cluster.classes,
                    cluster.features,
                    cluster.cel_env,
                    cluster.expr_cache,
                )
                alternatives = [alt for c in problem.claims for g in c.requests for alt in g.alternatives]
                for e in inv.devices:
                    if e.id in free:
                        try:
                            if any(problem.usable_alone(alt, e) for alt in alternatives):
                                ids.add(e.id)
                        except AllocationError:  # a CEL error on this device: it cannot be used
                            pass
            got = self.usable_memo[(i, node.name)] = frozenset(ids)
        return got


def _stranding(free: dict, reach: dict, probes: _Probes) -> tuple[Fraction, Fraction]:
    """Stranded free devices (no shape can use them) and the fragmentation (the free share no
    shape can use, weighted by the shapes' pods)."""
    stranded = Fraction(0)
    fragmentation = Fraction(0)
    shapes = probes.probes
    for did in sorted(free):
        unusable = sum(
            (
                p
                for i, (_, _, p) in enumerate(shapes)
                if not any(probes.fits(i, n) and did in probes.usable(i, n, free) for n in reach[did])
            ),
            Fraction(0),
        )
        if unusable == 1 or not shapes:
            stranded += free[did]
        fragmentation += free[did] * (unusable if shapes else 1)
    return stranded, fragmentation


def _parse(value: str) -> Fraction:
    from draopt.kube.quantity import Quantity

    return Quantity.parse(value).value


# ------------------------------------------------------------------ output
ROWS = (
    "pods",
    "placed",
    "weighted_pods",
    "weighted_placed",
    "devices_total",
    "devices_used",
    "free_devices",
    "stranded_devices",
    "fragmentation",
    "fragmentation_pct",
    "shapes",
    "solve_s",
    "status",
    "gap",
    "proven",
)


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _gap_cell(g: float | None) -> str:
    """A gap in a table: a percentage, as the progress line shows it (progress.format_gap)."""
    return "-" if g is None else progress.format_gap(g)


# The HTML report's row titles: what each measure counts, with its unit (the text table keeps
# the JSON's keys, which scripts read).
ROW_TITLES = {
    "pods": "pending pods",
    "placed": "pods placed",
    "weighted_pods": "pending pods, priority-weighted",
    "weighted_placed": "pods placed, priority-weighted",
    "devices_total": "devices",
    "devices_used": "devices used",
    "free_devices": "free devices (device units)",
    "stranded_devices": "stranded devices (device units)",
    "fragmentation": "fragmentation (device units)",
    "fragmentation_pct": "fragmentation (% of free device units)",
    "shapes": "pod shapes",
    "solve_s": "placement time (s)",
    "status": "solver status",
    "gap": "gap to the bound (%)",
    "proven": "proven optimal",
}


def _rows(reports: list[PolicyReport], human: bool = False) -> list[list[str]]:
    """The table: one row per measure, one column per policy. `human` (the HTML report): titles
    with units (ROW_TITLES) and values rounded to two decimals."""
    value = rounded if human else _cell
    rows = [["measure"] + [r.policy for r in reports]]
    for name in ROWS:
        label = ROW_TITLES[name] if human else name
        rows.append([label] + [_gap_cell(r.gap) if name == "gap" else value(r.to_json()[name]) for r in reports])
    for kind in ("counters", "capacity"):
        names = sorted({n for r in reports for n in getattr(r, kind)})
        for n in names:
            rows.append(
                [f"{kind[:-1] if kind == 'counters' else kind} {n} (used/total)"]
                + [
                    f"{getattr(r, kind)[n]['used']}/{getattr(r, kind)[n]['total']}" if n in getattr(r, kind) else "-"
                    for r in reports
                ]
            )
    return rows


def _node_rows(reports: list[PolicyReport]) -> list[list[str]]:
    """`compare -o wide`: per node (in the map's order), the devices in use over its devices,
    per policy."""
    rows = []
    for node in dict.fromkeys(n for r in reports for n in r.device_map):
        cells = [r.device_map.get(node) for r in reports]
        used = ["-" if c is None else f"{sum(1 for _, holds in c if holds)}/{len(c)}" for c in cells]
        rows.append([f"node {node} devices (used/total)"] + used)
    return rows


def table(reports: list[PolicyReport], wide: bool = False) -> str:
    """The measures, one row each, one column per policy (`wide`: and each node's devices used)."""
    rows = _rows(reports) + (_node_rows(reports) if wide else [])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    notes = [f"{r.policy}: {r.summary}" for r in reports if r.summary]
    return "\n".join(lines + notes)


def to_json(reports: list[PolicyReport], inputs: list[str], provenance: Provenance | None = None) -> dict[str, Any]:
    """`compare -o json`: the measures per policy, their definitions, and `provenance` (when
    given: draopt.provenance.Provenance.to_dict())."""
    out: dict[str, Any] = {
        "inputs": list(inputs),
        "definitions": DEFINITIONS,
        "policies": [r.to_json() for r in reports],
    }
    if provenance is not None:
        out["provenance"] = provenance.to_dict()
    return out


# Plot titles: what each measure counts, and its unit.
TITLES = {
    "placed": "pods placed",
    "weighted_placed": "placed pods, priority-weighted",
    "devices_used": "devices used",
    "free_devices": "free devices (device units)",
    "stranded_devices": "stranded devices (device units)",
    "fragmentation": "fragmentation (device units)",
    "solve_s": "placement time (s)",
}


def rounded(v: Any) -> str:
    """A value as a plot labels it: whole numbers as they are, others to two decimals
    (104.727273 -> 104.73); None as "-"."""
    if v is None:
        return "-"
    if isinstance(v, bool) or isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return _cell(int(v) if isinstance(v, float) else v)
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _matplotlib(flag: str):
    try:
        import matplotlib
    except ImportError:
        raise InputError(f"{flag} needs matplotlib: pip install 'draopt[plot]'") from None
    return matplotlib


def new_figure(**kwargs: Any):
    """A matplotlib Figure drawn by the Agg renderer, outside pyplot: the process's backend (a
    notebook's inline one, say) is left as it was, and no window is opened."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def plots(reports: list[PolicyReport]) -> dict[str, str]:
    """One bar chart per measure, as SVG text (matplotlib; no fonts or images fetched)."""
    matplotlib = _matplotlib("--html")
    out = {}
    names = [r.policy for r in reports]
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "draopt"}):
        for measure in PLOTTED:
            fig = new_figure(figsize=(4.2, 2.8))
            ax = fig.subplots()
            values = [float(getattr(r, measure)) for r in reports]
            bars = ax.bar(names, values, color=[f"C{i}" for i in range(len(names))])
            ax.bar_label(bars, labels=[rounded(getattr(r, measure)) for r in reports], fontsize=8)
            ax.set_title(TITLES[measure])
            _fit_labels(ax, names)
            ax.margins(y=0.2)
            ax.set_ylim(bottom=0, top=None if any(values) else 1)
            fig.tight_layout()
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
            svg = buf.getvalue()
            svg = svg[svg.index("<svg") :]  # no XML prolog, no DOCTYPE (it names a URL)
            out[measure] = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    return out


def _fit_labels(ax, names: list[str]) -> None:
    """Policy names longer than a bar's width (first-fit:builtin:most-allocated) are tilted, so that
    neighbours do not overlap."""
    if max(map(len, names)) * len(names) > 36:
        ax.tick_params(axis="x", labelrotation=30)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")


def plot_png(reports: list[PolicyReport], path: str) -> None:
    """One PNG, a bar chart per measure (`draopt compare --plot`)."""
    save_figure(_png_figure(reports), "--plot", path, dpi=110)


def _png_figure(reports: list[PolicyReport]):
    _matplotlib("--plot")
    names = [r.policy for r in reports]
    cols = 4
    rows = -(-len(PLOTTED) // cols)
    fig = new_figure(figsize=(3.2 * cols, 2.6 * rows))
    axes = fig.subplots(rows, cols)
    flat = list(axes.flat)
    for ax, measure in zip(flat, PLOTTED):
        bars = ax.bar(names, [float(getattr(r, measure)) for r in reports], color=[f"C{i}" for i in range(len(names))])
        ax.bar_label(bars, labels=[rounded(getattr(r, measure)) for r in reports], fontsize=8)
        ax.set_title(TITLES[measure], fontsize=10)
        ax.tick_params(labelsize=8)
        _fit_labels(ax, names)
        ax.margins(y=0.25)
        ax.set_ylim(bottom=0, top=None if any(getattr(r, measure) for r in reports) else 1)
    for ax in flat[len(PLOTTED) :]:
        ax.axis("off")
    fig.tight_layout()
    return fig


def to_html(reports: list[PolicyReport], inputs: list[str], provenance: Provenance | None = None) -> str:
    """A self-contained page: the table, the placement map, the definitions, one inline SVG plot
    per measure, and `provenance` (when given) as its footer."""
    e = html.escape
    rows = _rows(reports, human=True)
    head = "".join(f"<th>{e(v)}</th>" for v in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{e(v)}</td>" for v in row) + "</tr>" for row in rows[1:])
    defs = "".join(f"<dt>{e(ROW_TITLES.get(k, k))}</dt><dd>{e(v)}</dd>" for k, v in DEFINITIONS.items())
    notes = "".join(f"<p><b>{e(r.policy)}</b>: {e(r.summary)}</p>" for r in reports if r.summary)
    figs = "".join(
        f'<figure>{svg}<figcaption>{e(TITLES[m])}: {e(DEFINITIONS.get(m, ""))}</figcaption></figure>'
        for m, svg in plots(reports).items()
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>draopt compare</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
figure {{ display: inline-block; width: 440px; vertical-align: top; margin: 0.5em; }}
figure svg {{ width: 100%; height: auto; }} dt {{ font-weight: bold; }}
.maps {{ display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }}
.map h3 {{ margin: 0.2em 0; }} .map p {{ margin: 0.2em 0 0.6em; font-size: 90%; }}
table.pmap {{ border-collapse: separate; border-spacing: 2px; }}
table.pmap th {{ font-weight: normal; font-size: 11px; text-align: right; padding: 0 0.4em 0 0; border: 0;
                 white-space: nowrap; }}
table.pmap td {{ width: 18px; height: 14px; padding: 0; border: 1px solid #999; font-size: 9px;
                 text-align: center; line-height: 14px; }}
td.free {{ background: #fff; }} td.before {{ background: #888; }}
p.unplaced {{ max-width: 40em; }}
footer.provenance {{ margin-top: 2em; font-size: 85%; color: #444; }} footer.provenance ul {{ margin: 0; }}
ul.legend {{ list-style: none; padding: 0; columns: 16em; font-size: 12px; }}
ul.legend li {{ margin: 1px 0; }}
.swatch {{ display: inline-block; width: 2.2em; height: 0.9em; margin-right: 0.4em; vertical-align: middle;
           border: 1px solid #999; }}
table.pmap td.held, table.pmap td.before {{ color: #fff; font-weight: bold; text-shadow: 0 0 2px #000; }}
</style></head><body>
<h1>draopt compare: {e(", ".join(r.policy for r in reports))}</h1>
<p>Inputs: {e(", ".join(inputs))}</p>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
{notes}
<h2>Placement map</h2>
{placement_map(reports)}
<h2>Plots</h2>
{figs}
<h2>Definitions</h2>
<dl>{defs}</dl>
{provenance.html_footer() if provenance is not None else ""}
</body></html>
"""


# ------------------------------------------------------------------ command line
def register(sub, input_flags, positive_seconds, selection_flags) -> None:
    p = sub.add_parser(
        "compare",
        help="place one workload with two or more policies and compare them: placed "
        "pods, devices and counters used, stranded capacity, fragmentation, "
        "solve time, proven gap; table, JSON or a self-contained HTML report",
    )
    p.add_argument(
        "-f",
        "--filename",
        action="extend",
        nargs="+",
        required=True,
        metavar="FILE",
        help="cluster and workload, as for `draopt place` (one or more after -f, and -f repeatable)",
    )
    p.add_argument(
        "--policy",
        action=CommaList,
        metavar="POLICY",
        help="a placement policy, repeatable (or comma-separated): --policy first-fit --policy optimal "
        "(default both); "
        "first-fit:CONFIG: first-fit with its own scheduler configuration (builtin:NAME or a "
        "file), e.g. --policy first-fit:builtin:most-allocated",
    )
    p.add_argument("--time-limit", type=positive_seconds, default=60.0, metavar="S", help="optimal: solver time limit")
    p.add_argument("--feature-gates", default="", metavar="G=true|false,...")
    add_version_flag(p)
    from draopt.scheduler import add_scheduler_flags

    add_scheduler_flags(p)
    p.add_argument(
        "-o",
        "--output",
        default="table",
        choices=("table", "wide", "json", "yaml"),
        help="table: the measures per policy; wide: and each node's devices used; json, yaml: the measures, "
        "their definitions and the provenance",
    )
    p.add_argument("--html", metavar="FILE.html", help="also write a self-contained HTML report (needs matplotlib)")
    p.add_argument("--plot", metavar="FILE.png", help="also write the measures as one PNG (needs matplotlib)")
    input_flags(p)
    p.add_argument(
        "--no-settle",
        action="store_true",
        help="the scheduler's view at the moment of the dump (default: settled; see `draopt place --help`)",
    )
    selection_flags(p)
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from draopt.allocation.allocate import warm_up
    from draopt.kube.loader import load_files

    for flag, wanted in (("--html", args.html), ("--plot", args.plot)):
        import importlib.util

        if wanted and importlib.util.find_spec("matplotlib") is None:  # checked before the placements
            raise InputError(f"{flag} needs matplotlib: pip install 'draopt[plot]'")
    for flag, path in (("--html", args.html), ("--plot", args.plot)):
        if path:
            check_writable(flag, path)  # before the placements, which may take the whole time limit
    from draopt.scheduler import load_config

    scheduler_config = load_config(args.scheduler_config) if args.scheduler_config else None
    warm_up()
    from draopt.kube import settle

    objects = settle.apply(
        load_files(args.filename, recursive=args.recursive, strict=args.strict), settle=not args.no_settle
    )
    for line in objects.clock_notes:
        print(f"note: {line}", file=sys.stderr)
    from draopt.kube.selection import select_pending

    objects = select_pending(objects, args.namespace, args.all_namespaces, args.selector)  # (-n/-l)
    features = features_from_flags(args.feature_gates, args.kubernetes_version)
    if not objects.nodes:
        print("note: no Node in the input: no pod can be placed", file=sys.stderr)
    reports = compare(
        objects,
        args.policy or ["first-fit", "optimal"],
        features=features,
        time_limit=args.time_limit,
        scheduler_config=scheduler_config,
        seed=args.seed,
        tie_break=args.tie_break,
    )
    if not reports[0].pods:
        print(
            "note: nothing to place: no pending Pod (or workload controller) in the input; free devices "
            "count as stranded",
            file=sys.stderr,
        )
    made = record(
        args.filename, seed=args.seed, time_limit=args.time_limit, kubernetes_version=features.kubernetes_version
    )
    if args.output == "json":
        print(json.dumps(to_json(reports, args.filename, made), indent=2, sort_keys=True))
    elif args.output == "yaml":
        import yaml

        sys.stdout.write(yaml.safe_dump(to_json(reports, args.filename, made), sort_keys=True))
    else:
        print(table(reports, wide=args.output == "wide"))
    if args.html:
        text = to_html(reports, args.filename, made)
        try:
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise InputError(f"--html {args.html}: cannot write: {e.strerror or e}") from None
    if args.plot:
        plot_png(reports, args.plot)
    return 0
