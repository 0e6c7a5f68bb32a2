"""Pod-group cycles with remembered trials (draopt/scheduler/trial_memo.py) decide exactly what they
decide without them: the same output objects, nodes, devices, reasons, explanations, preemption
messages and evictions, on gang workloads like benchmarks/bench_gangs.py's (topology constraints,
a running low-priority load, preemption), with both tie-breaks, with devices that differ on a node,
gangs of unlike pods and CompositePodGroups whose children choose racks inside a zone; and the memo
does answer trials there."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gangs  # noqa: E402

from draopt.kube.features import DEFAULT_GATES, Features  # noqa: E402
from draopt.placement import place  # noqa: E402
from draopt.scheduler.cycle import Scheduler  # noqa: E402

V1 = "resource.k8s.io/v1"
SCHED = "scheduling.k8s.io/v1beta1"
RACK = bench_gangs.RACK
ZONE = "topology.kubernetes.io/zone"


def _features(composites: bool = False) -> Features:
    gates = dict(DEFAULT_GATES, TopologyAwareWorkloadScheduling=True)
    if composites:
        gates["CompositePodGroup"] = True
    return Features.from_gates(gates)


def _digest(outcome) -> str:
    r = outcome.result
    return json.dumps(
        {
            "objects": outcome.objects,
            "pods": [
                [p.pod, p.node, sorted(p.reasons.items()), p.prioritized_score, p.explanation]
                + [p.nominated_node, p.preemption, {k: a.to_k8s() for k, a in sorted(p.new_claims.items())}]
                for p in r.pods
            ],
            "claims": {k: [a.to_k8s(), n] for k, (a, n) in sorted(r.claims.items())},
            "evictions": [[e.pod, e.node, e.priority, e.why] for e in r.evictions],
            "deallocated": r.deallocated,
        },
        sort_keys=True,
        default=str,
    )


def _same(fast: str, plain: str) -> None:
    """The two outputs are equal; else where they first differ (a diff of the whole is too slow)."""
    if fast != plain:
        at = next((i for i, (a, b) in enumerate(zip(fast, plain)) if a != b), min(len(fast), len(plain)))
        pytest.fail(
            f"outputs differ at {at}: with memo {fast[max(0, at - 200) : at + 200]!r}, without {plain[max(0, at - 200) : at + 200]!r}"
        )


def _both(monkeypatch, docs, features, **kw):
    """(output without the memo, output with it, the memos made)."""
    made = []
    real = Scheduler.trial_memo

    def spy(self, *args):
        memo = real(self, *args)
        made.append(memo)
        return memo

    monkeypatch.setattr(Scheduler, "trial_memo", lambda self, *args: None)
    plain = place(bench_gangs.objects(docs), features=features, **kw)
    monkeypatch.setattr(Scheduler, "trial_memo", spy)
    fast = place(bench_gangs.objects(docs), features=features, **kw)
    assert made, "the memo was not made"
    return _digest(plain), _digest(fast), made


@pytest.mark.parametrize(
    "seed, running, tie_break, racks",
    [(1, 0.45, "random", 6), (2, 0.6, "random", 4), (3, 0.3, "name", 6), (4, 0.7, "random", 4), (5, 0.0, "name", 4)],
)
def test_bench_gangs_workloads_place_the_same(monkeypatch, seed, running, tie_break, racks):
    docs = bench_gangs.generate(racks, 40, running, seed, True)
    plain, fast, made = _both(monkeypatch, docs, _features(), tie_break=tie_break, seed=seed)
    _same(fast, plain)
    assert sum(m.replays for m in made) > 0


@pytest.mark.parametrize("running", [0.0, 0.4])
def test_unlike_devices_and_unlike_pods_place_the_same(monkeypatch, running):
    """Devices of two models on every node (a node is then described device by device), and in every
    third gang the odd pods asking for two devices of one model. With no running load the nodes start
    alike and the memo answers; with one, ties between nodes holding different devices are not
    remembered."""
    docs = bench_gangs.generate(6, 40, running, 7, True)
    docs.append(
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu-2a", "namespace": "default"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "gpu",
                                "exactly": {
                                    "deviceClassName": "gpu",
                                    "count": 2,
                                    "selectors": [
                                        {"cel": {"expression": 'device.attributes["gpu.example.com"].model == "a"'}}
                                    ],
                                },
                            }
                        ]
                    }
                }
            },
        }
    )
    for d in docs:
        if d["kind"] == "ResourceSlice":
            for j, dev in enumerate(d["spec"]["devices"]):
                dev["attributes"] = {"model": {"string": "a" if j % 3 else "b"}}
        if (
            d["kind"] == "Pod"
            and d["metadata"]["name"].startswith("train-")
            and int(d["metadata"]["name"][6:9]) % 3 == 1
            and int(d["metadata"]["name"][-2:]) % 2 == 1
        ):
            d["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "gpu-2a"
    plain, fast, made = _both(monkeypatch, docs, _features())
    _same(fast, plain)
    if not running:
        assert sum(m.replays for m in made) > 0


def test_composite_pod_groups_choosing_racks_inside_a_zone_place_the_same(monkeypatch):
    """CompositePodGroups over a zone (two racks each), their child gangs over racks: the children's
    trials inside a zone's trial are remembered and answered like any other."""
    docs = bench_gangs.generate(8, 24, 0.4, 11, True)
    for d in docs:
        if d["kind"] == "Node":
            rack = int(d["metadata"]["labels"][RACK][4:])
            d["metadata"]["labels"][ZONE] = f"zone-{rack // 2}"
    for c in range(6):
        name = f"job-{c}"
        docs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha3",
                "kind": "CompositePodGroup",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {
                    "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                    "schedulingConstraints": {"topology": [{"key": ZONE}]},
                    "workloadRef": {"workloadName": "w"},
                },
            }
        )
        for part in range(2):
            group = f"job-{c}-{part}"
            docs.append(
                {
                    "apiVersion": SCHED,
                    "kind": "PodGroup",
                    "metadata": {"name": group, "namespace": "default"},
                    "spec": {
                        "schedulingPolicy": {"gang": {"minCount": 2}},
                        "schedulingConstraints": {"topology": [{"key": RACK}]},
                        "parentCompositePodGroupName": name,
                        "workloadRef": {"workloadName": "w", "templateName": group},
                    },
                }
            )
            for i in range(2):
                docs.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {
                            "name": f"{group}-{i}",
                            "namespace": "default",
                            "uid": f"{group}-{i}",
                            "creationTimestamp": f"2026-02-01T01:00:{c:02d}Z",
                        },
                        "spec": {
                            "schedulingGroup": {"podGroupName": group},
                            "containers": [
                                {
                                    "name": "c",
                                    "resources": {
                                        "requests": {"cpu": "8", "memory": "64Gi"},
                                        "claims": [{"name": "gpu"}],
                                    },
                                }
                            ],
                            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}],
                        },
                    }
                )
    plain, fast, made = _both(monkeypatch, docs, _features(composites=True))
    _same(fast, plain)
    assert sum(m.replays for m in made) > 0
    assert '"default/job-0-0-0"' in fast  # the composites' pods are in the output
