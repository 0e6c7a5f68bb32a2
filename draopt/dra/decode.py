"""Turn chosen devices into AllocationResults exactly as Kubernetes writes them."""

from __future__ import annotations

import uuid
from typing import Any, Callable

from draopt.kube.models import (
    AllocationResult,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from draopt.dra.problem import ClaimSpec, Problem
from draopt.dra.reference import Chosen

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
    # The result is written as one plain document and validated in one call: a model constructor
    # per device result, configuration and wrapper was most of decoding's time. The document has
    # the keys the constructors were given, so the same fields are set (to_k8s is the same).
    features = problem.features
    results: list[dict[str, Any]] = []
    binding = features.device_binding_and_status
    shared: list[tuple[int, Chosen]] = []  # consumable-capacity results, completed after validation
    for i, c in enumerate(chosen):
        entry = c.device
        dev = entry.device
        pool = entry.pool
        request = c.request
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
        results.append(fields)
        if features.consumable_capacity and entry.multi_allocatable:
            shared.append((i, c))

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
    devices: dict[str, Any] = {"results": results, "config": config} if config else {"results": results}
    selector = node_selector(problem, chosen)
    doc: dict[str, Any] = {"devices": devices, "node_selector": selector} if selector else {"devices": devices}
    allocation = _validate_allocation(doc)
    for i, c in shared:
        # Assigned, not validated, as before: the same fields set in the same way.
        r = allocation.devices.results[i]
        r.share_id = share_id(claim, c, i)
        if c.consumed:
            r.consumed_capacity = {n: str(v) for n, v in sorted(c.consumed.items())}
    return allocation


_validate_allocation = AllocationResult.__pydantic_validator__.validate_python


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
    return merged
