"""Preemption: DefaultPreemption for pods, workload-aware preemption (KEP-5710) for PodGroups.

Transcribed cases cite their Kubernetes source:
- TestSelectBestCandidate: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go
  (priorities neg -100, low 0, mid 100, high 1000, veryHigh 10000; requests small 100, medium 200,
  large 300, veryLarge 500 (milli-cpu and memory bytes alike); every node 500m / 500).
- TestPodEligibleToPreemptOthers (same file): preemptionPolicy Never never preempts.
- SelectVictimsOnNode's reprieve order (default_preemption.go, MoreImportantVictim) and
  calculateNumCandidates (same file).
- Victims of a PodGroup with disruptionMode all are evicted whole (pkg/scheduler/framework/preemption,
  the workload-preemption domain; KEP-5710).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draopt.cluster.check import check_placement
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet, load_files, parse_object
from draopt.placement import output_objects, place, pod_table
from draopt.scheduler.preemption import num_candidates

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL, MEDIUM, LARGE, VERY_LARGE = 100, 200, 300, 500
V1 = "resource.k8s.io/v1"
SCHED = "scheduling.k8s.io/v1beta1"


def node(name: str, cpu: int = VERY_LARGE, labels: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "status": {"allocatable": {"cpu": f"{cpu}m", "memory": str(cpu), "pods": "110"}},
    }


def pod(
    name: str,
    size: int,
    priority: int,
    on: str | None = None,
    start: int | None = None,
    *,
    group: str | None = None,
    policy: str | None = None,
    claims: list | None = None,
) -> dict:
    spec: dict = {
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{size}m", "memory": str(size)}}}],
    }
    if on:
        spec["nodeName"] = on
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if policy:
        spec["preemptionPolicy"] = policy
    if claims:
        spec["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
        spec["containers"][0]["resources"]["claims"] = [{"name": c} for c in claims]
    d = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}
    if on:
        d["status"] = {"phase": "Running"}
        if start is not None:
            d["status"]["startTime"] = f"1970-01-01T00:00:{start:02d}Z"
    return d


def pod_group(name: str, min_count: int, *, all_mode: bool = False, priority: int | None = None) -> dict:
    spec: dict = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if all_mode:
        spec["disruptionMode"] = {"all": {}}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": SCHED, "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def objects(docs: list[dict]) -> ObjectSet:
    out = ObjectSet()
    for i, d in enumerate(docs):
        out.add(parse_object(d, f"doc {i}"))
    return out


def run(docs: list[dict], policy: str = "first-fit", scheduler: str | None = None, features=None):
    out = place(objects(docs), policy=policy, scheduler_config=scheduler, time_limit=10, features=features)
    assert check_placement(out) == []
    return out


def evicted(out) -> list[str]:
    return sorted(e.pod.split("/", 1)[1] for e in out.result.evictions)


def node_of(out, name: str) -> str | None:
    return next(p.node for p in out.result.pods if p.pod == f"default/{name}")


# ------------------------------------------------------------------ TestSelectBestCandidate
def _nodes(spec: dict[str, list[tuple]]) -> list[dict]:
    docs = []
    for n, pods in spec.items():
        docs.append(node(n))
        for i, p in enumerate(pods):
            prio, size = p[0], p[1]
            start = p[2] if len(p) > 2 else 0
            docs.append(pod(f"{n}.{i + 1}", size, prio, n, start))
    return docs


SELECT_BEST_CANDIDATE = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        HIGH,
        LARGE,
        {"node1": [(MID, LARGE)], "node2": [(MID, LARGE)]},
        {"node1", "node2"},
    ),
    (
        "node with min highest priority pod is picked",
        HIGH,
        VERY_LARGE,
        {
            "node1": [(MID, MEDIUM), (MID, LARGE)],
            "node2": [(MID, MEDIUM), (LOW, MEDIUM)],
            "node3": [(LOW, MEDIUM), (LOW, MEDIUM)],
        },
        {"node3"},
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        HIGH,
        VERY_LARGE,
        {
            "node1": [(MID, MEDIUM), (MID, LARGE)],
            "node2": [(MID, LARGE), (LOW, MEDIUM)],
            "node3": [(MID, MEDIUM), (MID, MEDIUM)],
        },
        {"node2"},
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        HIGH,
        VERY_LARGE,
        {
            "node1": [(MID, SMALL), (NEG, SMALL), (MID, SMALL), (NEG, SMALL)],
            "node2": [(MID, LARGE), (NEG, MEDIUM)],
            "node3": [(MID, MEDIUM), (NEG, SMALL), (LOW, SMALL)],
        },
        {"node2"},
    ),
    (
        "sum of adjusted priorities is considered",
        HIGH,
        VERY_LARGE,
        {
            "node1": [(MID, SMALL), (NEG, SMALL), (NEG, SMALL)],
            "node2": [(MID, LARGE), (NEG, MEDIUM)],
            "node3": [(MID, MEDIUM), (NEG, SMALL), (LOW, SMALL)],
        },
        {"node2"},
    ),
    # node3's last pod is small here (medium upstream, where the fake node is over-committed, 600m of 500m)
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        VERY_HIGH,
        VERY_LARGE,
        {
            "node1": [(MID, SMALL), (LOW, SMALL), (LOW, SMALL)],
            "node2": [(HIGH, LARGE)],
            "node3": [(MID, MEDIUM), (LOW, SMALL), (LOW, SMALL), (LOW, SMALL)],
            "node4": [(MID, MEDIUM), (MID, SMALL), (MID, SMALL), (NEG, SMALL)],
        },
        {"node1"},
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        HIGH,
        VERY_LARGE,
        {
            "node1": [(MID, MEDIUM, 2), (MID, MEDIUM, 2)],
            "node2": [(MID, MEDIUM, 3), (MID, MEDIUM, 3)],
            "node3": [(MID, MEDIUM, 1), (MID, MEDIUM, 1)],
        },
        {"node2"},
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        HIGH,
        VERY_LARGE,
        {
            "node1": [(MID, MEDIUM, 4), (MID, MEDIUM, 2)],
            "node2": [(MID, MEDIUM, 5), (MID, MEDIUM, 1)],
            "node3": [(MID, MEDIUM, 3), (MID, MEDIUM, 6)],
        },
        {"node3"},
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        HIGH,
        VERY_LARGE,
        {
            "node1": [(LOW, MEDIUM, 4), (MID, MEDIUM, 2)],
            "node2": [(MID, MEDIUM, 6), (LOW, MEDIUM, 1)],
            "node3": [(LOW, MEDIUM, 3), (MID, MEDIUM, 5)],
        },
        {"node2"},
    ),
]


@pytest.mark.parametrize(
    "name,prio,size,nodes,expected", SELECT_BEST_CANDIDATE, ids=[c[0] for c in SELECT_BEST_CANDIDATE]
)
@pytest.mark.parametrize("scheduler", [None, "builtin:name-order"])
def test_select_best_candidate(name, prio, size, nodes, expected, scheduler):
    out = run(_nodes(nodes) + [pod("preemptor", size, prio)], scheduler=scheduler)
    where = node_of(out, "preemptor")
    assert where in expected
    pl = out.result.pods[0]
    assert pl.nominated_node == where
    # Victims come from the chosen node only, all of lower priority.
    assert out.result.evictions and all(e.node == where and e.priority < prio for e in out.result.evictions)


def test_num_candidates_as_calculate_num_candidates():
    # calculateNumCandidates: max(nodes * 10%, 100), at most every node.
    assert num_candidates(5) == 5
    assert num_candidates(500) == 100
    assert num_candidates(5000) == 500
    assert num_candidates(5000, 10, 1000) == 1000


# ------------------------------------------------------------------ SelectVictimsOnNode
def test_reprieve_keeps_the_most_important_victims():
    """Every lower-priority pod is removed, then reprieved from the most important down (higher
    priority first, then the earlier started): only the least important one that must go goes."""
    docs = [
        node("n", 1000),
        pod("late-low", 300, LOW, "n", 2),
        pod("early-low", 300, LOW, "n", 1),
        pod("mid", 300, 50, "n", 3),
        pod("preemptor", 400, MID),
    ]
    out = run(docs)
    assert node_of(out, "preemptor") == "n"
    assert evicted(out) == ["late-low"]


def test_equal_or_higher_priority_is_never_evicted():
    docs = [
        node("n"),
        pod("same", 300, MID, "n", 1),
        pod("higher", 200, HIGH, "n", 1),
        node("small", 200),
        pod("low", 200, LOW, "small", 1),
        pod("preemptor", 300, MID),
    ]
    out = run(docs)
    assert node_of(out, "preemptor") is None and not out.result.evictions
    # "small" (200m) can never hold 300m: NodeResourcesFit says Unresolvable, preemption skips it
    assert out.result.pods[0].preemption == (
        "preemption: 0/2 nodes are available: 1 No preemption victims found for "
        "incoming pod, 1 Preemption is not helpful for scheduling."
    )


def test_a_node_still_short_with_every_victim_gone_gives_the_filters_reason():
    """SelectVictimsOnNode returns the filter's status when the pod does not fit with every
    lower-priority pod removed; DryRunPreemption keeps it for the node (preemption.go, v1.37.2)."""
    docs = [node("n", 1000), pod("high", 600, HIGH, "n", 1), pod("low", 200, LOW, "n", 1), pod("preemptor", 500, MID)]
    out = run(docs)
    assert node_of(out, "preemptor") is None and not out.result.evictions
    # (every resource the node lacks, each counted: framework.FitError over NodeResourcesFit's reasons)
    assert out.result.pods[0].preemption == (
        "preemption: 0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
    )


def test_preemption_policy_never_does_not_preempt():
    # TestPodEligibleToPreemptOthers: "Pod with PreemptNever preemption policy" -> not eligible.
    docs = [node("n"), pod("low", 500, LOW, "n", 1), pod("preemptor", 500, HIGH, policy="Never")]
    out = run(docs)
    assert node_of(out, "preemptor") is None and not out.result.evictions
    assert out.result.pods[0].preemption == "preemption: not eligible due to preemptionPolicy=Never."


def test_preemption_policy_from_the_priority_class():
    docs = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "batch-high"},
            "value": 1000,
            "preemptionPolicy": "Never",
        },
        node("n"),
        pod("low", 500, LOW, "n", 1),
        pod("preemptor", 500, HIGH),
    ]
    docs[-1]["spec"].pop("priority")
    docs[-1]["spec"]["priorityClassName"] = "batch-high"
    out = run(docs)
    assert node_of(out, "preemptor") is None and not out.result.evictions


def test_not_helpful_when_the_pod_cannot_fit_even_on_an_empty_node():
    docs = [node("n"), pod("low", 100, LOW, "n", 1), pod("preemptor", 600, HIGH)]
    out = run(docs)
    assert node_of(out, "preemptor") is None and not out.result.evictions
    assert "Preemption is not helpful for scheduling" in out.result.pods[0].preemption


# ------------------------------------------------------------------ DRA claims
def _gpu_docs(n_gpus: int = 1) -> list[dict]:
    return [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
        node("n", 2000),
        {
            "apiVersion": V1,
            "kind": "ResourceSlice",
            "metadata": {"name": "n-gpus"},
            "spec": {
                "driver": "gpu.example.com",
                "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "n",
                "devices": [{"name": f"gpu-{i}"} for i in range(n_gpus)],
            },
        },
    ]


def _claim(name: str, device: str | None, users: list[str]) -> dict:
    d = {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    if device is not None:
        d["status"] = {
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n", "device": device}]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": u, "uid": u} for u in users],
        }
    return d


DRA_PREEMPTION = Features.from_gates({"DRAPreemption": True})  # KEP-5690: the dry run sees a victim's devices freed


def test_a_victims_devices_are_not_freed_in_the_dry_run_without_kep_5690():
    """kube-scheduler 1.36/1.37: DynamicResources has no PreFilterExtensions, so removing a victim in
    the dry run leaves its claim's devices allocated; a pod that needs them cannot preempt."""
    docs = _gpu_docs() + [
        _claim("held", "gpu-0", ["a"]),
        _claim("mine", None, []),
        pod("a", 100, LOW, "n", 1, claims=["held"]),
        pod("preemptor", 100, HIGH, claims=["mine"]),
    ]
    out = run(docs)
    assert node_of(out, "preemptor") is None and not out.result.evictions
    # (DynamicResources' rejection is UnschedulableAndUnresolvable: the node is not even tried)
    assert (
        out.result.pods[-1].preemption
        == "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_a_victim_preempted_for_cpu_still_releases_its_claims():
    """The dry run keeps the victim's GPU, but the pod needs the victim's cpu and another GPU: the
    victim goes, and its claim is deallocated when it goes."""
    docs = _gpu_docs(2) + [
        _claim("held", "gpu-0", ["a"]),
        _claim("mine", None, []),
        pod("a", 1500, LOW, "n", 1, claims=["held"]),
        pod("preemptor", 1000, HIGH, claims=["mine"]),
    ]
    out = run(docs)
    assert node_of(out, "preemptor") == "n" and evicted(out) == ["a"]
    assert out.result.deallocated == ["default/held"]
    assert "default/mine" in out.result.claims


def test_shared_claim_comes_free_only_when_its_last_pod_goes():
    """Two low-priority pods share the claim holding the node's one GPU: both must go before the
    device is free, and the claim is deallocated (KEP-5729: deallocated when reservedFor is empty).
    With the DRAPreemption gate (KEP-5690), the dry run sees the device freed."""
    docs = _gpu_docs() + [
        _claim("shared", "gpu-0", ["a", "b"]),
        _claim("mine", None, []),
        pod("a", 100, LOW, "n", 1, claims=["shared"]),
        pod("b", 100, LOW, "n", 2, claims=["shared"]),
        pod("preemptor", 100, HIGH, claims=["mine"]),
    ]
    out = run(docs, features=DRA_PREEMPTION)
    assert node_of(out, "preemptor") == "n"
    assert evicted(out) == ["a", "b"]
    assert out.result.deallocated == ["default/shared"]
    objs = {(d["kind"], d["metadata"]["name"]): d for d in output_objects(out.result, out.workload)}
    assert "allocation" not in objs[("ResourceClaim", "shared")]["status"]
    assert objs[("ResourceClaim", "shared")]["status"]["reservedFor"] == []
    cond = objs[("Pod", "a")]["status"]["conditions"][-1]
    assert cond == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod",
    }
    # placed: the binding cleared nominatedNodeName (ClearingNominatedNodeNameAfterBinding, 1.35+)
    assert objs[("Pod", "preemptor")]["spec"]["nodeName"] == "n"
    assert "nominatedNodeName" not in objs[("Pod", "preemptor")].get("status", {})


def test_claim_of_a_higher_priority_pod_is_not_freed():
    docs = _gpu_docs() + [
        _claim("shared", "gpu-0", ["a", "b"]),
        _claim("mine", None, []),
        pod("a", 100, LOW, "n", 1, claims=["shared"]),
        pod("b", 100, HIGH, "n", 2, claims=["shared"]),
        pod("preemptor", 100, HIGH, claims=["mine"]),
    ]
    out = run(docs)
    assert node_of(out, "preemptor") is None and not out.result.evictions


def test_pods_not_holding_the_device_are_reprieved():
    docs = _gpu_docs() + [
        _claim("held", "gpu-0", ["a"]),
        _claim("mine", None, []),
        pod("a", 100, LOW, "n", 2, claims=["held"]),
        pod("b", 100, LOW, "n", 1),
        pod("preemptor", 100, HIGH, claims=["mine"]),
    ]
    out = run(docs, features=DRA_PREEMPTION)
    assert node_of(out, "preemptor") == "n" and evicted(out) == ["a"]


# ------------------------------------------------------------------ PodGroups
def test_disruption_mode_all_evicts_the_whole_group():
    docs = [
        node("n1"),
        node("n2"),
        pod_group("batch", 2, all_mode=True),
        pod("b0", 500, LOW, "n1", 1, group="batch"),
        pod("b1", 500, LOW, "n2", 1, group="batch"),
        pod("preemptor", 500, HIGH),
    ]
    out = run(docs)
    assert node_of(out, "preemptor") in ("n1", "n2")
    assert evicted(out) == ["b0", "b1"]
    assert all("disruptionMode all" in e.why for e in out.result.evictions)


def test_disruption_mode_single_evicts_pod_by_pod():
    docs = [
        node("n1"),
        node("n2"),
        pod_group("batch", 2),
        pod("b0", 500, LOW, "n1", 1, group="batch"),
        pod("b1", 500, LOW, "n2", 1, group="batch"),
        pod("preemptor", 500, HIGH),
    ]
    out = run(docs)
    assert len(evicted(out)) == 1


def test_pending_gang_preempts_whole_and_is_placed_whole():
    docs = [node(f"n{i}") for i in range(3)] + [pod_group("train", 2, priority=HIGH)]
    docs += [pod(f"low{i}", 300, LOW, f"n{i}", i) for i in range(3)]
    docs += [pod(f"t{i}", 400, HIGH, group="train") for i in range(2)]
    out = run(docs)
    placed = [node_of(out, f"t{i}") for i in range(2)]
    assert None not in placed
    assert len(out.result.evictions) == 2
    assert {e.preemptor_kind for e in out.result.evictions} == {"podgroup"}
    assert all(e.message.endswith("higher priority podgroup") for e in out.result.evictions)


def test_gang_that_cannot_fit_even_with_evictions_evicts_nothing():
    docs = [node("n0"), pod_group("train", 2), pod("low0", 300, LOW, "n0", 1)]
    docs += [pod(f"t{i}", 400, HIGH, group="train") for i in range(2)]
    out = run(docs)
    assert not out.result.evictions and all(not p.placed for p in out.result.pods)


def test_place_table_lists_evictions():
    out = run([node("n"), pod("low", 500, LOW, "n", 1), pod("preemptor", 500, HIGH)])
    text = pod_table(out.result, 1)
    assert "evicted by preemption (1):" in text and "default/low" in text


def test_optimal_chooses_no_victim_where_first_fit_needed_one():
    """First-fit (the default profile spreads) puts the first pod on the empty node, so the second
    must preempt; the model places both without evicting, proven."""
    docs = [
        node("a", 1000),
        node("b", 1000),
        pod("low", 400, LOW, "a", 1),
        pod("first", 500, HIGH),
        pod("second", 1000, MID),
    ]
    ff = run(docs)
    assert evicted(ff) == ["low"]
    opt = run(docs, policy="optimal")
    assert opt.result.weighted_placed() == ff.result.weighted_placed()
    assert not opt.result.evictions and opt.result.stats["status"] == "OPTIMAL"
    assert node_of(opt, "first") == "a" and node_of(opt, "second") == "b"


def test_optimal_evicts_as_a_decision_of_the_model_and_says_so():
    out = run([node("n"), pod("low", 500, LOW, "n", 1), pod("preemptor", 500, HIGH)], policy="optimal")
    assert node_of(out, "preemptor") == "n" and evicted(out) == ["low"]
    assert out.result.stats["status"] == "OPTIMAL"
    assert "victims are decisions of the model" in out.result.stats["preemption"]
    (pl,) = [p for p in out.result.pods if p.pod == "default/preemptor"]
    assert pl.nominated_node == "n"


# ------------------------------------------------------------------ properties
@st.composite
def clusters(draw):
    n_nodes = draw(st.integers(1, 3))
    docs = [node(f"n{i}", 1000) for i in range(n_nodes)]
    for i in range(draw(st.integers(0, 6))):
        docs.append(
            pod(
                f"r{i}",
                draw(st.sampled_from([100, 300, 500])),
                draw(st.sampled_from([LOW, MID, HIGH])),
                f"n{draw(st.integers(0, n_nodes - 1))}",
                draw(st.integers(0, 9)),
            )
        )
    # keep the input valid: nodes not over-committed by the running pods
    used: dict[str, int] = {}
    keep = []
    for d in docs:
        if d["kind"] == "Pod":
            n = d["spec"]["nodeName"]
            size = int(d["spec"]["containers"][0]["resources"]["requests"]["cpu"][:-1])
            if used.get(n, 0) + size > 1000:
                continue
            used[n] = used.get(n, 0) + size
        keep.append(d)
    for i in range(draw(st.integers(1, 4))):
        keep.append(
            pod(
                f"p{i}",
                draw(st.sampled_from([200, 500, 900])),
                draw(st.sampled_from([LOW, MID, HIGH])),
                policy=draw(st.sampled_from([None, "Never"])),
            )
        )
    return keep


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_property_victims_lower_never_policy_checker_optimal(docs):
    ff = run(docs)
    never = {f"default/{d['metadata']['name']}" for d in docs if d.get("spec", {}).get("preemptionPolicy") == "Never"}
    for e in ff.result.evictions:
        assert e.priority < e.preemptor_priority
        assert e.preemptor not in never
    _optimal_against_first_fit(docs, ff, never)


def _optimal_against_first_fit(docs, ff, never: set[str]) -> None:
    """Optimal places at least first-fit's weight, its victims are sound, and when its victims are
    proven fewest and first-fit's placement is a solution of its model, it evicts no more."""
    opt = run(docs, policy="optimal")
    assert opt.result.weighted_placed() >= ff.result.weighted_placed()
    _victims_sound(opt, never)
    stats = opt.result.stats
    if (
        opt.result.weighted_placed() == ff.result.weighted_placed()
        and stats.get("proven", {}).get("victims")
        and stats.get("first_fit_in_model")
    ):
        # first-fit's evictions are a solution of the model: the proven fewest are no more
        assert len(opt.result.evictions) <= len(ff.result.evictions)


def _victims_sound(out, never: set[str]) -> None:
    """Every eviction: lower priority than its preemptor, which may preempt and is placed, a pod on
    the victim's node (or on a node of its disruptionMode-all group)."""
    placed = {p.pod: p.node for p in out.result.pods if p.placed}
    for e in out.result.evictions:
        assert e.priority < e.preemptor_priority and e.preemptor not in never
        if e.preemptor_kind == "pod":
            assert e.preemptor in placed
            assert placed[e.preemptor] == e.node or "disruptionMode all" in e.why


def test_explain_says_who_was_evicted_and_why():
    from draopt.allocation import explain
    from draopt.cli import _preemption_sections

    out = run([node("n"), pod("low", 500, LOW, "n", 1), pod("preemptor", 500, HIGH)])
    (section,) = _preemption_sections(explain, out.result, "default/preemptor")
    title = section.heading()
    assert "evicted default/low on n" in title and "to make room for pod default/preemptor (priority 1000)" in title
    (section,) = _preemption_sections(explain, out.result, "default/low")
    assert section.heading().startswith("pod default/low: evicted by preemption (PreemptionByScheduler)")


def test_gang_with_topology_constraint_does_not_preempt():
    """draopt does not model the workload-aware preemption of a PodGroup with a topology constraint
    (kube-scheduler 1.37.2 runs it: on this input it evicts low0 and low1 and binds t0, t1; the
    oracle's answer, docs/differences.md pod-group-cycle): nothing evicted, and said so."""
    from draopt.kube.features import Features

    rack = "topology.kubernetes.io/rack"
    docs = [node(f"n{i}", labels={rack: "r0"}) for i in range(2)] + [pod_group("train", 2, priority=HIGH)]
    docs[-1]["spec"]["schedulingConstraints"] = {"topology": [{"key": rack}]}
    docs += [pod(f"low{i}", 300, LOW, f"n{i}", i) for i in range(2)]
    docs += [pod(f"t{i}", 400, HIGH, group="train") for i in range(2)]
    out = run(docs, features=Features.from_gates({"TopologyAwareWorkloadScheduling": True}))
    assert not out.result.evictions
    # (the oracle's first attempt: t0 did not fit, t1 was never tried; no PostFilter words on either)
    messages = {p.pod: p.condition_message(2) for p in out.result.pods if p.group == "default/train"}
    assert messages == {
        "default/t0": "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory.",
        "default/t1": "pod group is unschedulable, 0/1 placements are available, first placement status: "
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining",
    }


def test_optimal_proves_that_no_eviction_helps():
    """The pod fits no node even with every victim gone: the model, with victims as decisions,
    proves it (before: "placements with evictions were not searched")."""
    docs = [node("n"), pod("low", 100, LOW, "n", 1), pod("big", 600, HIGH)]
    opt = run(docs, policy="optimal")
    assert not opt.result.evictions
    assert opt.result.stats["status"] == "OPTIMAL"
    assert "victims are decisions of the model" in opt.result.stats["preemption"]


def _gpu_node(name: str, gpus: int = 4) -> list[dict]:
    return [
        node(name, 4000),
        {
            "apiVersion": V1,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-gpus"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{i}"} for i in range(gpus)],
            },
        },
    ]


def _held_claim(name: str, node_name: str, device: int, users: list[str]) -> dict:
    d = _claim(name, None, [])
    d["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": node_name, "device": f"gpu-{device}"}
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": u, "uid": u} for u in users],
    }
    return d


@st.composite
def gpu_clusters(draw):
    """Racks of GPU nodes with a running load (own claims, a shared claim, a disruptionMode-all
    group), pending single pods and one gang, priorities and preemption policies at random."""
    n_nodes = draw(st.integers(2, 4))
    docs = _gpu_docs(0)[:1] + [
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu-1", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
        }
    ]
    for i in range(n_nodes):
        docs += _gpu_node(f"n{i}")
    free = [(f"n{i}", j) for i in range(n_nodes) for j in range(4)]
    taken = draw(st.lists(st.sampled_from(free), unique=True, max_size=len(free)))
    group_all = draw(st.booleans())
    if group_all:
        docs.append(pod_group("etl", 2, all_mode=True))
    for k, (n, j) in enumerate(taken):
        name = f"r{k}"
        in_group = group_all and k < 2
        docs.append(_held_claim(f"{name}-gpu", n, j, [name]))
        docs.append(
            pod(
                name,
                100,
                draw(st.sampled_from([LOW, MID])),
                n,
                k % 50,
                claims=[f"{name}-gpu"],
                group="etl" if in_group else None,
            )
        )
    for i in range(draw(st.integers(0, 3))):
        p = pod(f"p{i}", 100, draw(st.sampled_from([LOW, MID, HIGH])), policy=draw(st.sampled_from([None, "Never"])))
        p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}]
        p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
        docs.append(p)
    size = draw(st.integers(0, 3))
    if size:
        docs.append(pod_group("train", size, priority=draw(st.sampled_from([MID, HIGH]))))
        for i in range(size):
            p = pod(f"t{i}", 100, HIGH, group="train")
            p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}]
            p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
            docs.append(p)
    return docs


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_clusters())
def test_property_gpu_clusters_with_gangs(docs):
    ff = run(docs)
    never = {f"default/{d['metadata']['name']}" for d in docs if d.get("spec", {}).get("preemptionPolicy") == "Never"}
    for e in ff.result.evictions:
        assert e.priority < e.preemptor_priority and e.preemptor not in never
    groups = {e.pod for e in ff.result.evictions if "disruptionMode all" in e.why}
    assert groups in (set(), {"default/r0", "default/r1"})  # a disruptionMode-all group goes whole
    _optimal_against_first_fit(docs, ff, never)


def test_default_preemption_args_are_honoured():
    """DefaultPreemptionArgs (pkg/scheduler/apis/config/types_pluginargs.go) set how many candidate
    nodes preemption looks at (calculateNumCandidates); ValidateDefaultPreemptionArgs refuses
    both zero and out-of-range values.  They were accepted and had no effect."""
    from draopt.errors import InputError
    from draopt.placement import preemption_for
    from draopt.scheduler import parse_config
    from draopt.scheduler.preemption import num_candidates

    api = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}

    def cfg(args):
        return parse_config(
            {
                **api,
                "profiles": [
                    {
                        "schedulerName": "default-scheduler",
                        "pluginConfig": [{"name": "DefaultPreemption", "args": args}],
                    }
                ],
            },
            "<t>",
        )

    prof = cfg({"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 3}).profiles["default-scheduler"]
    assert prof.preemption_candidates == (50, 3)
    assert num_candidates(40, *prof.preemption_candidates) == 20
    assert parse_config({**api}, "<t>").profiles["default-scheduler"].preemption_candidates == (10, 100)

    class _Sched:
        config = cfg({"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 3})

    pre = preemption_for(_Sched())
    assert (pre.percentage, pre.absolute) == (50, 3)
    for bad in (
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        {"minCandidateNodesPercentage": 101},
        {"minCandidateNodesAbsolute": -1},
        {"minCandidateNodes": 5},
    ):
        with pytest.raises(InputError, match="DefaultPreemption|minCandidate"):
            cfg(bad)


def test_a_profile_without_default_preemption_does_not_preempt():
    """plugins.postFilter.disabled (or multiPoint.disabled) DefaultPreemption: the framework runs no
    PostFilter, so a pod that fits nowhere stays pending (framework.go expandMultiPointPlugins)."""
    from draopt.placement import preemption_for
    from draopt.scheduler import parse_config

    api = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    for plugins in (
        {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}},
        {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}},
    ):
        cfg = parse_config({**api, "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]}, "<t>")
        assert cfg.profiles["default-scheduler"].preemption is False

        class _Sched:
            config = cfg

        assert preemption_for(_Sched()) is None
    assert parse_config(api, "<t>").profiles["default-scheduler"].preemption is True


def test_optimal_names_evictions_for_devices_as_beyond_the_scheduler():
    """Optimal may evict a GPU holder for a higher-priority pod as a what-if, and says that
    kube-scheduler 1.36/1.37 would not; with the DRAPreemption gate, first-fit does the same and
    the note goes."""
    docs = _gpu_docs() + [
        _claim("held", "gpu-0", ["a"]),
        _claim("mine", None, []),
        pod("a", 100, LOW, "n", 1, claims=["held"]),
        pod("preemptor", 100, HIGH, claims=["mine"]),
    ]
    out = run(docs, policy="optimal")
    assert node_of(out, "preemptor") == "n" and evicted(out) == ["a"]
    assert "beyond the scheduler" in out.result.stats["beyond_scheduler"]
    assert "default/held" in out.result.stats["preemption"]
    gated = run(docs, policy="optimal", features=DRA_PREEMPTION)
    assert evicted(gated) == ["a"] and "beyond_scheduler" not in gated.result.stats
    assert evicted(run(docs, features=DRA_PREEMPTION)) == ["a"]


def test_first_fit_evicts_for_cpu_and_releases_the_victims_claim():
    """tests/data/crosscheck/priority-classes-preemption.yaml, draopt's side (identical to
    kube-scheduler's, evictions included: tests/test_crosscheck_pinned.py::
    test_fixed_preemption_with_priority_classes_and_devices): one victim, holder-0, its claim
    deallocated; the GPU holder on n2 and the pod without a class stay. The optimal policy may go
    beyond the scheduler and evict the GPU holder on n2 for gpu-high, said so."""
    path = Path(__file__).resolve().parent / "data" / "crosscheck" / "priority-classes-preemption.yaml"
    out = place(load_files([str(path)]), policy="first-fit")
    assert [(e.pod, e.node, e.preemptor) for e in out.result.evictions] == [
        ("default/holder-0", "n1", "default/cpu-high")
    ]
    assert out.result.deallocated == ["default/held-0"]
    priorities = {p.pod: p.priority for p in out.result.pods}
    assert priorities == {"default/gpu-high": 1000, "default/never": 1000, "default/cpu-high": 1000}
    assert out.workload.pod("default/no-class").priority == 100  # the globalDefault class
    assert check_placement(out) == []
    opt = place(load_files([str(path)]), policy="optimal", time_limit=10)
    assert sorted(e.pod for e in opt.result.evictions) == ["default/holder-0", "default/holder-1"]
    assert "beyond the scheduler" in opt.result.stats["beyond_scheduler"]
    assert check_placement(opt) == []
