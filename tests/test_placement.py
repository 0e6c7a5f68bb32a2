"""Batch placement: the gang-stranding case, and on random clusters optimal places at least
as many priority-weighted pods as first-fit while every placement passes the checker."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet, load_files, parse_object
from draopt.placement import place
from draopt.cluster.check import check_placement
from draopt.testing.synth import random_placement_instance

ROOT = Path(__file__).resolve().parents[1]


def objects(docs) -> ObjectSet:
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    return objs


def test_gang_stranded_by_first_fit_placed_whole_by_optimal():
    objs = load_files([str(ROOT / "examples" / "gang-stranding.yaml")])
    ff = place(objs, policy="first-fit")
    opt = place(objs, policy="optimal", time_limit=10)
    assert [p.placed for p in ff.result.pods] == [False, False]  # trainer-0 took the 7g slice; the gang fails
    assert [p.node for p in opt.result.pods] == ["node-1", "node-1"]
    devices = {k: a.devices.results[0].device for k, (a, _) in opt.result.claims.items()}
    assert devices["ml/trainer-1-gpu"] == "gpu-0-7g"
    assert devices["ml/trainer-0-gpu"].startswith("gpu-0-1g")
    assert check_placement(ff) == [] and check_placement(opt) == []
    assert opt.result.stats["status"] == "OPTIMAL" and opt.result.stats["gap"] == 0


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_optimal_never_worse_than_first_fit(seed):
    docs = random_placement_instance(random.Random(seed))
    objs = objects(docs)
    # Every gate on (list types: matchAttribute pods keep first-fit's answer), or the defaults.
    features = Features.all_enabled() if seed % 2 else Features.from_gates()
    ff = place(objs, policy="first-fit", features=features)
    opt = place(objs, policy="optimal", features=features, time_limit=10)
    assert check_placement(ff) == [], seed
    assert check_placement(opt) == [], seed
    assert opt.result.weighted_placed() >= ff.result.weighted_placed(), seed


def test_random_instances_are_not_trivial():
    gains = 0
    for seed in range(40):
        objs = objects(random_placement_instance(random.Random(seed)))
        ff = place(objs, policy="first-fit")
        opt = place(objs, policy="optimal", time_limit=10)
        gains += opt.result.weighted_placed() > ff.result.weighted_placed()
    assert gains >= 1  # some instances where the joint model does better


def _zoned(nodes_per_zone: int, pods_per_zone: int) -> ObjectSet:
    docs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
        },
    ]
    for zone in "ab":
        for n in range(nodes_per_zone):
            name = f"{zone}-node-{n}"
            docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": zone}}})
            docs.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": name},
                    "spec": {
                        "driver": "gpu.example.com",
                        "nodeName": name,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": f"gpu-{g}"} for g in range(2)],
                    },
                }
            )
        for p in range(pods_per_zone):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"{zone}-pod-{p}", "namespace": "ml"},
                    "spec": {
                        "nodeSelector": {"zone": zone},
                        "containers": [{"name": "c"}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}],
                    },
                }
            )
    return objects(docs)


def test_independent_parts_are_solved_apart():
    opt = place(_zoned(2, 6), policy="optimal", time_limit=10)  # 4 GPUs per zone, 6 pods per zone
    assert opt.result.stats["components"] == 2
    assert len(opt.result.placed_pods()) == 8
    assert check_placement(opt) == []


def test_cheap_bound_proves_first_fit_optimal():
    opt = place(_zoned(2, 3), policy="optimal", time_limit=10)  # everything fits
    assert opt.result.stats["proof"] == "first-fit places every pod that has a feasible node"
    assert opt.result.stats["gap"] == 0.0 and len(opt.result.placed_pods()) == 6


def test_node_allocatable_resources_of_devices_count_against_the_node():
    docs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "xpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "xpu.example.com"'}}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "10"}},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-xpus"},
            "spec": {
                "driver": "xpu.example.com",
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": f"xpu-{i}", "nodeAllocatableResources": {"overhead": {"cpu": {"perPod": "2"}}}}
                    for i in range(2)
                ],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "xpu", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "x", "exactly": {"deviceClassName": "xpu"}}]}}},
        },
    ]
    for p in range(2):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{p}", "namespace": "ml"},
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "x"}]}}],
                    "resourceClaims": [{"name": "x", "resourceClaimTemplateName": "xpu"}],
                },
            }
        )
    on = Features.from_gates({"DRANodeAllocatableResources": True})
    ff = place(objects(docs), policy="first-fit", features=on)
    assert [p.placed for p in ff.result.pods] == [True, False]  # 1 + 2 cpu each: the second would need 6 of 4
    # (Kubernetes' words, NodeResourcesFit's: draopt's "node-allocatable resources of devices" note
    # is explain's, docs/differences.md)
    assert ff.result.pods[1].reason_text(1) == "0/1 nodes are available: 1 Insufficient cpu"
    off = place(objects(docs), policy="first-fit")
    assert [p.placed for p in off.result.pods] == [True, True]
    opt = place(objects(docs), policy="optimal", features=on, time_limit=5)
    assert [p.placed for p in opt.result.pods] == [True, False]


def test_optimal_prefers_first_subrequests_of_prioritized_lists():
    import yaml
    import test_features as tf

    docs = [d for d in yaml.safe_load_all(tf.CATS) if d] + [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "any", "namespace": "ml"},
            "spec": {
                "spec": {
                    "devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "resource.example.com"}}]}
                }
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "cat", "namespace": "ml"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": yaml.safe_load(
                            tf.PRIORITIZED.replace("    - name", "- name").replace("\n    ", "\n")
                        )
                    }
                }
            },
        },
    ]
    for i, tpl in enumerate(["any", "cat"]):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{i}", "namespace": "ml", "creationTimestamp": f"2026-11-30T10:00:0{i}Z"},
                "spec": {
                    "containers": [{"name": "c"}],
                    "resourceClaims": [{"name": "x", "resourceClaimTemplateName": tpl}],
                },
            }
        )
    ff = place(objects(docs), policy="first-fit")
    opt = place(objects(docs), policy="optimal", time_limit=10)

    def picks(out):
        return {k: [(r.request, r.device) for r in a.devices.results] for k, (a, _) in out.result.claims.items()}

    assert picks(ff)["ml/p1-x"] == [
        ("req-0/small-white", "small-white-cat-1"),
        ("req-0/small-white", "small-white-cat-2"),
    ]
    assert picks(opt)["ml/p1-x"] == [("req-0/large-black", "large-black-cat")]
    assert opt.result.stats["subrequest_index_sum"] == 0
    assert check_placement(ff) == [] and check_placement(opt) == []


def test_extended_resource_requests_become_device_claims():
    docs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {
                "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
                "extendedResourceName": "example.com/gpu",
            },
        },
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-gpus"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{i}"} for i in range(3)],
            },
        },
    ]
    for p, (res, n) in enumerate(
        [
            ("example.com/gpu", "2"),
            ("deviceclass.resource.kubernetes.io/gpu.example.com", "1"),
            ("example.com/gpu", "1"),
        ]
    ):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{p}", "namespace": "ml", "creationTimestamp": f"2026-11-30T10:00:0{p}Z"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {res: n}, "limits": {res: n}}}]},
            }
        )
    out = place(objects(docs), policy="first-fit")
    assert [p.placed for p in out.result.pods] == [True, True, False]  # 2 + 1 of 3 GPUs
    alloc = out.result.claims["ml/p0-extended-resources"][0]
    assert [r.device for r in alloc.devices.results] == ["gpu-0", "gpu-1"]
    assert check_placement(out) == []


def test_optimal_aligns_gpu_and_nic_that_first_fit_strands():
    V1 = "resource.k8s.io/v1"
    docs = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "nic"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "nic.example.com"'}}]},
        },
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        {
            "apiVersion": V1,
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-gpus"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": "gpu-0", "attributes": {"resource.kubernetes.io/pcieRoot": {"string": "r1"}}},
                    {"name": "gpu-1", "attributes": {"resource.kubernetes.io/pcieRoot": {"string": "r0"}}},
                ],
            },
        },
        {
            "apiVersion": V1,
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-nics"},
            "spec": {
                "driver": "nic.example.com",
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "nic-0", "attributes": {"resource.kubernetes.io/pcieRoot": {"string": "r1"}}}],
            },
        },
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
        },
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu-nic", "namespace": "ml"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu"}},
                            {"name": "nic", "exactly": {"deviceClassName": "nic"}},
                        ],
                        "constraints": [
                            {"requests": ["gpu", "nic"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
                        ],
                    }
                }
            },
        },
    ]
    for i, tpl in enumerate(["gpu", "gpu-nic"]):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{i}", "namespace": "ml", "creationTimestamp": f"2026-11-30T10:00:0{i}Z"},
                "spec": {
                    "containers": [{"name": "c"}],
                    "resourceClaims": [{"name": "x", "resourceClaimTemplateName": tpl}],
                },
            }
        )
    ff = place(objects(docs), policy="first-fit")
    opt = place(objects(docs), policy="optimal", time_limit=10)
    assert [p.placed for p in ff.result.pods] == [True, False]  # p0 took gpu-0, the only GPU on root r1
    assert [p.placed for p in opt.result.pods] == [True, True]
    picks = {k: [r.device for r in a.devices.results] for k, (a, _) in opt.result.claims.items()}
    assert picks == {"ml/p0-x": ["gpu-1"], "ml/p1-x": ["gpu-0", "nic-0"]}
    assert opt.result.stats["pinned_pods"] == 0
    assert check_placement(opt) == []


def test_optimal_placement_is_deterministic():
    import json

    docs = random_placement_instance(random.Random(23))
    runs = {json.dumps(place(objects(docs), policy="optimal", time_limit=20).objects, sort_keys=True) for _ in range(3)}
    assert len(runs) == 1


def test_node_taints_tolerations_and_required_node_affinity():
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "a-control-plane", "labels": {"zone": "a"}},
            "spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "b-worker", "labels": {"zone": "b"}},
            "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "PreferNoSchedule"}]},
        },
    ]
    pods = {
        "plain": {},
        "tolerant": {
            "tolerations": [
                {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
            ]
        },
        "zone-c": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["c"]}]}
                        ]
                    }
                }
            }
        },
    }
    for name, extra in pods.items():
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "ml"},
                "spec": dict({"containers": [{"name": "c"}]}, **extra),
            }
        )
    for policy in ("first-fit", "optimal"):
        out = place(objects(docs), policy=policy, time_limit=5)
        where = {p.pod: p.node for p in out.result.pods}
        assert where["ml/plain"] == "b-worker" and where["ml/zone-c"] is None, policy  # PreferNoSchedule is no bar
        assert (
            where["ml/tolerant"] == ("a-control-plane" if policy == "first-fit" else where["ml/tolerant"])
            and where["ml/tolerant"] is not None
        )
        assert check_placement(out) == []
    ff = place(objects(docs), policy="first-fit")
    zone_c = next(p for p in ff.result.pods if p.pod == "ml/zone-c")
    assert "didn't match Pod's node affinity" in zone_c.reason_text(2)
