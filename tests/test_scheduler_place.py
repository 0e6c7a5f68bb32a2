"""`draopt place` with scheduler profiles: configuration parsing, defaults, node choice (spread
with the default profile, packing with MostAllocated), percentageOfNodesToScore and the rotating
start index, seeded ties, schedulerName, and the inter-pod affinity / topology spread filters."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest
import yaml

from draopt.errors import InputError
from draopt.kube.loader import ObjectSet, parse_object
from draopt.placement import place
from draopt.scheduler import (
    SchedulerConfig,
    builtin,
    load_config,
    num_feasible_nodes_to_find,
    parse_config,
)

V1 = "resource.k8s.io/v1"
API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
ZONE = "topology.kubernetes.io/zone"


def gpu_docs(
    nodes: int, pod_gpus: list[int], *, cpu_per_gpu: int = 8, mem_per_gpu: int = 64, zones: int = 0, pod_extra=None
) -> list[dict]:
    """`nodes` nodes (128 cpu, 1024Gi) with 8 GPUs each (per-node ResourceSlice, class gpu); one
    pending pod per entry of pod_gpus asking that many GPUs (template gpu-<n>) and
    cpu_per_gpu / mem_per_gpu Gi per GPU, queued in list order."""
    docs = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
    ]
    for i in range(nodes):
        n = f"node-{i:03d}"
        labels = {"kubernetes.io/hostname": n}
        if zones:
            labels[ZONE] = f"zone-{i % zones}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": n, "labels": labels},
                "status": {"allocatable": {"cpu": "128", "memory": "1024Gi", "pods": "110"}},
            }
        )
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"{n}-gpus"},
                "spec": {
                    "driver": "gpu.example.com",
                    "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                    "nodeName": n,
                    "devices": [{"name": f"gpu-{j}"} for j in range(8)],
                },
            }
        )
    for g in sorted(set(pod_gpus)):
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"gpu-{g}", "namespace": "default"},
                "spec": {
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "gpu",
                                    "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": g},
                                }
                            ]
                        }
                    }
                },
            }
        )
    for k, g in enumerate(pod_gpus):
        p = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"p-{k:05d}",
                "namespace": "default",
                "creationTimestamp": f"2026-01-01T{k // 3600:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z",
            },
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "resources": {
                            "requests": {"cpu": str(cpu_per_gpu * g), "memory": f"{mem_per_gpu * g}Gi"},
                            "claims": [{"name": "gpu"}],
                        },
                    }
                ],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": f"gpu-{g}"}],
            },
        }
        if pod_extra:
            pod_extra(k, p)
        docs.append(p)
    return docs


def gpu_objects(*args, **kw) -> ObjectSet:
    docs = gpu_docs(*args, **kw)
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    return objs


def nodes_used(outcome) -> Counter:
    return Counter(p.node for p in outcome.result.pods if p.placed)


# ------------------------------------------------------------------ configuration
def test_defaults_are_kubernetes_1_36():
    cfg = SchedulerConfig.default()
    prof = cfg.profile_for(None)
    assert prof.name == "default-scheduler"
    assert prof.score_weights == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "VolumeBinding": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "DynamicResources": 2,  # applyDynamicResources (v1.36.3, v1.37.2): weight 2
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert prof.fit.type == "LeastAllocated" and prof.fit.resources == (("cpu", 1), ("memory", 1))
    assert prof.balanced_resources == (("cpu", 1), ("memory", 1))
    assert prof.spread_defaulting == "System"
    assert [(c.topology_key, c.max_skew) for c in prof.default_spread_constraints] == [
        ("kubernetes.io/hostname", 3),
        (ZONE, 5),
    ]
    assert prof.filters == {"PodTopologySpread", "InterPodAffinity"}
    assert cfg.percentage_of_nodes_to_score == 0


def test_profile_plugins_merge_like_kube_scheduler():
    cfg = parse_config(
        {
            **API,
            "percentageOfNodesToScore": 30,
            "profiles": [
                {
                    "schedulerName": "a",
                    "percentageOfNodesToScore": 70,
                    "plugins": {
                        "score": {
                            "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
                            "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
                        }
                    },
                },
                {
                    "schedulerName": "b",
                    "plugins": {
                        "score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeAffinity"}]},
                        "multiPoint": {"disabled": [{"name": "InterPodAffinity"}]},
                    },
                },
            ],
        },
        "<t>",
    )
    a, b = cfg.profiles["a"], cfg.profiles["b"]
    assert a.score_weights["NodeResourcesFit"] == 5 and "NodeResourcesBalancedAllocation" not in a.score_weights
    assert a.score_weights["TaintToleration"] == 3 and a.percentage_of_nodes_to_score == 70
    assert b.score_weights == {"NodeAffinity": 1}
    assert b.filters == {"PodTopologySpread"} and b.percentage_of_nodes_to_score is None
    assert cfg.percentage_of_nodes_to_score == 30


@pytest.mark.parametrize(
    "doc,field",
    [
        ({**API, "kind": "Other"}, "field kind"),
        ({**API, "percentageOfNodesToScore": 101}, "field percentageOfNodesToScore"),
        ({**API, "bogus": 1}, "field bogus"),
        ({**API, "profiles": [{"schedulerName": "x"}, {"schedulerName": "x"}]}, "profiles[1].schedulerName"),
        ({**API, "profiles": [{}, {}]}, "profiles[0].schedulerName"),
        (
            {**API, "profiles": [{"plugins": {"score": {"enabled": [{"name": "MyPlugin"}]}}}]},
            "profiles[0].plugins.score.enabled[0].name",
        ),
        (
            {**API, "profiles": [{"plugins": {"score": {"enabled": [{"name": "NodeAffinity", "weight": -1}]}}}]},
            "profiles[0].plugins.score.enabled[0].weight",
        ),
        (
            {**API, "profiles": [{"plugins": {"filter": {"disabled": [{"name": "NodeResourcesFit"}]}}}]},
            "profiles[0].plugins.filter.disabled[0].name",
        ),
        (
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAlocated"}}}
                        ]
                    }
                ],
            },
            "profiles[0].pluginConfig[0].args.scoringStrategy.type",
        ),
        (
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {
                                    "scoringStrategy": {
                                        "type": "MostAllocated",
                                        "resources": [{"name": "cpu", "weight": 101}],
                                    }
                                },
                            }
                        ]
                    }
                ],
            },
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
        ),
        (
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
                            }
                        ]
                    }
                ],
            },
            "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape",
        ),
        (
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {
                                    "scoringStrategy": {
                                        "type": "RequestedToCapacityRatio",
                                        "requestedToCapacityRatio": {
                                            "shape": [{"utilization": 50, "score": 1}, {"utilization": 40, "score": 2}]
                                        },
                                    }
                                },
                            }
                        ]
                    }
                ],
            },
            "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
        ),
        (
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {
                                    "scoringStrategy": {
                                        "type": "RequestedToCapacityRatio",
                                        "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 11}]},
                                    }
                                },
                            }
                        ]
                    }
                ],
            },
            "requestedToCapacityRatio.shape[0].score",
        ),
        (
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesBalancedAllocation",
                                "args": {"resources": [{"name": "cpu", "weight": 2}]},
                            }
                        ]
                    }
                ],
            },
            "args.resources[0].weight",
        ),
        (
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "PodTopologySpread",
                                "args": {
                                    "defaultConstraints": [
                                        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                                    ]
                                },
                            }
                        ]
                    }
                ],
            },
            "args.defaultConstraints",
        ),
        (
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "PodTopologySpread",
                                "args": {
                                    "defaultingType": "List",
                                    "defaultConstraints": [
                                        {"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                                    ],
                                },
                            }
                        ]
                    }
                ],
            },
            "args.defaultConstraints[0].maxSkew",
        ),
        ({**API, "extenders": [{"urlPrefix": "http://x"}]}, "field extenders"),
        (
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeAffinity",
                                "args": {
                                    "addedAffinity": {
                                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
                                    }
                                },
                            }
                        ]
                    }
                ],
            },
            "args.addedAffinity",
        ),
        (
            {
                **API,
                "profiles": [
                    {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/x"]}}]}
                ],
            },
            "args.ignoredResources",
        ),
        ({**API, "profiles": [{"pluginConfig": [{"name": "NodePorts", "args": {"x": 1}}]}]}, "pluginConfig[0].args"),
    ],
)
def test_bad_configuration_names_the_field(doc, field):
    with pytest.raises(InputError) as e:
        parse_config(doc, "cfg.yaml")
    assert field in str(e.value) and str(e.value).startswith("cfg.yaml: field ")


def test_load_config_file_and_builtins(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {
                                    "scoringStrategy": {
                                        "type": "RequestedToCapacityRatio",
                                        "requestedToCapacityRatio": {
                                            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                                        },
                                    }
                                },
                            }
                        ]
                    }
                ],
            }
        )
    )
    prof = load_config(str(f)).profile_for(None)
    assert prof.fit.type == "RequestedToCapacityRatio" and prof.fit.shape == ((0, 0), (100, 10))
    assert builtin("most-allocated").profile_for(None).fit.type == "MostAllocated"
    assert builtin("name-order").name_order
    with pytest.raises(InputError, match="builtin:nope"):
        load_config("builtin:nope")
    (tmp_path / "bad.yaml").write_text("a: [")
    with pytest.raises(InputError, match="not valid YAML"):
        load_config(str(tmp_path / "bad.yaml"))


def test_num_feasible_nodes_to_find():
    # schedule_one.go numFeasibleNodesToFind: all below 100 nodes; adaptive 50 - n/125 (>= 5 %);
    # never fewer than 100.
    assert num_feasible_nodes_to_find(0, 99) == 99
    assert num_feasible_nodes_to_find(0, 500) == 500 * 46 // 100 == 230
    assert num_feasible_nodes_to_find(0, 5000) == 5000 * 10 // 100
    assert num_feasible_nodes_to_find(0, 100000) == 100000 * 5 // 100
    assert num_feasible_nodes_to_find(10, 300) == 100
    assert num_feasible_nodes_to_find(50, 1000) == 500


# ------------------------------------------------------------------ node choice
def test_default_profile_spreads_most_allocated_packs():
    objs = gpu_objects(8, [1] * 16)
    spread = nodes_used(place(objs))
    assert sorted(spread.values()) == [2] * 8  # LeastAllocated + BalancedAllocation: even spread
    packed = nodes_used(place(objs, scheduler_config="builtin:most-allocated"))
    assert sorted(packed.values()) == [8, 8]  # MostAllocated: two full nodes
    legacy = nodes_used(place(objs, scheduler_config="builtin:name-order"))
    assert legacy == Counter({"node-000": 8, "node-001": 8})


def test_issue_example_spreading_starves_the_big_pods():
    """64 nodes x 8 GPUs, 192 one-GPU pods queued before 40 eight-GPU pods (8 cpu / 64Gi per GPU):
    LeastAllocated spreads the small pods 3 per node, so no node keeps 8 GPUs free: 0 of the 40
    big pods fit; MostAllocated fills 24 nodes and places all 232 (40 nodes stay empty)."""
    objs = gpu_objects(64, [1] * 192 + [8] * 40)
    for cfg, placed, big in ((None, 192, 0), ("builtin:most-allocated", 232, 40), ("builtin:name-order", 232, 40)):
        out = place(objs, scheduler_config=cfg)
        got = [p for p in out.result.pods if p.placed]
        n_big = sum(1 for p in got if out.workload.pod(p.pod).resources["cpu"] == 64)
        assert (len(got), n_big) == (placed, big), cfg
    spread = nodes_used(place(objs))
    assert sorted(set(spread.values())) == [3] and len(spread) == 64


def test_seeded_ties_are_deterministic_and_seed_dependent():
    objs = gpu_objects(20, [1] * 10)
    runs = [[p.node for p in place(objs, seed=s).result.pods] for s in (0, 0, 1, 2)]
    assert runs[0] == runs[1]
    assert len({tuple(r) for r in runs[1:]}) > 1  # different seeds break ties differently
    by_name = [p.node for p in place(objs, tie_break="name").result.pods]
    assert by_name == [f"node-{i:03d}" for i in range(10)]  # each pod: the emptiest nodes tie; first by name


def test_percentage_of_nodes_to_score_and_rotating_start():
    objs = gpu_objects(200, [1, 1, 1])
    cfg = parse_config({**API, "percentageOfNodesToScore": 50}, "<t>")
    got = [p.node for p in place(objs, scheduler_config=cfg, tie_break="name").result.pods]
    # 100 of 200 nodes are found per pod and the next search starts after the nodes processed:
    # pod 1 sees nodes 0-99 (all empty: node-000 by name), pod 2 nodes 100-199, pod 3 nodes 0-99
    # again, where node-000 is taken (node-001 is the emptiest). With every node scored, pod 2
    # would go to node-001.
    assert got == ["node-000", "node-100", "node-001"]
    full = parse_config({**API, "percentageOfNodesToScore": 100}, "<t>")
    got = [p.node for p in place(objs, scheduler_config=full, tie_break="name").result.pods]
    assert got == ["node-000", "node-001", "node-002"]


def test_no_score_plugins_takes_the_first_feasible_node_from_the_rotating_start():
    objs = gpu_objects(4, [1] * 6)
    cfg = parse_config({**API, "profiles": [{"plugins": {"score": {"disabled": [{"name": "*"}]}}}]}, "<t>")
    got = [p.node for p in place(objs, scheduler_config=cfg).result.pods]
    assert got == ["node-000", "node-001", "node-002", "node-003", "node-000", "node-001"]


def test_scheduler_name_selects_the_profile_and_an_unknown_one_is_not_placed():
    def name(k, p):
        p["spec"]["schedulerName"] = ["packer", "packer", "spreader", "nobody"][k]

    objs = gpu_objects(4, [1, 1, 1, 1], pod_extra=name)
    cfg = parse_config(
        {
            **API,
            "profiles": [
                {
                    "schedulerName": "packer",
                    "pluginConfig": [
                        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
                    ],
                },
                {"schedulerName": "spreader"},
            ],
        },
        "<t>",
    )
    out = place(objs, scheduler_config=cfg, tie_break="name")
    nodes = [p.node for p in out.result.pods]
    assert nodes[0] == nodes[1] and nodes[2] != nodes[0] and nodes[3] is None
    assert "no scheduler profile 'nobody' (spec.schedulerName)" in out.result.pods[3].reason_text(4)


def test_required_pod_anti_affinity_and_affinity_are_hard_filters():
    def anti(k, p):
        p["metadata"]["labels"] = {"app": "db"}
        p["spec"]["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}
                ]
            }
        }

    objs = gpu_objects(3, [1] * 4, pod_extra=anti)
    for cfg in (None, "builtin:most-allocated"):
        out = place(objs, scheduler_config=cfg)
        placed = [p.node for p in out.result.pods if p.placed]
        assert len(placed) == 3 and len(set(placed)) == 3, cfg  # one per node, the fourth stays pending
        assert "didn't match pod anti-affinity rules" in out.result.pods[3].reason_text(3)

    def follow(k, p):
        if k == 0:
            p["metadata"]["labels"] = {"app": "leader"}
        else:
            p["spec"]["affinity"] = {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "leader"}}}
                    ]
                }
            }

    objs = gpu_objects(6, [1] * 5, zones=3, pod_extra=follow)
    out = place(objs)
    zone = {f"node-{i:03d}": f"zone-{i % 3}" for i in range(6)}
    zones = {zone[p.node] for p in out.result.pods}
    assert len(zones) == 1  # every follower in the leader's zone, though spreading would spread them


def test_existing_pods_anti_affinity_blocks_matching_pods():
    def setup(k, p):
        if k == 0:
            p["spec"]["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"team": "noisy"}}}
                    ]
                }
            }
        else:
            p["metadata"]["labels"] = {"team": "noisy"}

    objs = gpu_objects(4, [1] * 3, zones=2, pod_extra=setup)
    out = place(objs)
    zone = {f"node-{i:03d}": f"zone-{i % 2}" for i in range(4)}
    first = zone[out.result.pods[0].node]
    assert all(zone[p.node] != first for p in out.result.pods[1:])


def test_topology_spread_do_not_schedule():
    tsc = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]

    def web(k, p):
        p["metadata"]["labels"] = {"app": "web"}
        p["spec"]["topologySpreadConstraints"] = tsc

    # 2 zones (3 nodes in zone-0, 1 in zone-1), packing would put all 6 pods in one zone.
    objs = gpu_objects(4, [1] * 6, zones=2, pod_extra=web)
    zone = {f"node-{i:03d}": f"zone-{i % 2}" for i in range(4)}
    for cfg in ("builtin:most-allocated", None):
        out = place(objs, scheduler_config=cfg)
        per_zone = Counter(zone[p.node] for p in out.result.pods if p.placed)
        assert sorted(per_zone.values()) == [3, 3], cfg


def test_min_domains_blocks_until_enough_domains():
    tsc = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "minDomains": 3,
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]

    def web(k, p):
        p["metadata"]["labels"] = {"app": "web"}
        p["spec"]["topologySpreadConstraints"] = tsc

    objs = gpu_objects(4, [1] * 4, zones=2, pod_extra=web)
    out = place(objs)
    # two domains < minDomains 3: the global minimum counts as 0, so each zone takes one pod only
    assert sum(p.placed for p in out.result.pods) == 2
    assert "didn't match pod topology spread constraints" in out.result.pods[2].reason_text(4)


def test_cli_place_with_scheduler_config(tmp_path):
    inp = tmp_path / "in.yaml"
    inp.write_text(yaml.safe_dump_all(gpu_docs(4, [1] * 4)))
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                **API,
                "profiles": [
                    {
                        "pluginConfig": [
                            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
                        ]
                    }
                ],
            }
        )
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "draopt",
            "place",
            "-f",
            str(inp),
            "--scheduler-config",
            str(cfg),
            "--seed",
            "3",
            "-o",
            "yaml",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    pods = [d for d in yaml.safe_load(run.stdout)["items"] if d["kind"] == "Pod"]
    assert len(pods) == 4 and len({d["spec"]["nodeName"] for d in pods}) == 1  # packed on one node
    summary = json.loads(run.stderr.strip().splitlines()[-1])
    assert summary["scheduler"] == str(cfg) and summary["tie_break"] == "random (seed 3)"
    cfg.write_text(yaml.safe_dump({**API, "percentageOfNodesToScore": "all"}))
    bad = subprocess.run(
        [sys.executable, "-m", "draopt", "place", "-f", str(inp), "--scheduler-config", str(cfg)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "field percentageOfNodesToScore" in bad.stderr and "Traceback" not in bad.stderr


def test_released_gang_gives_back_its_anti_affinity():
    """A gang short of minCount releases its pods (firstfit's second pass): the pods it held no
    longer block, by their required anti-affinity, a pod that came after them."""

    def setup(k, p):
        if k < 3:  # the gang: minCount 3, one per node (anti-affinity), only 2 nodes
            p["metadata"]["labels"] = {"app": "gang"}
            p["spec"]["schedulingGroup"] = {"podGroupName": "g"}
            p["spec"]["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                        }
                    ]
                }
            }
        else:  # a later pod with a label the gang's anti-affinity rejects
            p["metadata"]["labels"] = {"app": "other"}

    docs = gpu_docs(2, [1] * 4, pod_extra=setup)
    docs.append(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
        }
    )
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    out = place(objs)
    got = {p.pod: p.node for p in out.result.pods}
    assert [got[f"default/p-0000{k}"] for k in range(3)] == [None, None, None]
    assert got["default/p-00003"] is not None  # placed in the second pass, once the gang let go


@pytest.mark.parametrize(
    "spec,field",
    [
        (
            {
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"a": "b"}}}
                        ]
                    }
                }
            },
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        ),
        (
            {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "topologyKey": ZONE,
                                "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]},
                            }
                        ]
                    }
                }
            },
            "labelSelector.matchExpressions[0].operator",
        ),
        (
            {"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
            "spec.topologySpreadConstraints[0].maxSkew",
        ),
        (
            {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Maybe"}]},
            "spec.topologySpreadConstraints[0].whenUnsatisfiable",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]
                    }
                }
            },
            "preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        ),
    ],
)
def test_bad_pod_scheduling_fields_name_the_pod_and_field(spec, field):
    objs = gpu_objects(2, [1], pod_extra=lambda k, p: p["spec"].update(spec))
    with pytest.raises(InputError) as e:
        place(objs)
    assert "Pod default/p-00000" in str(e.value) and field in str(e.value)
