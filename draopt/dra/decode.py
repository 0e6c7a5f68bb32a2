"""Turn chosen devices into AllocationResults exactly as Kubernetes writes them."""

from __future__ import annotations

import uuid
from typing import Any, Callable, TypeVar

from draopt.kube.models import (
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    AllocationResult,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from draopt.kube.models.base import K8sModel
from draopt.dra.inventory import DeviceEntry
from draopt.dra.problem import ClaimSpec, Problem, RequestSpec
from draopt.dra.reference import Chosen

M = TypeVar("M")
ShareIdFactory = Callable[[ClaimSpec, Chosen, int], str]


def random_share_id(claim: ClaimSpec, chosen: Chosen, index: int) -> str:
    return str(uuid.uuid4())


def deterministic_share_id(claim: ClaimSpec, chosen: Chosen, index: int) -> str:
    """A UUID derived from the claim's UID (or namespace/name), the request and the result index."""
    base = claim.claim.metadata.uid or claim.key
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"draopt:{base}:{chosen.request.full_name}:{index}"))


def decode(
    problem: Problem,
    chosen: list[list[Chosen]],
    selected_sub: dict[tuple[int, int], int],
    share_id: ShareIdFactory = random_share_id,
) -> list[AllocationResult]:
    return [decode_claim(problem, claim, chosen[claim.index], selected_sub, share_id) for claim in problem.claims]


def _selected_names(claim: ClaimSpec, selected_sub: dict[tuple[int, int], int]):
    """Per request: (request name, full name of what was allocated, the RequestSpec used)."""
    out = []
    for ri, group in enumerate(claim.requests):
        if group.has_subrequests:
            spec = group.alternatives[selected_sub.get((claim.index, ri), 0)]
        else:
            spec = group.alternatives[0]
        out.append((group.name, spec.full_name, spec))
    return out


def decode_claim(
    problem: Problem,
    claim: ClaimSpec,
    chosen: list[Chosen],
    selected_sub: dict[tuple[int, int], int],
    share_id: ShareIdFactory,
) -> AllocationResult:
    # The models are made from values already of their fields' types (see _trusted): a
    # validation per device result, configuration and wrapper was most of decoding's time.
    features = problem.features
    results: list[DeviceRequestAllocationResult] = []
    binding = features.device_binding_and_status
    consumable = features.consumable_capacity
    for i, c in enumerate(chosen):
        entry = c.device
        request = c.request
        # (per Device object and pool: what the fields are made of, the same in every node's
        # inventory, so one entry per device whatever the inventories decoded)
        pool = entry.pool
        key = (id(entry.device), pool.driver, pool.name, binding)
        known = request.decoded.get(key)
        if known is None or known[0] is not entry.device:
            fields = _result_fields(request, entry, binding)
            lists = tuple(k for k, v in fields.items() if type(v) is list)
            known = request.decoded[key] = (entry.device, fields, lists)
        fields = known[1]
        shared = consumable and entry.multi_allocatable
        if known[2] or shared:
            fields = dict(fields)
            for k in known[2]:
                fields[k] = list(fields[k])  # (each result its own lists, as when they were built here)
            if shared:
                # (given to the model as fields: pydantic's first assignment to a field costs
                # more than the rest of a first decode)
                fields["share_id"] = share_id(claim, c, i)
                if c.consumed:
                    fields["consumed_capacity"] = {n: str(v) for n, v in sorted(c.consumed.items())}
        results.append(_trusted(DeviceRequestAllocationResult, fields))

    # Most claims have no configuration (neither in their classes nor in themselves): then none
    # is allocated, whatever was selected.
    if claim.claim.spec.devices.config or claim.classes_have_config:
        config = _config(claim, selected_sub)
    else:
        config = []
    devices = _trusted(
        DeviceAllocationResult,
        {"results": results, "config": [_trusted(DeviceAllocationConfiguration, cfg) for cfg in config]},
        None if config else _RESULTS_ONLY,
    )
    selector = node_selector(problem, chosen)
    return _trusted(
        AllocationResult,
        {"devices": devices, "node_selector": selector},
        None if selector else _DEVICES_ONLY,
    )


def _result_fields(request: RequestSpec, entry: DeviceEntry, binding: bool) -> dict[str, Any]:
    """The fields of the DeviceRequestAllocationResult of `entry` allocated for `request` (the
    share ID and consumed capacity aside); `binding`: with the binding conditions."""
    dev = entry.device
    pool = entry.pool
    fields: dict[str, Any] = {
        "request": request.full_name,
        "driver": pool.driver,
        "pool": pool.name,
        "device": dev.name,
        "admin_access": True if request.admin_access else None,
        "tolerations": list(request.tolerations) or None,
    }
    if binding:
        fields["binding_conditions"] = list(dev.binding_conditions) or None
        fields["binding_failure_conditions"] = list(dev.binding_failure_conditions) or None
    return fields


def _config(claim: ClaimSpec, selected_sub: dict[tuple[int, int], int]) -> list[dict[str, Any]]:
    """The allocated configuration: the selected requests' classes' configs, then the claim's."""
    selected = _selected_names(claim, selected_sub)
    config: list[dict[str, Any]] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for _, full, spec in selected:
        cls = spec.device_class
        if cls.name in class_ranges:
            start, end = class_ranges[cls.name]
            for j in range(start, end):
                config[j]["requests"].append(full)
            continue
        start = len(config)
        for cc in cls.spec.config:
            config.append({"source": "FromClass", "requests": [full], "opaque": cc.opaque})
        class_ranges[cls.name] = (start, len(config))
    for cc in claim.claim.spec.devices.config:
        if not cc.requests:
            config.append({"source": "FromClaim", "requests": [], "opaque": cc.opaque})
            continue
        if any(name in cc.requests or full in cc.requests for name, full, _ in selected):
            config.append({"source": "FromClaim", "requests": list(cc.requests), "opaque": cc.opaque})
    for cfg in config:
        requests = cfg["requests"]
        if requests and all(name in requests or full in requests for name, full, _ in selected):
            cfg["requests"] = None  # a config for every request: "empty means all"
        elif requests == []:
            cfg["requests"] = None
    return config


_RESULTS_ONLY = frozenset({"results"})
_DEVICES_ONLY = frozenset({"devices"})
_DEFAULTS: dict[type, dict[str, Any]] = {
    cls: {name: None for name in cls.model_fields}
    for cls in (DeviceRequestAllocationResult, DeviceAllocationConfiguration, DeviceAllocationResult, AllocationResult)
}
_new = object.__new__
_set = object.__setattr__


def _trusted_fast(cls: type[M], values: dict[str, Any], fields_set: frozenset[str] | None = None) -> M:
    """`cls(**values)` (fields_set: the fields given, if not all of `values`), for values already
    of their fields' types and every field left out defaulting to None: the instance pydantic
    would make, without validating again what was validated when the inputs were read. A
    constructor call per model was slower than validating a whole document in one call, and
    that (pydantic's model_construct too) slower than this."""
    m = _new(cls)
    # (a fresh instance, made here, filled as pydantic's model_construct would: see _same_as_pydantic)
    _set(m, "__dict__", {**_DEFAULTS[cls], **values})
    _set(m, "__pydantic_fields_set__", set(values if fields_set is None else fields_set))
    _set(m, "__pydantic_extra__", {})
    _set(m, "__pydantic_private__", None)
    return m


def _trusted_validated(cls: type[M], values: dict[str, Any], fields_set: frozenset[str] | None = None) -> M:
    return cls(**(values if fields_set is None else {k: v for k, v in values.items() if k in fields_set}))


def _same_as_pydantic() -> bool:
    """Whether _trusted_fast makes what the constructors make (the pydantic in use keeps an
    instance's state as this module expects); checked once, on the shapes decode_claim makes."""
    result = {"request": "r", "driver": "d", "pool": "p", "device": "x", "admin_access": True, "tolerations": None}
    samples: list[tuple[type[K8sModel], dict[str, Any], frozenset[str] | None]] = [
        (DeviceRequestAllocationResult, result, None),
        (DeviceAllocationConfiguration, {"source": "FromClass", "requests": ["r"], "opaque": None}, None),
        (DeviceAllocationResult, {"results": [], "config": []}, _RESULTS_ONLY),
        (AllocationResult, {"devices": DeviceAllocationResult(), "node_selector": None}, _DEVICES_ONLY),
    ]
    state = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
    try:
        for cls, values, only in samples:
            a, b = _trusted_validated(cls, values, only), _trusted_fast(cls, values, only)
            if any(getattr(a, k) != getattr(b, k) for k in state) or list(a.__dict__) != list(b.__dict__):
                return False
            if a.to_k8s() != b.to_k8s():
                return False
    except Exception:
        return False
    return True


_trusted = _trusted_fast if _same_as_pydantic() else _trusted_validated


def _add_requirements(reqs: list[NodeSelectorRequirement], into: list[NodeSelectorRequirement]) -> None:
    for r in reqs:
        if not any(x.key == r.key and x.operator == r.operator and set(x.values) == set(r.values) for x in into):
            into.append(r)


def node_selector(problem: Problem, chosen: list[Chosen]) -> NodeSelector | None:
    """createNodeSelector: pin to the node if any device is node-local or binds to the node,
    else merge the slices' single-term node selectors; None when available everywhere."""
    node = problem.inventory.node
    selectors: list[NodeSelector] = []
    for c in chosen:
        sp = c.device.slice.spec
        d = c.device.device
        if sp.per_device_node_selection:
            name, sel = d.node_name, d.node_selector
        else:
            name, sel = sp.node_name, sp.node_selector
        if name or d.binds_to_node:
            target = node.name if node is not None else (name or "")
            # One selector per node for all its claims (nothing modifies a result's selector;
            # three models per claim were a tenth of decoding 40,000 claims).
            memo = problem.inventory.memo
            got = memo.get(("node selector", target))
            if got is None:
                got = memo[("node selector", target)] = NodeSelector(
                    node_selector_terms=[
                        NodeSelectorTerm(
                            match_fields=[NodeSelectorRequirement(key="metadata.name", operator="In", values=[target])]
                        )
                    ]
                )
            return got
        if sel is not None and len(sel.node_selector_terms) == 1:
            selectors.append(sel)
    if not selectors:
        return None
    # The merge depends only on the selectors merged, in order: one result per such sequence,
    # shared as the per-node one is (the memo keeps the selectors alive, so their ids stay theirs).
    memo = problem.inventory.memo
    key = ("merged node selector", tuple(map(id, selectors)))
    known = memo.get(key)
    if known is not None:
        return known[1]
    # Selectors of different slices written alike (one per slice: thousands of slices, one
    # label) merge alike too: one result per sequence of their requirements' contents, which
    # output then writes once.
    content = tuple(_selector_content(memo, sel) for sel in selectors)
    by_content = ("merged node selector content", content) if None not in content else None
    if by_content is not None and by_content in memo:
        merged = memo[by_content]
        memo[key] = (selectors, merged)
        return merged
    expressions: list[NodeSelectorRequirement] = []
    fields: list[NodeSelectorRequirement] = []
    for sel in selectors:
        _add_requirements(sel.node_selector_terms[0].match_fields, fields)
        _add_requirements(sel.node_selector_terms[0].match_expressions, expressions)
    merged = (
        NodeSelector(node_selector_terms=[NodeSelectorTerm(match_expressions=expressions, match_fields=fields)])
        if fields or expressions
        else None
    )
    memo[key] = (selectors, merged)
    if by_content is not None:
        memo[by_content] = merged
    return merged


def _selector_content(memo: dict, sel: NodeSelector) -> tuple | None:
    """What merging `sel` (a single-term selector) reads of it and what writing the merged
    requirements writes (a requirement's key, operator, values and fields set), once per
    selector; None when there is more (an unknown field, a subclass)."""
    got = memo.get(("node selector content", id(sel)))
    if got is None:
        term = sel.node_selector_terms[0]
        parts = tuple(tuple(map(_requirement_content, reqs)) for reqs in (term.match_fields, term.match_expressions))
        content = None if any(None in part for part in parts) else parts
        got = memo[("node selector content", id(sel))] = (sel, content)  # (sel kept: its id stays its own)
    return got[1]


def _requirement_content(r: NodeSelectorRequirement) -> tuple | None:
    if type(r) is not NodeSelectorRequirement or r.__pydantic_extra__ or r.__pydantic_private__ is not None:
        return None
    if type(r.values) is not list or any(type(v) is not str for v in r.values):
        return None
    return (r.key, r.operator, tuple(r.values), frozenset(r.__pydantic_fields_set__))
