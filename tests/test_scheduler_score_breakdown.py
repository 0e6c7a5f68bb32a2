"""`Scheduler.plugin_scores` and the ScoreBreakdown `draopt explain --scores` shows: the same
arithmetic as the scheduler's own choice, and, where Go is installed, the chosen node's total
equal to the score kube-scheduler reports for the bind (the scheduler oracle's `score`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from draopt.cluster.firstfit import ScoreWatch
from draopt.crosscheck import gobuild
from draopt.kube.features import Features
from draopt.kube.loader import load_files
from draopt.placement import place
from draopt.scheduler import parse_config

from helpers import scenario_objects

ROOT = Path(__file__).resolve().parent.parent
ORACLE_DATA = ROOT / "draopt" / "crosscheck" / "oracles" / "scheduler" / "testdata"

# A profile with custom weights: MostAllocated over cpu, NodeResourcesFit weighing 5,
# TaintToleration 1, BalancedAllocation off.
CUSTOM = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 5
      - name: TaintToleration
        weight: 1
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
"""


def _node(name: str, cpu: str, zone: str = "", taint: bool = False) -> dict:
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    node: dict = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
    }
    if taint:
        node["spec"] = {"taints": [{"key": "slow", "value": "yes", "effect": "PreferNoSchedule"}]}
    return node


def _pod(name: str, cpu: str, **spec) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": f"2026-01-01T00:00:{name[-1]}0Z"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
            **spec,
        },
    }


def _cluster() -> list[dict]:
    """Four nodes of different sizes in two zones, one with a PreferNoSchedule taint, and pods
    with a preferred node affinity."""
    prefer_b = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 40,
                    "preference": {
                        "matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]
                    },
                }
            ]
        }
    }
    return [
        _node("n1", "4", "a"),
        _node("n2", "8", "a", taint=True),
        _node("n3", "16", "b"),
        _node("n4", "8", "b"),
        _pod("p1", "2"),
        _pod("p2", "3", affinity=prefer_b),
        _pod("p3", "1"),
        _pod("p4", "6", affinity=prefer_b),
    ]


def _breakdowns(objects, config=None, prefer=None, features=None) -> tuple[dict, object]:
    """place() with every pod's scoring cycle watched: (pod key -> ScoreBreakdown, outcome);
    `objects`: an ObjectSet, or documents."""
    if isinstance(objects, list):
        objects = scenario_objects(objects)
    got: dict = {}
    watch = ScoreWatch(frozenset(f"{p.namespace}/{p.name}" for p in objects.pods), lambda b: got.__setitem__(b.pod, b))
    outcome = place(objects, features=features, scheduler_config=config, prefer_nodes=prefer, watch_scores=watch)
    return got, outcome


def test_breakdown_chooses_as_the_scheduler_does():
    got, outcome = _breakdowns(_cluster())
    placed = {p.pod: p.node for p in outcome.result.pods}
    assert set(got) == {k for k, v in placed.items() if v}
    for key, b in got.items():
        assert b.chosen == placed[key]
        totals = b.totals
        assert totals[b.nodes.index(b.chosen)] == max(totals)
        assert [p for p, _ in b.plugins][:3] == ["TaintToleration", "NodeAffinity", "NodeResourcesFit"]
        assert all(0 <= s <= 100 for row in b.scores for s in row)
    # the tainted node scores less on TaintToleration, zone b more on NodeAffinity for p2
    b = got["default/p2"]
    tt = [p for p, _ in b.plugins].index("TaintToleration")
    na = [p for p, _ in b.plugins].index("NodeAffinity")
    by_node = dict(zip(b.nodes, b.scores))
    assert by_node["n2"][tt] == 0 and by_node["n1"][tt] == 100
    assert by_node["n3"][na] == 100 and by_node["n1"][na] == 0


@pytest.mark.parametrize("path", ["examples/mig-gangs.yaml", "examples/gang-topology.yaml", None])
def test_watching_changes_no_placement(path):
    """Watching every pod (scores kept, one-node cycles scored too) places exactly as not watching."""
    objects = load_files([str(ROOT / path)]) if path else scenario_objects(_cluster())
    plain = place(objects, seed=3)
    got, _ = _breakdowns(objects)
    assert got
    again = place(objects, seed=3, watch_scores=ScoreWatch(frozenset(got), lambda b: None))
    assert [(p.pod, p.node) for p in again.result.pods] == [(p.pod, p.node) for p in plain.result.pods]
    assert again.result.claims == plain.result.claims


def test_custom_weights_profile():
    config = parse_config(yaml.safe_load(CUSTOM), "custom.yaml")
    got, _ = _breakdowns(_cluster(), config)
    b = got["default/p1"]
    weights = dict(b.plugins)
    assert weights["NodeResourcesFit"] == 5 and weights["TaintToleration"] == 1
    assert "NodeResourcesBalancedAllocation" not in weights
    fit = [p for p, _ in b.plugins].index("NodeResourcesFit")
    for row, total in zip(b.scores, b.totals):
        assert total == sum(w * s for (_, w), s in zip(b.plugins, row))
    # MostAllocated over cpu: 2 of 4 cpus on n1 is 50, the best fill
    assert dict(zip(b.nodes, b.scores))["n1"][fit] == 50
    doc = b.to_json()
    assert doc["weights"]["NodeResourcesFit"] == 5
    first = doc["nodes"][0]
    assert first["chosen"] and first["weighted"]["NodeResourcesFit"] == 5 * first["scores"]["NodeResourcesFit"]


def test_single_feasible_node_is_not_scored():
    docs = [_node("n1", "4"), _node("n2", "1"), _pod("p1", "2")]
    got, _ = _breakdowns(docs)
    b = got["default/p1"]
    assert not b.scored and b.nodes == ("n1",) and "without scoring" in b.scope()


def test_percentage_of_nodes_to_score_limits_the_nodes_shown():
    docs = [_node(f"n{i:03d}", "8") for i in range(120)] + [_pod("p1", "1")]
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 10,
        },
        "pct.yaml",
    )
    got, _ = _breakdowns(docs, config)
    b = got["default/p1"]
    assert b.search_cut and len(b.nodes) == 100 and b.nodes_in_cluster == 120
    assert "100 of 120 nodes scored" in b.scope()
    assert len(b.to_json()["nodes"]) == 5


# --------------------------------------------------------------------------- against kube-scheduler


@pytest.fixture(scope="module", params=("1.37", "1.36"))
def minor(request):
    if gobuild.go_path() is None:
        pytest.skip("Go is not installed: no scheduler oracle")
    try:
        gobuild.oracle_binary("scheduler", request.param)
    except gobuild.OracleUnavailable as e:
        pytest.skip(f"the scheduler oracle cannot be built here: {e}")
    return request.param


# Inputs the oracle binds pods of with scores: pod groups (gang-topology, mig-gangs: draopt scores
# each pod within its group's placement; PodGroup v1beta1, which 1.37 serves), extended resources
# backed by DRA, a custom profile.
FILE_INPUTS = (
    "examples/gang-topology.yaml",
    "examples/mig-gangs.yaml",
    "tests/data/crosscheck/extended-mixed.yaml",
    "tests/data/crosscheck/extended-init-containers.yaml",
)
ONLY_137 = {"gang-topology.yaml", "mig-gangs.yaml"}

# 130 nodes, percentageOfNodesToScore 10: the search stops at 100 feasible nodes, from the start
# index the previous cycle left (nodes without zones: the scheduler's order is the name order).
PERCENTAGE = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 10
"""


def _many_nodes() -> list[dict]:
    return [_node(f"n{i:03d}", str(4 + i % 5)) for i in range(130)] + [
        _pod(f"p{i}", str(1 + i % 3)) for i in range(1, 6)
    ]


def _oracle_inputs() -> list[tuple[str, object, str | None]]:
    out: list[tuple[str, object, str | None]] = [
        ("four-nodes", _cluster(), None),
        ("custom-weights", _cluster(), CUSTOM),
        ("130-nodes-10-percent", _many_nodes(), PERCENTAGE),
    ]
    for name in ("cpu3.json", "spread.json", "binpack.json"):
        doc = json.loads((ORACLE_DATA / name).read_text())
        out.append((name, doc["objects"], doc.get("schedulerConfig")))
    out.extend((Path(path).name, ROOT / path, None) for path in FILE_INPUTS)
    return out


@pytest.mark.parametrize("name, source, config_text", _oracle_inputs(), ids=[i[0] for i in _oracle_inputs()])
def test_chosen_node_total_is_kube_schedulers(minor, name, source, config_text):
    from draopt.crosscheck.run import oracle_gates
    from draopt.crosscheck.scheduler_oracle import oracle_objects, run_scheduler_oracle

    if minor != "1.37" and name in ONLY_137:
        pytest.skip("PodGroup scheduling.k8s.io/v1beta1: served from 1.37 on")
    objects = load_files([str(source)]) if isinstance(source, Path) else scenario_objects(source)
    features = Features.from_gates(version=minor)
    gates, _ = oracle_gates(features, objects, minor)
    answer = run_scheduler_oracle(
        oracle_objects(objects, features), minor=minor, scheduler_config_text=config_text, gates=gates, timeout=60
    )
    chosen = {p.key: p.node for p in answer.pods if p.node}
    config = parse_config(yaml.safe_load(config_text), f"{name}.yaml") if config_text else None
    got, _ = _breakdowns(objects, config, prefer=chosen, features=features)
    compared = 0
    for attempt in answer.attempts:
        if not attempt.node or attempt.score is None:
            continue  # failed, or bound without scoring (one feasible node)
        b = got[attempt.pod]
        assert b.chosen == attempt.node
        by_node = dict(zip(b.nodes, b.totals))
        assert by_node[attempt.node] == attempt.score, (attempt.pod, b.to_json())
        # the other nodes kube-scheduler found as good are as good here too
        assert all(by_node.get(n) == attempt.score for n in attempt.best_nodes), (attempt, by_node)
        compared += 1
    assert compared, "the oracle scored no pod"
