"""`draopt compare --html`: the placement map (nodes x devices, coloured by the pod that holds
each, every policy side by side), rendered in a real headless browser.

The page is opened by Chromium (Debian's `chromium`; skipped where no Chromium is installed):
`--dump-dom` gives the document as the browser built it, whose text is checked, and
`--screenshot` draws it. `DRAOPT_UPDATE_SCREENSHOT=1` also writes the screenshot to
docs/studies/placement-map.png.

The workload is the textbook case where kube-scheduler's default profile loses: NodeResourcesFit's
LeastAllocated score (pkg/scheduler/framework/plugins/noderesources/least_allocated.go) spreads
the small pods that come first over every node, so no node keeps the 8 free GPUs a large pod
needs; the optimal policy packs the small pods and places every pod.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from draopt.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOT = ROOT / "docs" / "studies" / "placement-map.png"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def spread_vs_pack(nodes: int = 64, gpus: int = 8, small: int = 128, large: int = 48) -> list[dict]:
    """`nodes` nodes of `gpus` GPUs; `small` one-GPU pods created first, then `large` pods of
    `gpus` GPUs each: exactly as many GPUs as the cluster has when small + large * gpus =
    nodes * gpus."""
    return gpu_cluster(nodes, gpus, [("small", small, 1, "2"), ("large", large, gpus, "16")])


def gpu_cluster(nodes: int, gpus: int, pods: list[tuple[str, int, int, str]]) -> list[dict]:
    """`nodes` nodes of `gpus` GPUs, and per (kind, count, GPUs, cpu) `count` pods of one claim
    of that many GPUs, created in that order."""
    docs: list[dict] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
    ]
    for i in range(nodes):
        name = f"node-{i:02d}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}},
            }
        )
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": f"gpu-{g}"} for g in range(gpus)],
                },
            }
        )
    created = 0
    for kind, count, want, cpu in pods:
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"{kind}-gpus", "namespace": "ml"},
                "spec": {
                    "spec": {
                        "devices": {
                            "requests": [
                                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": want}}
                            ]
                        }
                    }
                },
            }
        )
        for k in range(count):
            minute, created = created, created + 1
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{kind}-{k:03d}",
                        "namespace": "ml",
                        "creationTimestamp": f"2026-01-01T{minute // 60:02d}:{minute % 60:02d}:00Z",
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "x",
                                "resources": {"requests": {"cpu": cpu}, "claims": [{"name": "gpu"}]},
                            }
                        ],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": f"{kind}-gpus"}],
                    },
                }
            )
    return docs


def _browser() -> str | None:
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


def _run_browser(browser: str, *args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """compare --html on the 64-node workload: (page path, the JSON measures)."""
    import json

    where = tmp_path_factory.mktemp("map")
    cluster = where / "spread-vs-pack.yaml"
    cluster.write_text(yaml.safe_dump_all(spread_vs_pack(), sort_keys=False))
    page = where / "report.html"
    out = where / "out.json"
    import contextlib
    import io

    buf = io.StringIO()
    here = os.getcwd()
    os.chdir(where)  # the page names its input as given: spread-vs-pack.yaml, not a temporary path
    try:
        with contextlib.redirect_stdout(buf):
            code = main(
                ["compare", "-f", cluster.name, "--time-limit", "20", "-o", "json", "--html", str(page), "--quiet"]
            )
    finally:
        os.chdir(here)
    assert code == 0
    out.write_text(buf.getvalue())
    return page, json.loads(buf.getvalue())


def test_map_shows_both_policies_on_every_node(report):
    page, measures = report
    text = page.read_text()
    by_policy = {p["policy"]: p for p in measures["policies"]}
    assert by_policy["first-fit"]["placed"] == 128 and by_policy["optimal"]["placed"] == 176
    maps = re.findall(r'<div class="map">.*?</table>', text, flags=re.S)
    assert len(maps) == 2
    for one in maps:
        assert len(re.findall(r"<tr><th>node-\d\d</th>", one)) == 64
        assert one.count("<td ") == 64 * 8
    ff, opt = maps
    # first-fit spreads the small pods: two on every node; optimal fills 16 nodes with them
    assert len(re.findall(r"<tr><th>node-\d\d</th>(?:<td class=\"held\"[^>]*></td>){2}<td class=\"free\"", ff)) == 64
    assert ff.count('class="held"') == 128 and opt.count('class="held"') == 128 + 48 * 8
    assert "Not placed (48): ml/large-000" in text and "Every pod placed." in text


def test_map_is_self_contained(report):
    text = report[0].read_text()
    assert "<script" not in text and not re.search(r'(src|href)="(https?:)?//', text)


@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (apt-get install chromium)")
def test_chromium_renders_the_map(report, tmp_path):
    page, _ = report
    browser = _browser()
    dom = _run_browser(browser, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    visible = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(style|svg)\b.*?</\1>", " ", dom.stdout, flags=re.S)))
    words = " ".join(visible.split())
    for expected in (
        "Placement map",
        "first-fit",
        "optimal",
        "128 of 176 pods placed",
        "176 of 176 pods placed",
        "on 64 nodes",
        "on 64 nodes",
        "node-00",
        "node-63",
        "Not placed (48)",
        "ml/large-047",
        "Every pod placed.",
        "Claims, by what they take",
        "1 device",
        "8 devices",
    ):
        assert expected in words, expected
    # the browser's document: the page's title, and one plot per measure, each drawn (bars, axes, labels)
    from draopt.studies.report import PLOTTED

    assert re.search(r"<title>draopt compare</title>", dom.stdout)
    svgs = re.findall(r"<svg\b.*?</svg>", dom.stdout, flags=re.S)
    assert len(svgs) == len(PLOTTED) and all(svg.count("<path") >= 5 and "<text" in svg for svg in svgs)
    # every cell of both maps is laid out with a size (18 x 14 px in the style sheet)
    assert dom.stdout.count('<td class="held"') == 128 + 128 + 48 * 8
    shot = tmp_path / "map.png"
    drawn = _run_browser(browser, f"--screenshot={shot}", "--window-size=1200,2050", page.as_uri())
    assert drawn.returncode == 0 and shot.stat().st_size > 10_000, drawn.stderr[-2000:]
    if os.environ.get("DRAOPT_UPDATE_SCREENSHOT"):
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)


def test_a_large_cluster_is_cut_to_the_busy_nodes():
    """More nodes than MAP_NODES: the nodes holding a device come first, the page says how many
    are left out, and the unplaced pods are named up to MAP_UNPLACED (their count in full)."""
    from draopt.studies.report import MAP_NODES, MAP_UNPLACED, PLACED, Hold, PolicyReport, placement_map

    device_map = {
        f"n{i:04d}": [("gpu-0", (Hold(f"ns/p{i:04d}", PLACED, 1.0, "1 device"),) if i % 3 == 0 else ()), ("gpu-1", ())]
        for i in range(1000)
    }
    report = PolicyReport(
        "first-fit",
        600,
        334,
        600,
        334,
        2000,
        334,
        1666,
        0,
        0,
        1,
        0.1,
        "heuristic",
        None,
        device_map=device_map,
        unplaced=[f"ns/q{i:04d}" for i in range(266)],
    )
    page = placement_map([report])
    rows = re.findall(r"<tr><th>(n\d{4})</th>", page)
    assert len(rows) == MAP_NODES and all(int(n[1:]) % 3 == 0 for n in rows) and rows == sorted(rows)
    assert f"{1000 - MAP_NODES} of 1000 nodes are summarised under each map" in page
    # the rest in one sentence: 334 busy nodes in all, MAP_NODES of them drawn
    assert (
        f"The other {1000 - MAP_NODES} nodes: {334 - MAP_NODES} hold pods it placed, on {334 - MAP_NODES} of their"
        in page
    )
    assert page.count('<li><span class="swatch"') == 1  # the legend: one shape (1 device)
    assert "Not placed (266): " in page and f"ns/q{MAP_UNPLACED - 1:04d} and {266 - MAP_UNPLACED} more" in page


def test_shared_devices_show_every_claim_and_its_share(tmp_path):
    """openb-style pods sharing GPUs through consumable capacity: every pod is on the map, each
    with its share of the device (not only the first claim, and a shared GPU is not drawn full)."""
    import draopt
    from draopt.kube.loader import ObjectSet, load_files
    from draopt.studies import report as rep
    from draopt.studies import simulate as sim
    from draopt.studies import trace

    mini = ROOT / "examples" / "openb-mini"
    tasks = str(mini / "tasks.csv")
    objects: ObjectSet = load_files([str(mini / "cluster.yaml")])
    objects.extend(sim._object_set(trace.workload_objects(trace.read_tasks(tasks, what="--trace")), tasks))
    reports = draopt.compare(objects, ["first-fit", "optimal"], time_limit=10)
    cells = [holds for cells in reports[0].device_map.values() for _, holds in cells if holds]
    holders = {h.holder.split("/")[-1] for holds in cells for h in holds}
    assert reports[0].placed == 5 and holders == {"t-0", "t-1", "t-2", "t-3", "t-4"}  # every placed pod
    shared = [holds for holds in cells if len(holds) > 1]
    assert shared and all(sum(h.share for h in holds) <= 1 for holds in shared)
    page = rep.placement_map(reports)
    assert re.search(r'<td class="held" style="background:linear-gradient\(to right, [^"]*#fff \d+% 100%\)"', page)
    assert re.search(r'title="n-\d gpu-\d: [^"]*\(30%\)[^"]*% used">\d</td>', page)
    assert "30% of a device" in page and "1 device" in page  # the legend: shapes, not pods
