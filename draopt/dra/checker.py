"""Solver-independent checker: does an allocation obey the DRA rules (documented semantics)?

`check(problem, results)` takes the prepared problem and one AllocationResult per claim (as
Kubernetes writes them) and returns a list of violations; empty means valid. It knows
nothing of CP-SAT or of the reference search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from draopt.dra.constraints import constraint_applies, normalise
from draopt.dra.inventory import available_counters, compatibility_groups, in_use_groups
from draopt.kube.models import AllocationResult
from draopt.dra.problem import MAX_RESULTS, Problem, RequestSpec
from draopt.dra.rules import consumption, taint_blocks


def _spec_for(problem: Problem, claim_index: int, request: str) -> RequestSpec | None:
    base, _, sub = request.partition("/")
    for group in problem.claims[claim_index].requests:
        if group.name != base:
            continue
        for spec in group.alternatives:
            if spec.sub_name == sub:
                return spec
    return None


@dataclass
class _Use:
    """What the claims' results use together (gathered result by result, checked at the end)."""

    dedicated_users: dict[tuple, list[str]] = field(default_factory=dict)  # device id -> claims
    capacity: dict[tuple, dict[str, Fraction]] = field(default_factory=dict)  # shared device -> amounts
    counters: dict[int, dict[tuple[str, str], Fraction]] = field(default_factory=dict)  # id(pool) -> use
    counter_counted: set[tuple] = field(default_factory=set)  # devices whose counters are counted


def check(problem: Problem, results: list[AllocationResult]) -> list[str]:
    errors: list[str] = []
    if len(results) != len(problem.claims):
        return [f"{len(results)} results for {len(problem.claims)} claims"]
    use = _Use()
    for claim, result in zip(problem.claims, results):
        errors += _check_claim(problem, claim, result, use)
    errors += _check_shared_use(problem, use)
    errors += _check_compatibility(problem, results)
    errors += _check_counter_use(problem, use)
    return errors


def _check_claim(problem: Problem, claim, result: AllocationResult, use: _Use) -> list[str]:
    errors: list[str] = []
    where = f"claim {claim.key}"
    items = result.devices.results
    if len(items) > MAX_RESULTS:
        errors.append(f"{where}: {len(items)} results, at most {MAX_RESULTS}")
    picked: dict[str, list] = {}
    seen_in_claim: set[tuple] = set()
    for i, r in enumerate(items):
        errors += _check_result(problem, claim, where, i, r, picked, seen_in_claim, use)
    errors += _check_counts(problem, claim, picked, where)
    errors += _check_constraints(problem, claim, picked, where)
    node_local = any(
        d.slice.spec.node_name
        or d.device.binds_to_node
        or (d.slice.spec.per_device_node_selection and d.device.node_name)
        for lst in picked.values()
        for _, d, _ in lst
    )
    if node_local and result.node_selector is None:
        errors.append(f"{where}: node-local devices but no nodeSelector")
    return errors


def _check_result(
    problem: Problem, claim, where: str, i: int, r, picked: dict, seen_in_claim: set, use: _Use
) -> list[str]:
    """One result of a claim (noted in `picked`, its device in `seen_in_claim` and `use`)."""
    errors: list[str] = []
    f = problem.features
    inv = problem.inventory
    w = f"{where} result[{i}] {r.request} {r.driver}/{r.pool}/{r.device}"
    spec = _spec_for(problem, claim.index, r.request)
    if spec is None:
        errors.append(f"{w}: no such request or sub-request")
        return errors
    dev = inv.by_id.get((r.driver, r.pool, r.device))
    if dev is None:
        errors.append(f"{w}: not a device of a usable pool on this node")
        return errors
    picked.setdefault(spec.request_name, []).append((spec, dev, r))
    if not problem.selectable(spec, dev):
        errors.append(f"{w}: does not match the class/request selectors")
    if taint_blocks(dev.taints, spec.tolerations) and f.device_taints:
        errors.append(f"{w}: has a taint the request does not tolerate")
    if bool(r.admin_access) != spec.admin_access:
        errors.append(f"{w}: adminAccess is {r.admin_access}, request says {spec.admin_access}")
    multi = f.consumable_capacity and dev.multi_allocatable
    if multi:
        used = consumption(dev.device.capacity, spec.capacity_requests)
        if used is None:
            errors.append(f"{w}: capacity request violates the device's requestPolicy")
            return errors
        per = use.capacity.setdefault(dev.id, {})
        for n, v in used.items():
            per[n] = per.get(n, Fraction(0)) + v.value
        want = {n: str(v) for n, v in used.items()}
        if (r.consumed_capacity or {}) != want and (r.consumed_capacity or want):
            errors.append(f"{w}: consumedCapacity {r.consumed_capacity} should be {want}")
        if not r.share_id:
            errors.append(f"{w}: a multi-allocatable device needs a shareID")
    else:
        if f.consumable_capacity and consumption(dev.device.capacity, spec.capacity_requests) is None:
            errors.append(f"{w}: capacity request violates the device's requestPolicy")
        if dev.id in seen_in_claim:
            errors.append(f"{w}: device used twice in the claim")
        seen_in_claim.add(dev.id)
        if not spec.admin_access:
            if dev.id in inv.allocated.devices:
                errors.append(f"{w}: device is in use by {', '.join(inv.allocated.claims_by_device.get(dev.id, []))}")
            use.dedicated_users.setdefault(dev.id, []).append(claim.key)
    if f.partitionable_devices and dev.device.consumes_counters and not spec.admin_access:
        key = dev.id
        if multi and (key in use.counter_counted or key in inv.allocated.capacity):
            return errors
        use.counter_counted.add(key)
        per_set = use.counters.setdefault(id(dev.pool), {})
        for c in dev.device.consumes_counters:
            for counter_name, counter in c.counters.items():
                key_in_set = (c.counter_set, counter_name)
                per_set[key_in_set] = per_set.get(key_in_set, Fraction(0)) + problem.counter_value(counter.value)
    elif dev.device.consumes_counters and not f.partitionable_devices:
        errors.append(f"{w}: consumes counters but DRAPartitionableDevices is off")
    return errors


def _check_shared_use(problem: Problem, use: _Use) -> list[str]:
    """Dedicated devices given twice, shared devices' capacity over-used."""
    errors: list[str] = []
    inv = problem.inventory
    for did, users in use.dedicated_users.items():
        if len(users) > 1:
            errors.append(f"device {'/'.join(did)}: allocated to {len(users)} requests ({', '.join(users)})")
    for did, per in use.capacity.items():
        dev = inv.by_id[did]
        already = inv.allocated.capacity.get(did, {})
        for n, amount in per.items():
            limit = problem.counter_value(dev.device.capacity[n].value)
            if amount + already.get(n, 0) > limit:
                errors.append(
                    f"device {'/'.join(did)}: capacity {n} over-used ({amount + already.get(n, 0)} > {limit})"
                )
    return errors


def _check_counter_use(problem: Problem, use: _Use) -> list[str]:
    """Pools' shared counters over-used (beyond what allocated claims already take)."""
    errors: list[str] = []
    inv = problem.inventory
    pools = {id(d.pool): d.pool for d in inv.devices}
    for pid, per_set in use.counters.items():
        avail = available_counters(pools[pid], inv.allocated)
        for (cs, n), amount in per_set.items():
            if amount > avail.get(cs, {}).get(n, Fraction(0)):
                errors.append(f"pool {pools[pid].id}: counter {cs}/{n} over-used")
    return errors


def _check_counts(problem: Problem, claim, picked, where) -> list[str]:
    errors = []
    for group in claim.requests:
        got = picked.get(group.name, [])
        specs = {id(s) for s, _, _ in got}
        if len(specs) > 1:
            errors.append(f"{where} request {group.name}: results from several sub-requests")
            continue
        if not got:
            errors.append(f"{where} request {group.name}: nothing allocated")
            continue
        spec = got[0][0]
        if spec.mode == "All":
            want = {d.id for d in spec.all_devices}
            have = {d.id for _, d, _ in got}
            if want != have:
                errors.append(f"{where} request {spec.full_name}: All needs {sorted(want)}, got {sorted(have)}")
        elif len(got) != spec.count:
            errors.append(f"{where} request {spec.full_name}: {len(got)} devices, {spec.count} requested")
    return errors


def _check_constraints(problem: Problem, claim, picked, where) -> list[str]:
    errors = []
    lt = problem.features.list_type_attributes
    for i, c in enumerate(claim.constraints):
        name = c.match_attribute if c.match_attribute is not None else c.distinct_attribute
        values = []
        for lst in picked.values():
            for spec, dev, _ in lst:
                if not constraint_applies(list(c.requests), spec.request_name, spec.sub_name):
                    continue
                raw = problem.attribute_for_constraint(spec, dev, name)
                if raw is None:
                    errors.append(f"{where} constraints[{i}]: device {'/'.join(dev.id)} lacks {name}")
                    continue
                values.append((dev, normalise(raw, lt)))
        if len(values) < 2:
            continue
        typed = [(dev, v) for dev, v in values if v is not None]
        if len(typed) < len(values):
            errors.append(f"{where} constraints[{i}]: attribute {name} has an unsupported type")
            continue
        if c.match_attribute is not None:
            common = None
            for _, v in typed:
                elems = {(v[0], e) for e in v[1]}
                common = elems if common is None else common & elems
            if not common:
                errors.append(f"{where} constraints[{i}]: matchAttribute {name}: no common value")
        else:
            for a in range(len(typed)):
                for b in range(a + 1, len(typed)):
                    va, vb = typed[a][1], typed[b][1]
                    if va[0] == vb[0] and va[1] & vb[1]:
                        errors.append(
                            f"{where} constraints[{i}]: distinctAttribute {name}: "
                            f"{'/'.join(typed[a][0].id)} and {'/'.join(typed[b][0].id)} share a value"
                        )
    return errors


def _check_compatibility(problem: Problem, results: list[AllocationResult]) -> list[str]:
    f = problem.features
    if not (f.partitionable_devices and f.compatibility_groups):
        return []
    groups: dict[tuple, list] = {}
    for result in results:
        for r in result.devices.results:
            dev = problem.inventory.by_id.get((r.driver, r.pool, r.device))
            # An admin-access allocation draws on no counter set (as for counters above), so it
            # neither needs nor narrows a shared group; in use, it is not "allocated" either.
            if dev is None or r.admin_access:
                continue
            for c in dev.device.consumes_counters:
                key = (id(dev.pool), c.counter_set)
                if key not in groups:
                    groups[key] = [
                        dev.pool,
                        c.counter_set,
                        in_use_groups(problem.inventory.allocated, dev.pool, c.counter_set),
                    ]
                groups[key][2].append(compatibility_groups(dev.device, c.counter_set))
    errors = []
    for pool, counter_set, sets in groups.values():
        if sets and not frozenset.intersection(*sets):
            errors.append(f"pool {pool.id}: devices on counter set {counter_set} share no compatibility group")
    return errors
