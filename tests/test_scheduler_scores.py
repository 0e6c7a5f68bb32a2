"""Score plugins against Kubernetes' formulas and the Go tests' tables.

Cases are transcribed from kubernetes/kubernetes pkg/scheduler/framework/plugins/ (test name in
each case): noderesources/least_allocated_test.go (commit 008b3652959ca58af8be3fb5b6ecfe9ae7638282),
most_allocated_test.go (commit 030880a5dc5449403c6d1f0aa146a7dc21d6c6dc),
requested_to_capacity_ratio_test.go (commit 00b9ead02c37921011ebe5293558cea5277cd295). In the Go
tests `st.MakePod().Req(...)` adds one container per call, nodes have capacity = allocatable, and
`st.MakePod().Obj()` has no container at all (so no default requests).
"""

from __future__ import annotations

import numpy as np
import pytest

from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet, parse_object
from draopt.placement import build_cluster
from draopt.scheduler import Scheduler, parse_config
from draopt.scheduler.plugins import balanced_allocation, helper, node_resources_fit
from draopt.kube.workload import expand

EXT = "intel.com/foo"


def node(name: str, res: dict[str, str], labels: dict[str, str] | None = None, taints=None) -> dict:
    d = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": dict(res)},
    }
    if taints:
        d["spec"] = {"taints": taints}
    return d


def pod(name: str, *reqs: dict[str, str], node_name: str | None = None, containers: int | None = None, **spec) -> dict:
    cs = [{"name": f"c{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(reqs)]
    if containers is not None:
        cs = [{"name": f"c{i}"} for i in range(containers)]
    labels = spec.pop("labels", None)
    d = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": cs, **spec},
    }
    if labels:
        d["metadata"]["labels"] = labels
    if node_name:
        d["spec"]["nodeName"] = node_name
    return d


def scheduler_for(docs: list[dict], profile: dict):
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    features = Features.from_gates()
    workload = expand(objs, features)
    cluster = build_cluster(objs, workload, features)
    cfg = parse_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [profile]},
        "<test>",
    )
    return Scheduler(cfg, cluster, workload), workload


def plugin_scores(
    docs: list[dict], plugin: str, args: dict | None = None, dra=None, candidates: list[str] | None = None
) -> list[int]:
    """The plugin's normalised scores for the (single) pending pod on every node (or the nodes
    named in `candidates`: those that passed the filters), in name order."""
    profile = {"plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": plugin, "weight": 1}]}}}
    if args is not None:
        profile["pluginConfig"] = [{"name": plugin, "args": args}]
    sched, workload = scheduler_for(docs, profile)
    demand = workload.pending[0]
    prof = sched.profile(demand)
    fe = np.array([n.index for n in sched.nodes if candidates is None or n.name in candidates], dtype=np.int64)
    got = sched._plugin_score(
        plugin,
        demand,
        sched.info(demand),
        prof,
        fe,
        np.array(dra if dra is not None else [0] * len(fe), dtype=np.int64),
    )
    return None if got is None else [int(x) for x in got]


def fit(kind: str, resources=None, shape=None) -> dict:
    s = {"type": kind}
    if resources:
        s["resources"] = [{"name": n, "weight": w} for n, w in resources]
    if shape:
        s["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": sc} for u, sc in shape]}
    return {"scoringStrategy": s}


REQ_POD = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})

# (test name, nodes, existing pods, incoming pod requests, resources, expected least, expected most)
FIT_CASES = [
    (
        "nothing scheduled, resources requested, differently sized nodes",
        [("node1", "4000", "10000"), ("node2", "6000", "10000")],
        [],
        REQ_POD,
        None,
        [37, 50],
        [62, 50],
    ),
    (
        "resources requested, pods scheduled with resources",
        [("node1", "10000", "20000"), ("node2", "10000", "20000")],
        [("node1", "3000", "0"), ("node2", "3000", "5000")],
        REQ_POD,
        None,
        [57, 45],
        [42, 55],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        [("node1", "10000", "20000"), ("node2", "10000", "50000")],
        [("node1", "3000", "0"), ("node2", "3000", "5000")],
        REQ_POD,
        None,
        [57, 60],
        None,
    ),
    (
        "requested resources exceed node capacity",
        [("node1", "4000", "10000"), ("node2", "4000", "10000")],
        [("node1", "3000", "0"), ("node2", "3000", "5000")],
        ({"cpu": "3000", "memory": "0"},),
        None,
        [50, 25],
        None,
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
        [("node1", "4000", "10000"), ("node2", "6000", "10000")],
        [],
        REQ_POD,
        [("memory", 2), ("cpu", 1)],
        [41, 50],
        [58, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        [("node1", "10000", "20000"), ("node2", "10000", "20000")],
        [("node1", "3000", "0"), ("node1", "3000", "0"), ("node2", "3000", "0"), ("node2", "3000", "5000")],
        (),
        None,
        [70, 57],
        [30, 42],
    ),
    (
        "resources requested equal node capacity",
        [("node1", "5000", "10000"), ("node2", "10000", "9000")],
        [],
        ({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        None,
        None,
        [95, 75],
    ),
]


FIT_PARAMS = [
    (c, kind)
    for c in FIT_CASES
    for kind, want in (("LeastAllocated", c[5]), ("MostAllocated", c[6]))
    if want is not None
]


@pytest.mark.parametrize("case,kind", FIT_PARAMS, ids=[f"{k}: {c[0]}" for c, k in FIT_PARAMS])
def test_least_and_most_allocated_go_tables(case, kind):
    _, nodes, existing, reqs, resources, least, most = case
    want = least if kind == "LeastAllocated" else most
    docs = [node(n, {"cpu": c, "memory": m}) for n, c, m in nodes]
    docs += [pod(f"e{i}", {"cpu": c, "memory": m}, node_name=n) for i, (n, c, m) in enumerate(existing)]
    docs.append(pod("incoming", *reqs) if reqs else pod("incoming", containers=0))
    assert plugin_scores(docs, "NodeResourcesFit", fit(kind, resources)) == want


def test_most_allocated_default_requests_for_containers_without_requests():
    # most_allocated_test.go "no resources requested, pods scheduled, nonzero request for
    # resource": 100m / 200Mi per container without requests; cpu capped at capacity.
    docs = [
        node("node1", {"cpu": "250m", "memory": "1000Mi"}),
        node("node2", {"cpu": "250m", "memory": "1000Mi"}),
        pod("e1", node_name="node1", containers=1),
        pod("e2", node_name="node1", containers=1),
        pod("incoming", containers=1),
    ]
    assert plugin_scores(docs, "NodeResourcesFit", fit("MostAllocated")) == [80, 30]


def test_extended_resource_scored_only_when_requested():
    # most_allocated_test.go "bypass extended resource if the pod does not request" and
    # "honor extended resource if the pod request" (extendedResourceSet: cpu, memory, ext, weight 1).
    ext = [("cpu", 1), ("memory", 1), (EXT, 1)]
    nodes = [
        node("node1", {"cpu": "6000", "memory": "10000"}),
        node("node2", {"cpu": "6000", "memory": "10000", EXT: "4"}),
    ]
    assert plugin_scores(nodes + [pod("p", *REQ_POD)], "NodeResourcesFit", fit("MostAllocated", ext)) == [50, 50]
    nodes = [
        node("node1", {"cpu": "6000", "memory": "10000", EXT: "4"}),
        node("node2", {"cpu": "6000", "memory": "10000", EXT: "10"}),
    ]
    p = pod("p", {"cpu": "3000", "memory": "5000", EXT: "2"})
    assert plugin_scores(nodes + [p], "NodeResourcesFit", fit("MostAllocated", ext)) == [50, 40]
    assert plugin_scores(nodes + [p], "NodeResourcesFit", fit("LeastAllocated", ext)) == [50, 60]


SHAPE_DOWN = [(0, 10), (100, 0)]


def test_requested_to_capacity_ratio_go_table():
    # requested_to_capacity_ratio_test.go TestRequestedToCapacityRatioScoringStrategy.
    two = [node("node1", {"cpu": "4000", "memory": "10000"}), node("node2", {"cpu": "6000", "memory": "10000"})]
    args = fit("RequestedToCapacityRatio", [("cpu", 1), ("memory", 1)], SHAPE_DOWN)
    same = [node("node1", {"cpu": "4000", "memory": "10000"}), node("node2", {"cpu": "4000", "memory": "10000"})]
    empty = [pod("e1", node_name="node1", containers=0), pod("e2", node_name="node1", containers=0)]
    assert plugin_scores(same + empty + [pod("p", containers=0)], "NodeResourcesFit", args) == [100, 100]
    assert plugin_scores(two + empty + [pod("p", *REQ_POD)], "NodeResourcesFit", args) == [38, 50]
    busy = [
        pod("e1", {"cpu": "3000", "memory": "5000"}, node_name="node1"),
        pod("e2", {"cpu": "3000", "memory": "5000"}, node_name="node2"),
    ]
    assert plugin_scores(two + busy + [pod("p", containers=0)], "NodeResourcesFit", args) == [38, 50]


def test_requested_to_capacity_ratio_single_extended_go_table():
    # TestResourceBinPackingSingleExtended: shape (0,0),(100,1), resource intel.com/foo weight 1.
    args = fit("RequestedToCapacityRatio", [(EXT, 1)], [(0, 0), (100, 1)])
    nodes = [
        node("node1", {"cpu": "4000", "memory": str(10000 * 1024 * 1024), EXT: "8"}),
        node("node2", {"cpu": "4000", "memory": str(10000 * 1024 * 1024), EXT: "4"}),
    ]
    assert plugin_scores(nodes + [pod("p", containers=0)], "NodeResourcesFit", args) == [0, 0]
    assert plugin_scores(nodes + [pod("p", {EXT: "2"})], "NodeResourcesFit", args) == [2, 5]
    running = pod("e", {EXT: "2"}, node_name="node2")
    assert plugin_scores(nodes + [running, pod("p", {EXT: "2"})], "NodeResourcesFit", args) == [2, 10]
    assert plugin_scores(nodes + [pod("p", {EXT: "4"})], "NodeResourcesFit", args) == [5, 10]


@pytest.mark.parametrize(
    "points,table",
    [
        # TestBrokenLinearFunction (requested_to_capacity_ratio_test.go), Go's integer arithmetic.
        (
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        ([(0, 2), (40, 10), (100, 0)], [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
        ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
    ],
)
def test_broken_linear_function_go_table(points, table):
    for p, want in table:
        assert node_resources_fit.broken_linear(points, p) == want, p


def test_go_division_truncates_toward_zero():
    assert helper.go_div(-7, 2) == -3 and helper.go_div(7, 2) == 3 and helper.go_div(-6, 3) == -2
    # decreasing shape: 100 + (0 - 100) * 33 / 100 = 100 - 33 (Python's // would give 100 - 34)
    assert node_resources_fit.broken_linear([(0, 100), (100, 0)], 33) == 67


def test_balanced_allocation_terms():
    # balanced_allocation.go balancedResourceScorer: two resources |f1 - f2| / 2; more: the
    # population standard deviation; fractions capped at 1; resources with allocatable 0 skipped.
    assert balanced_allocation.balanced_one([3000, 5000], [4000, 10000]) == 87  # std (0.75 - 0.5) / 2 = 0.125
    assert balanced_allocation.balanced_one([0, 0], [4000, 10000]) == 100
    assert balanced_allocation.balanced_one([6000, 0], [4000, 10000]) == 50  # cpu fraction capped at 1
    assert balanced_allocation.balanced_one([1, 2, 3], [10, 10, 10]) == int((1 - np.std([0.1, 0.2, 0.3])) * 100)
    assert balanced_allocation.balanced_one([3000, 5000, 7], [4000, 10000, 0]) == 87  # third resource not present


def _balanced(with_pod, without, cap):
    a = [np.array([x]) for x in with_pod]
    b = [np.array([x]) for x in without]
    c = [np.array([x]) for x in cap]
    return int(balanced_allocation.balanced_allocation(a, b, c)[0])


def test_balanced_allocation_change_of_balance_1_36():
    # kubernetes/kubernetes#135573: 50 + (50 + with - without) / 2; no change: 75, perfectly
    # balanced -> perfectly imbalanced: 50, the reverse: 100.
    assert _balanced([5, 5], [5, 5], [10, 10]) == 75
    assert _balanced([10, 0], [0, 0], [10, 10]) == 50
    assert _balanced([10, 10], [10, 0], [10, 10]) == 100
    # with: fractions 0.75/0.5 -> 87; without: 0.5/0.5 -> 100; 50 + (50 + 87 - 100) // 2 = 68
    assert _balanced([3000, 5000], [2000, 5000], [4000, 10000]) == 68


def test_balanced_allocation_plugin_uses_requests_without_defaults():
    docs = [
        node("node1", {"cpu": "4", "memory": "10Gi"}),
        node("node2", {"cpu": "4", "memory": "10Gi"}),
        pod("e", {"cpu": "2", "memory": "1Gi"}, node_name="node2"),
        pod("p", {"cpu": "1", "memory": "5Gi"}),
    ]
    # node1: with 0.25/0.5 -> 87, without 0/0 -> 100: 50 + (50 - 13) // 2 = 68
    # node2: with 0.75/0.6 -> 92, without 0.5/0.1 -> 80: 50 + (50 + 12) // 2 = 81
    assert plugin_scores(docs, "NodeResourcesBalancedAllocation") == [68, 81]
    # a best-effort pod is skipped (PreScore Skip): no score at all
    docs[-1] = pod("p", containers=1)
    assert plugin_scores(docs, "NodeResourcesBalancedAllocation") is None


def test_default_normalize_score():
    # helper/normalize_score.go DefaultNormalizeScore
    assert helper.default_normalize(np.array([10, 5, 0])).tolist() == [100, 50, 0]
    assert helper.default_normalize(np.array([10, 5, 0]), reverse=True).tolist() == [0, 50, 100]
    assert helper.default_normalize(np.array([0, 0]), reverse=True).tolist() == [100, 100]
    assert helper.default_normalize(np.array([3, 1, 2])).tolist() == [100, 33, 66]


def _taint(key, value, effect="PreferNoSchedule"):
    return {"key": key, "value": value, "effect": effect}


def _tol(key, value, effect="PreferNoSchedule"):
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


CPU_ARM, DISK_SSD = _taint("cpu-type", "arm64"), _taint("disk-type", "ssd")
TAINT_CASES = [
    # tainttoleration/taint_toleration_test.go TestTaintTolerationScore (id 145891250 in the
    # source index; kubernetes/kubernetes pkg/scheduler/framework/plugins/tainttoleration).
    (
        "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
        [_tol("foo", "bar")],
        [[_taint("foo", "bar")], [_taint("foo", "blah")]],
        [100, 0],
    ),
    (
        (
            "the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many "
            "tolerable taints a node has"
        ),
        [_tol("cpu-type", "arm64"), _tol("disk-type", "ssd")],
        [[], [CPU_ARM], [CPU_ARM, DISK_SSD]],
        [100, 100, 100],
    ),
    (
        "the more intolerable taints a node has, the lower score it gets.",
        [_tol("foo", "bar")],
        [[], [CPU_ARM], [CPU_ARM, DISK_SSD]],
        [100, 50, 0],
    ),
    (
        (
            "only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations priority "
            "function"
        ),
        [_tol("cpu-type", "arm64", "NoSchedule"), _tol("disk-type", "ssd", "NoSchedule")],
        [[], [_taint("cpu-type", "arm64", "NoSchedule")], [CPU_ARM, DISK_SSD]],
        [100, 100, 0],
    ),
    ("Default behaviour No taints and tolerations, lands on node with no taints", [], [[], [CPU_ARM]], [100, 0]),
]


@pytest.mark.parametrize("name,tolerations,taints,want", TAINT_CASES, ids=[c[0][:60] for c in TAINT_CASES])
def test_taint_toleration_score_go_table(name, tolerations, taints, want):
    docs = [node(f"node{chr(65 + i)}", {"cpu": "4"}, taints=t) for i, t in enumerate(taints)]
    docs.append(pod("pod1", {"cpu": "1"}, tolerations=tolerations))
    got = plugin_scores(docs, "TaintToleration")
    # draopt skips a plugin whose score is the same on every node (None): 100 everywhere here
    assert (got if got is not None else [100] * len(taints)) == want


def test_node_affinity_preferred_score():
    docs = [
        node("n1", {"cpu": "4"}, {"zone": "a"}),
        node("n2", {"cpu": "4"}, {"zone": "b", "gpu": "yes"}),
        node("n3", {"cpu": "4"}, {"zone": "c"}),
    ]
    pref = [
        {"weight": 2, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
        {"weight": 8, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
    ]
    docs.append(
        pod("p", {"cpu": "1"}, affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pref}})
    )
    assert plugin_scores(docs, "NodeAffinity") == [25, 100, 0]


def test_dynamic_resources_score_normalised():
    docs = [node("n1", {"cpu": "4"}), node("n2", {"cpu": "4"}), node("n3", {"cpu": "4"}), pod("p", {"cpu": "1"})]
    assert plugin_scores(docs, "DynamicResources", dra=[8, 7, 0]) == [100, 87, 0]
    assert plugin_scores(docs, "DynamicResources", dra=[0, 0, 0]) is None
    # the same choice on every node: 100 everywhere, which cannot change the pick (not scored)
    assert plugin_scores(docs, "DynamicResources", dra=[7, 7, 7]) is None
    assert plugin_scores(docs, "DynamicResources", dra=[7, 7, 6]) == [100, 100, 85]


def test_pod_topology_spread_score():
    # scoring.go: score = cnt * log(size + 2) + maxSkew - 1, normalised 100 * (max + min - s) / max.
    nodes = [
        node(f"n{i}", {"cpu": "8"}, {"topology.kubernetes.io/zone": zone}) for i, zone in enumerate(["a", "a", "b"])
    ]
    app = {"app": "web"}
    running = [pod("w1", {"cpu": "1"}, node_name="n0", labels=app), pod("w2", {"cpu": "1"}, node_name="n1", labels=app)]
    tsc = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": app},
        }
    ]
    docs = nodes + running + [pod("p", {"cpu": "1"}, labels=app, topologySpreadConstraints=tsc)]
    # zone a: 2 pods, zone b: 0; weight log(2 + 2); raw a = round(2 * 1.386) = 3, b = 0
    # normalised: 100 * (3 + 0 - s) / 3 -> a: 0, b: 100
    # (in the node tree's order, one node of each zone in turn: n0 (a), n2 (b), n1 (a))
    assert plugin_scores(docs, "PodTopologySpread") == [0, 100, 0]


def test_inter_pod_affinity_preferred_score():
    nodes = [
        node(f"n{i}", {"cpu": "8"}, {"topology.kubernetes.io/zone": zone}) for i, zone in enumerate(["a", "b", "c"])
    ]
    running = [
        pod("db", {"cpu": "1"}, node_name="n0", labels={"app": "db"}),
        pod("cache", {"cpu": "1"}, node_name="n1", labels={"app": "cache"}),
    ]
    aff = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "podAffinityTerm": {
                        "topologyKey": "topology.kubernetes.io/zone",
                        "labelSelector": {"matchLabels": {"app": "db"}},
                    },
                }
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "podAffinityTerm": {
                        "topologyKey": "topology.kubernetes.io/zone",
                        "labelSelector": {"matchLabels": {"app": "cache"}},
                    },
                }
            ]
        },
    }
    docs = nodes + running + [pod("p", {"cpu": "1"}, affinity=aff)]
    # raw: a +10, b -5, c 0 -> (s - min) * 100 / (max - min): 100, 0, 33
    assert plugin_scores(docs, "InterPodAffinity") == [100, 0, 33]


def test_dra_backed_extended_resource_counts_the_class_devices():
    # resource_allocation.go calculateDRAExtendedResourceAllocatableRequest: no device plugin
    # (allocatable 0), the resource's DeviceClass: capacity = its devices on the node, requested =
    # those allocated + the pod's request.
    res = "example.com/gpu"
    docs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {
                "extendedResourceName": res,
                "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
            },
        }
    ]
    for name, gpus in (("n1", 4), ("n2", 8)):
        docs.append(node(name, {"cpu": "8", "memory": "16Gi"}))
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-s"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": f"g{i}"} for i in range(gpus)],
                },
            }
        )
    docs.append(pod("p", {"cpu": "4", "memory": "8Gi", res: "2"}))
    args = fit("MostAllocated", [("cpu", 1), ("memory", 1), (res, 1)])
    # cpu 50, memory 50; gpu n1 2/4 = 50, n2 2/8 = 25: (50+50+50)/3 = 50, (50+50+25)/3 = 41
    assert plugin_scores(docs, "NodeResourcesFit", args) == [50, 41]
    assert plugin_scores(docs, "NodeResourcesFit", fit("LeastAllocated", [("cpu", 1), ("memory", 1), (res, 1)])) == [
        50,
        58,
    ]


def test_dra_backed_extended_resource_allocated_devices_count_in_place():
    from draopt.placement import place

    res = "example.com/gpu"
    docs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {
                "extendedResourceName": res,
                "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
            },
        }
    ]
    for name, gpus in (("n1", 4), ("n2", 8)):
        docs.append(node(name, {"cpu": "64", "memory": "64Gi"}))
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-s"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": f"g{i}"} for i in range(gpus)],
                },
            }
        )
    docs += [pod(f"p{i}", {"cpu": "1", "memory": "1Gi", res: "1"}) for i in range(3)]
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    only_gpu = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}]}},
                    "pluginConfig": [{"name": "NodeResourcesFit", "args": fit("LeastAllocated", [(res, 1)])}],
                }
            ],
        },
        "<t>",
    )
    # LeastAllocated on the GPUs: p0 n1 (4-1)/4 = 75 < n2 (8-1)/8 = 87: n2; p1: n2 now holds one,
    # (8-2)/8 = 75 = n1's 75: a tie, n1 by name; p2: n1 (4-2)/4 = 50 < n2 75: n2. (Without the
    # allocated devices counted every pod would go to n2.)
    got = place(objs, scheduler_config=only_gpu, tie_break="name").result.pods
    assert [p.node for p in got] == ["n2", "n1", "n2"]


def test_inter_pod_affinity_existing_pods_terms_and_ignore_flag():
    nodes = [node(f"n{i}", {"cpu": "8"}, {"topology.kubernetes.io/zone": z}) for i, z in enumerate(["a", "b"])]
    pref = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 7,
                    "podAffinityTerm": {
                        "topologyKey": "topology.kubernetes.io/zone",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    },
                }
            ]
        }
    }
    req = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {"app": "web"}}}
            ]
        }
    }
    docs = nodes + [
        pod("friend", {"cpu": "1"}, node_name="n1", affinity=pref),
        pod("p", {"cpu": "1"}, labels={"app": "web"}),
    ]
    # an existing pod's preferred term matching the incoming pod draws it to the existing pod's zone
    assert plugin_scores(docs, "InterPodAffinity") == [0, 100]
    assert plugin_scores(docs, "InterPodAffinity", {"ignorePreferredTermsOfExistingPods": True}) is None
    # an existing pod's required affinity term counts hardPodAffinityWeight (0: not at all)
    docs[2] = pod("friend", {"cpu": "1"}, node_name="n0", affinity=req)
    assert plugin_scores(docs, "InterPodAffinity") == [100, 0]
    assert plugin_scores(docs, "InterPodAffinity", {"hardPodAffinityWeight": 0}) is None


FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
HOST = "kubernetes.io/hostname"


def _spread_case(max_skew, key, counts, candidates, labels=None):
    """Nodes node-<x> with `counts[x]` existing pods labelled foo; the pod spreads on `key`."""
    docs = []
    for name, cnt in counts.items():
        lab = dict((labels or {}).get(name, {}))
        d = node(f"node-{name}", {"cpu": "100"}, lab)
        if labels and name in labels and HOST not in labels[name]:
            del d["metadata"]["labels"][HOST]
        docs.append(d)
        docs += [pod(f"p-{name}{i}", {"cpu": "1"}, node_name=f"node-{name}", labels={"foo": ""}) for i in range(cnt)]
    tsc = [{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": FOO}]
    docs.append(pod("p", {"cpu": "1"}, labels={"foo": ""}, topologySpreadConstraints=tsc))
    return plugin_scores(docs, "PodTopologySpread", candidates=[f"node-{c}" for c in candidates])


SPREAD_CASES = [
    # podtopologyspread/scoring_test.go TestPodTopologySpreadScore (id 110788862 in the source
    # index; kubernetes/kubernetes pkg/scheduler/framework/plugins/podtopologyspread).
    (
        "one constraint on node, all 4 nodes are candidates",
        1,
        HOST,
        {"a": 2, "b": 1, "c": 0, "d": 3},
        "abcd",
        None,
        [20, 60, 100, 0],
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        2,
        HOST,
        {"a": 2, "b": 1, "c": 0, "d": 3},
        "abcd",
        None,
        [33, 66, 100, 16],
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        3,
        HOST,
        {"a": 4, "b": 3, "c": 2, "d": 1},
        "abcd",
        None,
        [44, 66, 77, 100],
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates",
        1,
        HOST,
        {"a": 4, "b": 2, "x": 1, "y": 3},
        "abx",
        None,
        [33, 83, 100],
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        1,
        HOST,
        {"a": 4, "b": 2, "x": 1, "y": 3},
        "abx",
        {"b": {"n": "node-b"}},
        [16, 0, 100],
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        1,
        "zone",
        {"a": 4, "b": 2, "x": 1, "y": 3},
        "abx",
        {"a": {"zone": "zone1"}, "b": {"zone": "zone1"}, "x": {"zone": "zone2"}, "y": {"zone": "zone2"}},
        [75, 75, 100],
    ),
]


@pytest.mark.parametrize("name,skew,key,counts,cands,labels,want", SPREAD_CASES, ids=[c[0] for c in SPREAD_CASES])
def test_pod_topology_spread_score_go_table(name, skew, key, counts, cands, labels, want):
    assert _spread_case(skew, key, counts, cands, labels) == want
