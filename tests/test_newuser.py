"""`compare`, `plan` and `place --scheduler-config` on inputs other people wrote: the driver demos,
kubectl dumps, KEP and website examples of `../shared/realworld/` (its README names each file's
source; nodes and slices as `kubectl get -o yaml` shows them). Every placement is valid
(check_placement), labelled proven only when OPTIMAL, and the same on a second run. Skipped when
the directory is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from draopt.kube.features import Features
from draopt.kube.loader import load_files
from draopt.placement import place
from draopt.cluster.check import check_placement
from draopt.studies.report import compare

ROOT = Path(__file__).resolve().parents[1]
REALWORLD = ROOT.parent / "shared" / "realworld"
SCENARIOS = sorted(p.name for p in REALWORLD.glob("[0-9][0-9]-*.yaml")) if REALWORLD.is_dir() else []
pytestmark = pytest.mark.skipif(not SCENARIOS, reason="../shared/realworld not available")

# kubernetes/website content/en/docs/concepts/scheduling-eviction/resource-bin-packing.md: the
# MostAllocated and RequestedToCapacityRatio examples of NodeResourcesFit's scoring strategy.
MOST_ALLOCATED = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - args:
      scoringStrategy:
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
        - {name: intel.com/foo, weight: 3}
        - {name: intel.com/bar, weight: 3}
        type: MostAllocated
    name: NodeResourcesFit
"""
REQUESTED_TO_CAPACITY = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - args:
      scoringStrategy:
        resources:
        - {name: intel.com/foo, weight: 3}
        - {name: intel.com/bar, weight: 3}
        requestedToCapacityRatio:
          shape:
          - {utilization: 0, score: 0}
          - {utilization: 100, score: 10}
        type: RequestedToCapacityRatio
    name: NodeResourcesFit
"""


def _nodes(outcome):
    return [(p.pod, p.node, sorted(p.reasons.items()) if p.reasons else None) for p in outcome.result.pods]


@pytest.mark.parametrize("name", SCENARIOS or ["(none)"])
def test_compare_is_valid_honest_and_deterministic(name):
    objs = load_files([str(REALWORLD / name)])
    for policy in ("first-fit", "optimal"):
        a, b = (place(objs, policy=policy, time_limit=20) for _ in range(2))
        assert check_placement(a) == [], (name, policy)
        assert _nodes(a) == _nodes(b), (name, policy)
    runs = [[r.to_json() for r in compare(objs, ["first-fit", "optimal"], time_limit=20)] for _ in range(2)]
    for r in runs[0]:
        assert r["proven"] == (r["status"] == "OPTIMAL")
        assert (r["status"] == "heuristic") == (r["policy"] == "first-fit")
        assert 0 <= r["stranded_devices"] <= r["free_devices"] <= r["devices_total"]
    ff, opt = runs[0]
    assert opt["weighted_placed"] >= ff["weighted_placed"]  # optimal is never worse than first-fit
    for r in runs[0] + runs[1]:
        r.pop("solve_s")
    assert runs[0] == runs[1]


@pytest.mark.parametrize("config", [MOST_ALLOCATED, REQUESTED_TO_CAPACITY, "builtin:most-allocated"])
def test_place_with_scheduler_configurations_is_valid_and_deterministic(config, tmp_path):
    if not config.startswith("builtin:"):
        path = tmp_path / "config.yaml"
        path.write_text(config)
        config = str(path)
    for name in SCENARIOS:
        objs = load_files([str(REALWORLD / name)])
        a, b = (place(objs, policy="first-fit", scheduler_config=config) for _ in range(2))
        assert check_placement(a) == [], name
        assert _nodes(a) == _nodes(b), name


@pytest.mark.parametrize(
    "name",
    [
        "03-example-driver-partitionable.yaml",
        "12-nvidia-dynamic-mig-partitionable.yaml",
        "18-website-consumable-bandwidth.yaml",
        "19-example-driver-podgroup-gang.yaml",
        "22-nvidia-extended-resources.yaml",
        "24-nvidia-dynamic-mig-fleet.yaml",
    ],
)
def test_plan_on_demos_never_above_the_estimate_and_deterministic(name):
    from draopt.studies.planning import NodeType, plan
    from fractions import Fraction

    if name not in SCENARIOS:
        pytest.skip(f"{name} not available")
    objs = load_files([str(REALWORLD / name)])
    template = sorted(n.name for n in objs.nodes)[0]
    types = [NodeType(template, template, Fraction(5, 2))]
    a, b = (plan(objs, types, features=Features.from_gates(), time_limit=10) for _ in range(2))
    assert a.to_json() == b.to_json()
    best = a.ffd_best()
    assert a.placed >= best.placed and (a.placed > best.placed or a.cost <= best.cost)
    assert not a.proven_minimal or a.status == "OPTIMAL"
    assert a.placed == a.pods  # every demo's pods fit on copies of its own node
