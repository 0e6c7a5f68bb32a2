"""The Priority admission plugin's refusal (plugin/pkg/admission/priority, read at 1.37): a new pod
whose spec gives a priority or preemption policy other than the ones its PriorityClass (or the
lowest global default class, else 0 / PreemptLowerPriority) gives is refused by the API server. The
case came from running examples/gang-preemption.yaml against a real kube-apiserver 1.37 (the live
cluster test), which refused its pod ml/backfill with 403 while `draopt validate` said it was valid."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draopt.kube.admission import admitted_priorities, priority_refusal
from draopt.kube.loader import load_text
from draopt.kube.workload import expand
from draopt.validation.documents import validate_documents

ROOT = Path(__file__).resolve().parent.parent


def _class(name: str, value: int, policy: str | None = None, default: bool = False) -> dict:
    doc: dict = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if policy:
        doc["preemptionPolicy"] = policy
    if default:
        doc["globalDefault"] = True
    return doc


def _pod(name: str, **spec) -> dict:
    body = {"containers": [{"name": "main", "image": "busybox"}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": body}


def _findings(docs: list[dict]) -> list[str]:
    report = validate_documents([(d, "input.yaml") for d in docs])
    return [f"{f.object} {f.field} {f.type}" for f in report.findings]


TABLE = admitted_priorities([("high", 1000, False, None), ("never", 1000, False, "Never"), ("low", 5, True, None)])


@pytest.mark.parametrize(
    ("priority", "policy", "name", "field"),
    [
        (1000, None, "high", None),  # the class's own value: admitted
        (999, None, "high", "spec.priority"),
        (None, "Never", "high", "spec.preemptionPolicy"),  # the class preempts
        (None, "PreemptLowerPriority", "never", "spec.preemptionPolicy"),
        (1000, "Never", "never", None),
        (5, None, None, None),  # no class: the lowest global default
        (0, None, None, "spec.priority"),
        (2000000000, None, "system-cluster-critical", None),  # built-in class
        (7, None, "missing", None),  # a missing class is reported where the class is read
    ],
)
def test_refusal_rule(priority, policy, name, field) -> None:
    got = priority_refusal(priority, policy, name, *TABLE)
    assert (got[0] if got else None) == field


def test_no_global_default_gives_zero() -> None:
    table = admitted_priorities([])
    assert priority_refusal(0, "PreemptLowerPriority", None, *table) is None
    assert priority_refusal(1, None, None, *table)[0] == "spec.priority"


def test_lowest_global_default_wins() -> None:
    table = admitted_priorities([("a", 50, True, "Never"), ("b", 20, True, None)])
    assert table[1].value == 20 and table[1].policy == "PreemptLowerPriority"


def test_validate_names_object_and_field() -> None:
    docs = [_class("training", 1000), _pod("backfill", priorityClassName="training", preemptionPolicy="Never")]
    assert _findings(docs) == ["Pod ml/backfill spec.preemptionPolicy Forbidden"]


def test_created_and_mirror_pods_are_not_checked() -> None:
    created = _pod("old", priorityClassName="training", priority=7)
    created["metadata"]["uid"] = "0b6e4f3c-0000-4000-8000-000000000001"
    mirror = _pod("static", priority=7)
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    assert _findings([_class("training", 1000), created, mirror]) == []


def test_place_notes_the_pod() -> None:
    """place goes on with the spec's values (a scheduler would see them), with a note; validate fails."""
    docs = [_class("training", 1000), _pod("backfill", priorityClassName="training", priority=10)]
    workload = expand(load_text(yaml.safe_dump_all(docs), "input.yaml"))
    assert any(n.startswith("Pod ml/backfill: field spec.priority: 10 is not 1000") for n in workload.notes)
    assert workload.pod("ml/backfill").priority == 10


def test_cli(tmp_path: Path) -> None:
    path = tmp_path / "refused.yaml"
    docs = [_class("training", 1000), _pod("backfill", priorityClassName="training", preemptionPolicy="Never")]
    path.write_text(yaml.safe_dump_all(docs))
    place = subprocess.run(
        [sys.executable, "-m", "draopt", "place", "-f", str(path)], capture_output=True, text=True, cwd=ROOT
    )
    assert "note: Pod ml/backfill: field spec.preemptionPolicy: Never is not PreemptLowerPriority" in place.stderr
    check = subprocess.run(
        [sys.executable, "-m", "draopt", "validate", "-f", str(path)], capture_output=True, text=True, cwd=ROOT
    )
    assert check.returncode == 1 and "Pod ml/backfill: spec.preemptionPolicy: Forbidden" in check.stdout


def test_examples_are_admissible() -> None:
    """Every bundled example is one the API server would create (the live cluster test loads some)."""
    for example in sorted((ROOT / "examples").glob("*.yaml")):
        docs = list(yaml.safe_load_all(example.read_text()))
        bad = [
            f
            for f in _findings([d for d in docs if isinstance(d, dict)])
            if "priority" in f.lower() or "preemption" in f.lower()
        ]
        assert bad == [], example.name


def test_objects_draopt_made_are_not_checked() -> None:
    """The studies' own objects (draopt.studies.simulate_optimal: spec.priority as the model's
    weight, no class) never reach an API server: no note for each of their thousands of pods."""
    from draopt.studies.simulate_optimal import _object_set

    docs = [_pod(f"shape-{i}", priority=999) for i in range(3)]
    workload = expand(_object_set(docs))
    assert not [n for n in workload.notes if "spec.priority" in n]
    user = expand(load_text(yaml.safe_dump_all(docs), "input.yaml"))
    assert len([n for n in user.notes if "spec.priority" in n]) == 3
