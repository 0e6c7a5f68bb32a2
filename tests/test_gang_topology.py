"""PodGroup topology constraints (KEP-5732) and CompositePodGroups (KEP-6012): reading, API
validation, the pod-group cycle with placements (first-fit) and one domain choice per group in the
placement model (optimal).

Transcribed from kubernetes/kubernetes:
* pkg/scheduler/framework/plugins/topologyaware/topology_placement_test.go (TestGeneratePlacements);
* pkg/scheduler/framework/plugins/podgrouppodscount/podgroup_pods_count_test.go
  (TestNormalizePlacementScore);
* pkg/scheduler/framework/plugins/noderesources/placement_bin_packing_test.go (MostAllocated cases);
* pkg/scheduler/schedule_one_podgroup_test.go (TestPodGroupSchedulingPlacementAlgorithm: one
  feasible placement is taken without scoring, none feasible leaves the group unschedulable);
* pkg/apis/scheduling/validation/validation_test.go (the schedulingConstraints, schedulingPolicy,
  priority and disruptionMode cases of Workload PodGroupTemplates, and so of PodGroups).
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draopt.cluster.check import check_placement
from draopt.cluster.podgroup_placement import (
    bin_packing_score,
    generate_placements,
    percentage_of_placements_to_score,
    placements_to_find,
    pods_count_scores,
)
from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet, load_files, parse_object
from draopt.placement import place
from draopt.validation.documents import validate_documents

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "gang-topology.yaml")
TAS = Features.from_gates({"TopologyAwareWorkloadScheduling": True})
TAS_CPG = Features.from_gates({"TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True})
RACK = "topology.kubernetes.io/rack"


# ---------------------------------------------------------------- GeneratePlacements
def _node(name: str, **labels: str):
    return SimpleNamespace(name=name, node=SimpleNamespace(metadata=SimpleNamespace(labels=labels)))


def _names(placements) -> dict[str, list[str]]:
    return {p.name: [n.name for n in p.nodes] for p in placements}


def test_no_constraint_gives_the_parent_placement():
    nodes = [_node("node1"), _node("node2", foo="bar")]
    got, err = generate_placements(None, nodes, [])
    assert err is None and len(got) == 1 and got[0].parent and [n.name for n in got[0].nodes] == ["node1", "node2"]


def test_one_placement_per_label_value_unlabelled_nodes_in_none():
    nodes = [
        _node("node0", topology2="d1"),
        _node("node1", topology2="d4"),
        _node("node2", topology1="d1"),
        _node("node3", topology1="d2"),
        _node("node4", topology1="d1"),
        _node("node5", topology1="d3"),
    ]
    got, err = generate_placements("topology1", nodes, [])
    assert err is None and _names(got) == {"d1": ["node2", "node4"], "d2": ["node3"], "d3": ["node5"]}


def test_a_key_no_node_has_gives_no_placement_and_no_error():
    got, err = generate_placements("topology3", [_node("node0", topology1="d1")], [])
    assert got == [] and err is None


def test_scheduled_pods_pin_the_domain():
    parent = [_node("node0", topology="d2"), _node("node1", topology="d1")]
    scheduled = [_node("node2", topology="d1"), _node("node3", topology="d1")]  # outside the parent
    got, err = generate_placements("topology", parent, scheduled)
    assert err is None and _names(got) == {"d1": ["node1"]}
    got, err = generate_placements("topology", parent[:1], scheduled)
    assert err is None and got == []


def test_scheduled_pods_in_two_domains_or_without_the_label_are_an_error():
    parent = [_node("node0", topology="d1")]
    assert generate_placements("topology", parent, [_node("node2", topology="d0"), _node("node3", topology="d1")])[1]
    assert generate_placements("topology", parent, [_node("node4")])[1]  # node without the label
    assert generate_placements("topology", parent, [None])[1]  # node not in the snapshot


def test_the_empty_label_value_is_a_domain():
    parent = [_node("node0", topology="d1"), _node("node1", topology="")]
    got, err = generate_placements("topology", parent, [_node("node2", topology=""), _node("node3", topology="")])
    assert err is None and _names(got) == {"": ["node1"]}


# ---------------------------------------------------------------- placement scores
@pytest.mark.parametrize(
    "counts, want",
    [
        ([10, 50, 110], [9, 45, 100]),
        ([50, 50], [100, 100]),
        ([50], [100]),
        ([11, 100, 101, 102], [10, 98, 99, 100]),
        ([0, 0], None),
    ],
)
def test_pod_group_pods_count_normalised(counts, want):
    assert pods_count_scores(counts) == want


def _loaded(used: dict[str, int], alloc: dict[str, int]):
    return SimpleNamespace(
        used={k: Fraction(v) for k, v in used.items()}, allocatable={k: Fraction(v) for k, v in alloc.items()}
    )


def test_placement_bin_packing_most_allocated():
    """placement_bin_packing_test.go: 2 nodes of 5000m / 5000; foo (1000m, 0) on node1, bar (2000m,
    2000) on node2 -> cpu 0.3, memory 0.2 -> 25; a node outside the placement changes nothing; a
    pod already there (baz, 1000m) counts -> 30."""
    cap = {"cpu": 5, "memory": 5000}
    nodes = [_loaded({"cpu": 1, "memory": 0}, cap), _loaded({"cpu": 2, "memory": 2000}, cap)]
    assert bin_packing_score(nodes, set()) == 25
    nodes[0].used["cpu"] += 1
    assert bin_packing_score(nodes, set()) == 30


def test_placement_bin_packing_counts_a_scalar_resource_only_when_requested():
    """GPU capacity 5 per node; bar requests 1 GPU: (0.3 + 0.2 + 0.1) / 3 -> 20; no pod of the
    group requests GPUs (baz, already there, holds 1): GPUs left out -> 25."""
    cap = {"cpu": 5, "memory": 5000, "nvidia.com/gpu": 5}
    nodes = [_loaded({"cpu": 2, "memory": 0}, cap), _loaded({"cpu": 1, "memory": 2000, "nvidia.com/gpu": 1}, cap)]
    assert bin_packing_score(nodes, {"nvidia.com/gpu"}) == 20
    assert bin_packing_score(nodes, set()) == 25


def test_percentage_of_placements_to_score():
    """kubernetes/kubernetes PR #139064 / #139859: 100 % down to 10 % at 5,000 summed nodes, at least 5 %."""
    assert [percentage_of_placements_to_score(n) for n in (0, 500, 5000, 10000)] == [100, 91, 10, 5]
    assert placements_to_find(64, 512) == 64 * 91 // 100 and placements_to_find(3, 100000) == 1


# ---------------------------------------------------------------- reading and validation
def _doc(kind, name, spec, version="scheduling.k8s.io/v1beta1", ns="ml"):
    return {"apiVersion": version, "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _findings(docs, features=TAS_CPG) -> list[str]:
    return [str(f) for f in validate_documents([(d, "test") for d in docs], features).findings]


def test_validation_of_topology_constraints():
    ok = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    for key in ("foo", "example.com/Foo", RACK):
        assert _findings([_doc("PodGroup", "g", dict(ok, schedulingConstraints={"topology": [{"key": key}]}))]) == []
    assert _findings([_doc("PodGroup", "g", dict(ok, schedulingConstraints={}))]) == []
    two = _findings([_doc("PodGroup", "g", dict(ok, schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}))])
    assert two == ["PodGroup ml/g: spec.schedulingConstraints.topology: Too many: 2: must have at most 1 items"]
    empty = _findings([_doc("PodGroup", "g", dict(ok, schedulingConstraints={"topology": [{"key": ""}]}))])
    assert empty == ["PodGroup ml/g: spec.schedulingConstraints.topology[0].key: Required value"]
    for bad in ("Example.com/Foo", "a" * 254 + "/foo", "a" * 64, "example.com/" + "a" * 64, "invalid/key/slash"):
        got = _findings([_doc("PodGroup", "g", dict(ok, schedulingConstraints={"topology": [{"key": bad}]}))])
        assert got and all("schedulingConstraints.topology[0].key: Invalid value" in f for f in got), (bad, got)


def test_validation_of_policy_priority_and_disruption_mode():
    f = _findings(
        [
            _doc("PodGroup", "a", {"schedulingPolicy": {"gang": {"minCount": 0}}}),
            _doc("PodGroup", "b", {"schedulingPolicy": {"gang": {"minCount": -1}}}),
            _doc("PodGroup", "c", {"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}}),
            _doc("PodGroup", "d", {"schedulingPolicy": {"basic": {}}, "priority": 1000000001}),
            _doc(
                "PodGroup",
                "e",
                {"schedulingPolicy": {"basic": {}}, "priority": -2147483648, "priorityClassName": "high/priority"},
            ),
            _doc("PodGroup", "f", {"schedulingPolicy": {"basic": {}}, "disruptionMode": {}}),
        ]
    )
    assert [x.split(":")[0] + ":" + x.split(":")[1] for x in f] == [
        "PodGroup ml/a: spec.schedulingPolicy.gang.minCount",
        "PodGroup ml/b: spec.schedulingPolicy.gang.minCount",
        "PodGroup ml/c: spec.schedulingPolicy",
        "PodGroup ml/d: spec.priority",
        "PodGroup ml/e: spec.priorityClassName",
        "PodGroup ml/f: spec.disruptionMode",
    ]


def test_gated_fields_are_dropped_with_a_note():
    doc = _doc(
        "PodGroup",
        "g",
        {
            "schedulingPolicy": {"basic": {}},
            "parentCompositePodGroupName": "c",
            "schedulingConstraints": {"topology": [{"key": ""}]},
        },
    )
    report = validate_documents([(doc, "test")], Features.from_gates())
    assert report.findings == []
    assert {n.field for n in report.notes} == {"spec.schedulingConstraints", "spec.parentCompositePodGroupName"}


def test_workload_and_composite_pod_group_validation():
    wl = _doc(
        "Workload",
        "w",
        {
            "podGroupTemplates": [
                {
                    "name": "a",
                    "schedulingPolicy": {"gang": {"minCount": 2}},
                    "schedulingConstraints": {"topology": [{"key": RACK}]},
                },
                {"name": "a", "schedulingPolicy": {"basic": {}}},
            ]
        },
    )
    assert _findings([wl]) == ['Workload ml/w: spec.podGroupTemplates[1]: Duplicate value: "a"']
    cpg = _doc(
        "CompositePodGroup",
        "c",
        {"schedulingPolicy": {"gang": {"minGroupCount": 0}}},
        version="scheduling.k8s.io/v1alpha3",
    )
    assert _findings([cpg]) == [
        "CompositePodGroup ml/c: spec.schedulingPolicy.gang.minGroupCount: Required value",
        "CompositePodGroup ml/c: spec.workloadRef: Required value",
    ]


def test_a_pod_group_naming_a_missing_composite_pod_group_is_an_input_error():
    objects = _rack_objects(1, 1, 8, [("g", 1, 1, RACK)])
    objects.pod_groups[0].spec.parent_composite_pod_group_name = "leader-and-workers"
    with pytest.raises(
        InputError,
        match="PodGroup ml/g: field spec.parentCompositePodGroupName: "
        "CompositePodGroup ml/leader-and-workers not found",
    ):
        place(objects, features=TAS_CPG)


def test_both_api_shapes_are_read():
    old = parse_object(
        _doc(
            "PodGroup",
            "g",
            {
                "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "t"}},
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "disruptionMode": "PodGroup",
                "schedulingConstraints": {"topology": [{"key": "zone"}]},
            },
            version="scheduling.k8s.io/v1alpha2",
        ),
        "t",
    )
    new = parse_object(
        _doc(
            "PodGroup",
            "g",
            {
                "workloadRef": {"workloadName": "w", "templateName": "t"},
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "disruptionMode": {"all": {}},
            },
        ),
        "t",
    )
    from draopt.kube.models.workload import disruption_mode, topology_key

    assert (
        topology_key(old.spec.scheduling_constraints) == "zone" and disruption_mode(old.spec.disruption_mode) == "All"
    )
    assert disruption_mode(new.spec.disruption_mode) == "All" and new.spec.workload_ref["templateName"] == "t"


# ---------------------------------------------------------------- placing: the example
def _by_pod(outcome) -> dict[str, str | None]:
    return {p.pod: p.node for p in outcome.result.pods}


def _rack_of(node: str | None) -> str | None:
    return node.rsplit("-node-", 1)[0] if node else None


def test_example_first_fit_keeps_each_gang_in_one_domain_and_explains_the_rest():
    got = place(load_files([EXAMPLE]), features=TAS)
    assert check_placement(got) == []
    nodes = _by_pod(got)
    for gang, n in (("bert-rack", 2), ("llama-rack", 4)):
        racks = {_rack_of(nodes[f"ml/{gang}-{i}"]) for i in range(n)}
        assert len(racks) == 1 and None not in racks, (gang, racks)
    assert nodes["ml/moe-nvlink-0"] is None and nodes["ml/moe-nvlink-1"] is None
    gpt = next(p for p in got.result.pods if p.pod == "ml/gpt-rack-0")
    assert "0/3 placements are available" in " ".join(gpt.reasons)
    # (its cycle again at the end, as kube-scheduler tries a failed gang again: the racks as the run
    # left them, rack-3's room taken by the pods placed after its first cycle, which found 2 of 3)
    assert (
        "rack-3: at most 0 of 3 pending pods fit, by its nodes' free resources and devices (minCount 3"
        in gpt.explanation
    )
    assert "needs 8 device(s) of class gpu.nvidia.com on one node, best node has" in gpt.explanation


def test_example_optimal_chooses_domains_jointly_and_never_splits():
    ff = place(load_files([EXAMPLE]), features=TAS)
    opt = place(load_files([EXAMPLE]), features=TAS, policy="optimal", time_limit=20)
    assert check_placement(opt) == []
    assert opt.result.weighted_placed() > ff.result.weighted_placed()
    nodes = _by_pod(opt)
    assert all(nodes[f"ml/moe-nvlink-{i}"] for i in range(2))
    cliques = {nd: None for nd in nodes.values() if nd}
    labels = {n.name: n.metadata.labels for n in load_files([EXAMPLE]).nodes}
    assert len({labels[nodes[f"ml/moe-nvlink-{i}"]]["nvidia.com/gpu.clique"] for i in range(2)}) == 1
    for gang, n in (("bert-rack", 2), ("llama-rack", 4)):
        assert len({labels[nodes[f"ml/{gang}-{i}"]][RACK] for i in range(n)}) == 1
    assert cliques


def test_gate_off_drops_the_constraint(monkeypatch):
    import warnings

    import draopt.kube.field_notes as notes
    from draopt.notes import DraoptNote

    dropped = "field PodGroup spec.schedulingConstraints dropped: gate TopologyAwareWorkloadScheduling is off"
    monkeypatch.setattr(notes, "_SAID", set())  # the note is said once per process: another test may have said it
    with warnings.catch_warnings(record=True) as first:
        warnings.simplefilter("always")
        got = place(load_files([EXAMPLE]))
    assert any(w.category is DraoptNote and dropped in str(w.message) for w in first)
    assert check_placement(got) == []
    # The note is part of every answer, not only of the first call's warnings.
    with warnings.catch_warnings(record=True) as second:
        warnings.simplefilter("always")
        again = place(load_files([EXAMPLE]))
    assert any(dropped in n for n in got.notes) and any(dropped in n for n in again.notes)
    assert not any(dropped in str(w.message) for w in second)  # said once per process


# ---------------------------------------------------------------- random rack clusters
def _rack_objects(
    racks: int, per_rack: int, cpus: int, gangs, *, plain: int = 0, key_on_nodes: str = RACK, composite=None
) -> ObjectSet:
    """Nodes `rack-<r>-node-<i>` with `cpus` cores each; gangs (name, pods, cpu per pod, key);
    `plain` single pods of 1 core."""
    objects = ObjectSet()
    docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}]
    for r in range(racks):
        for i in range(per_rack):
            name = f"rack-{r}-node-{i}"
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": {key_on_nodes: f"rack-{r}", "kubernetes.io/hostname": name}},
                    "status": {"allocatable": {"cpu": str(cpus), "memory": "64Gi", "pods": "110"}},
                }
            )
    t = 0
    for name, pods, cpu, key in gangs:
        spec = {"schedulingPolicy": {"gang": {"minCount": pods}}}
        if key:
            spec["schedulingConstraints"] = {"topology": [{"key": key}]}
        if composite and name in composite[1]:
            spec["parentCompositePodGroupName"] = composite[0]
            spec["workloadRef"] = {"workloadName": "w", "templateName": name}
        docs.append(_doc("PodGroup", name, spec))
        for i in range(pods):
            docs.append(_pod(f"{name}-{i}", cpu, t, name))
            t += 1
    for i in range(plain):
        docs.append(_pod(f"plain-{i}", 1, t, None))
        t += 1
    if composite:
        cname, _children, min_groups, key = composite
        spec = {"schedulingPolicy": {"gang": {"minGroupCount": min_groups}}, "workloadRef": {"workloadName": "w"}}
        if key:
            spec["schedulingConstraints"] = {"topology": [{"key": key}]}
        docs.append(_doc("CompositePodGroup", cname, spec, version="scheduling.k8s.io/v1alpha3"))
    for i, d in enumerate(docs):
        objects.add(parse_object(d, f"doc {i}"))
    return objects


def _pod(name, cpu, t, group):
    spec = {"containers": [{"name": "main", "resources": {"requests": {"cpu": str(cpu), "memory": "1Gi"}}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "creationTimestamp": f"2026-11-30T10:{t // 60:02d}:{t % 60:02d}Z",
        },
        "spec": spec,
    }


def _domains(outcome, gang_pods: dict[str, list[str]]) -> dict[str, set]:
    nodes = _by_pod(outcome)
    return {g: {_rack_of(nodes[p]) for p in pods if nodes[p]} for g, pods in gang_pods.items()}


def test_a_key_no_node_carries_leaves_the_gang_unplaced_with_that_reason():
    got = place(_rack_objects(2, 2, 8, [("g", 2, 1, "example.com/no-such-label")], plain=1), features=TAS)
    pods = {p.pod: p for p in got.result.pods}
    assert pods["ml/g-0"].node is None and "no node carries the topology label 'example.com/no-such-label'" in " ".join(
        pods["ml/g-0"].reasons
    )
    assert pods["ml/plain-0"].node is not None


def test_one_feasible_placement_is_taken_and_the_gang_is_not_split():
    """schedule_one_podgroup_test.go: only one placement feasible -> it is chosen. A gang of 3 x 4
    cores fits the rack left free (2 x 8 cores), not the one where a 6-core pod takes most of a node."""
    objects = _rack_objects(2, 2, 8, [("big", 1, 6, None), ("g", 3, 4, RACK)])
    got = place(objects, features=TAS)
    nodes = _by_pod(got)
    other = {"rack-0": "rack-1", "rack-1": "rack-0"}[_rack_of(nodes["ml/big-0"])]
    assert {_rack_of(nodes[f"ml/g-{i}"]) for i in range(3)} == {other}


def test_composite_pod_group_places_its_children_in_one_rack():
    """A leader group and a worker gang under one CompositePodGroup with a rack constraint (KEP-6012):
    both children in the same rack; with minGroupCount 2, a worker gang that fits no rack with its
    leader leaves the leader unplaced too."""
    children = ("leader", "workers")
    objects = _rack_objects(
        2, 2, 8, [("leader", 1, 2, None), ("workers", 3, 4, None)], composite=("job", children, 2, RACK)
    )
    got = place(objects, features=TAS_CPG)
    assert check_placement(got) == []
    racks = {_rack_of(n) for n in _by_pod(got).values()}
    assert len(racks) == 1 and None not in racks
    too_big = _rack_objects(
        2, 2, 8, [("leader", 1, 2, None), ("workers", 4, 5, None)], composite=("job", children, 2, RACK)
    )
    for policy in ("first-fit", "optimal"):
        got = place(too_big, features=TAS_CPG, policy=policy, time_limit=10)
        assert all(n is None for n in _by_pod(got).values()), policy
        assert check_placement(got) == []


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_random_rack_clusters_gangs_never_split_and_optimal_is_never_worse(seed):
    rng = random.Random(seed)
    racks, per_rack, cpus = rng.randint(2, 4), rng.randint(1, 3), rng.choice([4, 8])
    gangs = [
        (f"g{i}", rng.randint(1, 4), rng.choice([1, 2, 3]), rng.choice([RACK, RACK, None]))
        for i in range(rng.randint(1, 5))
    ]
    objects = _rack_objects(racks, per_rack, cpus, gangs, plain=rng.randint(0, 3))
    pods = {f"ml/{g}": [f"ml/{g}-{i}" for i in range(n)] for g, n, _, key in gangs if key}
    ff = place(objects, features=TAS)
    opt = place(objects, features=TAS, policy="optimal", time_limit=10)
    for outcome in (ff, opt):
        assert check_placement(outcome) == []
        for g, racks_used in _domains(outcome, pods).items():
            assert len(racks_used) <= 1, (outcome.result.policy, g, racks_used)
        placed = _by_pod(outcome)
        for g, n, _, _ in gangs:  # gangs whole
            assert sum(1 for i in range(n) if placed[f"ml/{g}-{i}"]) in (0, n)
    assert opt.result.weighted_placed() >= ff.result.weighted_placed()


def test_running_pods_pin_the_domain():
    """GeneratePlacements: a group with a pod already running on rack-1 gets rack-1 only, under both
    policies, although rack-0 is empty; the running pod counts toward minCount."""
    objects = _rack_objects(2, 2, 8, [("g", 3, 4, RACK)])
    running = next(p for p in objects.pods if p.name == "g-0")
    running.spec.node_name = "rack-1-node-0"
    for policy in ("first-fit", "optimal"):
        got = place(objects, features=TAS, policy=policy, time_limit=10)
        assert check_placement(got) == []
        nodes = _by_pod(got)
        assert {_rack_of(nodes[f"ml/g-{i}"]) for i in (1, 2)} == {"rack-1"}, policy


def test_composite_gate_off_schedules_the_groups_as_roots(monkeypatch):
    import warnings

    import draopt.kube.field_notes as notes

    monkeypatch.setattr(notes, "_SAID", set())  # the note is said once per process: another test may have said it
    objects = _rack_objects(
        2, 2, 8, [("leader", 1, 2, RACK), ("workers", 2, 4, RACK)], composite=("job", ("leader", "workers"), 2, RACK)
    )
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        got = place(objects, features=TAS)
    err = "\n".join(str(w.message) for w in said)
    assert "CompositePodGroup objects not served: gate CompositePodGroup is off" in err
    assert "field PodGroup spec.parentCompositePodGroupName dropped" in err
    assert all(_by_pod(got).values())


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_random_composites_whole_in_one_rack_under_both_policies(seed):
    """A CompositePodGroup with a rack constraint over 2-3 child gangs (minGroupCount 1..children):
    every placed child in the composite's one rack, at least minGroupCount children placed or none,
    optimal never worse, the checker passes."""
    rng = random.Random(seed)
    children = [
        (f"c{i}", rng.randint(1, 3), rng.choice([1, 2, 4]), rng.choice([None, RACK])) for i in range(rng.randint(2, 3))
    ]
    min_groups = rng.randint(1, len(children))
    objects = _rack_objects(
        rng.randint(2, 3),
        rng.randint(1, 2),
        rng.choice([4, 8]),
        children,
        composite=("job", tuple(c[0] for c in children), min_groups, RACK),
        plain=rng.randint(0, 2),
    )
    results = []
    for policy in ("first-fit", "optimal"):
        got = place(objects, features=TAS_CPG, policy=policy, time_limit=10)
        assert check_placement(got) == []
        nodes = _by_pod(got)
        placed_children = [c for c, n, _, _ in children if any(nodes[f"ml/{c}-{i}"] for i in range(n))]
        assert all(all(nodes[f"ml/{c}-{i}"] for i in range(n)) for c, n, _, _ in children if c in placed_children)
        assert len(placed_children) in (0,) + tuple(range(min_groups, len(children) + 1)), (policy, placed_children)
        racks = {_rack_of(nodes[f"ml/{c}-{i}"]) for c, n, _, _ in children for i in range(n) if nodes[f"ml/{c}-{i}"]}
        assert len(racks) <= 1, (policy, racks)
        results.append(got.result.weighted_placed())
    assert results[1] >= results[0]


def _gpu_rack_objects(rng: random.Random) -> tuple[ObjectSet, list]:
    """A random rack cluster with DRA GPUs (node-local ResourceSlices of 2-8 devices), gangs asking
    1-4 GPUs per pod through ResourceClaimTemplates, some with a rack constraint."""
    racks, per_rack = rng.randint(2, 3), rng.randint(1, 3)
    docs: list[dict] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
    ]
    for n in (1, 2, 4):
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"gpus-{n}", "namespace": "ml"},
                "spec": {
                    "spec": {
                        "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu", "count": n}}]}
                    }
                },
            }
        )
    for r in range(racks):
        for i in range(per_rack):
            name = f"rack-{r}-node-{i}"
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": {RACK: f"rack-{r}"}},
                    "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
                }
            )
            docs.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": name},
                    "spec": {
                        "driver": "gpu.example.com",
                        "nodeName": name,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": f"gpu-{d}"} for d in range(rng.choice([2, 4, 8]))],
                    },
                }
            )
    gangs = []
    t = 0
    for g in range(rng.randint(1, 4)):
        size, gpus, key = rng.randint(1, 4), rng.choice([1, 2, 4]), rng.choice([RACK, RACK, None])
        spec: dict = {"schedulingPolicy": {"gang": {"minCount": size}}}
        if key:
            spec["schedulingConstraints"] = {"topology": [{"key": key}]}
        docs.append(_doc("PodGroup", f"g{g}", spec))
        for i in range(size):
            pod = _pod(f"g{g}-{i}", 1, t, f"g{g}")
            pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
            pod["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": f"gpus-{gpus}"}]
            docs.append(pod)
            t += 1
        gangs.append((f"g{g}", size, gpus, key))
    objects = ObjectSet()
    for i, d in enumerate(docs):
        objects.add(parse_object(d, f"doc {i}"))
    return objects, gangs


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_random_gpu_rack_clusters_gangs_never_split_and_optimal_is_never_worse(seed):
    objects, gangs = _gpu_rack_objects(random.Random(seed))
    pods = {f"ml/{g}": [f"ml/{g}-{i}" for i in range(n)] for g, n, _, key in gangs if key}
    ff = place(objects, features=TAS)
    opt = place(objects, features=TAS, policy="optimal", time_limit=10)
    for outcome in (ff, opt):
        assert check_placement(outcome) == []
        for g, racks_used in _domains(outcome, pods).items():
            assert len(racks_used) <= 1, (outcome.result.policy, g, racks_used)
    assert opt.result.weighted_placed() >= ff.result.weighted_placed()
