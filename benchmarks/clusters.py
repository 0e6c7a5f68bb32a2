"""Deterministic (seeded) cluster generators and timing helpers shared by the benchmarks.

Everything here builds plain Kubernetes objects (dicts) and turns them into a
`draopt.kube.loader.ObjectSet` with `parse_object`, as tests/helpers.py does. No wall-clock or
global randomness: the same arguments give the same objects.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any, Callable

from draopt.kube.loader import ObjectSet, parse_object

V1 = "resource.k8s.io/v1"
GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
GI = 1 << 30


# ----------------------------------------------------------------------------- helpers
def objects_from_docs(docs: list[dict[str, Any]]) -> ObjectSet:
    objs = ObjectSet()
    for i, doc in enumerate(docs):
        objs.add(parse_object(doc, f"doc {i}"))
    return objs


def median_ms(fn: Callable[[], Any], runs: int, warmup: int = 1) -> tuple[float, Any]:
    """(median wall time of fn() in ms over `runs` runs after `warmup` runs, last result)."""
    out = None
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), out


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100])."""
    v = sorted(values)
    if not v:
        return float("nan")
    k = max(0, min(len(v) - 1, int(round(q / 100 * len(v) + 0.5)) - 1))
    return v[k]


def device_class(name: str, driver: str) -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}


def claim(
    name: str,
    requests: list[dict[str, Any]],
    constraints: list[dict[str, Any]] | None = None,
    *,
    namespace: str = "default",
    results: list[dict[str, Any]] | None = None,
    node_name: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"requests": requests}
    if constraints:
        spec["constraints"] = constraints
    c: dict[str, Any] = {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": {"devices": spec},
    }
    if results is not None:
        alloc: dict[str, Any] = {"devices": {"results": results}}
        if node_name:
            alloc["nodeSelector"] = {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                ]
            }
        c["status"] = {"allocation": alloc}
    return c


def exactly(name: str, cls: str, count: int = 1, selectors: list[str] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selectors:
        e["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": e}


# ----------------------------------------------------------------------------- big cluster
def big_cluster(
    *, nodes: int = 64, gpus: int = 8, nics: int = 4, busy_nodes: int | None = None, seed: int = 1
) -> dict[str, Any]:
    """`nodes` nodes (node-00, node-01, ...; zero-padded so name order == index order), each with
    a per-node GPU pool (`gpus` GPUs; model/numa/pcieRoot) and a per-node NIC pool (`nics`
    NICs; numa/pcieRoot; NIC k shares pcieRoot pci-k with GPUs 2k and 2k+1).

    Allocated claims (1 GPU, 2 GPUs, or 1 NIC each, ~280 in all at 64 nodes) keep 4 of the 8 GPUs
    of each of the first `busy_nodes` nodes (default 3/4 of them) busy and 1 GPU of the others,
    so the pending claims (which need >= 6 GPUs) fit on no busy node: a scan without --node visits
    `busy_nodes` nodes before it fits. Node (i % 4 == 3) has a100 GPUs, the others h100.

    Returns {"docs": [...], "pending": ["ns/name", ...], "fit_node": name, "busy_node": name}."""
    rng = random.Random(seed)
    busy_nodes = nodes * 3 // 4 if busy_nodes is None else busy_nodes
    docs: list[dict[str, Any]] = [device_class("gpu", GPU_DRIVER), device_class("nic", NIC_DRIVER)]
    allocated: list[dict[str, Any]] = []
    n_claim = 0
    for i in range(nodes):
        name = f"node-{i:02d}"
        docs.append(node(name))
        model = "a100" if i % 4 == 3 else "h100"
        gpu_devs = [
            {
                "name": f"gpu-{j}",
                "attributes": {
                    "model": {"string": model},
                    "numa": {"int": j * 2 // gpus},
                    PCIE_ROOT: {"string": f"pci-{j // 2}"},
                    "uuid": {"string": f"GPU-{i}-{j}"},
                },
                "capacity": {"memory": {"value": "80Gi"}},
            }
            for j in range(gpus)
        ]
        nic_devs = [
            {
                "name": f"nic-{k}",
                "attributes": {
                    "numa": {"int": k * 2 // nics},
                    PCIE_ROOT: {"string": f"pci-{k}"},
                    "speed": {"int": 400},
                },
                "capacity": {"bandwidth": {"value": "400G"}},
            }
            for k in range(nics)
        ]
        for driver, devs in ((GPU_DRIVER, gpu_devs), (NIC_DRIVER, nic_devs)):
            docs.append(
                {
                    "apiVersion": V1,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-{driver}"},
                    "spec": {
                        "driver": driver,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "nodeName": name,
                        "devices": devs,
                    },
                }
            )
        # in-use devices: a random subset, cut into claims of 1 or 2 GPUs
        busy = gpus // 2 if i < busy_nodes else 1
        used = sorted(rng.sample(range(gpus), busy))
        while used:
            take = min(len(used), rng.choice([1, 1, 1, 2]))
            picked, used = used[:take], used[take:]
            n_claim += 1
            allocated.append(
                claim(
                    f"running-{n_claim:03d}",
                    [exactly("gpu", "gpu", take)],
                    namespace="jobs",
                    results=[
                        {"request": "gpu", "driver": GPU_DRIVER, "pool": name, "device": f"gpu-{j}"} for j in picked
                    ],
                    node_name=name,
                )
            )
        # one or two NICs in use on every node, one claim each (never NIC 0: the pending GPU+NIC
        # claim always has a free NIC next to a free GPU)
        for k in sorted(rng.sample(range(1, nics), rng.randint(1, 2))):
            n_claim += 1
            allocated.append(
                claim(
                    f"running-{n_claim:03d}",
                    [exactly("nic", "nic", 1)],
                    namespace="jobs",
                    results=[{"request": "nic", "driver": NIC_DRIVER, "pool": name, "device": f"nic-{k}"}],
                    node_name=name,
                )
            )
    pending = [
        # one h100 (selector on the model attribute)
        claim(
            "inference",
            [exactly("gpu", "gpu", 1, [f'device.attributes["{GPU_DRIVER}"].model == "h100"'])],
            namespace="ml",
        ),
        # two GPUs on numa 0 if possible, else any two
        claim(
            "trainer",
            [
                {
                    "name": "gpu",
                    "firstAvailable": [
                        {
                            "name": "numa0",
                            "deviceClassName": "gpu",
                            "count": 2,
                            "selectors": [{"cel": {"expression": f'device.attributes["{GPU_DRIVER}"].numa == 0'}}],
                        },
                        {"name": "any", "deviceClassName": "gpu", "count": 2},
                    ],
                }
            ],
            namespace="ml",
        ),
        # a GPU and a NIC on the same PCIe root
        claim(
            "rdma",
            [exactly("gpu", "gpu", 1), exactly("nic", "nic", 1)],
            [{"requests": ["gpu", "nic"], "matchAttribute": PCIE_ROOT}],
            namespace="ml",
        ),
        # a GPU with at least 40Gi, plus a second one: count 2
        claim(
            "batch",
            [exactly("gpu", "gpu", 2, [f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'])],
            namespace="ml",
        ),
    ]
    docs += allocated + pending
    # the first node (by name) that is not busy and has h100 GPUs
    fit = next(i for i in range(busy_nodes, nodes) if i % 4 != 3)
    return {
        "docs": docs,
        "pending": [f"ml/{c['metadata']['name']}" for c in pending],
        "fit_node": f"node-{fit:02d}",
        "busy_node": "node-00",
        "allocated_claims": len(allocated),
    }


# ----------------------------------------------------------------------------- worst case
def worst_case(n: int, variant: str) -> dict[str, Any]:
    """The exponential first-fit instance (why Kubernetes has a 10 s filter timeout).

    One node `node-1`; GPU pool `gpus` = one counter-set slice (counter memory) + one slice of
    `n` GPUs consuming 8Gi each. Variants:
      count-N     claims for n GPUs in all (counter memory = n*8Gi - 1: they cannot all fit)
      count-N-1   claims for n-1 GPUs in all (counter memory = (n-1)*8Gi - 1)
      nic-mismatch  one claim: GPU request count n/2 + NIC request count n/2 from a NIC pool of n
                    NICs, matchAttribute pcieRoot; all GPUs on root pci-gpu, every NIC on its
                    own root no GPU has (counter memory = n*8Gi - 1, not binding)
      short-by-one  same requests; n/2-1 GPUs and all NICs share root pci-0, the other GPUs
                    have distinct roots: n/2 GPUs with a common root do not exist
    Claims of more than 32 devices (AllocationResultsMaxSize) are split into claims of <= 32
    devices, allocated together (one pod), e.g. 64 GPUs -> 2 claims of 32; n/2 + n/2 = 64 ->
    2 claims of 16 GPUs + 16 NICs, each with its own matchAttribute.
    Returns {"docs": [...], "claims": [...], "split": description}."""
    gpus_total = n
    if variant == "count-N":
        want, mem = n, n * 8 * GI - 1
    elif variant == "count-N-1":
        want, mem = n - 1, (n - 1) * 8 * GI - 1
    elif variant in ("nic-mismatch", "short-by-one"):
        want, mem = n // 2, n * 8 * GI - 1
    else:
        raise ValueError(variant)
    docs: list[dict[str, Any]] = [device_class("gpu", GPU_DRIVER), device_class("nic", NIC_DRIVER), node("node-1")]
    pool = {"name": "gpus", "generation": 1, "resourceSliceCount": 2}
    docs.append(
        {
            "apiVersion": V1,
            "kind": "ResourceSlice",
            "metadata": {"name": "gpus-counters"},
            "spec": {
                "driver": GPU_DRIVER,
                "pool": pool,
                "nodeName": "node-1",
                "sharedCounters": [{"name": "gpu-mem", "counters": {"memory": {"value": str(mem)}}}],
            },
        }
    )

    def gpu_root(j: int) -> str:
        if variant == "nic-mismatch":
            return "pci-gpu"
        if variant == "short-by-one":
            return "pci-0" if j < n // 2 - 1 else f"pci-g{j}"
        return f"pci-g{j}"

    gpus = [
        {
            "name": f"gpu-{j:02d}",
            "attributes": {PCIE_ROOT: {"string": gpu_root(j)}, "index": {"int": j}},
            "capacity": {"memory": {"value": "8Gi"}},
            "consumesCounters": [{"counterSet": "gpu-mem", "counters": {"memory": {"value": "8Gi"}}}],
        }
        for j in range(gpus_total)
    ]
    docs.append(
        {
            "apiVersion": V1,
            "kind": "ResourceSlice",
            "metadata": {"name": "gpus-devices"},
            "spec": {"driver": GPU_DRIVER, "pool": pool, "nodeName": "node-1", "devices": gpus},
        }
    )
    claims: list[dict[str, Any]] = []
    if variant in ("count-N", "count-N-1"):
        parts = _split(want, 32)
        for k, cnt in enumerate(parts):
            claims.append(claim(f"big-{k}", [exactly("gpu", "gpu", cnt)]))
        split = "1 claim" if len(parts) == 1 else f"{len(parts)} claims of {'+'.join(map(str, parts))} GPUs"
    else:
        nic_root = (lambda k: f"pci-n{k}") if variant == "nic-mismatch" else (lambda k: "pci-0")
        nics = [{"name": f"nic-{k:02d}", "attributes": {PCIE_ROOT: {"string": nic_root(k)}}} for k in range(n)]
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": "nics"},
                "spec": {
                    "driver": NIC_DRIVER,
                    "pool": {"name": "nics", "generation": 1, "resourceSliceCount": 1},
                    "nodeName": "node-1",
                    "devices": nics,
                },
            }
        )
        parts = _split(want, 16)  # each claim: g GPUs + g NICs <= 32 results
        for k, cnt in enumerate(parts):
            claims.append(
                claim(
                    f"pair-{k}",
                    [exactly("gpu", "gpu", cnt), exactly("nic", "nic", cnt)],
                    [{"requests": ["gpu", "nic"], "matchAttribute": PCIE_ROOT}],
                )
            )
        split = (
            "1 claim"
            if len(parts) == 1
            else f"{len(parts)} claims of {'+'.join(map(str, parts))} GPUs (+ as many NICs), one matchAttribute each"
        )
    docs += claims
    return {"docs": docs, "claims": [f"default/{c['metadata']['name']}" for c in claims], "split": split}


def _split(total: int, size: int) -> list[int]:
    parts = [size] * (total // size)
    if total % size:
        parts.append(total % size)
    return parts


# ----------------------------------------------------------------------------- solver stats
class SolverStats:
    """Collects the per-node stats dicts of `draopt.model.single_node.solve_problem` (status, replay,
    replay_truncated, ...) by wrapping `draopt.allocation.allocate._solve`: `api.allocate` copies only
    build_ms/solve_ms/variables/constraints into `outcome.stats`, so `outcome.stats.get("replay")`
    is always None there (as of this writing)."""

    def __init__(self) -> None:
        from draopt.allocation import allocate as api

        self.api = api
        self.runs: list[dict[str, Any]] = []
        self._orig = api._solve

        def wrapped(*a, **kw):
            out = self._orig(*a, **kw)
            self.runs.append(dict(out[2]))
            return out

        api._solve = wrapped

    def take(self) -> list[dict[str, Any]]:
        got, self.runs = self.runs, []
        return got

    def replay(self, outcome_stats: dict[str, Any] | None, runs: list[dict[str, Any]]) -> list[str] | None:
        """The replay reasons of one allocate call: from outcome.stats if draopt reports them,
        else from the solver stats collected for that call."""
        if outcome_stats and outcome_stats.get("replay"):
            return list(outcome_stats["replay"])
        why = sorted({w for r in runs for w in (r.get("replay") or [])})
        return why or None

    def close(self) -> None:
        self.api._solve = self._orig
