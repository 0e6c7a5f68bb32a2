"""Round-2 real-world inputs from `../shared/realworld/round2/` (see its README: each file's source
and what Kubernetes does with it). Each test cites the file it reads and the Kubernetes code the
answer comes from; skipped when the directory is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from draopt.kube.features import Features
from draopt.kube.loader import load_files
from draopt.placement import place

ROOT = Path(__file__).resolve().parents[1]
ROUND2 = ROOT.parent / "shared" / "realworld" / "round2"
NODE_ALLOCATABLE = Features.from_gates({"DRANodeAllocatableResources": True})


def r2(*names: str) -> list[str]:
    paths = [ROUND2 / n for n in names]
    for p in paths:
        if not p.exists():
            pytest.skip(f"{p} not available")
    return [str(p) for p in paths]


def placed(names: list[str], features: Features = NODE_ALLOCATABLE, **kw) -> dict[str, tuple[str | None, str]]:
    objects = load_files(names)
    result = place(objects, features=features, **kw)
    return {p.pod: (p.node if p.placed else None, "; ".join(p.reasons)) for p in result.result.pods}


# ---------------------------------------------------------------- KEP-5517 node-allocatable resources
def test_pod_level_requests_are_the_whole_footprint():
    """b05-cpu-pod-level-resources-16.yaml (dra-driver-cpu pod_with_pod_level_resources): pod-level cpu 16
    with 14 CPUs claimed through a mapping, 26 free: the pod-level 16 is the footprint, nothing on top
    (kube-scheduler DynamicResources getPodNodeAllocatableResourceFootprint, PodRequests with pod level)."""
    got = placed(r2("b05-cpu-pod-level-resources-16.yaml"))
    assert got == {"default/pod-with-pod-level-resources": ("dra-driver-cpu-worker", "")}


def test_pod_level_requests_below_the_mapped_claims_are_rejected():
    """b05b-cpu-pod-level-resources-12.yaml: pod-level cpu 12 < 10 + 4 mapped CPUs: rejected
    (validatePodLevelResourcesCoverDRA)."""
    ((node, reason),) = placed(r2("b05b-cpu-pod-level-resources-12.yaml")).values()
    assert node is None
    assert (
        "pod level request for cpu is insufficient to cover the aggregated container and "
        "node-allocatable DRA requests" in reason
    )


def test_a_mapped_claim_is_not_shared_across_pods():
    """b06-cpu-mapped-claim-shared.yaml (+ b03 cluster): two pods reference one claim whose device has
    a mapping: the second is rejected (validateNodeAllocatableDRAClaimSharing)."""
    got = placed(r2("b03-cpu-grouped-mapping-cluster.yaml", "b06-cpu-mapped-claim-shared.yaml"))
    assert got["default/consumer-a"] == ("dra-driver-cpu-worker", "")
    node, reason = got["default/consumer-b"]
    assert node is None
    assert (
        "node allocatable resource claim shared-cpus-4 has a mapped device and cannot be shared across pods" in reason
    )


def test_kubernetes_136_field_name_for_node_allocatable_mappings(capsys):
    """b04-website-136-nodeallocatable-mappings.yaml (kubernetes/website dynamic-resource-allocation.md,
    1.36 "Node allocatable resources"): `nodeAllocatableResourceMappings.memory.allocationMultiplier: 8Gi`
    is 1.36's name for 1.37's nodeAllocatableResources mapping: 8Gi + 4Gi > 10Gi, pending with the gate on;
    with it off (1.36's default, and 1.37's) the field is dropped and the pod fits."""
    files = r2("b04-website-136-nodeallocatable-mappings.yaml")
    ((node, reason),) = placed(files).values()
    assert (node, reason) == (None, "Insufficient memory")  # (Kubernetes' words; explain adds draopt's note)
    assert "unknown field" not in capsys.readouterr().err
    ((node, _),) = placed(files, Features.from_gates(version="1.36")).values()
    assert node == "my-node"


def test_kubernetes_136_mapping_shapes():
    """allocationMultiplier scales the consumed capacityKey when set, else each device (1.36 API doc of
    NodeAllocatableResourceMapping); both field names on one device is an error."""
    from draopt.errors import InputError
    from draopt.kube.loader import node_allocatable_136

    doc = {
        "kind": "ResourceSlice",
        "spec": {
            "devices": [
                {
                    "name": "a",
                    "nodeAllocatableResourceMappings": {
                        "cpu": {"capacityKey": "dra.cpu/cpu", "allocationMultiplier": "2"}
                    },
                },
                {"name": "b", "nodeAllocatableResourceMappings": {"memory": {}}},
                {"name": "c"},
            ]
        },
    }
    devices = node_allocatable_136(doc, "ResourceSlice s")["spec"]["devices"]
    assert devices == [
        {
            "name": "a",
            "nodeAllocatableResources": {"cpu": {"mapping": {"capacityKey": "dra.cpu/cpu", "capacityMultiplier": "2"}}},
        },
        {"name": "b", "nodeAllocatableResources": {"memory": {"mapping": {}}}},
        {"name": "c"},
    ]
    both = {
        "kind": "ResourceSlice",
        "spec": {"devices": [{"name": "a", "nodeAllocatableResourceMappings": {}, "nodeAllocatableResources": {}}]},
    }
    with pytest.raises(
        InputError,
        match=r"ResourceSlice s: field spec.devices\[0\].nodeAllocatableResourceMappings: "
        r"set together with nodeAllocatableResources",
    ):
        node_allocatable_136(both, "ResourceSlice s")


# ---------------------------------------------------------------- workload controllers
def test_generated_pod_names_that_collide_are_drawn_again():
    """m01-deployment-name-collision.yaml (NVIDIA integer-sharing demo Deployment, 3,797 replicas): two
    of draopt's stable generated names collide; the API server refuses a taken generated name and the
    controller creates again (deterministically here): 3,797 distinct pods, not exit 2."""
    objects = load_files(r2("m01-deployment-name-collision.yaml"))
    names = [p.name for p in objects.pods]
    assert len(names) == 3797 == len(set(names))
    again = load_files(r2("m01-deployment-name-collision.yaml"))
    assert [p.name for p in again.pods] == names


def test_a_suspended_job_says_so():
    """k01-kueue-suspended-job.yaml (Kueue sample-job.yaml shape, suspend: true): no pods, and a note
    naming the Job and why (was only "nothing to place")."""
    import io
    from draopt.kube.loader import load_text

    notes = io.StringIO()
    (path,) = r2("k01-kueue-suspended-job.yaml")
    objects = load_text(Path(path).read_text(), path, notes=notes)
    assert objects.pods == []
    assert "is suspended (spec.suspend: true): it creates no pods until resumed" in notes.getvalue()
    assert "Job default/sample-job-" in notes.getvalue()


@pytest.mark.parametrize(
    "workload, pending",
    [
        # kubernetes-sigs/jobset pkg/webhooks/pod_mutating_webhook.go: leaders get the exclusive terms,
        # followers follow their leader's domain: the third Job's two pods stay pending.
        ("g01-jobset-exclusive.yaml", {"default/llama-sft-slice-job-2-0-", "default/llama-sft-slice-job-2-1-"}),
        # kubernetes-sigs/lws SetExclusiveAffinities: every pod of a group; the third group pending.
        ("g02-lws-exclusive.yaml", {"default/vllm-405b-2", "default/vllm-405b-2-1"}),
    ],
)
def test_exclusive_topology_annotations_give_one_group_per_node_pool(workload, pending):
    """g01-jobset-exclusive.yaml / g02-lws-exclusive.yaml on g01-gke-a3-2pools-cluster.yaml (2 pools x 2
    nodes x 8 H100): `exclusive-topology: cloud.google.com/gke-nodepool` becomes required pod
    (anti-)affinity; each Job (group) of 2 pods x 4 GPUs takes one pool, the third finds none."""
    got = placed(r2("g01-gke-a3-2pools-cluster.yaml", workload), Features.from_gates())
    waiting = {k for k, (node, _) in got.items() if node is None}
    assert len(waiting) == 2 and all(
        any(k.startswith(p) if p.endswith("-") else k == p for p in pending) for k in waiting
    ), waiting
    pools: dict[str, set[str]] = {}
    for key, (node, _) in got.items():
        if node is not None:
            group = key.rsplit("-", 2)[0] if workload.startswith("g01") else key.split("-")[2]
            pools.setdefault(node.rsplit("-", 1)[0], set()).add(group)
    assert len(pools) == 2 and all(len(groups) == 1 for groups in pools.values()), pools


# ---------------------------------------------------------------- gates and dropped fields
def test_topology_aware_workload_scheduling_gate_and_its_dropped_field():
    """j01-podgroup-topology.yaml (KEP-5732, alpha in 1.36 and 1.37): the gate is known; off (the default) the
    API server drops PodGroup spec.schedulingConstraints, and draopt says so; on, draopt models the
    constraint (the pod-group cycle with placements, draopt/cluster/podgroup_placement.py): no note."""
    from draopt.kube.features import parse_gates
    from draopt.kube.workload import gated_field_notes

    assert parse_gates("TopologyAwareWorkloadScheduling=true") == {"TopologyAwareWorkloadScheduling": True}
    objects = load_files(r2("j01-racks-cluster.yaml", "j01-podgroup-topology.yaml"))
    assert gated_field_notes(objects, Features.from_gates()) == [
        "field PodGroup spec.schedulingConstraints dropped: gate TopologyAwareWorkloadScheduling is off "
        "(PodGroup training/trainer)"
    ]
    on = gated_field_notes(objects, Features.from_gates({"TopologyAwareWorkloadScheduling": True}))
    assert on == []


def test_node_allocatable_resources_dropped_with_the_gate_off():
    """b01-nvidia-overhead-cluster.yaml (NVIDIA node-allocatable-overhead demo): gate off, the field is
    dropped: one note for all the slices."""
    from draopt.kube.workload import gated_field_notes

    objects = load_files(r2("b01-nvidia-overhead-cluster.yaml"))
    notes = gated_field_notes(objects, Features.from_gates())
    assert len(notes) == 1 and notes[0].startswith(
        "field ResourceSlice spec.devices[].nodeAllocatableResources dropped: gate DRANodeAllocatableResources is off"
    )
    assert gated_field_notes(objects, NODE_ALLOCATABLE) == []


def test_list_values_are_dropped_with_their_gate_off():
    """c03-cpu-nic-pcieroot-list.yaml (dra-driver-cpu --expose-pcie-roots, pcieRoot as `strings`): with
    DRAListTypeAttributes off the API server drops list values, so CEL does not see them either (as
    matchAttribute does not): `pcieRoot.includes(...)` is a CEL runtime error ("no such key"); with the
    gate on, includes() picks cpudevnuma001 (website dra-features "List type attributes")."""
    import subprocess
    import sys

    (path,) = r2("c03-cpu-nic-pcieroot-list.yaml")

    def allocate(*gates: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "draopt", "allocate", "-f", path, "--claim", "default/cpus-includes", *gates],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )

    off = allocate()
    assert off.returncode != 0 and "CEL runtime error: no such key: pcieRoot" in off.stderr
    on = allocate("--feature-gates", "DRAListTypeAttributes=true")
    assert on.returncode == 0 and "device: cpudevnuma001" in on.stdout
    from draopt.kube.workload import gated_field_notes

    notes = gated_field_notes(load_files([path]), Features.from_gates())
    assert any(
        n.startswith(
            "field ResourceSlice spec.devices[].attributes[] list values dropped: gate DRAListTypeAttributes is off"
        )
        for n in notes
    ), notes


def test_an_mpijob_creates_its_workers_and_launcher(capsys):
    """d-rct-and-mpijob.yaml (dranet OKE GB200 mpi-job.yaml): the MPIJob's pods are made as mpi-operator
    makes them (newWorker, newLauncherJob; draopt/kube/batch_controllers.py, was "not used for
    placement", then "creates pods that draopt does not model"); d-workers-*.yaml are such pods; with
    the cluster, the 2 workers are placed one per node and the launcher, tolerating no GPU taint, waits."""
    got = placed(r2("d-oke-gb200-cluster.yaml", "d-rct-and-mpijob.yaml"))
    assert "MPIJob" not in capsys.readouterr().err
    assert {k: v[0] is not None for k, v in got.items() if "worker" in k} == {
        "default/nccl-test-dra-worker-0": True,
        "default/nccl-test-dra-worker-1": True,
    }
    ((launcher, (node, reason)),) = [(k, v) for k, v in got.items() if "launcher" in k]
    assert node is None and "node(s) had untolerated taint(s)" in reason  # TaintToleration does not name it


# ---------------------------------------------------------------- explain
def _explain(*args: str) -> str:
    import subprocess
    import sys

    got = subprocess.run(
        [sys.executable, "-m", "draopt", "explain", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    return got.stdout


def test_explain_does_not_say_fits_after_insufficient_node_allocatable_memory():
    """b01-* (NVIDIA node-allocatable-overhead demo): the devices are free but their overhead exceeds the
    node's free memory: the node does not fit (was "fits" after "Insufficient memory")."""
    out = _explain(
        *[a for p in r2("b01-nvidia-overhead-cluster.yaml", "b01-gpu-overhead-pod.yaml") for a in ("-f", p)],
        "--feature-gates",
        "DRANodeAllocatableResources=true",
    )
    assert "node g5-xlarge-1: Insufficient memory (node-allocatable resources of devices)" in out
    assert "fits" not in out


def test_allocate_prints_the_dropped_field_notes_as_place_does():
    """c03-cpu-nic-pcieroot-list.yaml with DRAListTypeAttributes off (1.36's and 1.37's default): `allocate` says
    that the list values are dropped, as `place` does (draopt.kube.workload.gated_field_notes)."""
    import subprocess
    import sys

    got = subprocess.run(
        [sys.executable, "-m", "draopt", "allocate", "-f", *r2("c03-cpu-nic-pcieroot-list.yaml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert (
        "note: field ResourceSlice spec.devices[].attributes[] list values dropped: gate "
        "DRAListTypeAttributes is off" in got.stderr
    )


def test_explain_node_narrows_every_section_to_that_node():
    """e-computedomain-*: `explain --node gb200-rack1-node3` speaks of that node alone in every section:
    the headline without the other nodes' counts, its block of the explanation when the pod failed
    (where it shared a block with node4) and of the state after first-fit."""
    args = [a for p in r2("e-computedomain-cluster.yaml", "e-computedomain-workload.yaml") for a in ("-f", p)]
    out = _explain(*args, "--node", "gb200-rack1-node3")
    assert "node gb200-rack1-node3:" in out
    for other in ("gb200-rack1-node1", "gb200-rack1-node2", "gb200-rack1-node4", "0/4 nodes"):
        assert other not in out, other
    assert out.count("when it failed") == out.count("in the state after first-fit") > 0


def test_explain_node_that_is_not_in_the_input_is_an_error():
    import subprocess
    import sys

    args = [a for p in r2("e-computedomain-cluster.yaml", "e-computedomain-workload.yaml") for a in ("-f", p)]
    got = subprocess.run(
        [sys.executable, "-m", "draopt", "explain", *args, "--node", "nope"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert got.returncode == 2 and "--node nope: no Node nope in the input" in got.stderr


def test_explain_counts_in_use_only_among_devices_the_request_could_take():
    """e-computedomain-* (NVIDIA ComputeDomain): on a node with 2 of 4 GPUs free, the GPU request reads
    "2 in use ... 2 usable": the allocated IMEX channel never matches the GPU class (was "3 in use")."""
    out = _explain(*[a for p in r2("e-computedomain-cluster.yaml", "e-computedomain-workload.yaml") for a in ("-f", p)])
    gpu_lines = [line for line in out.splitlines() if "-gpus gpus:" in line]
    assert gpu_lines and all("2 in use" in line and "2 usable" in line for line in gpu_lines), gpu_lines


def test_a_plain_pci_address_reads_as_kubernetes_reads_it(tmp_path):
    """gen_big.py's p5 GPU addresses (`0000:18:00.0`, as kubectl/go-yaml writes them plain) are base-60
    floats in YAML 1.1 (64800.0): Kubernetes' go-yaml never reads base 60, so the attribute is the string
    written (was: "Input should be a valid string", an error on valid input)."""
    path = tmp_path / "slice.yaml"
    path.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n"
        "  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: n1, generation: 1, resourceSliceCount: 1}\n"
        "  devices:\n  - name: gpu-0\n    attributes:\n      pciBusID:\n        string: 0000:18:00.0\n"
    )
    (device,) = load_files([str(path)]).resource_slices[0].spec.devices
    assert device.to_k8s()["attributes"]["pciBusID"] == {"string": "0000:18:00.0"}
