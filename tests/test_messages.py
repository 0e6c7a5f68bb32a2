"""Messages a person can act on, and no traceback for odd input (issue 8, items 5 and 6)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draopt import cli
from draopt.allocation import allocate as api
from draopt.errors import InputError
from draopt.kube.loader import load_files, load_text
from draopt.placement import place, pod_table
from draopt.studies.planning import nodes_needed

ROOT = Path(__file__).resolve().parents[1]
REALWORLD = ROOT.parent / "shared" / "realworld"

CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: device.driver == 'gpu.example.com'}}]
"""
NODE = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
status: {allocatable: {cpu: '16', memory: 64Gi, pods: '110'}}
"""
# As NVIDIA's driver publishes whole GPUs: no `index` attribute (realworld/11).
SLICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
""" + "".join(
    f"""  - name: gpu-{i}
    attributes:
      productName: {{string: A100}}
    capacity:
      memory: {{value: {mem}}}
"""
    for i, mem in enumerate(["40Gi", "40Gi", "80Gi", "80Gi"])
)


def claim(name: str, count: int = 1, selector: str | None = None, template: bool = False) -> str:
    sel = f"\n          selectors: [{{cel: {{expression: {json.dumps(selector)}}}}}]" if selector else ""
    body = f"""
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
          count: {count}{sel}"""
    if template:
        return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{namespace: default, name: {name}}}
spec:
  spec:
    devices:{body}
"""
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{namespace: default, name: {name}}}
spec:
  devices:{body.replace(chr(10) + "  ", chr(10))}
"""


def docs(*parts: str) -> str:
    return "\n---\n".join(p.strip() for p in parts) + "\n"


INDEX_SELECTOR = "device.attributes['gpu.example.com'].index == 0 || device.attributes['gpu.example.com'].index == 2"
DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {namespace: default, name: gpu-test6}
spec:
  replicas: 4
  selector: {matchLabels: {app: pod}}
  template:
    metadata: {labels: {app: pod}}
    spec:
      resourceClaims: [{name: a100, resourceClaimTemplateName: a100}]
      containers: [{name: ctr, image: ubuntu:22.04, resources: {claims: [{name: a100}]}}]
"""


# ------------------------------------------------------------------ allocate
def test_allocate_names_the_claim_that_fits_nowhere():
    objs = load_text(docs(CLASS, NODE, SLICE, claim("two-gpus", 2), claim("five-gpus", 5)))
    out = api.allocate(objs)
    assert not out.allocated
    assert "alone, these fit on no node: default/five-gpus;" in out.reason
    assert "default/two-gpus, default/five-gpus" in out.reason and "--claim" in out.reason


def test_allocate_says_when_claims_fit_alone_but_not_together():
    objs = load_text(docs(CLASS, NODE, SLICE, claim("a", 3), claim("b", 3)))
    out = api.allocate(objs)
    assert "each fits alone, not all together" in out.reason


def test_allocate_without_nodes_says_so():
    out = api.allocate(load_text(docs(CLASS, SLICE, claim("a"))))
    assert not out.allocated
    assert "no Node objects in the input" in out.reason


def test_allocate_with_only_templates_points_to_place(capsys):
    objs = load_text(docs(CLASS, NODE, SLICE, claim("a100", template=True)))
    with pytest.raises(InputError, match=r"only 1 ResourceClaimTemplate\(s\) \(default/a100\).*use `draopt place`"):
        api.allocate(objs)


def test_allocate_reads_its_own_output_back(tmp_path, capsys):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(docs(CLASS, NODE, SLICE, claim("first", 3), claim("second", 1)))
    assert cli.main(["allocate", "-f", str(cluster), "--claim", "default/first"]) == 0
    first = tmp_path / "first.yaml"
    first.write_text(capsys.readouterr().out)
    # Given again, the allocated copy replaces the pending one (before or after it in the input).
    for order in ([cluster, first], [first, cluster]):
        assert cli.main(["allocate", "-f", str(order[0]), "-f", str(order[1]), "-o", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert [c["metadata"]["name"] for c in out["items"]] == ["second"]
        assert out["items"][0]["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-3"
    # The same pending claim twice is still an error.
    assert cli.main(["allocate", "-f", str(cluster), "-f", str(cluster)]) == 2
    assert "ResourceClaim default/first: given twice, both pending" in capsys.readouterr().err


def test_allocate_says_when_nothing_is_pending(capsys, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(docs(CLASS, NODE, SLICE))
    assert cli.main(["allocate", "-f", str(f)]) == 0
    assert "note: nothing to allocate: no ResourceClaim in the input" in capsys.readouterr().err


# ------------------------------------------------------------------ CEL runtime errors, grouped
def cel_error_cluster() -> str:
    return docs(CLASS, NODE, SLICE, claim("a100", selector=INDEX_SELECTOR, template=True), DEPLOYMENT)


def test_cel_error_once_per_cause_and_each_pod_names_its_own_claim():
    objs = load_text(cel_error_cluster())
    out = place(objs, policy="first-fit")
    assert [p.placed for p in out.result.pods] == [False] * 4
    text = pod_table(out.result, 1)
    for p in out.result.pods:
        own = f"{p.pod}-a100"
        headline = p.reason_text(1)
        assert f"claim {own}: selector #0" in headline, headline
        others = [q.pod for q in out.result.pods if q.pod != p.pod]
        assert not any(f"{o}-a100" in headline + p.explanation for o in others)
        # The device-level lines: one per cause, counted, naming the claim and the selector.
        assert f"CEL runtime error on 4 devices of claim {own} selector #0: no such key: index" in p.explanation
        assert p.explanation.count("no such key") == 1
    # Headline (kube-scheduler's filter error) plus one grouped line per pod.
    assert text.count("no such key: index") == 8
    assert text.count('running "DynamicResources" filter plugin: claim ') == 4
    assert len(text) < 3000


@pytest.mark.skipif(
    not (REALWORLD / "11-nvidia-quickstart-index-selector.yaml").exists(),
    reason="shared/realworld inputs not available",
)
def test_realworld_nvidia_gpu_test6_output_is_short():
    objs = load_files([str(REALWORLD / "11-nvidia-quickstart-index-selector.yaml")])
    out = place(objs, policy="first-fit")
    text = pod_table(out.result, 1)
    assert len(text) < 6000  # was 16 KB: every device's error for every pod
    assert text.count("CEL runtime error on 6 devices of claim gpu-test6/") == 4


def test_explain_groups_cel_errors(capsys, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(docs(CLASS, NODE, SLICE, claim("a100", selector=INDEX_SELECTOR)))
    assert cli.main(["explain", "-f", str(f)]) == 0
    out = capsys.readouterr().out
    assert (
        "request default/a100 gpu: CEL runtime error on 4 devices of claim default/a100 selector #0: "
        "no such key: index" in out
    )


def test_plan_says_no_node_count_helps():
    objs = load_text(
        cel_error_cluster()
        + "---\n"
        + docs(
            claim("ok", 2),
            """
apiVersion: v1
kind: Pod
metadata: {namespace: default, name: fine}
spec:
  resourceClaims: [{name: g, resourceClaimName: ok}]
  containers: [{name: c, resources: {claims: [{name: g}]}}]
""",
        )
    )
    plan = nodes_needed(objs, "node-1", max_extra=8)
    assert sorted(plan.blocked) == sorted(f"default/{p.name}" for p in objs.pods if p.name != "fine")
    assert len(plan.blocked) == 4
    assert all("CEL runtime error: no such key: index" in why for why in plan.blocked.values())
    assert plan.extra_nodes == 0 and sorted(plan.tried) == [0]  # nothing else tried: no count helps
    table = plan.table()
    assert "no number of nodes like node-1 can place 4 pod(s):" in table
    assert "the 1 other pending pod(s) need no extra node" in table
    assert "more than" not in table


def test_plan_missing_device_class(capsys, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(docs(NODE, SLICE, claim("a100", template=True).replace("gpu.example.com", "rdma-net"), DEPLOYMENT))
    assert cli.main(["plan", "-f", str(f), "--node-template", "node-1", "-o", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert len(out["blocked"]) == 4
    assert all("could not retrieve device class rdma-net" in why for why in out["blocked"].values())
    assert out["placed"] == 0 and out["pods"] == 4 and out["mix"] == {"node-1": 0}


# ------------------------------------------------------------------ robustness of the CLI
def test_kind_that_is_a_mapping(capsys, tmp_path):
    """rough/r23: a fuzzer's mutation, `kind: {nested: [true]}`."""
    f = tmp_path / "c.yaml"
    f.write_text(docs(CLASS.replace("kind: DeviceClass", "kind:\n  nested:\n  - true"), NODE, SLICE, claim("a")))
    for command in (["allocate"], ["place"], ["explain"], ["validate"], ["taint-impact"]):
        code = cli.main(command + ["-f", str(f)])
        err = capsys.readouterr().err
        assert code in (1, 2) and "Traceback" not in err, (command, err)
    assert cli.main(["allocate", "-f", str(f)]) == 2
    assert (
        "document 1: (no kind) gpu.example.com: field kind: expected a string, got a mapping" in capsys.readouterr().err
    )


def test_stats_on_the_error_path(capsys, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(docs(CLASS, NODE, SLICE, claim("a", selector="device.attributes['gpu.example.com'].index == 0")))
    assert cli.main(["allocate", "-f", str(f), "--stats"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("draopt: error: ") and "CEL runtime error" in err[0]
    stats = json.loads(err[1])
    assert stats["error"] == "DeviceCelError" and stats["load_ms"] >= 0 and stats["total_ms"] >= stats["load_ms"]
    f.write_text("kind: [unclosed")
    assert cli.main(["allocate", "-f", str(f), "--stats"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert json.loads(err[1])["error"] == "InputError"


def test_closed_pipe_ends_quietly(tmp_path):
    """`draopt place ... -o yaml | head`: the reader is gone before draopt writes."""
    f = tmp_path / "c.yaml"
    many = DEPLOYMENT.replace("replicas: 4", "replicas: 200")
    f.write_text(docs(CLASS, NODE, SLICE, claim("a100", template=True), many))
    p = subprocess.Popen(
        [sys.executable, "-m", "draopt", "place", "-f", str(f), "-o", "yaml"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.close()
    err = p.stderr.read().decode()
    code = p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert code == 141


def test_huge_file_of_unused_kinds(tmp_path, capsys):
    f = tmp_path / "big.yaml"
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "default"},
        "data": {"blob": "x" * 2000},
    }
    items = [dict(cm, metadata={"name": f"cm-{i}", "namespace": "default"}) for i in range(3000)]
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))  # about 6 MB
    f2 = tmp_path / "cluster.yaml"
    f2.write_text(docs(CLASS, NODE, SLICE, claim("a")))
    assert cli.main(["allocate", "-f", str(f), "-f", str(f2)]) == 0
    assert "note: skipped 3000 ConfigMap object(s): not used for placement" in capsys.readouterr().err


def test_directory_input_sorted_like_kubectl(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "b.yaml").write_text(docs(claim("second")))
    (d / "a.json").write_text(json.dumps(yaml.safe_load(claim("first"))))
    (d / "c.txt").write_text("not read")
    (d / "0-cluster.yml").write_text(docs(CLASS, NODE, SLICE))
    objs = load_files([str(d)])
    assert [c.name for c in objs.resource_claims] == ["first", "second"]
    with pytest.raises(InputError, match="no such file"):
        load_files([str(d / "missing")])


def test_yaml_read_as_kubernetes_reads_it(capsys, tmp_path):
    """Unquoted timestamps, numeric keys, sets and binary scalars are read as YAML-to-JSON makes
    them (strings and mappings), so `-o json` never meets a type JSON has not got."""
    f = tmp_path / "odd.yaml"
    f.write_text("""
apiVersion: v1
kind: Node
metadata: {name: n1, creationTimestamp: 2026-07-01T10:00:00Z}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
---
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: default
  creationTimestamp: 2026-07-01T10:00:00Z
  annotations: {1: x, true: y}
spec:
  containers: [{name: c}]
  extra: !!set {a, b}
  blob: !!binary aGVsbG8=
""")
    assert cli.main(["place", "-f", str(f), "-o", "json"]) == 0
    pod = json.loads(capsys.readouterr().out)["items"][0]
    assert pod["metadata"]["creationTimestamp"] == "2026-07-01T10:00:00Z"
    assert pod["metadata"]["annotations"] == {"1": "x", "true": "y"}
    assert pod["spec"]["extra"] == {"a": None, "b": None} and pod["spec"]["blob"] == "aGVsbG8="
    assert pod["spec"]["nodeName"] == "n1"


def test_yaml_alias_bomb_is_refused(capsys, tmp_path):
    lines = [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata: {name: lol}",
        "data:",
        "  a0: &a0 [" + ",".join(["lol"] * 10) + "]",
    ]
    lines += [f"  a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    f = tmp_path / "bomb.yaml"
    f.write_text("\n".join(lines) + "\n")
    assert cli.main(["allocate", "-f", str(f)]) == 2
    assert "excessive aliasing" in capsys.readouterr().err
    f.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: &d {self: *d}\n")
    assert cli.main(["allocate", "-f", str(f)]) == 2
    assert "an alias refers to a node that contains it" in capsys.readouterr().err
    # Anchors used as people use them are fine.
    f.write_text(
        docs(
            CLASS,
            NODE,
            SLICE,
            claim("a").replace("requests:", "requests: &reqs").replace("kind: ResourceClaim", "kind: ResourceClaim"),
            claim("b"),
        )
    )
    assert len(load_files([str(f)]).resource_claims) == 2


# ------------------------------------------------------------------ explain: pools that give no devices
def test_explain_names_an_incomplete_pool(capsys, tmp_path):
    """rough/r13's shape: one slice of a 3-slice pool captured (`kubectl get resourceslice NAME`)."""
    f = tmp_path / "c.yaml"
    f.write_text(docs(CLASS, NODE, SLICE.replace("resourceSliceCount: 1", "resourceSliceCount: 3"), claim("a")))
    assert cli.main(["explain", "-f", str(f)]) == 0
    out = capsys.readouterr().out
    assert (
        "pool gpu.example.com/node-1 is incomplete, none of its devices is used: 1 of its 3 "
        "ResourceSlices (generation 1) are in the input" in out
    )
    assert cli.main(["explain", "-f", str(f), "-o", "json"]) == 0
    (section,) = json.loads(capsys.readouterr().out)["sections"]
    assert section["nodes"][0]["pools"][0].startswith("pool gpu.example.com/node-1 is incomplete")


def test_explain_names_a_gate_that_drops_slices(capsys, tmp_path):
    counters = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-counters}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 2}
  sharedCounters: [{name: gpu-0, counters: {memory: {value: 40Gi}}}]
"""
    f = tmp_path / "c.yaml"
    f.write_text(
        docs(CLASS, NODE, SLICE.replace("resourceSliceCount: 1", "resourceSliceCount: 2"), counters, claim("a", 5))
    )
    assert cli.main(["explain", "-f", str(f), "--feature-gates", "DRAPartitionableDevices=false"]) == 0
    out = capsys.readouterr().out
    assert (
        "ResourceSlice node-1-counters is left out: it uses sharedCounters or perDeviceNodeSelection and "
        "DRAPartitionableDevices is off" in out
    )
    assert "pool gpu.example.com/node-1 is incomplete, none of its devices is used: 2 of its 2" not in out


def test_recursive_directory_with_a_link_loop(tmp_path):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "up").symlink_to(d)
    (d / "c.yaml").write_text(docs(CLASS, NODE, SLICE, claim("a")))
    assert len(load_files([str(d)], recursive=True).resource_claims) == 1
