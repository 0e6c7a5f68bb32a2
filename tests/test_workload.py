"""draopt.kube.workload: pods, PodGroups and the claims they use (see the module docstring)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import load_files, load_text
from draopt.kube.node_allocatable import node_allocatable_demand
from draopt.kube.workload import EXTENDED_CLAIM_USE, MAX_RESERVED_FOR, containers_referencing, expand

DATA = Path(__file__).parent / "data" / "workload"
GI = 2**30


def docs(*objs: dict) -> str:
    return yaml.safe_dump_all(list(objs), sort_keys=False)


def pod(
    name,
    ns="default",
    *,
    claims=(),
    containers=None,
    init=None,
    group=None,
    node=None,
    priority=None,
    priority_class=None,
    ts=None,
    overhead=None,
    status=None,
    **spec_extra,
):
    spec = {
        "containers": containers
        if containers is not None
        else [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "1Mi"}}}]
    }
    if init is not None:
        spec["initContainers"] = init
    if claims:
        spec["resourceClaims"] = list(claims)
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if overhead:
        spec["overhead"] = overhead
    spec.update(spec_extra)
    meta = {"name": name, "namespace": ns}
    if ts:
        meta["creationTimestamp"] = ts
    d = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if status:
        d["status"] = status
    return d


def claim(name, ns="default", reserved=()):
    d = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    if reserved:
        d["status"] = {"reservedFor": [{"resource": "pods", "name": n, "uid": f"uid-{n}"} for n in reserved]}
    return d


def template(name, ns="default"):
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}},
    }


def device_class(name, extended=None, ts=None):
    d = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": {}}
    if extended:
        d["spec"]["extendedResourceName"] = extended
    if ts:
        d["metadata"]["creationTimestamp"] = ts
    return d


WORKLOAD_CLAIMS = Features.from_gates({"DRAWorkloadResourceClaims": True})


def expand_docs(*objs, features=None):
    # Workload claims need the (alpha) DRAWorkloadResourceClaims gate; tests of the gate pass features.
    return expand(load_text(docs(*objs), "test"), features or WORKLOAD_CLAIMS)


# ------------------------------------------------------------------ loader
def test_loader_reads_workload_kinds():
    objs = load_text(
        docs(
            pod("p"),
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "default"},
                "spec": {"schedulingPolicy": {"basic": {}}},
            },
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"a": "b"}}},
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high"},
                "value": 1000,
                "description": "kept",
            },
        ),
        "t",
    )
    assert [p.name for p in objs.pods] == ["p"]
    assert [g.name for g in objs.pod_groups] == ["g"]
    assert objs.namespaces[0].metadata.labels == {"a": "b"}
    assert objs.priority_classes[0].value == 1000
    assert objs.priority_classes[0].to_k8s()["description"] == "kept"  # unknown fields kept


def test_pod_quantities_are_validated():
    with pytest.raises(InputError, match=r"containers\[0\]\.resources\.requests\.cpu"):
        load_text(docs(pod("p", containers=[{"name": "c", "resources": {"requests": {"cpu": "lots"}}}])), "t")


# ------------------------------------------------------------------ templates, shared claims
def test_template_makes_one_claim_per_pod():
    w = expand_docs(
        template("t"),
        pod("a", claims=[{"name": "gpu", "resourceClaimTemplateName": "t"}]),
        pod("b", claims=[{"name": "gpu", "resourceClaimTemplateName": "t"}]),
    )
    a, b = (w.pod("default/a"), w.pod("default/b"))
    assert [(u.name, u.key, u.generated, u.for_group) for u in a.claims] == [("gpu", "default/a-gpu", True, None)]
    assert b.claims[0].key == "default/b-gpu"
    made = w.claims["default/a-gpu"]
    assert made.spec.devices.requests[0].exactly.device_class_name == "gpu"
    owner = made.to_k8s()["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Pod", "a")
    assert w.reserved_for["default/a-gpu"] == ["pods/a"]


def test_template_claim_name_from_pod_status_and_existing_claim_reused():
    w = expand_docs(
        template("t"),
        claim("a-gpu-x7k2"),
        pod(
            "a",
            claims=[{"name": "gpu", "resourceClaimTemplateName": "t"}],
            status={"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "a-gpu-x7k2"}]},
        ),
    )
    use = w.pod("default/a").claims[0]
    assert (use.key, use.generated) == ("default/a-gpu-x7k2", False)


def test_shared_existing_claim_is_one_claim():
    w = expand_docs(
        claim("shared", reserved=["running"]),
        pod("running", node="n1", claims=[{"name": "x", "resourceClaimName": "shared"}]),
        pod("a", claims=[{"name": "x", "resourceClaimName": "shared"}]),
        pod("b", claims=[{"name": "y", "resourceClaimName": "shared"}]),
    )
    keys = {u.key for d in w.pending for u in d.claims}
    assert keys == {"default/shared"}
    assert not any(u.generated for d in w.pending for u in d.claims)
    assert w.reserved_for["default/shared"] == ["pods/running", "pods/a", "pods/b"]
    assert [d.key for d in w.running] == ["default/running"]
    assert w.running[0].node_name == "n1"


# ------------------------------------------------------------------ workload claims (seed example)
def test_training_group_workload_claims():
    w = expand(load_files([str(DATA / "training-group.yaml")]), WORKLOAD_CLAIMS)
    p1, p2 = w.pod("some-ns/training-group-pod-1"), w.pod("some-ns/training-group-pod-2")
    by1 = {u.name: u for u in p1.claims}
    # Not matching the PodGroup: reserved for the pod; the template makes a claim per pod.
    assert (by1["pod-claim"].key, by1["pod-claim"].for_group) == ("some-ns/my-pod-claim", None)
    assert by1["pod-claim-template"].key == "some-ns/training-group-pod-1-pod-claim-template"
    assert by1["pod-claim-template"].for_group is None and by1["pod-claim-template"].generated
    # Matching: reserved for the PodGroup; the template makes ONE claim for the group.
    assert (by1["pg-claim"].key, by1["pg-claim"].for_group) == ("some-ns/my-pg-claim", "some-ns/training-group")
    pg = by1["pg-claim-template"]
    assert (pg.key, pg.generated, pg.for_group) == (
        "some-ns/training-group-pg-claim-template",
        True,
        "some-ns/training-group",
    )
    by2 = {u.name: u for u in p2.claims}
    assert by2["pg-claim-template"].key == pg.key
    assert by2["pod-claim-template"].key == "some-ns/training-group-pod-2-pod-claim-template"
    owner = w.claims[pg.key].to_k8s()["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("PodGroup", "training-group")
    assert w.claims[pg.key].spec.devices.requests[0].exactly.count == 2
    # The PodGroup counts once in reservedFor.
    assert w.reserved_for["some-ns/my-pg-claim"] == ["podgroups.scheduling.k8s.io/training-group"]
    assert w.reserved_for[pg.key] == ["podgroups.scheduling.k8s.io/training-group"]
    assert w.reserved_for["some-ns/my-pod-claim"] == ["pods/training-group-pod-1"]
    gang = w.groups["some-ns/training-group"]
    assert (gang.policy, gang.min_count, gang.pods) == (
        "gang",
        2,
        ["some-ns/training-group-pod-1", "some-ns/training-group-pod-2"],
    )
    assert p1.group == "some-ns/training-group"
    # Template metadata is copied to the generated claim.
    assert w.claims["some-ns/training-group-pod-1-pod-claim-template"].metadata.labels == {"app": "training"}


def test_group_claim_needs_exact_match():
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"resourceClaims": [{"name": "pg", "resourceClaimTemplateName": "t"}]},
    }
    # Same template, different claim name: a per-pod claim.
    w = expand_docs(
        template("t"), group, pod("a", group="g", claims=[{"name": "other", "resourceClaimTemplateName": "t"}])
    )
    use = w.pod("default/a").claims[0]
    assert (use.key, use.for_group) == ("default/a-other", None)
    assert (w.groups["default/g"].policy, w.groups["default/g"].min_count) == ("basic", 1)


def test_group_claim_name_from_podgroup_status():
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"resourceClaims": [{"name": "pg", "resourceClaimTemplateName": "t"}]},
        "status": {"resourceClaimStatuses": [{"name": "pg", "resourceClaimName": "g-pg-abcde"}]},
    }
    w = expand_docs(
        template("t"), group, pod("a", group="g", claims=[{"name": "pg", "resourceClaimTemplateName": "t"}])
    )
    assert w.pod("default/a").claims[0].key == "default/g-pg-abcde"


def test_podgroup_at_most_four_claims():
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]},
    }
    with pytest.raises(InputError, match=r"PodGroup default/g: field spec.resourceClaims: 5 entries"):
        expand_docs(group)


# ------------------------------------------------------------------ extended resources
def test_extended_resource_by_extended_resource_name():
    w = expand_docs(
        device_class("gpu.example.com", extended="example.com/gpu"),
        pod(
            "p",
            init=[{"name": "init", "resources": {"limits": {"example.com/gpu": "1"}}}],
            containers=[
                {"name": "a", "resources": {"requests": {"cpu": "1", "example.com/gpu": "2", "memory": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"example.com/gpu": "3"}}},
            ],
        ),
    )
    d = w.pod("default/p")
    assert "example.com/gpu" not in d.resources
    assert d.extended_resources == {"example.com/gpu": Fraction(5)}
    use = d.claims[-1]
    assert (use.name, use.key, use.generated) == (EXTENDED_CLAIM_USE, "default/p-extended-resources", True)
    c = w.claims[use.key]
    # container index over initContainers + containers; request index among the sorted names
    # (cpu, example.com/gpu, memory -> 1). The init container's 1 reuses container a's request
    # (extendeddynamicresources.go createResourceRequestAndMappings): no request of its own.
    got = [
        (r.name, r.exactly.device_class_name, r.exactly.allocation_mode, r.exactly.count)
        for r in c.spec.devices.requests
    ]
    assert got == [
        ("container-1-request-1", "gpu.example.com", "ExactCount", 2),
        ("container-2-request-0", "gpu.example.com", "ExactCount", 3),
    ]
    meta = c.to_k8s()["metadata"]
    assert meta["annotations"]["resource.kubernetes.io/extended-resource-claim"] == "true"
    assert meta["ownerReferences"][0]["name"] == "p"
    assert w.reserved_for[use.key] == ["pods/p"]


def test_extended_resource_by_device_class_prefix():
    w = expand_docs(
        device_class("fpga"),
        pod(
            "p",
            containers=[
                {
                    "name": "a",
                    "resources": {
                        "requests": {"deviceclass.resource.kubernetes.io/fpga": "2", "example.com/dongle": "1"}
                    },
                }
            ],
        ),
    )
    d = w.pod("default/p")
    assert d.resources["example.com/dongle"] == 1  # not backed by DRA: stays
    assert "deviceclass.resource.kubernetes.io/fpga" not in d.resources
    r = w.claims["default/p-extended-resources"].spec.devices.requests
    assert [(x.name, x.exactly.device_class_name, x.exactly.count) for x in r] == [("container-0-request-0", "fpga", 2)]


def test_extended_resource_newest_class_wins_and_gate_off():
    classes = [
        device_class("old", extended="example.com/gpu", ts="2025-01-01T00:00:00Z"),
        device_class("new", extended="example.com/gpu", ts="2025-06-01T00:00:00Z"),
    ]
    p = pod("p", containers=[{"name": "a", "resources": {"limits": {"example.com/gpu": "1"}}}])
    w = expand_docs(*classes, p)
    assert w.claims["default/p-extended-resources"].spec.devices.requests[0].exactly.device_class_name == "new"
    off = expand_docs(*classes, p, features=Features.from_gates({"DRAExtendedResource": False}))
    d = off.pod("default/p")
    assert d.resources["example.com/gpu"] == 1 and d.claims == []
    assert "default/p-extended-resources" not in off.claims


def test_extended_resource_existing_claim_from_status():
    existing = claim("p-extended-resources-abcde")
    w = expand_docs(
        device_class("gpu", extended="example.com/gpu"),
        existing,
        pod(
            "p",
            containers=[{"name": "a", "resources": {"limits": {"example.com/gpu": "1"}}}],
            status={
                "extendedResourceClaimStatus": {
                    "resourceClaimName": "p-extended-resources-abcde",
                    "requestMappings": [],
                }
            },
        ),
    )
    use = w.pod("default/p").claims[0]
    assert (use.key, use.generated) == ("default/p-extended-resources-abcde", False)


# ------------------------------------------------------------------ priority and queue order
def test_priority_and_queue_order():
    pcs = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100},
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "dflt"},
            "value": 5,
            "globalDefault": True,
        },
    ]
    w = expand_docs(
        *pcs,
        pod("late-high", priority_class="high", ts="2026-01-01T00:00:10Z"),
        pod("early-high", priority_class="high", ts="2026-01-01T02:00:00+02:00"),  # 00:00 UTC
        pod("explicit", priority=100, priority_class="high", ts="2026-01-01T00:00:05Z"),
        pod("plain", ts="2025-01-01T00:00:00Z"),
        pod("low", priority=-1),
        pod("critical", priority_class="system-node-critical"),
        pod("bound", node="n", priority=1000),
    )
    assert [d.key.split("/")[1] for d in w.pending] == [
        "critical",
        "early-high",
        "explicit",
        "late-high",
        "plain",
        "low",
    ]
    assert w.pod("default/plain").priority == 5  # globalDefault
    assert w.pod("default/critical").priority == 2000001000
    assert w.pod("default/early-high").queue_key == (-100, "2026-01-01T00:00:00.000000Z", "default/early-high")
    assert w.pod("default/low").queue_key[1] == ""
    assert [d.key for d in w.running] == ["default/bound"]


def test_missing_priority_class_names_field():
    with pytest.raises(InputError, match=r"Pod default/p: field spec.priorityClassName: PriorityClass 'nope'"):
        expand_docs(pod("p", priority_class="nope"))


def test_gang_priority_from_podgroup_or_members():
    def groups(version: str) -> list[dict]:  # (1.36 serves PodGroup as v1alpha2 only)
        return [
            {
                "apiVersion": f"scheduling.k8s.io/{version}",
                "kind": "PodGroup",
                "metadata": {"name": "a", "namespace": "default"},
                "spec": {"priority": 7, "schedulingPolicy": {"gang": {"minCount": 3}}},
            },
            {
                "apiVersion": f"scheduling.k8s.io/{version}",
                "kind": "PodGroup",
                "metadata": {"name": "b", "namespace": "default"},
                "spec": {"schedulingPolicy": {"basic": {}}},
            },
        ]

    members = (pod("x", group="a"), pod("y", group="b", priority=3), pod("z", group="b", priority=9))
    features_136 = Features.from_gates({"DRAWorkloadResourceClaims": True}, "1.36")
    old = expand_docs(*groups("v1alpha2"), *members, features=features_136)
    assert (old.groups["default/a"].priority, old.groups["default/a"].min_count) == (7, 3)
    assert (old.groups["default/b"].priority, old.groups["default/b"].policy) == (9, "basic")
    assert old.groups["default/b"].pods == ["default/z", "default/y"]
    # 1.37 never tries either group: a has 1 pod for minCount 3 (GangScheduling PreEnqueue); b's pods
    # have priorities apart from b's admitted one, 0 (schedule_one_podgroup.go validatePodGroup)
    w = expand_docs(*groups("v1beta1"), *members)
    assert w.groups["default/b"].pods == [] and not w.pending
    holds = {d.key: d.hold for d in w.waiting}
    assert holds["default/x"].plugin == "GangScheduling"
    assert holds["default/z"].message == (
        "all pods in a single pod group should have the same priority as the pod group's priority, got 9 and 0"
    )


# ------------------------------------------------------------------ resource arithmetic
def test_init_containers_sidecars_and_overhead():
    p = pod(
        "p",
        init=[
            {"name": "i1", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "100Mi"}}},
            {"name": "i2", "resources": {"requests": {"cpu": "1", "memory": "3Gi"}}},
        ],
        containers=[
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "250m", "memory": "1Gi", "hugepages-2Mi": "4Mi"}}},
        ],
        overhead={"cpu": "100m", "memory": "10Mi"},
    )
    r = expand_docs(p).pod("default/p").resources
    # containers + sidecar: cpu 0.25+0.25+0.5 = 1; memory 2Gi+100Mi.
    # init peaks: i1 cpu 2 / mem 1Gi; i2 + sidecar: cpu 1.5 / mem 3Gi+100Mi.
    assert r["cpu"] == Fraction(2) + Fraction(1, 10)
    assert r["memory"] == 3 * GI + 100 * 2**20 + 10 * 2**20
    assert r["hugepages-2Mi"] == 4 * 2**20
    assert r["pods"] == 1


def test_pod_level_resources_and_empty_pod():
    p = pod(
        "p",
        containers=[{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
        resources={"requests": {"cpu": "3", "memory": "2Gi"}},
    )
    r = expand_docs(p, pod("e", containers=[{"name": "a"}])).pod("default/p").resources
    assert (r["cpu"], r["memory"]) == (3, 2 * GI)
    e = expand_docs(pod("e", containers=[{"name": "a"}])).pod("default/e").resources
    assert e == {"cpu": 0, "memory": 0, "pods": 1}


# ------------------------------------------------------------------ reservedFor limit
def test_reserved_for_limit_256():
    holders = [f"r{i}" for i in range(MAX_RESERVED_FOR - 2)]
    objs = [claim("shared", reserved=holders)]
    objs += [
        pod(f"p{i}", ts=f"2026-01-01T00:00:0{i}Z", claims=[{"name": "x", "resourceClaimName": "shared"}])
        for i in range(4)
    ]
    with pytest.raises(InputError) as e:
        expand_docs(*objs)
    msg = str(e.value)
    assert "Pod default/p2: field spec.resourceClaims[0]" in msg
    assert "ResourceClaim default/shared" in msg and "256" in msg
    assert "pods beyond the limit: default/p2, default/p3" in msg
    # Exactly at the limit is fine.
    w = expand_docs(*objs[:3])
    assert len(w.reserved_for["default/shared"]) == MAX_RESERVED_FOR


def test_podgroup_counts_once_in_reserved_for():
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"resourceClaims": [{"name": "x", "resourceClaimName": "shared"}]},
    }
    objs = [group, claim("shared", reserved=[f"r{i}" for i in range(MAX_RESERVED_FOR - 1)])]
    objs += [pod(f"p{i}", group="g", claims=[{"name": "x", "resourceClaimName": "shared"}]) for i in range(300)]
    w = expand_docs(*objs)
    entries = w.reserved_for["default/shared"]
    assert len(entries) == MAX_RESERVED_FOR and entries[-1] == "podgroups.scheduling.k8s.io/g"


# ------------------------------------------------------------------ errors naming the field
@pytest.mark.parametrize(
    "objs, match",
    [
        (
            [pod("p", group="nope")],
            r"Pod default/p: field spec.schedulingGroup.podGroupName: PodGroup default/nope not found",
        ),
        ([pod("p", claims=[{"name": "x"}])], r"Pod default/p: field spec.resourceClaims\[0\]: exactly one of"),
    ],
)
def test_missing_objects_name_the_field(objs, match):
    with pytest.raises(InputError, match=match):
        expand_docs(*objs)


@pytest.mark.parametrize(
    "ref, what",
    [
        ("resourceClaimName", "ResourceClaim default/gone not found"),
        ("resourceClaimTemplateName", "ResourceClaimTemplate default/gone not found"),
    ],
)
def test_a_claim_not_there_yet_makes_the_pod_wait(ref, what):
    """The API server takes the pod; kube-scheduler's DynamicResources PreEnqueue keeps it out of the
    queue (pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go, PreEnqueue)."""
    w = expand_docs(pod("p", claims=[{"name": "x", ref: "gone"}]), pod("q"))
    assert [d.key for d in w.pending] == ["default/q"]
    (d,) = w.waiting
    assert d.key == "default/p" and d.hold is not None and d.hold.message == what


# ------------------------------------------------------------------ node allocatable
def test_node_allocatable_parsing():
    w = expand(load_files([str(DATA / "training-group.yaml")]), WORKLOAD_CLAIMS)
    assert w.node_allocatable == {
        "my-node": {"cpu": Fraction(791, 100), "memory": 32 * GI, "pods": 110, "example.com/foo": 4}
    }


def test_node_allocatable_mapping_and_overhead():
    objs = load_files([str(DATA / "node-allocatable.yaml")])
    devices = {d.name: d for s in objs.resource_slices for d in s.spec.devices}
    p = expand_docs(
        pod(
            "p",
            claims=[],
            containers=[
                {"name": "a", "resources": {"claims": [{"name": "xpu"}]}},
                {"name": "b", "resources": {"claims": [{"name": "xpu"}]}},
                {"name": "c"},
            ],
        )
    ).pod("default/p")
    assert containers_referencing(p.pod, "xpu") == 2
    # mapping: consumed capacity x capacityMultiplier (default 1); whole capacity when not given.
    assert node_allocatable_demand(devices["socket0cpus"], p, 1, {"cpu.example.com/cpu": Fraction(4)}) == {"cpu": 4}
    assert node_allocatable_demand(devices["socket1cpus"], p, 1) == {"cpu": 128}
    # overhead perPod
    assert node_allocatable_demand(devices["xpu-model-x-001"], p, 2) == {"memory": 8 * GI}
    assert node_allocatable_demand(devices["xpu-model-x-001"], p, 2, overhead=False) == {}


def test_node_allocatable_device_multiplier_per_container_and_upstream_shape():
    from draopt.kube.models import Device

    dev = Device.model_validate(
        {
            "name": "d",
            "capacity": {"mem": {"value": "16Gi"}},
            "nodeAllocatableResources": {
                "mapping": {
                    "cpu": {"deviceMultiplier": "2"},
                    "memory": {"capacityKey": "mem", "capacityMultiplier": "0.5"},
                },
                "overhead": {"memory": {"perPod": "1Gi", "perContainer": "256Mi"}},
            },
        }
    )
    assert node_allocatable_demand(dev, None, 3) == {"cpu": 2, "memory": 8 * GI + GI + 3 * 256 * 2**20}
    assert node_allocatable_demand(dev, None, 3, mapping=False) == {"memory": GI + 3 * 256 * 2**20}
    upstream = Device.model_validate(
        {
            "name": "u",
            "nodeAllocatableResources": {
                "cpu": {"mapping": {"deviceMultiplier": "500m"}},
                "memory": {"overhead": {"perContainer": "1Mi"}},
            },
        }
    )
    assert node_allocatable_demand(upstream, None, 2) == {"cpu": Fraction(1, 2), "memory": 2 * 2**20}
    bad = Device.model_validate({"name": "b", "nodeAllocatableResources": {"mapping": {"cpu": {"capacityKey": "x"}}}})
    with pytest.raises(InputError, match=r"nodeAllocatableResources.cpu.mapping.capacityKey"):
        node_allocatable_demand(bad, None, 1)


def test_workload_claims_gate_off_gives_per_pod_claims():
    # The API server drops PodGroup.spec.resourceClaims without DRAWorkloadResourceClaims.
    w = expand(load_files([str(DATA / "training-group.yaml")]), Features.from_gates())
    uses = {u.name: u for p in w.pending for u in p.claims}
    assert all(u.for_group is None for u in uses.values())
    assert "some-ns/training-group-pod-1-pg-claim-template" in w.claims


def test_finished_pods_are_ignored():
    done = pod("done", node="n1")
    done["status"] = {"phase": "Succeeded"}
    w = expand_docs(done, pod("run", node="n1"), pod("new"))
    assert [p.key for p in w.running] == ["default/run"]
    assert [p.key for p in w.pending] == ["default/new"]
