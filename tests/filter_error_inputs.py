"""Small inputs where the DynamicResources Filter returns an error (a selector reads the attribute
`profile`, which some GPUs lack): shared by tests/test_filter_error.py (draopt alone) and
tests/test_crosscheck_filter_error.py (answered by kube-scheduler)."""

from __future__ import annotations

from pathlib import Path

import yaml

CLASS = "gpu.example.com"
SELECTOR = 'device.attributes["gpu.example.com"].profile == "1g"'


def node(name: str, profile: bool = True, cpu: str = "8", gpu: bool = True) -> list[dict]:
    """A Node and, with `gpu`, its one GPU (with the attribute `profile` or without)."""
    attributes = {"model": {"string": "a100"}}
    if profile:
        attributes["profile"] = {"string": "1g"}
    out: list[dict] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
        }
    ]
    if gpu:
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus"},
                "spec": {
                    "driver": CLASS,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0", "attributes": attributes}],
                },
            }
        )
    return out


def claim(name: str, selector: bool = True) -> dict:
    exactly: dict = {"deviceClassName": CLASS}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": SELECTOR}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def pod(name: str, claim_name: str | None, cpu: str = "1", second: int = 0, group: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if claim_name is not None:
        spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"pod-{name}",
            "creationTimestamp": f"2026-11-30T10:00:{second:02d}Z",
        },
        "spec": spec,
    }


def device_class() -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{CLASS}"'}}]},
    }


def pod_group(name: str, min_count: int, minor: str = "1.37") -> dict:
    version = "scheduling.k8s.io/v1beta1" if minor != "1.36" else "scheduling.k8s.io/v1alpha2"
    return {
        "apiVersion": version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def one_pod() -> list[dict]:
    """node-a's GPU lacks `profile`, node-b's has it: Kubernetes stops at node-a (p1 pending)."""
    return [device_class(), *node("node-a", profile=False), *node("node-b"), claim("c1"), pod("p1", "c1")]


def gang(minor: str = "1.37") -> list[dict]:
    """A gang of two: w1 (the selector), first in queue order, meets node-a's GPU and ends the
    cycle; w0 (any GPU) would fit."""
    return [
        device_class(),
        *node("node-a", profile=False),
        *node("node-b"),
        claim("g0", selector=False),
        claim("g1"),
        pod_group("trainer", 2, minor),
        pod("w1", "g1", second=0, group="trainer"),
        pod("w0", "g0", second=1, group="trainer"),
    ]


def large(error_at: int, nodes: int = 120) -> list[dict]:
    """`nodes` nodes (node-000...), the one at `error_at` without `profile`; pods a and b with the
    selector. numFeasibleNodesToFind is 100: a stops after node-099 and is placed; b starts at
    node-100 and meets the error node unless it lies before node-100 (a meets it then)."""
    docs = [device_class()]
    for i in range(nodes):
        docs += node(f"node-{i:03d}", profile=i != error_at)
    return docs + [claim("ca"), claim("cb"), pod("a", "ca", second=0), pod("b", "cb", second=1)]


# No score plugins: numFeasibleNodesToFind is 1, so the start index shows in the node chosen.
NO_SCORES = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {"score": {"disabled": [{"name": "*"}]}}}],
}


def start_index() -> list[dict]:
    """Without scores: p-err rejects node-0 (cpu) and stops at node-1 (no `profile`) after one node
    processed; p-plain then starts at node-1 and takes it; p-err, tried again, starts at node-2."""
    return [
        device_class(),
        *node("node-0", cpu="1"),
        *node("node-1", profile=False),
        *node("node-2"),
        claim("c-err"),
        pod("p-err", "c-err", cpu="2", second=0),
        pod("p-plain", None, cpu="1", second=1),
    ]


def preemption(names: tuple[str, ...] = ("node-a",)) -> list[dict]:
    """Full nodes (a low-priority pod each) whose GPUs lack `profile`: the pending pod is rejected
    for cpu, so no DRA filter runs; preemption's dry run removes the victims and meets the error on
    every node: its answer is the errors (DryRunPreemption, no candidate). (Kubernetes starts the
    dry run at a random node: with several nodes the errors' order varies.)"""
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    docs = [high, device_class()]
    for name in names:
        docs += node(name, profile=False, cpu="2")
    for name in names:
        running = pod(f"low-{name}", None, cpu="2")
        running["spec"]["nodeName"] = name
        running["status"] = {"phase": "Running"}
        docs.append(running)
    pending = pod("high", "c1", cpu="1", second=1)
    pending["spec"].update(priorityClassName="high", priority=1000)
    return docs + [claim("c1"), pending]


def write(path: Path, docs: list[dict]) -> str:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)
