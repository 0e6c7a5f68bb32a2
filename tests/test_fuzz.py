"""Fuzz: mutated documents never give a traceback.

Real inputs (the bundled examples and small documents in the shapes of the public DRA demos:
controllers, pods, PodGroups, partitionable slices, taint rules) are mutated (wrong types,
missing fields, odd values, random keys, deleted keys, documents dropped or repeated) and run
through loading, `validate`, `allocate`, first-fit `place` and `explain` in-process. Every failure must be
a DraoptError (the CLI's exit 2 with a message naming object and field); any other exception is
a bug. Deterministic (derandomize): 2,050 inputs through load/allocate/place (150 of them with
optimal placement) and 600 more through validate.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from draopt.allocation import allocate as api
from draopt import validation as validate
from draopt.errors import DraoptError
from draopt.allocation.explain import explain_claims
from draopt.kube.features import Features
from draopt.kube.loader import load_text
from draopt.placement import place

ROOT = Path(__file__).resolve().parents[1]

SMALL = yaml.safe_load_all("""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]
  extendedResourceName: example.com/gpu
---
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1, zone: a}}
spec: {taints: [{key: gpu, value: present, effect: NoSchedule}]}
status: {allocatable: {cpu: '8', memory: 32Gi, pods: '20'}, capacity: {cpu: '8', memory: 32Gi, pods: '20'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 2}
  devices:
  - name: gpu-0
    attributes: {index: {int: 0}, profile: {string: full}, pcieRoot: {string: pci0}}
    capacity: {memory: {value: 40Gi}}
    consumesCounters: [{counterSet: gpu-0-counters, counters: {memory: {value: 40Gi}}}]
  - name: gpu-0-mig-1g
    attributes: {index: {int: 0}, profile: {string: 1g.5gb}}
    capacity: {memory: {value: 5Gi}}
    consumesCounters: [{counterSet: gpu-0-counters, counters: {memory: {value: 5Gi}}}]
  - name: gpu-1
    attributes: {index: {int: 1}, profile: {string: full}}
    capacity: {memory: {value: 40Gi}}
    allowMultipleAllocations: true
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu-counters}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 2}
  sharedCounters:
  - name: gpu-0-counters
    counters: {memory: {value: 40Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: mig-devices}
spec:
  spec:
    devices:
      requests:
      - name: mig
        exactly:
          deviceClassName: gpu.example.com
          selectors: [{cel: {expression: "device.attributes['gpu.example.com'].profile == '1g.5gb'"}}]
      - name: gpu
        firstAvailable:
        - {name: big, deviceClassName: gpu.example.com, count: 2}
        - {name: one, deviceClassName: gpu.example.com, capacity: {requests: {memory: 8Gi}}}
      constraints: [{requests: [], matchAttribute: gpu.example.com/index}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {namespace: ml, name: shared-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        allocationMode: ExactCount
        count: 1
        tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {namespace: ml, name: infer}
spec:
  replicas: 2
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
      resourceClaims: [{name: mig, resourceClaimTemplateName: mig-devices}]
      containers:
      - name: ctr
        resources: {requests: {cpu: '1'}, claims: [{name: mig, request: mig}]}
---
apiVersion: batch/v1
kind: Job
metadata: {namespace: ml, name: train}
spec:
  completions: 3
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {zone: a}
      tolerations: [{operator: Exists}]
      resourceClaims: [{name: g, resourceClaimName: shared-gpu}]
      containers: [{name: c, resources: {limits: {example.com/gpu: '1'}, claims: [{name: g}]}}]
---
apiVersion: v1
kind: Pod
metadata: {namespace: ml, name: pod-0, creationTimestamp: '2026-01-01T00:00:00Z'}
spec:
  priority: 10
  schedulingGroup: {podGroupName: gang}
  tolerations: [{key: gpu, operator: Equal, value: present, effect: NoSchedule}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]
  resourceClaims: [{name: g, resourceClaimName: shared-gpu}]
  containers: [{name: c, resources: {claims: [{name: g}]}}]
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {namespace: ml, name: gang}
spec:
  schedulingPolicy: {gang: {minCount: 1}}
---
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {name: drain}
spec:
  deviceSelector: {driver: gpu.example.com, pool: node-1, device: gpu-1}
  taint: {key: maintenance, value: 'true', effect: NoSchedule}
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {namespace: ml, name: vllm}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        tolerations: [{key: gpu, operator: Exists}]
        containers: [{name: c, resources: {requests: {cpu: 500m}}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {namespace: ml, name: settings}
data: {a: b}
""")
SMALL = [d for d in SMALL if d]


CONTROLLERS = [
    d
    for d in yaml.safe_load_all("""
apiVersion: apps/v1
kind: StatefulSet
metadata: {namespace: ml, name: db, uid: 1234}
spec:
  replicas: 2
  serviceName: db
  ordinals: {start: 1}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      tolerations: [{operator: Exists}]
      resourceClaims: [{name: g, resourceClaimTemplateName: mig-devices}]
      containers: [{name: c, resources: {claims: [{name: g, request: mig}]}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {namespace: kube-system, name: monitor, generation: 3}
spec:
  selector: {matchLabels: {app: monitor}}
  template:
    metadata: {labels: {app: monitor}}
    spec:
      hostNetwork: true
      nodeSelector: {zone: a}
      tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
        {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Exists}]}]}}}
      containers: [{name: c, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {namespace: ml, name: nightly, creationTimestamp: '2026-07-01T10:00:00Z'}
spec:
  schedule: '0 3 * * *'
  jobTemplate:
    metadata: {labels: {run: nightly}}
    spec:
      parallelism: 2
      template:
        spec:
          restartPolicy: OnFailure
          tolerations: [{operator: Exists}]
          containers: [{name: c, resources: {limits: {example.com/gpu: '1'}}}]
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {namespace: ml, name: train}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          spec:
            restartPolicy: Never
            tolerations: [{operator: Exists}]
            resourceClaims: [{name: g, resourceClaimTemplateName: mig-devices}]
            containers: [{name: c, resources: {claims: [{name: g}]}}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {namespace: ml, name: web-7d4b9c, ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: d}]}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, pod-template-hash: 7d4b9c}}
    spec: {containers: [{name: c}]}
""")
    if d
]


def _seeds() -> list[list[dict[str, Any]]]:
    base = [d for d in SMALL if d.get("kind") not in ("Deployment", "Job", "LeaderWorkerSet", "Pod", "PodGroup")]
    seeds = [SMALL, base + CONTROLLERS]
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        seeds.append(docs)
    return seeds


SEEDS = _seeds()
ODD = [
    None,
    "",
    " ",
    "-1",
    -1,
    0,
    1,
    2**31,
    2**63,
    -(2**63),
    1.5,
    float("inf"),
    True,
    False,
    "x" * 300,
    [],
    {},
    [None],
    {"nested": [True]},
    "lots",
    "80GB",
    "16 GiB",
    "1e400",
    "IN",
    "Exists",
    "0.5",
    "default",
    "gpu.example.com",
    "node-1",
    "ml/../x",
    "*",
    "\u00e9\u0000",
    "2026-13-45T99:00:00Z",
]
KEYS = [
    "kind",
    "apiVersion",
    "metadata",
    "name",
    "namespace",
    "spec",
    "status",
    "devices",
    "requests",
    "exactly",
    "count",
    "allocationMode",
    "selectors",
    "cel",
    "expression",
    "template",
    "replicas",
    "parallelism",
    "completions",
    "completionMode",
    "resourceClaims",
    "containers",
    "capacity",
    "counters",
    "consumesCounters",
    "sharedCounters",
    "nodeName",
    "allNodes",
    "pool",
    "items",
    "ownerReferences",
    "labels",
    "taints",
    "tolerations",
    "firstAvailable",
    "constraints",
    "zzz",
]


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_paths(v, prefix + (i,)))
    return out


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def mutate(docs: list[Any], rnd, max_ops: int = 4) -> list[Any]:
    docs = copy.deepcopy(docs)
    for _ in range(rnd.randint(1, max_ops)):
        op = rnd.choice(["odd", "odd", "delete", "delete", "add", "type", "dropdoc", "dupdoc", "list", "oddkey"])
        if not docs:
            return docs
        i = rnd.randrange(len(docs))
        if op == "dropdoc":
            del docs[i]
            continue
        if op == "dupdoc":
            docs.insert(rnd.randrange(len(docs) + 1), copy.deepcopy(docs[i]))
            continue
        if op == "list":
            docs = [{"apiVersion": "v1", "kind": "List", "items": docs if rnd.random() < 0.8 else rnd.choice(ODD)}]
            continue
        path = rnd.choice(_paths(docs[i]))
        if not path:
            if op in ("odd", "type"):
                docs[i] = rnd.choice(ODD)
            continue
        parent, key = _get(docs[i], path[:-1]), path[-1]
        if op == "odd":
            parent[key] = copy.deepcopy(rnd.choice(ODD))
        elif op == "delete":
            del parent[key]
        elif op == "add":
            target = parent[key] if isinstance(parent[key], dict) else parent
            if isinstance(target, dict):
                target[rnd.choice(KEYS)] = copy.deepcopy(rnd.choice(ODD + [[{}], {"name": "x"}]))
            else:
                target.append(copy.deepcopy(rnd.choice(ODD)))
        elif op == "oddkey":
            target = parent[key] if isinstance(parent[key], dict) else parent
            if isinstance(target, dict):
                target[rnd.choice([1, 0, True, None, 2.5])] = copy.deepcopy(rnd.choice(ODD))
        elif op == "type":
            v = parent[key]
            parent[key] = rnd.choice([[v], {"value": v}, str(v), json.dumps(v) if not isinstance(v, float) else v])
    return docs


FEATURES = Features.from_gates()


def run_everything(docs: list[Any], engine: str, with_validate: bool = False, as_yaml: bool = False) -> None:
    """Load, allocate and place (and validate) the documents; only DraoptErrors may escape."""
    if with_validate:
        run_validate(docs)
    text = yaml.safe_dump_all(docs) if as_yaml else json.dumps(docs, allow_nan=True)
    try:
        objects = load_text(text, "fuzz", notes=io.StringIO())
    except DraoptError:
        return
    try:
        api.allocate(objects, engine=engine, deterministic_share_ids=True)
    except DraoptError:
        pass
    try:
        place(objects, policy="first-fit")
    except DraoptError:
        pass
    if engine == "cp-sat":
        try:
            explain_claims(objects, None, FEATURES)
        except DraoptError:
            pass


def run_validate(docs: list[Any]) -> None:
    try:
        validate.validate_documents([(d, f"doc {i}") for i, d in enumerate(docs)], FEATURES)
    except DraoptError:
        pass


SETTINGS = dict(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(max_examples=800, **SETTINGS)
@given(st.randoms(use_true_random=False))
def test_mutated_small_documents_never_traceback(rnd):
    run_everything(mutate(SEEDS[0], rnd), engine="reference", as_yaml=rnd.random() < 0.5)


@settings(max_examples=500, **SETTINGS)
@given(st.randoms(use_true_random=False))
def test_mutated_controllers_never_traceback(rnd):
    run_everything(mutate(SEEDS[1], rnd), engine="reference", as_yaml=rnd.random() < 0.5)


@settings(max_examples=400, **SETTINGS)
@given(st.sampled_from(range(2, len(SEEDS))), st.randoms(use_true_random=False))
def test_mutated_examples_never_traceback(seed, rnd):
    run_everything(mutate(SEEDS[seed], rnd), engine="reference")


@settings(max_examples=200, **SETTINGS)
@given(st.randoms(use_true_random=False))
def test_mutated_documents_cp_sat_engine(rnd):
    run_everything(mutate(SEEDS[0], rnd), engine="cp-sat")


@settings(max_examples=600, **SETTINGS)
@given(st.sampled_from(range(len(SEEDS))), st.randoms(use_true_random=False))
def test_validate_mutated_documents_never_traceback(seed, rnd):
    run_validate(mutate(SEEDS[seed], rnd))


@settings(max_examples=150, **SETTINGS)
@given(st.sampled_from(range(len(SEEDS))), st.randoms(use_true_random=False))
def test_mutated_documents_optimal_place(seed, rnd):
    try:
        objects = load_text(json.dumps(mutate(SEEDS[seed], rnd), allow_nan=True), "fuzz", notes=io.StringIO())
        place(objects, policy="optimal", time_limit=2)
    except DraoptError:
        pass
