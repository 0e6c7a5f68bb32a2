"""Candidate devices for one node: pools, search order, counter sets, in-use state.

Mirrors the pool gathering of Kubernetes' allocator (`GatherPools`): slices are matched to
the node, grouped into pools keyed by (driver, pool name), only the newest generation counts,
incomplete and invalid pools are flagged, and pools are ordered by (driver, pool name) with
pools whose devices carry binding conditions last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, Sequence

from draopt.kube.features import Features
from draopt.kube.models import Device, DeviceTaint, Node, ResourceClaim, ResourceSlice
from draopt.kube.models.resource import DeviceTaintRule
from draopt.kube.nodeselect import node_matches
from draopt.kube.quantity import Quantity
from draopt.dra.allocated import AllocatedState, DeviceID, allocated_state
from draopt.dra.device_views import CEL_DEVICES
from draopt.dra.pools import Pool, PoolLayout
from draopt.dra.rules import parse_quantity

# (Pool, DeviceID, AllocatedState and allocated_state are also read from this module by the layers above)


def device_id_str(did: DeviceID) -> str:
    return "/".join(did)


_CONVERTS_CLEANLY: Any = None


def _converts_cleanly():
    """draopt.cel.device.converts_cleanly (imported on first use: gathering devices needs no CEL)."""
    global _CONVERTS_CLEANLY
    if _CONVERTS_CLEANLY is None:
        from draopt.cel.device import converts_cleanly

        _CONVERTS_CLEANLY = converts_cleanly
    return _CONVERTS_CLEANLY


@dataclass(eq=False, init=False)
class DeviceEntry:
    """One device of a usable pool, in search order."""

    index: int  # position in the node's search order
    pool: Pool
    slice: ResourceSlice
    device: Device
    taints: list[DeviceTaint]  # from the slice and from DeviceTaintRules
    list_type_attributes: bool = False
    id: DeviceID = field(init=False)  # (driver, pool, device): fixed once built, looked up in every search step
    multi_allocatable: bool = field(init=False)  # allowMultipleAllocations (read in every search step)
    # cel_clean's and plain_capacity's answers once computed (None: not yet); declared fields, not
    # functools.cached_property: on Python 3.11 its first computation takes a lock, once per
    # device of every inventory built
    _cel_clean: bool | None = field(init=False, default=None, repr=False)
    _plain_capacity: bool | None = field(init=False, default=None, repr=False)

    def __init__(
        self,
        index: int,
        pool: Pool,
        slice: ResourceSlice,
        device: Device,
        taints: list[DeviceTaint],
        list_type_attributes: bool = False,
    ) -> None:
        # (written out: one entry per device of every pool the node sees)
        self.index, self.pool, self.slice, self.device, self.taints = index, pool, slice, device, taints
        self.list_type_attributes = list_type_attributes
        self.id = (pool.driver, pool.name, device.name)
        self.multi_allocatable = bool(device.allow_multiple_allocations)

    @property
    def driver(self) -> str:
        return self.pool.driver

    @cached_property
    def cel(self):
        return CEL_DEVICES.of(self.device, self.driver, self.list_type_attributes)

    @property
    def cel_clean(self) -> bool:
        """The device's CEL input converts without error (draopt.cel.device.converts_cleanly);
        computed once (build_inventory reads it as it builds the entry)."""
        got = self._cel_clean
        if got is None:
            got = self._cel_clean = _converts_cleanly()(self.device, self.list_type_attributes)
        return got

    @property
    def plain_capacity(self) -> bool:
        """Every capacity of the device has no request policy and a value that parses (then a
        request without capacity requests takes it whole); computed once, as cel_clean."""
        got = self._plain_capacity
        if got is None:
            got = self._plain_capacity = plain_capacity(self.device)
        return got

    @cached_property
    def capacity(self) -> dict[str, Fraction]:
        return {
            n: parse_quantity(c.value, f"{self.where}: capacity.{n}.value") for n, c in self.device.capacity.items()
        }

    @property
    def where(self) -> str:
        return f"ResourceSlice {self.slice.name}: device {self.device.name}"


_PARSES: set[str] = set()  # capacity values that parse as quantities


def plain_capacity(device: Device) -> bool:
    """DeviceEntry.plain_capacity (False when unsure: a value that is not a string)."""
    for c in device.capacity.values():
        if c.request_policy is not None:
            return False
        v = c.value
        if v not in _PARSES:
            if type(v) is not str:
                return False
            try:
                Quantity.parse(v)
            except Exception:  # noqa: BLE001 - not plain: the caller's own parse reports it
                return False
            if len(_PARSES) < 4096:
                _PARSES.add(v)
    return True


def available_counters(pool: "Pool", allocated: AllocatedState) -> dict[str, dict[str, Fraction]]:
    """Counter values minus what devices of allocated claims consume (may go negative)."""
    avail = {name: dict(counters) for name, counters in pool.counter_sets.items()}
    for s in pool.slices + pool.other_slices:
        for d in s.spec.devices:
            if not allocated.holds((pool.driver, pool.name, d.name)):
                continue
            for c in d.consumes_counters:
                cs = avail.get(c.counter_set)
                for n, v in c.counters.items():
                    if cs is not None and n in cs:
                        cs[n] -= parse_quantity(v.value, f"ResourceSlice {s.name}: device {d.name}: consumesCounters")
    return avail


# ------------------------------------------------------------------------- pools
def _slice_relevant(s: ResourceSlice, node: Node | None) -> bool:
    sp = s.spec
    if sp.node_name or sp.all_nodes or sp.node_selector is not None:
        # (the slice's place in error messages written only for an error: this runs for every
        # slice and node)
        return node_matches(
            node, sp.node_name, sp.all_nodes, sp.node_selector, lambda: f"ResourceSlice {s.name}: spec.nodeSelector"
        )
    if sp.per_device_node_selection:
        return any(
            node_matches(
                node,
                d.node_name,
                d.all_nodes,
                d.node_selector,
                f"ResourceSlice {s.name}: spec.devices[{i}].nodeSelector",
            )
            for i, d in enumerate(sp.devices)
        )
    return False


def _slice_reaches(s: ResourceSlice, node: Node | None, by_selector: dict[int, bool]) -> bool:
    """_slice_relevant, once per NodeSelector object for slices that select by one alone (the
    loader makes equal selectors one object): `by_selector` is the caller's memo for this node."""
    sp = s.spec
    selector = sp.node_selector
    if selector is None or sp.node_name or sp.all_nodes:
        return _slice_relevant(s, node)
    reaches = by_selector.get(id(selector))
    if reaches is None:
        reaches = by_selector[id(selector)] = _slice_relevant(s, node)
    return reaches


def _counter_sets(slices: list[ResourceSlice]) -> dict[str, dict[str, Fraction]]:
    sets: dict[str, dict[str, Fraction]] = {}
    for s in slices:
        for i, cs in enumerate(s.spec.shared_counters):
            if cs.name in sets:
                raise ValueError(f"duplicate counter set name {cs.name}")
            counters = sets[cs.name] = {}
            for n, c in cs.counters.items():
                v = _COUNTER_VALUES.get(c.value)
                if v is None:
                    v = parse_quantity(c.value, f"ResourceSlice {s.name}: spec.sharedCounters[{i}].counters.{n}.value")
                    if type(c.value) is str and len(_COUNTER_VALUES) < 4096:
                        _COUNTER_VALUES[c.value] = v
                counters[n] = v
    return sets


_COUNTER_VALUES: dict[str, Fraction] = {}  # counter values parsed, by text (most repeat)


def _slice_name(s: ResourceSlice) -> str:
    return s.metadata.name


def _build_pool(
    driver: str,
    name: str,
    slices: list[ResourceSlice],
    features: Features,
    all_slices_for_pool: list[ResourceSlice] | None,
) -> Pool:
    if len(slices) > 1:
        slices = sorted(slices, key=_slice_name)
    partitionable = features.partitionable_devices
    pool = Pool(driver=driver, name=name, generation=slices[0].spec.pool.generation)
    counter_slices: list[ResourceSlice] = []
    device_slices: list[ResourceSlice] = []
    other: list[ResourceSlice] = []
    for s in slices:
        (counter_slices if partitionable and s.spec.shared_counters else device_slices).append(s)
    if all_slices_for_pool is not None and len(slices) < len(all_slices_for_pool):
        names = {s.name for s in slices}
        for s in all_slices_for_pool:
            if s.name in names:
                continue
            (counter_slices if partitionable and s.spec.shared_counters else other).append(s)
    seen: set[str] = set()
    binding = consumes = False
    for s in device_slices:
        for d in s.spec.devices:
            device_name = d.name
            if device_name in seen:
                pool.invalid, pool.invalid_reason = True, f"duplicate device name {device_name}"
                return pool
            seen.add(device_name)
            if d.binding_conditions:
                binding = True
            if d.consumes_counters:
                consumes = True
    pool.slices = device_slices
    if not partitionable:
        pool.has_binding_conditions = binding
        return pool
    layout = None
    pool.other_slices = other
    try:
        pool.counter_sets = _counter_sets(counter_slices)
        if consumes or any(d.consumes_counters for s in other for d in s.spec.devices):
            # The devices' consumption validated (Kubernetes' order: the pool's device slices,
            # then its slices for other nodes) in the pass that lays the counters out.
            layout = PoolLayout(pool, validate=True)
    except ValueError as e:
        pool.invalid, pool.invalid_reason = True, str(e)
        pool.slices, pool.counter_sets, pool.other_slices = [], {}, []
        return pool
    pool.has_binding_conditions = binding
    # (an amount that does not parse: raised when a search reaches the pool)
    pool.counter_layout = layout if layout is not None and not layout.unparsable else None
    return pool


def _slice_uses_compatibility_groups(s: ResourceSlice) -> bool:
    return any(c.compatibility_groups for d in s.spec.devices for c in d.consumes_counters)


def compatibility_groups(device: Device, counter_set: str) -> frozenset[str] | None:
    """The device's groups on a counter set it consumes (empty set: no groups), None if it
    does not consume that set. A device without groups pairs only with devices without groups,
    so "no groups" is represented by the empty-string group."""
    for c in device.consumes_counters:
        if c.counter_set == counter_set:
            return frozenset(c.compatibility_groups) if c.compatibility_groups else frozenset([""])
    return None


def in_use_groups(allocated: "AllocatedState", pool: Pool, counter_set: str) -> list[frozenset[str]]:
    """Compatibility groups of the allocated devices drawing on a counter set of the pool."""
    out = []
    for s in pool.slices + pool.other_slices:
        for d in s.spec.devices:
            if allocated.holds((pool.driver, pool.name, d.name)):
                g = compatibility_groups(d, counter_set)
                if g is not None:
                    out.append(g)
    return out


def counter_sets_in_use(allocated: "AllocatedState", pool: Pool) -> set[str]:
    """Counter sets of the pool that some allocated device draws on (its slices on every node)."""
    out: set[str] = set()
    for s in pool.slices + pool.other_slices:
        for d in s.spec.devices:
            if d.consumes_counters and allocated.holds((pool.driver, pool.name, d.name)):
                out.update(c.counter_set for c in d.consumes_counters)
    return out


def slices_by_node(all_slices: list[ResourceSlice]) -> dict[str, list[ResourceSlice]]:
    """Index: node name -> its slices (nodeName set); key "" -> slices without nodeName."""
    index: dict[str, list[ResourceSlice]] = {"": []}
    for s in all_slices:
        index.setdefault(s.spec.node_name or "", []).append(s)
    return index


def shared_slices_key(index: dict[str, list[ResourceSlice]], node: Node, features: Features) -> tuple | None:
    """The slices that reach `node` (as gather_pools sees them) when none is the node's own and
    none selects nodes per device: nodes with the same key have the same devices, and can share
    one inventory. None otherwise."""
    if index.get(node.name):
        return None
    out = []
    partitionable = features.partitionable_devices
    by_selector: dict[int, bool] = {}  # (_slice_reaches' memo)
    for s in index.get("", []):
        sp = s.spec
        if not partitionable and (sp.per_device_node_selection is not None or sp.shared_counters):
            continue
        if sp.per_device_node_selection:
            return None
        if _slice_reaches(s, node, by_selector):
            out.append(id(s))
    return tuple(out)


def gather_pools(
    all_slices: list[ResourceSlice],
    node: Node | None,
    features: Features,
    index: dict[str, list[ResourceSlice]] | None = None,
    relevant: frozenset[int] | None = None,
) -> list[Pool]:
    """`relevant` (ids of the slices without a node name that reach `node`, as
    shared_slices_key found them for a node without slices of its own): those slices are not
    matched against the node again."""
    node_name = node.name if node is not None else ""
    # Kubernetes looks at the node's own slices, then at slices without nodeName.
    if index is None:
        index = slices_by_node(all_slices)
    for_node = (index.get(node_name, []) if node_name else []) + index.get("", [])
    grouped: dict[tuple[str, str], list[ResourceSlice]] = {}
    partitionable = features.partitionable_devices
    # With the gate off the allocator cannot check groups: it ignores a slice whose devices name
    # any, which leaves its pool incomplete, or absent when no other slice of it is there.
    ignores_grouped = features.has_compatibility_groups and not features.compatibility_groups
    by_selector: dict[int, bool] = {}  # (_slice_reaches' memo)
    for s in for_node:
        sp = s.spec
        if not partitionable and (sp.per_device_node_selection is not None or sp.shared_counters):
            continue
        if ignores_grouped and _slice_uses_compatibility_groups(s):
            continue
        if (id(s) not in relevant) if relevant is not None else not _slice_reaches(s, node, by_selector):
            continue
        slice_pool = sp.pool
        key = (sp.driver, slice_pool.name)
        cur = grouped.get(key)
        if cur is None:
            grouped[key] = [s]
            continue
        generation, current = slice_pool.generation, cur[0].spec.pool.generation
        if generation > current:
            grouped[key] = [s]
        elif generation == current:
            cur.append(s)
    plain: list[Pool] = []
    with_binding: list[Pool] = []
    for (driver, name), slices in grouped.items():
        gen, want = slices[0].spec.pool.generation, slices[0].spec.pool.resource_slice_count
        if len(slices) == want:
            pool = _build_pool(driver, name, slices, features, None)
        else:
            everywhere = [s for s in all_slices if s.spec.driver == driver and s.spec.pool.name == name]
            if any(s.spec.pool.generation > gen for s in everywhere):
                continue  # obsolete: a newer generation exists elsewhere
            same_gen = [s for s in everywhere if s.spec.pool.generation == gen]
            if ignores_grouped:  # (ignored slices count for no pool: the obsolete check above sees them)
                same_gen = [s for s in same_gen if not _slice_uses_compatibility_groups(s)]
            if len(same_gen) != want:
                plain.append(Pool(driver=driver, name=name, generation=gen, incomplete=True))
                continue
            pool = _build_pool(driver, name, slices, features, same_gen)
        (with_binding if pool.has_binding_conditions else plain).append(pool)
    plain.sort(key=lambda p: (p.driver, p.name))
    with_binding.sort(key=lambda p: (p.driver, p.name))
    return plain + with_binding


# ------------------------------------------------------------------------- taints
def taint_rule_selects(rule: DeviceTaintRule, driver: str, pool: str, device: Device) -> bool:
    """Whether the rule's selector (driver, pool, device; unset ones match) picks the device. The
    selector's deviceClassName and CEL selectors of 1.33-1.34's v1alpha3 are in no served version
    (1.35 dropped them): the API server drops them, so they select nothing here either (the
    loader warns about them)."""
    sel = rule.spec.device_selector
    if sel is None:
        # Kubernetes' ResourceSlice tracker applies a rule without a selector to every device
        # (the API reference: "The empty selector matches all devices").
        return True
    if sel.driver and sel.driver != driver:
        return False
    if sel.pool and sel.pool != pool:
        return False
    if sel.device and sel.device != device.name:
        return False
    return True


@dataclass
class Inventory:
    node: Node | None
    pools: list[Pool]
    devices: list[DeviceEntry]  # usable pools only, search order
    by_id: dict[DeviceID, DeviceEntry]
    allocated: AllocatedState
    # What searches on this node can reuse (draopt.dra.reference: dead prefixes, selector errors,
    # attribute indexes); it depends only on the devices and, where noted, on `allocated`.
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def invalid_pools(self) -> list[Pool]:
        return [p for p in self.pools if p.invalid]


def build_inventory(
    slices: list[ResourceSlice],
    node: Node | None,
    allocated_claims: list[ResourceClaim],
    features: Features,
    taint_rules: Sequence[DeviceTaintRule] = (),
    *,
    index: dict[str, list[ResourceSlice]] | None = None,
    allocated: AllocatedState | None = None,
    relevant: frozenset[int] | None = None,
) -> Inventory:
    """The node's candidate devices. `allocated` (shared, e.g. cluster-wide and updated as pods
    are placed) replaces the state computed from `allocated_claims`; `relevant` as for
    gather_pools."""
    pools = gather_pools(slices, node, features, index, relevant)
    devices: list[DeviceEntry] = []
    list_types = features.list_type_attributes
    converts_cleanly = _converts_cleanly()
    for pool in pools:
        if pool.incomplete or pool.invalid:
            continue
        for s in pool.slices:
            for d in s.spec.devices:
                # (index, pool, slice, device, taints, list_type_attributes)
                entry = DeviceEntry(len(devices), pool, s, d, list(d.taints), list_types)
                # (computed now, while the device's objects are in the CPU's caches: every
                # search that reaches the device reads them; on a surprise, left to then)
                # (the declared fields written directly: a property call per device costs here)
                try:
                    entry._cel_clean = converts_cleanly(d, list_types)
                    entry._plain_capacity = plain_capacity(d)
                except Exception:  # noqa: BLE001
                    pass
                devices.append(entry)
    if features.device_taint_rules and taint_rules:  # DRADeviceTaintRules too
        for entry in devices:
            for rule in taint_rules:
                if taint_rule_selects(rule, entry.driver, entry.pool.name, entry.device):
                    entry.taints.append(rule.spec.taint)
    return Inventory(
        node=node,
        pools=pools,
        devices=devices,
        by_id={d.id: d for d in devices},
        allocated=allocated if allocated is not None else allocated_state(allocated_claims, features),
    )
