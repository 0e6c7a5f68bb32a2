"""The order in which draopt's scheduler goes through the nodes: kube-scheduler's node tree (one
node of each zone in turn, zones and each zone's nodes in the order they came, here name order).
No Go needed; tests/test_crosscheck_pinned.py (`test_fixed_node_tree_order`) has the oracle's."""

from __future__ import annotations

from draopt.cluster.state import node_tree_order
from draopt.kube.models import Node


def _node(name: str, **labels: str) -> Node:
    return Node.model_validate({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})


def _names(nodes: list[Node]) -> list[str]:
    return [n.name for n in node_tree_order(nodes)]


def test_zones_take_turns_in_the_order_their_first_node_came():
    zone = "topology.kubernetes.io/zone"
    nodes = [_node(f"n{i}", **{zone: z}) for i, z in enumerate("bbbaac")]
    # zones b (n0, n1, n2), a (n3, n4), c (n5): b's first node comes first by name
    assert _names(list(reversed(nodes))) == ["n0", "n3", "n5", "n1", "n4", "n2"]


def test_region_and_the_beta_labels_make_the_zone():
    nodes = [
        _node("a", **{"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "z"}),
        _node("b", **{"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "z"}),
        _node("c", **{"topology.kubernetes.io/region": "r2", "topology.kubernetes.io/zone": "z"}),
        # the deprecated label wins over the new one (GetZoneKey): zone w, not z
        _node("d", **{"failure-domain.beta.kubernetes.io/zone": "w", "topology.kubernetes.io/zone": "z"}),
    ]
    assert _names(nodes) == ["a", "c", "d", "b"]


def test_one_zone_or_none_keeps_name_order():
    assert _names([_node("b"), _node("a"), _node("c")]) == ["a", "b", "c"]
    assert _names([_node(n, zone="x") for n in "cab"]) == ["a", "b", "c"]  # (not a zone label)
