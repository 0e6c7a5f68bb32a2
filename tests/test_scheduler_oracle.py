"""The scheduler oracle (real kube-scheduler in Go) on hand-written clusters: sane and deterministic.

Skipped without a Go toolchain; a compile failure of the oracle fails these tests.
"""

from __future__ import annotations

import dataclasses

import json
from pathlib import Path
from typing import Any

import pytest

from draopt.crosscheck.gobuild import go_path
from draopt.crosscheck.scheduler_oracle import SchedulerOracleResult, run_scheduler_oracle
from draopt.errors import InputError

pytestmark = pytest.mark.skipif(go_path() is None, reason="no Go toolchain")


def node(name: str, cpu: str = "8", **extra: Any) -> dict[str, Any]:
    n: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
    }
    if extra:
        n["spec"] = extra
    return n


def pod(name: str, cpu: str = "1", *, node_name: str = "", claim: str = "", **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    p: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container], **spec},
    }
    if claim:
        container["resources"]["claims"] = [{"name": "gpus"}]
        p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": claim}]
    if node_name:
        p["spec"]["nodeName"] = node_name
        p["status"] = {"phase": "Running"}
    return p


def gpu_slice(node_name: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(count)],
        },
    }


GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}


def claim(name: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count}}]}},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def run(
    objects: list[dict[str, Any]],
    minor: str = "1.37",
    config: str | None = None,
    gates: dict[str, bool] | None = None,
) -> SchedulerOracleResult:
    gates = gates or {}
    first = run_scheduler_oracle(objects, minor=minor, scheduler_config_text=config, gates=gates, timeout=60)
    second = run_scheduler_oracle(objects, minor=minor, scheduler_config_text=config, gates=gates, timeout=60)
    assert _answer(first) == _answer(second), "two runs of the oracle differ"
    return first


def _answer(result: SchedulerOracleResult) -> SchedulerOracleResult:
    """What crosscheck compares: every field, the evictions as the set of pods evicted, the attempts
    pod by pod. The preemption executor deletes victims in parallel goroutines, so which cycle a
    deletion is seen in (and the preemptor the oracle names for it) can vary on a loaded machine;
    a pod group's members fail in its binding goroutines, so how their attempts interleave within
    one cycle can vary too (gang-1.37 in a CI run at load 4), not each pod's own sequence."""
    by_pod = sorted(result.attempts, key=lambda a: a.pod)  # (stable: each pod's order kept)
    return dataclasses.replace(result, evictions=sorted({e.pod for e in result.evictions}), attempts=by_pod)


@pytest.mark.parametrize("minor", ["1.37", "1.36"])
def test_three_node_cpu_cluster(minor: str) -> None:
    objects = [node("node-c", "4"), node("node-a", "4"), node("node-b", "4")]
    objects += [pod(f"p{i}", "3") for i in range(4)]
    objects.append(pod("gated", "1", schedulingGates=[{"name": "hold"}]))
    result = run(objects, minor)
    assert result.version.startswith(minor + ".")
    assert result.node_order == ["node-a", "node-b", "node-c"]
    placed = [result.pod(f"default/p{i}").node for i in range(4)]
    assert sorted(placed[:3]) == ["node-a", "node-b", "node-c"]
    p3 = result.pod("default/p3")
    assert p3.node == "" and p3.reason == "Unschedulable"
    assert p3.message.startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert result.pod("default/gated").message == "SchedulingGated"
    assert [a.pod for a in result.attempts] == [f"default/p{i}" for i in range(4)]
    first = result.attempts[0]
    assert first.best_nodes == ("node-a", "node-b", "node-c") and first.node == "node-a"  # ties: the first


def test_gpu_claims() -> None:
    objects = [GPU_CLASS, node("node-a"), node("node-b"), gpu_slice("node-a", 2), gpu_slice("node-b", 2)]
    objects += [claim("big", 2), claim("shared", 1), claim("too-big", 3)]
    objects += [
        pod("trainer", claim="big"),
        pod("share-1", claim="shared"),
        pod("share-2", claim="shared"),
        pod("greedy", claim="too-big"),
    ]
    result = run(objects)
    trainer, s1, s2 = (result.pod(f"default/{n}") for n in ("trainer", "share-1", "share-2"))
    assert trainer.node and s1.node and s1.node == s2.node and s1.node != trainer.node
    claims = {c.name: c for c in result.claims}
    big = claims["big"].allocation
    assert big is not None and len(big["devices"]["results"]) == 2
    assert {r["pool"] for r in big["devices"]["results"]} == {trainer.node}
    assert sorted(r["name"] for r in claims["shared"].reserved_for) == ["share-1", "share-2"]
    assert claims["too-big"].allocation is None
    greedy = result.pod("default/greedy")
    assert greedy.node == "" and "cannot allocate all claims" in greedy.message


def test_preemption() -> None:
    objects = [priority_class("low", 10), priority_class("high", 1000), node("node-a", "4")]
    objects += [pod("victim", "3", node_name="node-a", priorityClassName="low")]
    objects += [pod("urgent", "2", priorityClassName="high")]
    result = run(objects)
    assert [(e.pod, e.preemptor) for e in result.evictions] == [("default/victim", "default/urgent")]
    assert result.pod("default/victim").deleted
    assert result.pod("default/urgent").node == "node-a"
    assert result.attempts[0].pod == "default/urgent" and result.attempts[0].node == ""
    assert "preempting 1 victims" in result.attempts[0].message
    assert result.attempts[0].nominated_node == "node-a"


def test_refuses_unknown_priority_class() -> None:
    with pytest.raises(InputError, match="PriorityClass"):
        run_scheduler_oracle(
            [node("n"), pod("p", priorityClassName="nope")],
            minor="1.37",
            scheduler_config_text=None,
            gates={},
            timeout=30,
        )


BINPACK = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
"""


def test_scheduler_configuration() -> None:
    objects = [node("a", "4"), node("b", "4"), node("c", "4")] + [pod(f"p{i}", "1") for i in range(4)]
    spread = run(objects)
    assert len({spread.pod(f"default/p{i}").node for i in range(3)}) == 3  # LeastAllocated spreads
    packed = run(objects, config=BINPACK)
    assert len({packed.pod(f"default/p{i}").node for i in range(4)}) == 1  # MostAllocated packs
    with pytest.raises(InputError, match="schedulerConfig"):
        run_scheduler_oracle(objects, minor="1.37", scheduler_config_text="kind: Nope", gates={}, timeout=30)


def test_gang_1_37() -> None:
    def group(name: str, min_count: int) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
        }

    objects = [node("n1", "4"), node("n2", "4"), group("fits", 2), group("too-big", 3)]
    objects += [pod(f"fits-{i}", "3", schedulingGroup={"podGroupName": "fits"}) for i in range(2)]
    objects += [pod(f"big-{i}", "1", schedulingGroup={"podGroupName": "too-big"}) for i in range(3)]
    result = run(objects, gates={"GenericWorkload": True})
    assert {result.pod(f"default/fits-{i}").node for i in range(2)} == {"n1", "n2"}
    assert all(result.pod(f"default/big-{i}").node == "" for i in range(3))
    assert "minCount (3) cannot be satisfied" in result.pod("default/big-0").message


def test_zones_and_a_larger_cluster_repeat() -> None:
    """Node order interleaves zones; 30 nodes, 150 pods with preemption give the same answer twice."""
    objects: list[dict[str, Any]] = [priority_class("low", 10), priority_class("high", 1000)]
    for i in range(30):
        n = node(f"node-{i:02d}", "8")
        n["metadata"]["labels"]["topology.kubernetes.io/zone"] = f"z{i // 10}"
        objects.append(n)
    for j in range(150):
        cpu = ("1", "2", "3", "5")[j * 7 % 4]
        if j < 60:
            objects.append(pod(f"run-{j:03d}", cpu, node_name=f"node-{j % 30:02d}", priorityClassName="low"))
        else:
            objects.append(pod(f"new-{j:03d}", cpu, priorityClassName=("low", "high")[j % 2]))
    result = run(objects)
    # the scheduler's node tree: one node of each zone in turn, each zone's nodes in the order they came
    assert result.node_order[:6] == ["node-00", "node-10", "node-20", "node-01", "node-11", "node-21"]
    assert result.evictions and all(e.preemptor.startswith("default/new-") for e in result.evictions)


def test_oracle_objects_from_an_example() -> None:
    """draopt's view of examples/gang-preemption.yaml: template claims generated as draopt names them."""
    from draopt.crosscheck.scheduler_oracle import oracle_objects
    from draopt.kube.features import Features
    from draopt.kube.loader import load_files

    example = Path(__file__).resolve().parent.parent / "examples" / "gang-preemption.yaml"
    gates = {"GenericWorkload": True}
    docs = oracle_objects(load_files([str(example)]), Features.from_gates(gates))
    trainer = next(d for d in docs if d["kind"] == "Pod" and d["metadata"]["name"] == "trainer-0")
    assert trainer["status"]["resourceClaimStatuses"] == [{"name": "gpus", "resourceClaimName": "trainer-0-gpus"}]
    assert any(d["kind"] == "ResourceClaim" and d["metadata"]["name"] == "trainer-0-gpus" for d in docs)
    result = run(docs, gates=gates)
    assert result.pod("ml/trainer-0").node == ""
    assert "cannot allocate all claims" in result.pod("ml/trainer-0").message
    # a DRA filter failure is UnschedulableAndUnresolvable: preemption does not try those nodes
    assert "Preemption is not helpful" in result.pod("ml/inference").message
    running = {
        d["metadata"]["name"]: d["spec"]["nodeName"] for d in docs if d["kind"] == "Pod" and "nodeName" in d["spec"]
    }
    assert all(result.pod(f"ml/{name}").node == node for name, node in running.items())


TESTDATA = Path(__file__).resolve().parent.parent / "draopt" / "crosscheck" / "oracles" / "scheduler" / "testdata"


@pytest.mark.parametrize(
    "name, minor",
    [(p.stem, "1.37") for p in sorted(TESTDATA.glob("*.json")) if p.stem != "gang_1.36"]
    + [("gpu", "1.36"), ("preempt", "1.36")],
)
def test_testdata_runs_and_repeats(name: str, minor: str) -> None:
    doc = json.loads((TESTDATA / f"{name}.json").read_text())
    result = run(doc["objects"], minor, doc.get("schedulerConfig"), doc.get("gates"))
    assert result.pods and not result.error and not result.livelock


def test_gang_preemption_1_37() -> None:
    doc = json.loads((TESTDATA / "gang_preempt.json").read_text())
    result = run(doc["objects"], gates=doc["gates"])
    assert sorted((e.pod, e.preemptor, e.preemptor_kind) for e in result.evictions) == [
        ("ml/low-1", "ml/hi", "PodGroup"),
        ("ml/low-2", "ml/hi", "PodGroup"),
    ]
    assert {result.pod("ml/hi-0").node, result.pod("ml/hi-1").node} == {"n1", "n2"}


def test_timeout_gives_a_partial_result() -> None:
    from draopt.crosscheck.scheduler_oracle import OracleError

    objects = [node(f"n{i:03d}", "64") for i in range(200)] + [pod(f"p{j:04d}", "1") for j in range(3000)]
    with pytest.raises(OracleError) as caught:
        run_scheduler_oracle(objects, minor="1.37", scheduler_config_text=None, gates={}, timeout=2)
    partial = caught.value.result
    assert partial is not None and partial.error and len(partial.pods) == 3000


def test_unknown_gate_refused() -> None:
    with pytest.raises(InputError, match="NoSuchGate"):
        run_scheduler_oracle(
            [node("n")], minor="1.37", scheduler_config_text=None, gates={"NoSuchGate": True}, timeout=30
        )


def test_gang_1_36_livelock_is_reported() -> None:
    """1.36's gang plugin keeps a gang that cannot fit cycling through Permit: the oracle stops and
    says so. Only the placements repeat (the attempts' order depends on goroutines)."""
    doc = json.loads((TESTDATA / "gang_1.36.json").read_text())
    runs = [
        run_scheduler_oracle(doc["objects"], minor="1.36", scheduler_config_text=None, gates=doc["gates"], timeout=60)
        for _ in range(2)
    ]
    for result in runs:
        assert result.livelock
        assert {result.pod(f"ml/fits-{i}").node for i in range(2)} == {"n1", "n2"}
        assert all(result.pod(f"ml/big-{i}").node == "" for i in range(3))
    assert runs[0].placements() == runs[1].placements()
