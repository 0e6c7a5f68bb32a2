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
    inv = build_inventory(objs.resource_slices, objs.nodes[0], in_use, features, objs.taint_rules)
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


def openb_cut(openb_dir, tmp_path, step: int):
    """Every `step`-th task of openb's default trace on its node types, one node per shape (cost =
    GPUs): (objects, node types), read through `draopt trace import`."""
    import csv
    from fractions import Fraction

    from draopt.kube.loader import load_files
    from draopt.studies import trace
    from draopt.studies.planning import NodeType

    rows = list(csv.DictReader(open(openb_dir / "openb_node_list_gpu_node.csv")))
    first: dict[tuple, dict] = {}
    for r in rows:
        first.setdefault((r["cpu_milli"], r["memory_mib"], r["gpu"], r["model"]), r)
    nodes_csv = tmp_path / "types.csv"
    with open(nodes_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(first.values())
    lines = (openb_dir / "openb_pod_list_default.csv").read_text().splitlines()
    tasks_csv = tmp_path / "tasks.csv"
    tasks_csv.write_text("\n".join([lines[0]] + lines[1::step]) + "\n")
    inp = tmp_path / "in.yaml"
    inp.write_text(trace.dump_yaml(trace.import_trace(str(nodes_csv), str(tasks_csv))))
    return load_files([str(inp)]), [NodeType(r["sn"], r["sn"], Fraction(int(r["gpu"]))) for r in first.values()]
