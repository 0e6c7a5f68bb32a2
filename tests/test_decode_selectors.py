"""draopt.dra.decode.node_selector: slices' selectors written alike merge into one shared result."""

from __future__ import annotations

from types import SimpleNamespace

from draopt.dra.decode import node_selector
from draopt.kube.models import NodeSelector


def _selector(**extra) -> NodeSelector:
    req = {"key": "node-with-dra", "operator": "In", "values": ["true"], **extra}
    return NodeSelector.model_validate({"nodeSelectorTerms": [{"matchExpressions": [req]}]})


def _chosen(sel: NodeSelector):
    spec = SimpleNamespace(per_device_node_selection=False, node_name=None, node_selector=sel)
    device = SimpleNamespace(slice=SimpleNamespace(spec=spec), device=SimpleNamespace(binds_to_node=False))
    return SimpleNamespace(device=device)


def _problem():
    return SimpleNamespace(inventory=SimpleNamespace(node=None, memo={}))


def test_selectors_written_alike_merge_into_one_result():
    problem = _problem()
    a, b = _selector(), _selector()
    merged_a = node_selector(problem, [_chosen(a), _chosen(a)])
    merged_b = node_selector(problem, [_chosen(b), _chosen(b)])
    assert merged_b is merged_a
    assert merged_a.to_k8s() == {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node-with-dra", "operator": "In", "values": ["true"]}], "matchFields": []}
        ]
    }
    alone = node_selector(_problem(), [_chosen(b), _chosen(b)])
    assert alone.to_k8s() == merged_b.to_k8s()


def test_selectors_that_write_differently_merge_apart():
    problem = _problem()
    merged = node_selector(problem, [_chosen(_selector())])
    other_values = node_selector(problem, [_chosen(_selector(values=["false"]))])
    unknown_field = node_selector(problem, [_chosen(_selector(note="x"))])
    assert other_values is not merged and other_values.to_k8s() != merged.to_k8s()
    assert unknown_field is not merged
    assert unknown_field.to_k8s()["nodeSelectorTerms"][0]["matchExpressions"][0]["note"] == "x"
    no_values = NodeSelector.model_validate(
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}]}
    )
    given_empty = NodeSelector.model_validate(
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists", "values": []}]}]}
    )
    a = node_selector(problem, [_chosen(no_values)])
    b = node_selector(problem, [_chosen(given_empty)])
    assert a is not b and a.to_k8s() != b.to_k8s()  # values written or not: fields set differ
