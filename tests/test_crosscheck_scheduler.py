"""draopt's first-fit placement against kube-scheduler itself (the scheduler oracle, built from
k8s.io/kubernetes v1.36.3 and v1.37.2), on random multi-node clusters of every feature family
(draopt.testing.scheduler_scenarios) and on every example.

Every difference found must be explained in docs/differences.md: the scenarios whose differences
are all explained there (by the classifier below, one rule per documented cause) pass; any other
difference fails with both answers. The counts per run are printed in pytest's summary
(tests/conftest.py) and written to $DRAOPT_CROSSCHECK_REPORT when set.

Needs Go (the oracle is built on first use, then cached); skipped without it.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from draopt.crosscheck import gobuild
from draopt.crosscheck.allocator_oracle import OracleFailed
from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import load_files
from draopt.testing.scheduler_scenarios import random_scheduler_scenario

from crosscheck_record import RECORD, kubernetes_placements
from helpers import scenario_objects

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = int(os.environ.get("DRAOPT_CROSSCHECK_SCHEDULER", "300"))  # per version
VERSIONS = ("1.36", "1.37")
ORACLE_RUNS = 3  # at most, per scenario with an unexplained difference (_run)

pytestmark = pytest.mark.skipif(gobuild.go_path() is None, reason="Go is not installed: no scheduler oracle")


@pytest.fixture(scope="module", params=VERSIONS)
def minor(request):
    try:
        gobuild.oracle_binary("scheduler", request.param)
    except gobuild.OracleUnavailable as e:
        if "download" in str(e) or "proxy" in str(e):
            pytest.skip(f"the scheduler oracle cannot be built here: {e}")
        raise
    return request.param


def _run(objects, minor: str, features: Features, config_text: str | None, tmp_path: Path, source: str, timeout=120):
    from draopt.crosscheck.run import crosscheck

    config_path = None
    if config_text:
        config_path = tmp_path / "sched.yaml"
        config_path.write_text(config_text)

    def compared():
        return crosscheck(
            objects,
            kubernetes_version=minor,
            features=features,
            scheduler_config_path=str(config_path) if config_path else None,
            timeout=timeout,
        )

    report = compared()
    # kube-scheduler's answer is one draw: PodGroup placements and 1.36's gang retries follow Go's
    # map order, so two runs of the oracle on one input can differ. A scenario with an unexplained
    # difference is run again (ORACLE_RUNS in all); it passes if one run's differences are all
    # explained. A difference of a new cause is in every run, and fails.
    # If no run is, and the oracle placed the pods differently in two runs, the scenario's remaining
    # differences are counted under oracle-unsteady (listed by scenario in the summary).
    placements = [kubernetes_placements(report)]
    while len(placements) < ORACLE_RUNS and RECORD.unexplained_in(minor, source, report):
        again = compared()
        placements.append(kubernetes_placements(again))
        if not RECORD.unexplained_in(minor, source, again):
            report = again
    if len(placements) > 1:
        RECORD.rerun("scheduler", minor, explained=not RECORD.unexplained_in(minor, source, report))
    unsteady = any(p != placements[0] for p in placements[1:])
    unexplained = RECORD.add("scheduler", minor, source, report, unsteady=unsteady)
    return report, unexplained


@pytest.mark.parametrize("block", range(10))
def test_random_clusters_of_every_family(minor, block, tmp_path):
    """SCENARIOS seeds per version, in 10 blocks, every family drawn (tests/test_scheduler_scenarios.py
    counts them). PodGroups are written in the version the release serves (`_served`); an input
    the release's API would still refuse is counted as refused, not compared."""
    failures = []
    for seed in range(block, SCENARIOS, 10):
        # every tenth at the generator's full size (1-50 nodes, 1-200 pods), the others small
        # (1-12 nodes, 1-40 pods) so that CI runs 300 per release in minutes
        size = {} if seed % 10 == 0 else {"nodes": (1, 12), "pods": (1, 40)}
        s = random_scheduler_scenario(random.Random(seed), **size)
        features = Features.from_gates(s.gates)
        try:
            report, unexplained = _run(
                scenario_objects(_served(s.documents, minor)),
                minor,
                features,
                s.scheduler_config,
                tmp_path,
                f"seed {seed}",
            )
        except InputError as e:
            RECORD.refused("scheduler", minor, f"seed {seed}")
            if not _known_refusal(str(e), minor):
                # (counted and said in the summary: a generated shape the API or draopt refuses)
                RECORD.failed("scheduler", minor, f"seed {seed} refused: {e}")
            continue
        except OracleFailed as e:  # (the oracle did not settle in time: counted, said in the summary)
            RECORD.failed("scheduler", minor, f"seed {seed}: {e}")
            continue
        if unexplained:
            failures.append(f"seed {seed} ({', '.join(sorted(s.families))}):\n  " + "\n  ".join(unexplained[:5]))
    assert not failures, "\n".join(failures)


# kind -> the version 1.36 serves the generator's fields in (it writes 1.37's: PodGroup
# scheduling.k8s.io/v1beta1, DeviceTaintRule resource.k8s.io/v1)
_SERVED_IN_136 = {"PodGroup": "scheduling.k8s.io/v1alpha2", "DeviceTaintRule": "resource.k8s.io/v1beta2"}


def _served(documents: list[dict], minor: str) -> list[dict]:
    """The documents in versions the release serves (same fields, another apiVersion), and a
    device's node-allocatable resources in the release's field."""
    if minor != "1.36":
        return documents
    out = [{**d, "apiVersion": _SERVED_IN_136[d["kind"]]} if d.get("kind") in _SERVED_IN_136 else d for d in documents]
    return [_mappings_136(d) if d.get("kind") == "ResourceSlice" else d for d in out]


def _mappings_136(doc: dict) -> dict:
    """A ResourceSlice with 1.37's device field `nodeAllocatableResources` written in 1.36's
    `nodeAllocatableResourceMappings` (k8s.io/api v0.36: {capacityKey, allocationMultiplier} per
    resource, no overhead). 1.36's API server drops the 1.37 field as unknown, so the 1.36 scan
    compared draopt, which reads it, with a kube-scheduler that never saw it (1.36 seeds 1, 57,
    82, 87, 93, ...: a pod placed by kube-scheduler where its devices' cpu overran the node)."""
    devices = doc.get("spec", {}).get("devices") or []
    if not any("nodeAllocatableResources" in d for d in devices):
        return doc
    out = []
    for d in devices:
        resources = d.get("nodeAllocatableResources")
        if resources is None:
            out.append(d)
            continue
        mappings = {}
        for name, r in resources.items():
            m = r.get("mapping")
            if m is None:
                continue  # (an overhead only: 1.36 has none)
            if m.get("capacityKey") is not None:
                mappings[name] = {"capacityKey": m["capacityKey"], "allocationMultiplier": m.get("capacityMultiplier")}
            else:
                mappings[name] = {"allocationMultiplier": m.get("deviceMultiplier")}
            mappings[name] = {k: v for k, v in mappings[name].items() if v is not None}
        d = {k: v for k, v in d.items() if k != "nodeAllocatableResources"}
        if mappings:
            d["nodeAllocatableResourceMappings"] = mappings
        out.append(d)
    return {**doc, "spec": {**doc["spec"], "devices": out}}


def _known_refusal(message: str, minor: str) -> bool:
    """The generator writes PodGroups as scheduling.k8s.io/v1beta1, which 1.37 serves and 1.36 does
    not (v1alpha2 there): the 1.36 API server would refuse them too."""
    return minor == "1.36" and "scheduling.k8s.io/v1beta1" in message and "refused the input" in message


def _inputs() -> list[Path]:
    files = sorted((ROOT / "examples").glob("*.yaml"))
    shared = ROOT.parent / "shared" / "realworld"
    if shared.is_dir():
        files += sorted(p for p in shared.rglob("*.yaml"))
    return files


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: p.name)
def test_examples_and_realworld_inputs(minor, path, tmp_path):
    try:
        objects = load_files([str(path)])
        features = Features.from_gates()
    except InputError:
        RECORD.refused("scheduler", minor, path.name)
        pytest.skip("draopt refuses this input (an invalid one, on purpose)")
    try:
        # (60 s: a 7,000-pod dump does not settle in the oracle within it, and is counted so)
        report, unexplained = _run(objects, minor, features, None, tmp_path, path.name, timeout=60)
    except InputError as e:
        RECORD.refused("scheduler", minor, path.name)
        pytest.skip(f"draopt or the release's API refuses this input: {e}")
    except OracleFailed as e:
        RECORD.failed("scheduler", minor, f"{path.name}: {e}")
        pytest.skip(f"the scheduler oracle did not settle: {e}")
    assert not unexplained, "\n".join(unexplained)
