"""`draopt compare`: measures checked on clusters small enough to work out by hand."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from draopt.studies import trace
from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet, load_files, parse_object
from draopt.studies.report import compare, measure_policy, to_html

ROOT = Path(__file__).resolve().parents[1]
GANG = ROOT / "examples" / "gang-stranding.yaml"

# node-a: 2 GPUs, node-b: 1 GPU, node-c: 1 GPU but 1 cpu (no pod fits there: every pod asks 2).
# p1 (created first) asks 1 GPU, p2 asks 2 GPUs.
#   first-fit, nodes in name order: p1 -> node-a; p2 fits nowhere (1 GPU left on a and on b).
#   optimal:   p2 -> node-a, p1 -> node-b (the only way to place both).
STRANDING = (
    """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec: {selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-gpu, namespace: default}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu, count: 2}}]}}}
"""
    + "".join(
        f"""---
apiVersion: v1
kind: Node
metadata: {{name: {node}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 64Gi, pods: "110"}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {node}-gpus}}
spec:
  driver: gpu.example.com
  nodeName: {node}
  pool: {{name: {node}, generation: 1, resourceSliceCount: 1}}
  devices: [{", ".join(f"{{name: gpu-{i}}}" for i in range(gpus))}]
"""
        for node, cpu, gpus in (("node-a", 8, 2), ("node-b", 8, 1), ("node-c", 1, 1))
    )
    + "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {pod}, namespace: default, uid: {pod}, creationTimestamp: "2026-11-30T10:00:0{i}Z"}}
spec:
  containers: [{{name: main, image: x, resources: {{requests: {{cpu: "2"}}, claims: [{{name: gpu}}]}}}}]
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: {template}}}]
"""
        for i, (pod, template) in enumerate((("p1", "one-gpu"), ("p2", "two-gpu")))
    )
)


@pytest.fixture()
def stranding(tmp_path):
    path = tmp_path / "stranding.yaml"
    path.write_text(STRANDING)
    return path


def test_measures_by_hand(stranding):
    ff, opt = compare(
        load_files([str(stranding)]), ["first-fit", "optimal"], time_limit=20, scheduler_config="builtin:name-order"
    )
    assert (ff.placed, ff.pods, ff.devices_total, ff.devices_used) == (1, 2, 4, 1)
    assert ff.free_devices == 3 and ff.shapes == 2
    # node-c's GPU: no shape fits there (cpu) -> stranded. node-a's and node-b's free GPU: the
    # 1-GPU shape (half the pods) fits, the 2-GPU shape does not -> 1/2 each.
    assert ff.stranded_devices == 1
    assert ff.fragmentation == 2  # 1/2 + 1/2 + 1
    assert ff.fragmentation_pct == pytest.approx(66.667)
    assert ff.status == "heuristic" and not ff.proven and ff.gap is None
    assert (opt.placed, opt.devices_used, opt.free_devices) == (2, 3, 1)
    assert opt.stranded_devices == 1 and opt.fragmentation == 1  # node-c's GPU only
    assert opt.status == "OPTIMAL" and opt.proven and opt.gap == 0
    assert opt.weighted_placed == 2 and opt.weighted_pods == 2


def test_counters_of_partitioned_gpu():
    """examples/gang-stranding.yaml: first-fit places nothing (the gang fails whole); optimal
    takes the 7g and one 1g slice: all 8 units of the counter set, and the other 1g slice can
    no longer be allocated (its counters are gone), so nothing is free. After first-fit the three
    slices are free: the any-slice shape can use each, the big-slice shape (half the pods) only
    the 7g one: the two 1g slices are fragmented for it (2 x 1/2)."""
    ff, opt = compare(load_files([str(GANG)]), ["first-fit", "optimal"], time_limit=20)
    assert ff.counters == {"memory": {"used": 0, "total": 8}}
    assert (ff.placed, ff.devices_used, ff.free_devices, ff.stranded_devices, ff.fragmentation) == (0, 0, 3, 0, 1)
    assert opt.counters == {"memory": {"used": 8, "total": 8}}
    assert (opt.placed, opt.devices_used, opt.free_devices, opt.stranded_devices) == (2, 2, 0, 0)


def test_shared_gpu_capacity():
    """One node, 2 GPUs shared as consumable capacity (openb style). t0 takes 300 milli of gpu-0;
    t1 (2 whole GPUs) no longer fits. Free: 0.7 + 1 GPU; the shared shape (half the pods) fits,
    the 2-GPU one does not: fragmentation 1.7 / 2."""
    node = trace.TraceNode("n0", 64000, 262144, 2, "V100")
    tasks = [
        trace.Task("t0", 1000, 1024, 1, 300, creation_time=0),
        trace.Task("t1", 1000, 1024, 2, 1000, creation_time=1),
    ]
    docs = (
        trace.class_objects({"V100"})
        + trace.node_objects([node])
        + trace.slice_objects([node])
        + trace.workload_objects(tasks)
    )
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    r = measure_policy(objs, "first-fit", features=Features.from_gates(), time_limit=10)
    assert r.placed == 1 and r.devices_used == 1
    assert r.capacity == {trace.CAPACITY: {"used": 300, "total": 2000}}
    assert r.free_devices == pytest.approx(1.7) and r.stranded_devices == 0
    assert r.fragmentation == pytest.approx(0.85)


def test_first_fit_with_its_own_scheduler_configuration(stranding):
    """first-fit:CONFIG labels the column with the spec and places with that configuration."""
    by_name, ff_default, most = compare(
        load_files([str(stranding)]), ["first-fit:builtin:name-order", "first-fit", "first-fit:builtin:most-allocated"]
    )
    assert by_name.policy == "first-fit:builtin:name-order"
    assert (by_name.placed, by_name.stranded_devices, by_name.fragmentation) == (1, 1, 2)  # as by hand above
    assert most.policy == "first-fit:builtin:most-allocated" and ff_default.policy == "first-fit"
    with pytest.raises(InputError, match="unknown placement policy 'optimal:builtin:default'"):
        compare(load_files([str(stranding)]), ["first-fit", "optimal:builtin:default"])


def test_capacity_too_small_for_a_shape_is_fragmented():
    """One node, 2 GPUs shared as consumable capacity. t0 (700 milli) takes gpu-0 (300 left), t1
    (500) does not fit there: gpu-1 (500 left); t2 (a whole GPU) fits nowhere. Shapes (1/3 each):
    700 fits no GPU, 500 fits gpu-1 only, whole fits none. gpu-0's 0.3 no shape can use: stranded,
    and fragmented for every shape (0.3); gpu-1's 0.5 is usable by the 500 shape only
    (0.5 x 2/3). The node-level measure alone would strand nothing."""
    node = trace.TraceNode("n0", 64000, 262144, 2, "V100")
    tasks = [
        trace.Task("t0", 1000, 1024, 1, 700, creation_time=0),
        trace.Task("t1", 1000, 1024, 1, 500, creation_time=1),
        trace.Task("t2", 1000, 1024, 1, 1000, creation_time=2),
    ]
    docs = (
        trace.class_objects({"V100"})
        + trace.node_objects([node])
        + trace.slice_objects([node])
        + trace.workload_objects(tasks)
    )
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    r = measure_policy(objs, "first-fit", features=Features.from_gates(), time_limit=10)
    assert r.placed == 2 and r.capacity == {trace.CAPACITY: {"used": 1200, "total": 2000}}
    assert r.free_devices == pytest.approx(0.8) and r.shapes == 3
    assert r.stranded_devices == pytest.approx(0.3)
    assert r.fragmentation == pytest.approx(0.3 + 0.5 * 2 / 3)


def test_needs_two_distinct_known_policies():
    objs = load_files([str(GANG)])
    with pytest.raises(InputError, match="two or more"):
        compare(objs, ["optimal"])
    with pytest.raises(InputError, match="given twice"):
        compare(objs, ["optimal", "optimal"])
    with pytest.raises(InputError, match="unknown placement policy 'best'"):
        compare(objs, ["first-fit", "best"])


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "draopt", "compare", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_table_json_and_self_contained_html(stranding, tmp_path):
    html_path = tmp_path / "report.html"
    p = _run(
        "-f",
        str(stranding),
        "--policy",
        "first-fit",
        "--policy",
        "optimal",
        "--time-limit",
        "20",
        "--scheduler-config",
        "builtin:name-order",
        "-o",
        "json",
        "--html",
        str(html_path),
    )
    assert p.returncode == 0, p.stderr
    got = {r["policy"]: r for r in json.loads(p.stdout)["policies"]}
    assert got["first-fit"]["stranded_devices"] == 1 and got["optimal"]["placed"] == 2
    assert got["optimal"]["proven"] is True and got["first-fit"]["proven"] is False
    page = html_path.read_text()
    assert page.count("<svg") == 7  # one plot per measure
    made = json.loads(p.stdout)["provenance"]  # the same record in the JSON and the page's footer
    assert made["time_limit"] == 20.0 and made["seed"] == 0 and set(made["inputs"]) == set(map(str, [stranding]))
    assert '<footer class="provenance">' in page and made["date"] in page
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "<script" not in page and "<link" not in page and "@import" not in page
    t = _run(
        "-f",
        str(stranding),
        "--time-limit",
        "20",
        "--scheduler-config",
        "builtin:name-order",
        "--plot",
        str(tmp_path / "m.png"),
    )
    assert t.returncode == 0, t.stderr
    lines = {line.split()[0]: line.split()[1:] for line in t.stdout.splitlines() if line.strip()}
    assert lines["stranded_devices"] == ["1", "1"] and lines["placed"] == ["1", "2"]
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _main(args, capsys) -> tuple[int, str]:
    """The command line in this process (as `draopt compare ...`): exit code and stderr."""
    from draopt.cli import main

    try:
        code = main(["compare", *args])
    except SystemExit as e:  # argparse's own errors
        code = e.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "first-fit"], "two or more policies"),
        (["--policy", "first-fit", "--policy", "nope"], "unknown placement policy 'nope'"),
        (["--policy", "first-fit", "--policy", "first-fit:"], "unknown placement policy 'first-fit:'"),
        (["--time-limit", "0"], "more than 0 seconds"),
        (["--scheduler-config", "builtin:nope"], "builtin:nope"),
    ],
)
def test_cli_bad_input_exits_2(stranding, args, message, capsys):
    code, err = _main(["-f", str(stranding), *args], capsys)
    assert code == 2 and message in err and "Traceback" not in err


def test_cli_bad_yaml_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Node\nmetadata: {name: [\n")
    code, err = _main(["-f", str(bad)], capsys)
    assert code == 2 and "bad.yaml" in err


def test_html_escapes_names():
    from draopt.studies.report import PolicyReport

    r = PolicyReport("<ff>", 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0.1, "heuristic", None)
    page = to_html([r, r], ["<in>.yaml"])
    assert "<ff>" not in page and "&lt;ff&gt;" in page and "&lt;in&gt;.yaml" in page


@pytest.mark.parametrize("flag", ["--html", "--plot"])
@pytest.mark.parametrize(
    "where, message", [("dir", "cannot write: is a directory"), ("missing", "cannot write: no directory")]
)
def test_cli_unwritable_report_fails_before_placing(stranding, tmp_path, flag, where, message, capsys, monkeypatch):
    """--html / --plot to a path that cannot be written: exit 2 before any placement (it was found
    after both placements, the optimal one taking up to --time-limit, with the table printed)."""
    import draopt.studies.report as report

    placed = []
    monkeypatch.setattr(report, "measure_policy", lambda *a, **k: placed.append(a) or None)
    path = tmp_path if where == "dir" else tmp_path / "no" / "report.out"
    code, err = _main(["-f", str(stranding), flag, str(path)], capsys)
    assert code == 2 and f"{flag} {path}: {message}" in err and placed == []


def test_bad_first_fit_configuration_fails_before_placing(stranding, monkeypatch):
    import draopt.studies.report as report

    placed = []
    monkeypatch.setattr(report, "measure_policy", lambda *a, **k: placed.append(a) or None)
    objs = load_files([str(stranding)])
    with pytest.raises(InputError, match="--policy first-fit:builtin:nope: .*unknown built-in configuration"):
        compare(objs, ["first-fit", "first-fit:builtin:nope"])
    assert placed == []
    compare(objs, ["first-fit", "first-fit:builtin:most-allocated"])  # the patch is in the path
    assert len(placed) == 2


@pytest.mark.parametrize(
    "text, note",
    [
        ("", "nothing to place"),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', pods: '10'}}\n",
            "nothing to place",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: [{name: c, image: x}]}\n",
            "no Node in the input",
        ),
    ],
)
def test_cli_nothing_to_place_is_said(tmp_path, text, note, capsys):
    """An input without pending pods, or without nodes, is measured (exit 0) with a note saying so."""
    f = tmp_path / "in.yaml"
    f.write_text(text)
    code, err = _main(["-f", str(f), "--time-limit", "5"], capsys)
    assert code == 0 and f"note: {note}" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "policies",
    [
        ["first-fit", "optimal"],
        ["first-fit", "first-fit:builtin:most-allocated", "first-fit:builtin:name-order", "optimal"],
    ],
)
def test_png_policy_names_do_not_overlap(policies):
    """--plot with scoring profiles side by side: the policy names under the bars do not overlap
    (they were drawn level and ran into each other)."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from draopt.studies.report import PolicyReport, _png_figure

    reports = [
        PolicyReport(
            policy=p,
            pods=2,
            placed=1,
            weighted_pods=2,
            weighted_placed=1,
            devices_total=4,
            devices_used=1,
            free_devices=3,
            stranded_devices=1,
            fragmentation=1.5,
            shapes=1,
            solve_s=0.1,
            status="heuristic",
            gap=None,
        )
        for p in policies
    ]
    fig = _png_figure(reports)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        import math

        for ax in (a for a in fig.axes if a.axison):
            labels = ax.get_xticklabels()
            assert [t.get_text() for t in labels] == policies
            angle = math.radians(labels[0].get_rotation())
            if angle == 0:  # level: the boxes of neighbours are apart
                boxes = [t.get_window_extent(renderer) for t in labels]
                assert all(not a.overlaps(b) for a, b in zip(boxes, boxes[1:])), policies
            else:  # tilted: parallel lines, as far apart as a line of text is high
                xs = [ax.transData.transform((x, 0))[0] for x in ax.get_xticks()]
                height = labels[0].get_fontsize() * fig.dpi / 72
                assert all((b - a) * math.sin(angle) >= height for a, b in zip(xs, xs[1:])), policies
                assert all(
                    t.get_window_extent(renderer).x1 <= ax.transData.transform((x, 0))[0] + height
                    for t, x in zip(labels, ax.get_xticks())
                )  # each ends under its own bar
    finally:
        plt.close(fig)
