"""`draopt simulate --stats`: one JSON line on stderr with the phase times, per-policy seconds
and arrivals per second, and peak RSS (issue 11, part 4)."""

from __future__ import annotations

import json

from test_simulate import files  # noqa: F401  (fixture: a small imported trace)

from draopt.cli import main


def test_simulate_stats_line(files, capsys):  # noqa: F811
    cluster, tasks_csv = files
    args = [
        "simulate",
        "-f",
        cluster,
        "--trace",
        tasks_csv,
        "--inflation",
        "0.8,1.0",
        "--runs",
        "2",
        "--policy",
        "first-node,fgd",
        "--quiet",
        "-o",
        "csv",
    ]
    assert main(args + ["--stats"]) == 0
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.startswith("{")]
    assert len(lines) == 1
    st = json.loads(lines[0])
    assert set(st) == {"load_s", "build_s", "simulate_s", "policies", "peak_rss_mib"}
    assert set(st["policies"]) == {"first-node", "fgd"}
    for p in st["policies"].values():
        assert p["arrivals"] > 0 and p["seconds"] >= 0
        assert p["arrivals_per_s"] is None or p["arrivals_per_s"] > 0
    assert st["simulate_s"] >= max(p["seconds"] for p in st["policies"].values())
    assert st["peak_rss_mib"] > 10
    # The table on stdout is the one without --stats.
    assert main(args) == 0
    assert capsys.readouterr().out == captured.out
