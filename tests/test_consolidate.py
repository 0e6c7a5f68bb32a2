"""`draopt plan --consolidate` (draopt.studies.consolidate) on hand-made running clusters whose
cheapest set of nodes is worked out by hand in each test, with the drain rules (PodDisruptionBudgets,
do-not-disrupt, DaemonSet pods, local storage, pods without a controller, mirror pods), Karpenter's
consolidation beside it, bad costs, and the real-world dumps.

Every answer is checked inside `consolidate` (draopt.cluster.check on the final placement, then no
pod on a drained node, every pinned pod's node kept, every budget kept): `stats["checked"]`."""

from __future__ import annotations

import glob
import json
from fractions import Fraction
from typing import Any

import pytest
import yaml

from draopt.errors import InputError
from draopt.kube import settle
from draopt.kube.loader import load_files, load_text
from draopt.studies.consolidate import consolidate
from draopt.studies.consolidate_rules import CostSource, node_type_of
from draopt.studies.node_types import NodeType

COSTS = CostSource(type_costs={"big": Fraction(10), "small": Fraction(3)})


def _node(name: str, cpu: int, kind: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": kind, **(labels or {})}},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}},
    }


def _pod(
    name: str,
    node: str | None,
    cpu: float,
    owner: str | None = "ReplicaSet",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": labels or {"app": "web"},
            "annotations": annotations or {},
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu), "memory": "1Gi"}}}]},
        "status": {"phase": "Running" if node else "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
    if owner:
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": f"{owner.lower()}-x", "uid": "o", "controller": True}
        ]
    if volumes:
        pod["spec"]["volumes"] = volumes
    return pod


def _pdb(name: str, selector: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": selector}, **spec},
    }


def _objects(docs: list[dict[str, Any]]):
    return load_text(yaml.safe_dump_all(docs))


def _run(docs, costs: CostSource = COSTS, new_types=(), **kw):
    out = consolidate(_objects(docs), costs, list(new_types), time_limit=20, **kw)
    assert out.stats["checked"]
    assert all(to is not None for _, to in out.moves.values())  # a running pod is moved, never dropped
    assert out.karpenter is None or out.karpenter.cost_after >= out.cost_after
    return out


def _three_nodes() -> list[dict[str, Any]]:
    """a, b: 4 cpu at 10; c: 2 cpu at 3; one 1-cpu pod on each: a holds all three (cost 10)."""
    return [
        _node("a", 4, "big"),
        _node("b", 4, "big"),
        _node("c", 2, "small"),
        _pod("p1", "a", 1),
        _pod("p2", "b", 1),
        _pod("p3", "c", 1),
    ]


def test_three_pods_fit_one_big_node():
    out = _run(_three_nodes())
    assert out.cost_before == 23 and out.cost_after == 10 and out.saved == 13
    assert out.proven and out.bound == 10
    assert out.kept == ["a"] and out.drained == ["b", "c"]
    # fewest moves: p1 stays where it runs (a and b tie: the first by name is kept)
    assert out.moves == {"default/p2": ("b", "a"), "default/p3": ("c", "a")}
    assert out.karpenter.cost_after == 10


def test_karpenter_greedy_order_keeps_both_big_nodes():
    """a, b: 2 pods of 1 cpu each; c: 1 pod. The 5 cpu fit a (4) + c (2) at 13. Karpenter sorts by
    disruption cost (c first): [c, a] does not fit on b (2 free), so it deletes c alone (its pod
    onto a); then neither a nor b can go: 20."""
    docs = [
        _node("a", 4, "big"),
        _node("b", 4, "big"),
        _node("c", 2, "small"),
        _pod("a1", "a", 1),
        _pod("a2", "a", 1),
        _pod("b1", "b", 1),
        _pod("b2", "b", 1),
        _pod("c1", "c", 1),
    ]
    out = _run(docs)
    assert out.cost_after == 13 and out.proven
    assert sorted(out.kept) in (["a", "c"], ["b", "c"])
    assert len(out.moves) == 2  # the two pods of the drained big node
    k = out.karpenter
    assert k.removed == ["c"] and k.cost_after == 20
    assert [c.method for c in k.commands] == ["single-node"]
    assert "the optimum saves 7 more" in out.table()


def test_do_not_disrupt_keeps_its_node():
    docs = _three_nodes()
    docs[5] = _pod("p3", "c", 1, annotations={"karpenter.sh/do-not-disrupt": "true"})
    out = _run(docs)
    assert sorted(out.kept) == ["a", "c"] and out.cost_after == 13 and out.proven
    assert "default/p3" not in out.moves and out.rules.kind_of["default/p3"] == "pinned"
    assert "do-not-disrupt" in out.rules.pinned_nodes()["c"]
    assert "c" not in out.karpenter.removed


def _budgeted(**spec) -> list[dict[str, Any]]:
    """Three 4-cpu nodes at 10, one db pod (1 cpu) on each: one node holds them all without a budget."""
    docs = [_node(n, 4, "big") for n in "abc"] + [
        _pod(f"db{i}", n, 1, labels={"app": "db"}) for i, n in enumerate("abc")
    ]
    return docs + ([_pdb("db", {"app": "db"}, **spec)] if spec else [])


def test_without_a_budget_one_node_holds_the_three():
    assert _run(_budgeted()).cost_after == 10


def test_budget_allowing_none_blocks_every_drain():
    out = _run(_budgeted(minAvailable=3))
    assert out.cost_after == 30 and out.drained == [] and out.moves == {}
    assert all("PodDisruptionBudget default/db allows no disruption" in w for w in out.rules.pinned_nodes().values())
    assert out.karpenter.removed == []


def test_budget_allowing_one_move_drains_one_node():
    out = _run(_budgeted(maxUnavailable=1))
    assert out.cost_after == 20 and len(out.drained) == 1 and len(out.moves) == 1 and out.proven
    assert out.budgets_used == {"default/db": (1, 1)}
    assert len(out.karpenter.removed) == 1  # its budget caps the loop too


def test_pods_alike_on_several_nodes_move_only_from_drained_nodes():
    """Four 4-cpu nodes at 10, two alike 1-cpu db pods on each (one kind in the model, whatever node
    they run on), a budget allowing 4 moves: two nodes hold the eight pods (20); the pods that move
    are exactly those of the drained nodes (the decoding gives each kept node's places to the pods
    that ran there), and the budget is used to the full."""
    docs = [_node(n, 4, "big") for n in "abcd"]
    docs += [_pod(f"db{i}", n, 1, labels={"app": "db"}) for i, n in enumerate("aabbccdd")]
    out = _run(docs + [_pdb("db", {"app": "db"}, maxUnavailable=4)])
    assert out.cost_after == 20 and out.proven and out.kept == ["a", "b"]
    assert sorted(out.moves) == [f"default/db{i}" for i in range(4, 8)]
    assert all(to in ("a", "b") for _, to in out.moves.values())
    assert out.budgets_used == {"default/db": (4, 4)}


def test_budget_status_wins_over_spec():
    docs = _budgeted(minAvailable=3)
    docs[-1]["status"] = {"disruptionsAllowed": 2}
    assert _run(docs).cost_after == 10


def test_daemonset_pods_go_with_their_node_and_do_not_pin_it():
    docs = [
        _node("a", 4, "big"),
        _node("b", 4, "big"),
        _pod("ds-a", "a", 1, owner="DaemonSet"),
        _pod("ds-b", "b", 1, owner="DaemonSet"),
        _pod("p1", "a", 1),
        _pod("p2", "b", 2),
    ]
    out = _run(docs)
    assert out.cost_after == 10 and len(out.drained) == 1 and len(out.moves) == 1
    assert not any(p.startswith("default/ds-") for p in out.moves)
    assert out.rules.kind_of["default/ds-a"] == "daemon"


def test_daemonset_pods_take_room_on_the_kept_node():
    """With 2-cpu DaemonSet pods, neither node has room for the other's pod: both stay."""
    docs = [
        _node("a", 4, "big"),
        _node("b", 4, "big"),
        _pod("ds-a", "a", 2, owner="DaemonSet"),
        _pod("ds-b", "b", 2, owner="DaemonSet"),
        _pod("p1", "a", 1),
        _pod("p2", "b", 2),
    ]
    out = _run(docs)
    assert out.cost_after == 20 and out.drained == [] and out.proven


@pytest.mark.parametrize(
    ("volume", "annotations", "pinned"),
    [
        ({"name": "scratch", "emptyDir": {}}, {}, True),
        ({"name": "host", "hostPath": {"path": "/data"}}, {}, True),
        ({"name": "shm", "emptyDir": {"medium": "Memory"}}, {}, False),
        (
            {"name": "scratch", "emptyDir": {}},
            {"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "scratch"},
            False,
        ),
        ({"name": "cfg", "configMap": {"name": "x"}}, {}, False),
    ],
)
def test_local_storage(volume, annotations, pinned):
    docs = _three_nodes()
    docs[5] = _pod("p3", "c", 1, annotations=annotations, volumes=[volume])
    out = _run(docs)
    assert out.cost_after == (13 if pinned else 10)
    assert ("c" in out.kept) == pinned
    if pinned:
        assert "local storage" in out.rules.pinned_nodes()["c"]


def test_pod_without_a_controller_pins_its_node_a_mirror_pod_does_not():
    docs = _three_nodes()
    docs[5] = _pod("p3", "c", 1, owner=None)
    out = _run(docs)
    assert "c" in out.kept and "no controller" in out.rules.pinned_nodes()["c"]
    docs = _three_nodes() + [_pod("etcd-b", "b", 0.5, owner=None, annotations={"kubernetes.io/config.mirror": "x"})]
    out = _run(docs)
    assert out.cost_after == 10 and out.rules.kind_of["default/etcd-b"] == "static"


def test_safe_to_evict_false_pins():
    docs = _three_nodes()
    docs[4] = _pod("p2", "b", 1, annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})
    out = _run(docs)
    # b is kept for p2, and holds the other two: a and c go
    assert out.kept == ["b"] and out.cost_after == 10 and "default/p2" not in out.moves


def test_pending_pods_are_placed_too():
    """A pending 3-cpu pod: a holds it with p1 (4 cpu); b's and c's pods need a second node: c."""
    docs = _three_nodes() + [_pod("new", None, 3)]
    out = _run(docs)
    assert out.pending == {"default/new": "a"} or out.pending["default/new"] in ("a", "b")
    assert out.cost_after == 13 and out.proven and out.placed_all


def test_new_node_type_replaces_big_nodes():
    """a, b: 8 cpu at 10 with 2 pods each; c: 4 cpu at 3 with 1 pod; new nodes like c at 3. The
    5 cpu fit c and one new small node: 6. Karpenter: [c, a] onto b is a deletion (b holds 5 pods),
    [c, a, b] would need a replacement of c's own type at c's price: it stops at 10."""
    docs = [
        _node("a", 8, "big"),
        _node("b", 8, "big"),
        _node("c", 4, "small"),
        _pod("a1", "a", 1),
        _pod("a2", "a", 1),
        _pod("b1", "b", 1),
        _pod("b2", "b", 1),
        _pod("c1", "c", 1),
    ]
    out = _run(docs, new_types=[NodeType("small", "c", Fraction(3))])
    assert out.cost_after == 6 and out.proven
    assert out.kept == ["c"] and out.bought == {"small-plan-0": "small"}
    assert out.karpenter.cost_after == 10 and sorted(out.karpenter.removed) == ["a", "c"]
    assert out.karpenter.commands[0].method == "multi-node"


def test_karpenter_replaces_a_node_with_a_cheaper_type():
    """One 8-cpu node at 10 running a 1-cpu pod, a template small node (4 cpu at 3) running nothing:
    Karpenter's emptiness deletes the small node; the optimum keeps the small one (3)."""
    docs = [_node("a", 8, "big"), _node("s", 4, "small"), _pod("p", "a", 1)]
    out = _run(docs, new_types=[NodeType("small", "s", Fraction(3))])
    assert out.cost_after == 3 and out.kept == ["s"] and out.bought == {}
    k = out.karpenter
    assert [c.method for c in k.commands] == ["emptiness", "single-node"]
    assert k.commands[1].replacement == "small" and k.cost_after == 3


def test_costs_from_a_label():
    docs = [_node("a", 4, "big", {"price": "2.5"}), _node("b", 4, "big", {"price": "4"}), _pod("p", "b", 1)]
    out = _run(docs, costs=CostSource(cost_label="price"))
    assert out.kept == ["a"] and out.cost_after == Fraction(5, 2) and out.cost_before == Fraction(13, 2)


@pytest.mark.parametrize(
    ("costs", "message"),
    [
        (CostSource(type_costs={"big": Fraction(10)}), "node type small (node c): no cost"),
        (CostSource(cost_label="price"), "node type big (node a): no cost"),
    ],
)
def test_missing_cost_names_the_type(costs, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        consolidate(_objects(_three_nodes()), costs)


@pytest.mark.parametrize("bad", ["0", "-3", "x"])
def test_bad_cost_names_the_type(bad, tmp_path):
    from draopt.cli import main

    cluster = tmp_path / "c.yaml"
    cluster.write_text(yaml.safe_dump_all(_three_nodes()))
    costs = tmp_path / "costs.yaml"
    costs.write_text(f"big: 10\nsmall: {bad}\n")
    assert main(["plan", "--consolidate", "-f", str(cluster), "--node-costs", str(costs)]) == 2
    docs = _three_nodes()
    docs[1]["metadata"]["labels"]["price"] = bad
    cluster.write_text(yaml.safe_dump_all(docs))
    with pytest.raises(InputError, match="node type big \\(node b\\): label price"):
        consolidate(_objects(docs), CostSource(cost_label="price", type_costs=COSTS.type_costs))


def test_cli_outputs(tmp_path, capsys):
    from draopt.cli import main

    cluster = tmp_path / "c.yaml"
    cluster.write_text(yaml.safe_dump_all(_three_nodes()))
    costs = tmp_path / "costs.yaml"
    costs.write_text("big: 10\nsmall: 3\n")
    args = ["plan", "--consolidate", "-f", str(cluster), "--node-costs", str(costs)]
    assert main(args + ["-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["drain"] == ["b", "c"] and doc["cost_after"] == 10 and doc["saved"] == 13 and doc["proven_minimal"]
    assert doc["karpenter"]["cost_after"] == 10
    assert main(args + ["-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["moves"]["default/p3"] == {"from": "c", "to": "a"}
    assert main(args) == 0
    assert "cost 23 -> 10: saves 13 (56.5%)" in capsys.readouterr().out
    assert main(["plan", "-f", str(cluster), "--node-costs", str(costs), "--node-type", "a=1"]) == 2


def test_aggregate_nodes_too_few_pod_by_pod_are_left_out():
    """a, b: 4 cpu at 10; c: 2 cpu at 3; d: 8 cpu at 25 (empty). Pods of 3, 3 and 2 cpu. By volume
    a + b (8 cpu, 20) would do, but pod by pod they cannot (3 + 3 leaves 1 + 1): the aggregate's
    first answer is held by no best-fit-decreasing packing, its next one, a + b + c (23), is, and the
    cost phase proves it minimal (d alone: 25)."""
    docs = [
        _node("a", 4, "big"),
        _node("b", 4, "big"),
        _node("c", 2, "small"),
        _node("d", 8, "huge"),
        _pod("p1", "a", 3),
        _pod("p2", "b", 3),
        _pod("p3", "c", 2),
    ]
    costs = CostSource(type_costs={"big": Fraction(10), "small": Fraction(3), "huge": Fraction(25)})
    out = _run(docs, costs)
    assert out.kept == ["a", "b", "c"] and out.cost_after == 23 and out.proven and out.bound == 23
    assert out.stats["aggregate_first_rounds"] == 2 and not out.moves


def _many_nodes(n: int) -> list[dict[str, Any]]:
    """n nodes of 4 cpu at 10, each running one 1-cpu pod: a quarter of them hold every pod."""
    docs = [_node(f"n{i:02d}", 4, "big") for i in range(n)]
    return docs + [_pod(f"p{i}", f"n{i:02d}", 1) for i in range(n)]


@pytest.fixture
def slow_simulations(monkeypatch):
    """Karpenter's simulations made slow (0.5 s each): its loop alone (12 nodes: 10 simulations)
    would take longer than the time limits of the tests below and their slack."""
    import time as clock

    from draopt.studies import karpenter_consolidation

    fits = karpenter_consolidation._Loop.fits

    def slow(self, nodes, replacement):
        clock.sleep(0.5)
        return fits(self, nodes, replacement)

    monkeypatch.setattr(karpenter_consolidation._Loop, "fits", slow)


def test_time_limit_bounds_the_whole_command(slow_simulations):
    """--time-limit is wall-clock seconds for the whole of consolidate: Karpenter's loop is cut
    short (said), the solves stop at the deadline, and the answer comes with its bound."""
    import time as clock

    started = clock.perf_counter()
    out = consolidate(_objects(_many_nodes(12)), COSTS, [], time_limit=3)
    spent = clock.perf_counter() - started
    assert spent < 3 + 2.0, spent  # (building the model always runs: slack for a loaded machine)
    assert out.stats["checked"] and out.karpenter.cut_short
    assert "stopped at the time limit" in "\n".join(out.karpenter.lines(out.cost_after))
    assert out.cost_after == 30 and out.proven  # 12 pods of 1 cpu on 3 nodes of 4 (the aggregate proves it)


def test_time_limit_bounds_the_cli(tmp_path, capsys, slow_simulations):
    import time as clock

    from draopt.cli import main

    cluster = tmp_path / "c.yaml"
    cluster.write_text(yaml.safe_dump_all(_many_nodes(12)))
    costs = tmp_path / "costs.yaml"
    costs.write_text("big: 10\n")
    started = clock.perf_counter()
    code = main(
        ["plan", "--consolidate", "-f", str(cluster), "--node-costs", str(costs), "--time-limit", "2", "-o", "json"]
    )
    spent = clock.perf_counter() - started
    assert code == 0 and spent < 2 + 2.5, spent  # (reading the input is outside the limit, as in plan)
    doc = json.loads(capsys.readouterr().out)
    assert doc["karpenter"]["cut_short"] and doc["cost_after"] == 30


# ------------------------------------------------------------------------------ real-world dumps
REALWORLD = "/work/shared/realworld"


def _realworld(name: str):
    objects = settle.apply(load_files([f"{REALWORLD}/{name}"]), settle=True)
    costs = {node_type_of(n, "node.kubernetes.io/instance-type"): Fraction(1) for n in objects.nodes}
    return objects, CostSource(type_costs=costs)


def _with_nodes_and_pods() -> list[str]:
    out = []
    for path in sorted(glob.glob(f"{REALWORLD}/*.yaml")):
        text = open(path).read()
        if "\nkind: Node\n" in text and "\nkind: Pod\n" in text:
            out.append(path.rsplit("/", 1)[1])
    return out


@pytest.mark.parametrize("name", _with_nodes_and_pods())
def test_realworld_dumps(name):
    """Each dump (nodes at 1 each): the answer is checked, places what the cluster as it is places
    (first-fit), never costs more than the cluster, and keeps every node with a pinned pod."""
    from draopt.cluster.firstfit import simulate
    from draopt.kube.workload import expand
    from draopt.placement import build_cluster

    objects, costs = _realworld(name)
    out = consolidate(objects, costs, time_limit=20)
    assert out.stats["checked"]
    assert out.cost_after <= out.cost_before and out.proven
    assert set(out.rules.pinned_nodes()) <= set(out.kept)
    workload = expand(objects)
    first_fit = simulate(build_cluster(objects, workload, objects_features()), workload, explain_failures=None)
    assert sum(n is not None for n in out.pending.values()) >= sum(p.placed for p in first_fit.pods)
    assert out.karpenter.cost_after >= out.cost_after


def objects_features():
    from draopt.kube.features import Features

    return Features.from_gates()


def test_realworld_mig_fleet_needs_all_sixteen_nodes():
    """24: 16 nodes x 2 A100 (DynamicMIG), 40 pending pods: every node is needed (the optimal
    placement of all 40 uses them all)."""
    out = consolidate(*_realworld("24-nvidia-dynamic-mig-fleet.yaml"), time_limit=30)
    assert out.placed_all and len(out.pending) == 40
    assert out.cost_after == 16 and out.drained == [] and out.proven


def test_realworld_bare_running_pods_keep_their_node():
    """07: the running admin-access pods have no controller: kind-worker is kept for them; the
    pending pod fits there too, so kind-worker2 goes."""
    out = consolidate(*_realworld("07-example-driver-admin-access.yaml"), time_limit=20)
    assert "no controller" in out.rules.pinned_nodes()["kind-worker"]
    assert out.kept == ["kind-worker"] and out.drained == ["kind-worker2"] and out.placed_all


def test_realworld_running_pods_with_a_controller_move():
    """08 with its running pods made controller-owned (a ReplicaSet's): they may move, with their
    allocated claims given up and allocated again on the node they go to; the answer is checked."""
    objects, costs = _realworld("08-example-driver-taint-noexecute.yaml")
    for pod in objects.pods:
        if pod.spec.node_name:
            extra = pod.metadata.model_extra
            extra["ownerReferences"] = [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u", "controller": True}
            ]
    out = consolidate(objects, costs, time_limit=20)
    assert out.stats["checked"] and out.proven
    # the pod the NoExecute device taint does not let back on its device keeps running there
    assert out.rules.kind_of["basic-resourceclaimtemplate/pod-no-toleration"] == "pinned"
    assert sorted(out.rules.movable()) == [
        "basic-resourceclaimtemplate/pod-with-300s-toleration",
        "basic-resourceclaimtemplate/pod-with-toleration",
    ]
    assert out.kept == ["kind-worker"] and out.cost_after == 1 and out.moves == {}


def test_running_pod_on_a_node_not_in_the_dump_is_left_alone():
    docs = _three_nodes() + [_pod("elsewhere", "gone", 1)]
    out = _run(docs)
    assert "default/elsewhere" not in out.rules.kind_of and out.cost_after == 10


def test_a_rule_the_model_does_not_encode_is_said_and_not_proven():
    docs = _three_nodes()
    docs[3]["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    out = _run(docs)
    assert not out.proven and any("anti-affinity" in w for w in out.why_not_proven)


def test_running_pod_its_node_no_longer_admits_stays():
    """c is tainted NoSchedule after p3 started: p3 keeps running there (Kubernetes does not evict
    it), but could not be placed there again: it pins c rather than being dropped."""
    docs = _three_nodes()
    docs[2]["spec"] = {"taints": [{"key": "maintenance", "effect": "NoSchedule"}]}
    out = _run(docs)
    assert out.rules.kind_of["default/p3"] == "pinned" and "could not be placed again" in out.rules.why["default/p3"]
    assert "c" in out.kept and len(out.kept) == 2 and out.cost_after == 13  # c and one big node
