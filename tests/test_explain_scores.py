"""`draopt explain --scores`: the score table and its JSON, with the default profile and with a
KubeSchedulerConfiguration of custom weights (the numbers themselves: test_scheduler_score_breakdown)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from test_scheduler_score_breakdown import CUSTOM, _cluster, _pod

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    p = subprocess.run([sys.executable, "-m", "draopt", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def _input(tmp_path, docs=None) -> str:
    f = tmp_path / "cluster.yaml"
    f.write_text(yaml.safe_dump_all(docs or _cluster()))
    return str(f)


def test_table_shows_each_plugin_on_the_chosen_node_and_runners_up(tmp_path):
    p = run("explain", "-f", _input(tmp_path), "--pod", "p2", "--scores")
    assert p.returncode == 0, p.stderr
    text = p.stdout.split("== pod default/p2: scores in its scheduling cycle\n", 1)[1]
    lines = text.splitlines()
    assert lines[0].split() == ["PLUGIN", "WEIGHT", "*n3", "n4", "n1", "n2"]
    rows = {line.split()[0]: line.split() for line in lines[1:11]}
    assert rows["TaintToleration"][1:] == ["3", "100x3=300", "100x3=300", "100x3=300", "0x3=0"]
    assert rows["NodeAffinity"][1:] == ["2", "100x2=200", "100x2=200", "0x2=0", "0x2=0"]
    assert rows["TOTAL"][1:] == ["651", "645", "417", "145"]
    assert "profile default-scheduler: 4 feasible node(s) of 4 scored; * the chosen node" in text


def test_json_scores(tmp_path):
    p = run("explain", "-f", _input(tmp_path), "--pod", "p2", "--scores", "-o", "json")
    assert p.returncode == 0, p.stderr
    (section,) = [s for s in json.loads(p.stdout)["sections"] if "scores" in s]
    scores = section["scores"]
    assert scores["pod"] == "default/p2" and scores["scored"] and not scores["searchCut"]
    assert scores["weights"]["TaintToleration"] == 3
    first = scores["nodes"][0]
    assert first["node"] == "n3" and first["chosen"]
    assert first["total"] == sum(first["weighted"].values()) == 651
    assert [n["chosen"] for n in scores["nodes"]] == [True, False, False, False]


def test_custom_weights_from_the_scheduler_config(tmp_path):
    config = tmp_path / "sched.yaml"
    config.write_text(CUSTOM)
    p = run("explain", "-f", _input(tmp_path), "--pod", "p1", "--scores", "--scheduler-config", str(config))
    assert p.returncode == 0, p.stderr
    text = p.stdout.split("scores in its scheduling cycle\n", 1)[1]
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.strip()}
    assert rows["NodeResourcesFit"][1] == "5" and rows["TaintToleration"][1] == "1"
    assert "NodeResourcesBalancedAllocation" not in rows
    # MostAllocated packs: the smallest node, 2 of its 4 cpus: 50 x 5
    assert rows["PLUGIN"][2] == "*n1" and rows["NodeResourcesFit"][2] == "50x5=250"


def test_a_pod_not_placed_and_name_order_say_why(tmp_path):
    docs = _cluster() + [_pod("p5", "64")]
    p = run("explain", "-f", _input(tmp_path, docs), "--pod", "p5", "--scores")
    assert "scores in its scheduling cycle: not placed: no node passed the filters" in p.stdout
    p = run("explain", "-f", _input(tmp_path), "--pod", "p1", "--scores", "--scheduler-config", "builtin:name-order")
    assert "builtin:name-order has no score plugins" in p.stdout


def test_scores_needs_pods(tmp_path):
    p = run("explain", "-f", _input(tmp_path), "--scores")
    assert p.returncode != 0
    assert "--scores: name the pods with --pod" in p.stderr


def test_a_pod_given_back_with_its_gang_and_a_tie():
    p = run(
        "explain",
        "-f",
        "examples/mig-gangs.yaml",
        "--pod",
        "ml/trainer-1-worker",
        "--pod",
        "ml/trainer-0-chief",
        "--scores",
    )
    assert p.returncode == 0, p.stderr
    # (its last cycle is the failed gang's retry after the other pods, as kube-scheduler 1.37 runs it)
    assert "scores in its scheduling cycle (its last; bound to node-3, then given back: it ends unplaced)" in p.stdout
    assert "4 nodes share the best total: the tie is broken at random" in p.stdout
