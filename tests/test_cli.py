"""The CLI contract: outputs, exit codes, and clear errors for bad input (never a traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"

CLASS = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"""
SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - name: gpu-0
    attributes: {model: {string: a100}}
    capacity: {memory: {value: 40Gi}}
  - name: gpu-1
    attributes: {model: {string: h100}}
    capacity: {memory: {value: 80Gi}}
"""
NODE = """apiVersion: v1
kind: Node
metadata: {name: node-1}
"""


def claim(name="c1", count=1, selector=None, cls="gpu"):
    exactly = {"deviceClassName": cls, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return yaml.safe_dump(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
        }
    )


def run(*args, stdin=None):
    p = subprocess.run(
        [sys.executable, "-m", "draopt", *args], input=stdin, capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p


def write(tmp_path, *docs, name="in.yaml"):
    f = tmp_path / name
    f.write_text("---\n".join(docs))
    return str(f)


def test_example_allocates():
    p = run("allocate", "-f", str(EXAMPLE), "--node", "gpu-node-1", "-o", "json", "--stats")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["kind"] == "List"
    names = [c["metadata"]["name"] for c in out["items"]]
    assert names == ["trainer", "notebook"]
    trainer = out["items"][0]["status"]["allocation"]["devices"]["results"]
    # gpu-0/1 are in use; the first two free GPUs sharing a PCIe root with a NIC are gpu-4/5.
    assert [r["device"] for r in trainer] == ["gpu-4", "gpu-5", "nic-1"]
    stats = json.loads(p.stderr.strip().splitlines()[-1])
    assert {"load_ms", "allocate_ms", "build_ms", "solve_ms", "variables", "constraints"} <= set(stats)


def test_stdin_and_claim_order(tmp_path):
    text = "---\n".join([CLASS, SLICE, NODE, claim("a"), claim("b")])
    p = run(
        "allocate",
        "-f",
        "-",
        "--node",
        "node-1",
        "--claim",
        "default/b",
        "--claim",
        "default/a",
        "-o",
        "json",
        stdin=text,
    )
    assert p.returncode == 0, p.stderr
    items = json.loads(p.stdout)["items"]
    assert [(c["metadata"]["name"], c["status"]["allocation"]["devices"]["results"][0]["device"]) for c in items] == [
        ("b", "gpu-0"),
        ("a", "gpu-1"),
    ]


def test_json_list_input(tmp_path):
    docs = [yaml.safe_load(d) for d in (CLASS, SLICE, NODE, claim("a"))]
    f = tmp_path / "list.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    p = run("allocate", "-f", str(f), "-o", "yaml")
    assert p.returncode == 0, p.stderr
    assert yaml.safe_load(p.stdout)["items"][0]["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


def test_nothing_to_allocate_is_empty_list(tmp_path):
    p = run("allocate", "-f", write(tmp_path, CLASS, SLICE, NODE), "-o", "json")
    assert p.returncode == 0
    assert json.loads(p.stdout)["items"] == []


def test_unschedulable_exit_1(tmp_path):
    p = run("allocate", "-f", write(tmp_path, CLASS, SLICE, NODE, claim(count=3)))
    assert p.returncode == 1
    assert "unschedulable" in p.stderr


@pytest.mark.parametrize(
    "docs,needle",
    [
        (["kind: [unclosed"], "invalid YAML"),
        (["apiVersion: resource.k8s.io/v1alpha1\nkind: DeviceClass\nmetadata: {name: x}\n"], "field apiVersion"),
        (["apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nspec: {}\n"], "field metadata.name"),
        ([SLICE.replace("40Gi", "40Gii")], "spec.devices[0].capacity.memory.value"),
        ([SLICE.replace("resourceSliceCount: 1", "resourceSliceCount: many")], "spec.pool.resourceSliceCount"),
        ([CLASS, SLICE, NODE, claim(selector="device.attributes[")], "CEL compile error"),
        ([CLASS, SLICE, NODE, claim(selector='device.attributes["gpu.example.com"].nosuch == 1')], "CEL runtime error"),
        ([CLASS, SLICE, NODE, claim(cls="missing")], "could not retrieve device class missing"),
        (["- not a mapping"], "expected a Kubernetes object"),
    ],
)
def test_bad_input_exit_2(tmp_path, docs, needle):
    p = run("allocate", "-f", write(tmp_path, *docs))
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert needle in p.stderr, p.stderr


def test_bad_flags_exit_2(tmp_path):
    f = write(tmp_path, CLASS, SLICE, NODE, claim())
    assert run("allocate", "-f", f, "--feature-gates", "DRANope=true").returncode == 2
    assert run("allocate", "-f", f, "--feature-gates", "DRAPrioritizedList=maybe").returncode == 2
    p = run("allocate", "-f", f, "--claim", "default/none")
    assert p.returncode == 2 and "no ResourceClaim default/none" in p.stderr
    # one claim named twice, with and without its namespace
    p = run("allocate", "-f", f, "--claim", "c1", "--claim", "default/c1")
    assert p.returncode == 2 and "--claim default/c1: named twice" in p.stderr
    two = write(tmp_path, CLASS, SLICE, NODE, claim(), claim("c2"))
    assert run("allocate", "-f", two, "--claim", "c1", "--claim", "c2").returncode == 0
    p = run("allocate", "-f", f, "--node", "node-9")
    assert p.returncode == 2 and "no Node node-9" in p.stderr
    assert run("allocate", "-f", str(tmp_path / "missing.yaml")).returncode == 2
    assert run("allocate").returncode == 2


def test_deterministic_output(tmp_path):
    f = str(EXAMPLE)
    a = run("allocate", "-f", f, "-o", "json", "--deterministic-share-ids").stdout
    b = run("allocate", "-f", f, "-o", "json", "--deterministic-share-ids").stdout
    assert a == b and a


def test_unknown_fields_are_kept(tmp_path):
    c = yaml.safe_load(claim())
    c["metadata"]["annotations"] = {"team": "ml"}
    c["spec"]["devices"]["futureField"] = {"x": 1}
    p = run("allocate", "-f", write(tmp_path, CLASS, SLICE, NODE, yaml.safe_dump(c)), "-o", "json")
    out = json.loads(p.stdout)["items"][0]
    assert out["spec"]["devices"]["futureField"] == {"x": 1}
    assert out["metadata"]["annotations"] == {"team": "ml"}


POD = """apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers: [{name: c}]
"""


@pytest.mark.parametrize(
    "docs,args,needle",
    [
        (
            [POD.replace("[{name: c}]", "[{name: c, resources: {requests: {cpu: lots}}}]")],
            [],
            "spec.containers[0].resources.requests.cpu",
        ),
        (
            [POD.replace("spec:\n", "spec:\n  schedulingGroup: {podGroupName: nope}\n")],
            [],
            "spec.schedulingGroup.podGroupName: PodGroup ml/nope not found",
        ),
        ([POD], ["--time-limit", "0"], "the time limit must be more than 0 seconds"),
        ([POD], ["--policy", "best"], "invalid choice"),
    ],
)
def test_place_bad_input_exit_2(tmp_path, docs, args, needle):
    p = run("place", "-f", write(tmp_path, *docs), *args)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert needle in p.stderr, p.stderr


def test_place_and_explain_exit_codes(tmp_path):
    f = write(tmp_path, POD)
    p = run("place", "-f", f)
    assert p.returncode == 1 and "no Node objects in the input" in p.stdout
    p = run("place", "-f", str(ROOT / "examples" / "gang-stranding.yaml"), "--policy", "optimal", "-o", "json")
    assert p.returncode == 0
    items = json.loads(p.stdout)["items"]
    assert sorted(i["spec"]["nodeName"] for i in items if i["kind"] == "Pod") == ["node-1", "node-1"]
    assert all(i["status"]["reservedFor"] for i in items if i["kind"] == "ResourceClaim")
    p = run("explain", "-f", f, "--pod", "ml/none")
    assert p.returncode == 2 and "no Pod ml/none" in p.stderr


def test_place_stats_one_json_line_per_policy():
    r = run(
        "place",
        "-f",
        str(ROOT / "examples" / "gang-stranding.yaml"),
        "--policy",
        "optimal",
        "--compare",
        "--stats",
        "-o",
        "table",
    )
    lines = [json.loads(x) for x in r.stderr.splitlines() if x.startswith("{")]
    assert [x["policy"] for x in lines] == ["optimal", "first-fit"]
    opt = lines[0]
    assert opt["placed"] == 2 and opt["status"] == "OPTIMAL" and opt["variables"] > 0
    assert opt["load_s"] >= 0 and opt["place_s"] > 0 and opt["pods_per_s"] > 0 and opt["peak_rss_mib"] > 0
    assert lines[1]["placed"] == 0
