"""allocate_ms as the CLI reports it (`draopt allocate --stats`), one fresh process per case:
nothing cached between cases, CEL compile of each case's expressions included. For every
tests/conformance/cases/gen-*.yaml; prints median / p90 / worst next to Kubernetes' own
allocator time on the same cases (expect.reference_elapsed_ns).

    python benchmarks/bench_cli_stats.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
import run as conformance  # noqa: E402


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per case (median taken)")
    args = ap.parse_args()
    ours, theirs = [], []
    for path in sorted((ROOT / "tests" / "conformance" / "cases").glob("gen-*.yaml")):
        case = yaml.safe_load(path.read_text())
        docs = list(case.get("objects") or []) + [dict(case["node"], apiVersion="v1", kind="Node")] + case["claims"]
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump_all(docs, f)
        cmd = [
            sys.executable,
            "-m",
            "draopt",
            "allocate",
            "-f",
            f.name,
            "--stats",
            "-o",
            "json",
            "--feature-gates",
            conformance.gate_arg(case.get("features")),
            "--node",
            case["node"]["metadata"]["name"],
        ]
        for c in case["claims"]:
            cmd += ["--claim", f"{c['metadata'].get('namespace', 'default')}/{c['metadata']['name']}"]
        runs = []
        for _ in range(args.repeat):
            p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            lines = [ln for ln in p.stderr.splitlines() if ln.startswith("{")]
            if lines:
                runs.append(json.loads(lines[-1])["allocate_ms"])
        os.unlink(f.name)
        if runs:
            ours.append(statistics.median(runs))
            theirs.append(case["expect"]["reference_elapsed_ns"] / 1e6)
    print(f"{len(ours)} gen-* cases, {args.repeat} fresh processes each (median); allocate_ms from --stats")
    print(f"{'':26s}{'median':>10s}{'p90':>10s}{'worst':>10s}")
    print(f"{'draopt (CLI, fresh)':26s}{statistics.median(ours):10.3f}{pct(ours, 0.9):10.3f}{max(ours):10.3f}")
    print(f"{'kubernetes (ref_ns)':26s}{statistics.median(theirs):10.3f}{pct(theirs, 0.9):10.3f}{max(theirs):10.3f}")
    print(f"{'target':26s}{2.7:10.3f}{6.7:10.3f}{2300:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
