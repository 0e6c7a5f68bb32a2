"""The placement map of `draopt compare --html`: which claims hold each device after each
policy's placement, and the HTML (CSS only, no script) that draws it, one row per node and one
cell per device. A device shared through consumable capacity (openb's GPUs) shows every claim on
it with its share.

The map reads the policies' reports through the fields it needs (:class:`MappedPolicy`), so that
it imports nothing of draopt.studies.report.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol


def _parse(value: str) -> Fraction:
    from draopt.kube.quantity import Quantity

    return Quantity.parse(value).value


# Whose device each cell of the placement map shows.
PLACED, BEFORE = "placed", "before"  # allocated by the policy; allocated in the input


@dataclass(frozen=True)
class Hold:
    """One claim's hold on a device, as the placement map draws it."""

    holder: str  # the pod whose claim it is (the first by name; ", +N" for the others sharing the claim)
    how: str  # PLACED (this policy's allocation) or BEFORE (the input's)
    share: float  # the part of the device the claim takes: 1 whole, else consumed capacity / capacity
    shape: str  # what the claim takes ("1 device", "2 devices", "30% of a device"): the cell's colour


DeviceCell = tuple[str, tuple[Hold, ...]]  # a device's name and its holds (none: free)


class MappedPolicy(Protocol):
    """What the map reads of a policy's report (draopt.studies.report.PolicyReport)."""

    policy: str
    pods: int
    placed: int
    devices_total: int
    devices_used: int
    device_map: dict[str, list[DeviceCell]]
    unplaced: list[str]


def _device_map(cluster, workload, result) -> dict[str, list[DeviceCell]]:
    """Node -> its devices in Kubernetes' search order, each with every claim that holds it (a
    device shared through consumable capacity has several, each with its share). A device
    several nodes reach is listed under each of them."""
    users: dict[str, list[str]] = {}
    for pod in list(workload.pending) + list(workload.running):
        for use in pod.claims:
            users.setdefault(use.key, []).append(pod.key)
    capacities = {e.id: e.device.capacity for node in cluster.nodes for e in cluster.inventory(node).devices}
    held: dict[Any, list[Hold]] = {}
    seen: set[tuple[str, Any]] = set()

    def hold(key: str, allocation, how: str) -> None:
        names = sorted(set(users.get(key, []))) or [f"claim {key}"]
        holder = names[0] + (f", +{len(names) - 1}" if len(names) > 1 else "")
        results = [r for r in allocation.devices.results if (key, (r.driver, r.pool, r.device)) not in seen]
        shares = [_share(r.consumed_capacity, capacities.get((r.driver, r.pool, r.device)) or {}) for r in results]
        shape = _claim_shape(shares)
        for r, share in zip(results, shares):
            seen.add((key, (r.driver, r.pool, r.device)))
            held.setdefault((r.driver, r.pool, r.device), []).append(Hold(holder, how, share, shape))

    for key, claim in sorted(workload.claims.items()):
        if claim.status.allocation is not None:
            hold(key, claim.status.allocation, BEFORE)
    for key, (allocation, _node) in sorted(result.claims.items()):
        hold(key, allocation, PLACED)
    out = {}
    for node in cluster.nodes:
        drivers = {e.pool.driver for e in cluster.inventory(node).devices}
        out[node.name] = [
            (e.device.name if len(drivers) == 1 else f"{e.pool.driver}/{e.device.name}", tuple(held.get(e.id, ())))
            for e in cluster.inventory(node).devices
        ]
    return out


def _share(consumed: dict[str, str] | None, capacity: dict) -> float:
    """The part of a device a claim takes: 1 without consumed capacity (the device is the
    claim's alone), else the largest consumed / capacity over the device's capacities."""
    parts = [
        float(_parse(str(q)) / _parse(str(capacity[n].value))) for n, q in (consumed or {}).items() if n in capacity
    ]
    parts = [p for p in parts if p >= 0]
    return min(1.0, max(parts)) if parts else 1.0


def _claim_shape(shares: list[float]) -> str:
    """What a claim takes, as the map's colours name it: whole devices by count, or a share."""
    if shares and all(s >= 1 for s in shares):
        return f"{len(shares)} device{'' if len(shares) == 1 else 's'}"
    part = max(shares, default=0.0)
    return f"{100 * part:.0f}% of a device" + (f" x {len(shares)}" if len(shares) > 1 else "")


MAP_NODES = 64  # node rows of the placement map at most (busy nodes first); the others are summarised
MAP_UNPLACED = 200  # pods named under a map as not placed, at most (the count is always given)
# Colours of the claims' shapes (colour-blind-safe, Okabe-Ito first); shapes beyond them cycle.
SHAPE_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#7f3c8d", "#11a579")
BEFORE_COLOUR = "#888"


def _pod_colour(i: int) -> str:
    return SHAPE_COLOURS[i % len(SHAPE_COLOURS)]


def _busy(cells: list[DeviceCell], how: str | None = None) -> bool:
    return any(h.how == how or (how is None) for _, holds in cells for h in holds)


def _shapes(reports: list[Any], shown: list[str]) -> dict[str, int]:
    """The shapes of the claims placed on the nodes shown -> their colour index, most devices first."""
    count: dict[str, int] = {}
    for r in reports:
        for n in shown:
            for _, holds in r.device_map.get(n, []):
                for h in holds:
                    if h.how == PLACED:
                        count[h.shape] = count.get(h.shape, 0) + 1
    return {shape: i for i, shape in enumerate(sorted(count, key=lambda k: (-count[k], k)))}


def _cell_html(node: str, device: str, holds: tuple[Hold, ...], colour: dict[str, int]) -> str:
    """One device: filled from the left by each claim's share, in its shape's colour (grey: the
    input's); the number of claims when several share it; a tooltip naming them."""
    e = html.escape
    if not holds:
        return f'<td class="free" title="{e(node)} {e(device)}: free"></td>'
    stops, at = [], 0.0
    for h in holds:
        c = BEFORE_COLOUR if h.how == BEFORE else _pod_colour(colour[h.shape])
        end = min(100.0, at + 100 * h.share)
        stops.append(f"{c} {at:.0f}% {end:.0f}%")
        at = end
    if at < 100:
        stops.append(f"#fff {at:.0f}% 100%")
    who = "; ".join(
        f"{h.holder}{'' if h.share >= 1 else f' ({100 * h.share:.0f}%)'}{' (in the input)' if h.how == BEFORE else ''}"
        for h in holds
    )
    full = f", {min(100.0, at):.0f}% used" if len(holds) > 1 or at < 100 else ""
    cls = "held" if any(h.how == PLACED for h in holds) else "before"
    label = str(len(holds)) if len(holds) > 1 else ""
    return (
        f'<td class="{cls}" style="background:linear-gradient(to right, {", ".join(stops)})" '
        f'title="{e(node)} {e(device)}: {e(who)}{full}">{label}</td>'
    )


def _rest_summary(r: MappedPolicy, rest: list[str]) -> str:
    """The nodes beyond the map's rows, in one sentence: how many hold this policy's claims, and
    how much of their devices."""
    if not rest:
        return ""
    cells = [c for n in rest for c in r.device_map.get(n, [])]
    busy = sum(1 for n in rest if _busy(r.device_map.get(n, []), PLACED))
    used = sum(1 for _, holds in cells if any(h.how == PLACED for h in holds))
    shared = sum(1 for _, holds in cells if len(holds) > 1)
    return (
        f'<p class="rest">The other {len(rest)} nodes: {busy} hold pods it placed, on {used} of their '
        f"{len(cells)} devices ({shared} shared by several claims).</p>"
    )


def _policy_map(r: MappedPolicy, shown: list[str], rest: list[str], colour: dict[str, int]) -> str:
    e = html.escape
    rows = [
        f"<tr><th>{e(n)}</th>{''.join(_cell_html(n, d, holds, colour) for d, holds in r.device_map.get(n, []))}</tr>"
        for n in shown
    ]
    used = sum(1 for n in list(shown) + rest if _busy(r.device_map.get(n, []), PLACED))
    listed = ", ".join(r.unplaced[:MAP_UNPLACED]) + (
        f" and {len(r.unplaced) - MAP_UNPLACED} more" if len(r.unplaced) > MAP_UNPLACED else ""
    )
    missing = (
        f'<p class="unplaced">Not placed ({len(r.unplaced)}): {e(listed)}</p>'
        if r.unplaced
        else '<p class="unplaced">Every pod placed.</p>'
    )
    return (
        f'<div class="map"><h3>{e(r.policy)}</h3>'
        f"<p>{r.placed} of {r.pods} pods placed, {r.devices_used} of {r.devices_total} devices "
        f'used, on {used} node{"" if used == 1 else "s"}</p>'
        f'<table class="pmap"><tbody>{"".join(rows)}</tbody></table>{_rest_summary(r, rest)}{missing}</div>'
    )


def placement_map(reports: list[Any]) -> str:
    """The placement map (HTML, CSS only): per policy, side by side, one row per node and one
    cell per device in Kubernetes' search order. A cell fills from the left with each claim's
    share of the device (several pods share a GPU through consumable capacity), coloured by
    what the claim takes (its shape, the same colour in every policy's map; grey: allocated in
    the input; white: free), with the number of claims when several share it and a tooltip
    naming the pods. Up to MAP_NODES nodes are drawn (those holding a device first); the others
    are summarised under each map, as are the pods not placed."""
    e = html.escape
    nodes = list(dict.fromkeys(n for r in reports for n in r.device_map))
    if not nodes:
        return "<p>No device on any node: no placement map.</p>"
    shown = nodes
    if len(nodes) > MAP_NODES:
        # Nodes holding a device in some policy first, then the idle ones; in name order.
        busy = [n for n in nodes if any(_busy(r.device_map.get(n, [])) for r in reports)]
        kept = set((busy + [n for n in nodes if n not in set(busy)])[:MAP_NODES])
        shown = [n for n in nodes if n in kept]
    rest = [n for n in nodes if n not in set(shown)]
    colour = _shapes(reports, shown)
    maps = "".join(_policy_map(r, shown, rest, colour) for r in reports)
    legend = "".join(
        f'<li><span class="swatch" style="background:{_pod_colour(i)}"></span>{e(shape)}</li>'
        for shape, i in colour.items()
    )
    note = (
        f"<p>{len(rest)} of {len(nodes)} nodes are summarised under each map: it draws {MAP_NODES} "
        f"rows, nodes holding a device in some policy first.</p>"
        if rest
        else ""
    )
    return (
        "<p>Rows: nodes; cells: their devices in search order. A cell fills from the left with the "
        "share of the device each claim takes, coloured by what the claim takes (legend); a number: "
        "that many claims share the device; grey: allocated in the input; white: free. Hover a cell "
        f"for its pods.</p>{note}"
        f'<div class="maps">{maps}</div>'
        f'<h3>Claims, by what they take</h3><ul class="legend">{legend}</ul>'
    )
