"""`draopt trace import`: openb CSVs as DRA objects, deterministic, valid, read by `place`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from draopt.studies import trace
from draopt.cli import main
from draopt.kube.loader import load_files
from draopt.placement import place
from draopt.validation import validate_files

OPENB = Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"

NODES = """sn,cpu_milli,memory_mib,gpu,model
n-b,32000,131072,2,V100M16
n-a,16000,65536,1,T4
n-c,8000,32768,0,
"""
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p-0,4000,8192,1,1000,,LS,Running,30,100,30
p-1,2000,4096,1,300,,LS,Running,10,100,10
p-2,2000,4096,2,1000,V100M16|V100M32,LS,Running,20,100,20
p-3,500,1024,0,0,,BE,Running,40,100,40
p-4,1500,2048,1,250,T4,LS,Running,50,100,50
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def imported(tmp_path, nodes=NODES, pods=PODS):
    out = tmp_path / "cluster.yaml"
    assert (
        main(
            [
                "trace",
                "import",
                "--nodes",
                write(tmp_path, "n.csv", nodes),
                "--pods",
                write(tmp_path, "p.csv", pods),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    return out


def test_import_objects_and_determinism(tmp_path):
    out = imported(tmp_path)
    text = out.read_text()
    again = tmp_path / "again.yaml"
    assert (
        main(
            ["trace", "import", "--nodes", str(tmp_path / "n.csv"), "--pods", str(tmp_path / "p.csv"), "-o", str(again)]
        )
        == 0
    )
    assert again.read_text() == text
    docs = list(yaml.safe_load_all(text))
    kinds = [d["kind"] for d in docs]
    assert kinds.count("Node") == 3 and kinds.count("ResourceSlice") == 2 and kinds.count("Pod") == 5
    # DeviceClasses: every GPU, then one per model (nodes' and tasks' models).
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass"] == [
        "gpu.example.com",
        "t4.gpu.example.com",
        "v100m16.gpu.example.com",
        "v100m32.gpu.example.com",
    ]
    node_b = next(d for d in docs if d["kind"] == "Node" and d["metadata"]["name"] == "n-b")
    assert node_b["status"]["allocatable"] == {"cpu": "32", "memory": "131072Mi"}
    assert node_b["metadata"]["labels"]["gpu.example.com/model"] == "V100M16"
    sl = next(d for d in docs if d["kind"] == "ResourceSlice" and d["spec"]["nodeName"] == "n-b")
    gpu = sl["spec"]["devices"][1]
    assert gpu["name"] == "gpu-1" and gpu["allowMultipleAllocations"] is True
    assert gpu["attributes"]["model"] == {"string": "V100M16"}
    assert gpu["capacity"]["gpu.example.com/milli"]["value"] == "1000"
    templates = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaimTemplate"}
    assert sorted(templates) == ["gpu-1x1000", "gpu-1x250-t4", "gpu-1x300", "gpu-2x1000-v100m16-v100m32"]
    ex = templates["gpu-2x1000-v100m16-v100m32"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert ex["count"] == 2 and ex["capacity"]["requests"] == {"gpu.example.com/milli": "1000"}
    assert (
        ex["selectors"][0]["cel"]["expression"]
        == 'device.attributes["gpu.example.com"].model in ["V100M16", "V100M32"]'
    )
    pods = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}
    assert pods["p-1"]["metadata"]["creationTimestamp"] == "2023-01-01T00:00:10Z"
    assert "resourceClaims" not in pods["p-3"]["spec"]
    assert pods["p-4"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1500m", "memory": "2048Mi"}


def test_import_is_valid_and_places(tmp_path):
    out = imported(tmp_path)
    assert validate_files([str(out)]).findings == []
    outcome = place(load_files([str(out)]), policy="first-fit", scheduler_config="builtin:name-order")
    where = {p.pod: p.node for p in outcome.result.pods}
    # First node by name. Queue order is creation order: p-1 (share of a GPU) lands first, on n-a's only GPU (T4),
    # so p-4 (T4 only, 250) shares that GPU; p-2 needs two V100s: n-b.
    assert where["openb/p-1"] == "n-a" and where["openb/p-2"] == "n-b" and where["openb/p-4"] == "n-a"
    assert where["openb/p-0"] is None  # n-b's GPUs are taken by p-2, n-a's is shared
    assert where["openb/p-3"] == "n-a"
    shares = [r for key, (a, node) in outcome.result.claims.items() for r in a.devices.results if node == "n-a"]
    assert sorted(r.consumed_capacity["gpu.example.com/milli"] for r in shares) == ["250", "300"]


@pytest.mark.parametrize(
    "which, text, needle",
    [
        ("nodes", "sn,cpu_milli,gpu,model\nx,1,1,T4\n", "missing column(s) memory_mib"),
        (
            "nodes",
            "sn,cpu_milli,memory_mib,gpu,model\nx,lots,1,1,T4\n",
            "line 2: column cpu_milli: 'lots' is not a number",
        ),
        ("nodes", "sn,cpu_milli,memory_mib,gpu,model\nx,1,1,2,\n", "column model: '' is not a GPU model name"),
        ("nodes", "sn,cpu_milli,memory_mib,gpu,model\nx,1,1,-1,T4\n", "column gpu: -1 is out of range"),
        ("nodes", "sn,cpu_milli,memory_mib,gpu,model\nx,1,1,1,T4\nx,1,1,1,T4\n", "node 'x' is listed twice"),
        ("pods", "name,cpu_milli,memory_mib,num_gpu\np,1,1,1\n", "missing column(s) gpu_milli"),
        (
            "pods",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1500\n",
            "column gpu_milli: 1500 is out of range",
        ),
        ("pods", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n", "takes them whole"),
        ("pods", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0,500\n", "without GPUs"),
        ("pods", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1.5,0,0\n", "'1.5' is not a whole number"),
        ("pods", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nP_Q,1,1,0,0\n", "not a valid Kubernetes object name"),
        ("pods", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", "no task rows"),
    ],
)
def test_bad_csv_exit_2(tmp_path, capsys, which, text, needle):
    path = write(tmp_path, f"{which}.csv", text)
    assert main(["trace", "import", f"--{which}", path]) == 2
    err = capsys.readouterr().err
    assert needle in err and path in err and "Traceback" not in err


def test_cli_errors_exit_2(tmp_path, capsys):
    assert main(["trace", "import"]) == 2
    assert "give --nodes CSV, --pods CSV or both" in capsys.readouterr().err
    assert main(["trace", "import", "--nodes", str(tmp_path / "missing.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["trace"])
    assert e.value.code == 2


@pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not in ../shared/data/openb")
def test_openb_default_trace():
    nodes = trace.read_nodes(str(OPENB / "openb_node_list_gpu_node.csv"))
    tasks = trace.read_tasks(str(OPENB / "openb_pod_list_default.csv"))
    assert len(nodes) == 1213 and sum(n.gpus for n in nodes) == 6212
    assert len(tasks) == 8152
    assert sum(1 for t in tasks if t.shared) == 3078
    assert sum(1 for t in tasks if t.num_gpu == 0) == 1088
    objs = trace.import_trace(str(OPENB / "openb_node_list_gpu_node.csv"), str(OPENB / "openb_pod_list_default.csv"))
    slices = [o for o in objs if o["kind"] == "ResourceSlice"]
    assert len(slices) == 1213 and sum(len(s["spec"]["devices"]) for s in slices) == 6212
    # The resampled trace without times and GPU specs reads too (row order is creation order).
    multi = trace.read_tasks(str(OPENB / "openb_pod_list_multigpu50.csv"))
    assert multi[0].creation_time is None and sum(1 for t in multi if t.num_gpu > 1) == 984


def test_replay_errors_catches_each_violation():
    """draopt.studies.trace.replay_errors, the solver-independent check of trace placements: each rule broken once."""
    from draopt.studies.trace import Task, TraceNode, replay_errors

    node = TraceNode("n1", 4000, 8192, 2, "V100M16")
    small = Task("share-a", 1000, 1024, 1, 600)
    other = Task("share-b", 1000, 1024, 1, 500)
    whole = Task("whole", 1000, 1024, 1, 1000)
    spec = Task("spec", 1000, 1024, 1, 1000, ("T4",))
    assert replay_errors([node], [(small, "n1", [0]), (whole, "n1", [1])]) == []
    assert replay_errors([node], [(small, "n1", [0]), (other, "n1", [0])]) == ["n1 gpu-0: [600, 500]"]
    assert replay_errors([node], [(small, "n1", [0]), (whole, "n1", [0])]) == ["n1 gpu-0: [600, 1000]"]
    assert replay_errors([node], [(spec, "n1", [1])]) == ["spec on n1: model V100M16 not in ('T4',)"]
    assert replay_errors([node], [(whole, "n1", [2])]) == ["n1: no GPU 2"]
    assert replay_errors([node], [(whole, "n1", [0, 1])]) == ["whole on n1: [0, 1] for 1 GPU(s)"]
    big = Task("big", 5000, 1024, 0, 0)
    assert replay_errors([node], [(big, "n1", [])]) == ["n1: over cpu or memory"]
    assert replay_errors([node], [(big, "n2", [])]) == ["big: no node n2"]
