"""Shared helpers: build prepared problems from dict instances and run every solver."""

from __future__ import annotations

from draopt.allocation.allocate import _cel_env, select_claims
from draopt.dra.decode import decode, deterministic_share_id
from draopt.errors import AllocationError
from draopt.kube.features import Features
from draopt.dra.inventory import build_inventory
from draopt.kube.loader import ObjectSet, parse_object
from draopt.dra.problem import prepare
from draopt.dra.reference import ReferenceAllocator
from draopt.model.single_node import solve_problem


def objects_from(instance: dict) -> ObjectSet:
    objs = ObjectSet()
    for i, doc in enumerate(instance["objects"] + [instance["node"]] + instance["claims"]):
        objs.add(parse_object(doc, f"doc {i}"))
    return objs


def problem_from(instance: dict, features: Features):
    objs = objects_from(instance)
    todo, in_use = select_claims(objs, None)
    classes = {c.name: c for c in objs.device_classes}
    env = _cel_env(features)
    inv = build_inventory(objs.resource_slices, objs.nodes[0], in_use, features, objs.taint_rules, classes, env)
    return prepare(todo, inv, classes, features, env)


def summary(chosen):
    if chosen is None:
        return None
    return [[(c.request.full_name, "/".join(c.device.id)) for c in claim] for claim in chosen]


def run_reference(problem, defects: bool):
    """The reference search, with the step budget first-fit gives its replays."""
    from draopt.dra.reference import SearchLimit
    from draopt.model.single_node import REPLAY_NODE_LIMIT

    try:
        ref = ReferenceAllocator(problem, kubernetes_defects=defects, node_limit=REPLAY_NODE_LIMIT)
        chosen = ref.allocate()
        return ("ok", summary(chosen), chosen, ref.selected_sub)
    except (AllocationError, SearchLimit) as e:
        return ("error", str(e), None, None)


def run_cpsat(problem, policy: str):
    try:
        chosen, selected, stats = solve_problem(problem, policy=policy)
        return ("ok", summary(chosen), chosen, selected)
    except AllocationError as e:
        return ("error", str(e), None, None)


def decoded(problem, chosen, selected):
    return decode(problem, chosen, selected, deterministic_share_id)


def scenario_objects(docs: list[dict]):
    """Generated documents as `draopt place -f` reads them: controllers (ReplicaSets) kept for the
    expansion, the rest parsed, then `finish` (notes swallowed)."""
    import io

    from draopt.kube.controllers import CONTROLLER_KINDS
    from draopt.kube.loader import ObjectSet, finish, parse_object

    out = ObjectSet()
    for i, d in enumerate(docs):
        if d["kind"] in CONTROLLER_KINDS:
            out.controllers.append((d, f"doc {i}"))
        else:
            out.add(parse_object(d, f"doc {i}"))
    finish(out, notes=io.StringIO())
    return out
