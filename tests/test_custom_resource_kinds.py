"""Custom resources whose kind name is also a Kubernetes kind (issue 31 item 1): Kueue's Workload,
Volcano's Job and PodGroup, scheduler-plugins' PodGroup. The API server routes an object by group,
version and kind (k8s.io/apimachinery pkg/runtime/schema GroupVersionKind; the REST mapping of
staging/src/k8s.io/apimachinery/pkg/api/meta/restmapper.go), and none of these reach kube-scheduler's
informers (pkg/scheduler/eventhandlers.go addAllEventHandlers: Pods, Nodes, and the resource.k8s.io /
scheduling.k8s.io kinds), so each is skipped with one note per kind. Placements: the scheduler oracle
(`python -m draopt crosscheck -f tests/data/realworld3/<file> [--kubernetes-version 1.36]`), identical
on 1.37.2 and 1.36.3 for all three dumps."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from draopt.errors import InputError
from draopt.kube.loader import load_files, load_text
from draopt.placement import place
from draopt.validation import validate_files

DATA = Path(__file__).parent / "data" / "realworld3"


def loaded(name: str):
    notes = io.StringIO()
    objects = load_files([str(DATA / name)], notes=notes)
    return objects, notes.getvalue().splitlines()


def placed(objects) -> dict[str, str | None]:
    return {p.pod: (p.node if p.placed else None) for p in place(objects).result.pods}


def test_kueue_list_dump_loads_and_places():
    """kueue-list.yaml (a kind: List): the Kueue Workloads, ClusterQueue, LocalQueue and ResourceFlavor
    are skipped (one note per kind, the Workloads named by group); the admitted Job's pending pod goes
    to worker-2 (oracle: worker-2 on 1.37.2 and 1.36.3); the suspended Job makes no pods."""
    objects, notes = loaded("kueue-list.yaml")
    assert [n for n in notes if n.startswith("note: skipped")] == [
        "note: skipped 1 ClusterQueue object(s): not used for placement",
        "note: skipped 1 LocalQueue object(s): not used for placement",
        "note: skipped 1 ResourceFlavor object(s): not used for placement",
        "note: skipped 2 Workload (kueue.x-k8s.io) object(s): not used for placement",
    ]
    assert any("Job default/queued-job is suspended (spec.suspend: true)" in n for n in notes)
    assert objects.workloads == []  # none read as scheduling.k8s.io Workloads
    assert placed(objects) == {"default/sample-job-c2hzd": "worker-2"}


def test_volcano_dump_loads_and_places():
    """volcano.yaml: the Volcano Job (batch.volcano.sh) is a pod-creating kind draopt does not model,
    its PodGroup (scheduling.volcano.sh) is not a gang of scheduling.k8s.io; the pending pod (default
    scheduler) fits beside the running one (oracle: node-a)."""
    objects, notes = loaded("volcano.yaml")
    assert notes == [
        "note: skipped 1 Job (batch.volcano.sh) object(s): creates pods that draopt does not model "
        "(give the pods it creates, e.g. from kubectl get pods -o yaml)",
        "note: skipped 1 PodGroup (scheduling.volcano.sh) object(s): not used for placement",
        "note: skipped 1 Queue object(s): not used for placement",
    ]
    assert objects.pod_groups == []
    assert placed(objects) == {"default/test-job-nginx-1": "node-a"}


def test_scheduler_plugins_podgroup_loads_and_places():
    """scheduler-plugins-podgroup.yaml: the PodGroup of scheduling.x-k8s.io is skipped; the default
    scheduler places its two pods one by one (oracle: both on node-a)."""
    objects, notes = loaded("scheduler-plugins-podgroup.yaml")
    assert notes == ["note: skipped 1 PodGroup (scheduling.x-k8s.io) object(s): not used for placement"]
    assert placed(objects) == {"default/nginx-1": "node-a", "default/nginx-2": "node-a"}


def test_one_note_per_kind_and_group_across_files():
    """The same kind name in two custom groups: two notes, each naming its group; a kind in one group
    only is named alone (as before)."""
    notes = io.StringIO()
    load_files([str(DATA / "volcano.yaml"), str(DATA / "scheduler-plugins-podgroup.yaml")], notes=notes)
    skipped = [n for n in notes.getvalue().splitlines() if "PodGroup" in n]
    assert skipped == [
        "note: skipped 1 PodGroup (scheduling.volcano.sh) object(s): not used for placement",
        "note: skipped 1 PodGroup (scheduling.x-k8s.io) object(s): not used for placement",
    ]


def test_strict_refuses_the_skipped_custom_resources():
    with pytest.raises(InputError, match=r"skipped 2 Workload \(kueue.x-k8s.io\) object\(s\).*--strict"):
        load_files([str(DATA / "kueue-list.yaml")], strict=True)


@pytest.mark.parametrize(
    "api_version, kind",
    [("batch/v7", "Job"), ("v1", "Job"), ("scheduling.k8s.io/v9", "Workload"), ("scheduling.k8s.io/v1", "PodGroup")],
)
def test_a_kubernetes_group_with_a_version_it_does_not_serve_is_still_an_error(api_version, kind):
    """A Kubernetes group (core, unqualified or *.k8s.io) is not a custom resource's: a version it does
    not serve is an error naming the object and apiVersion (the API server: no matches for kind)."""
    text = f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\nspec: {{}}\n"
    with pytest.raises(InputError, match=rf"{kind} x: field apiVersion: '{api_version}' is not served for {kind}"):
        load_text(text, "in.yaml")


def test_validate_notes_custom_resources_instead_of_refusing_them():
    report = validate_files([str(DATA / "kueue-list.yaml"), str(DATA / "volcano.yaml")])
    assert report.findings == []
    text = "\n".join(str(n) for n in report.notes)
    assert "a Workload of API group kueue.x-k8s.io (a custom resource, not Kubernetes' Workload)" in text
    assert "a PodGroup of API group scheduling.volcano.sh (a custom resource" in text
    assert "a Job of API group batch.volcano.sh (a custom resource" in text


def test_pods_owned_by_a_volcano_job_are_not_a_batch_job_of_the_same_name():
    """A batch/v1 Job test-job beside the Volcano Job test-job: the Volcano pods' controller reference
    is not the batch Job's (pkg/controller/controller_ref_manager.go ClaimObject: a pod whose
    controller is another object is ignored), so the Job creates its two pods."""
    job = (
        "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: test-job, namespace: default}\n"
        "spec:\n  parallelism: 2\n  completions: 2\n  template:\n    spec:\n      restartPolicy: Never\n"
        "      containers: [{name: c, image: i}]\n"
    )
    objects = load_text((DATA / "volcano.yaml").read_text() + job, "in.yaml", notes=io.StringIO())
    made = sorted(p.name for p in objects.pods if p.name.startswith("test-job-") and "nginx" not in p.name)
    assert len(made) == 2


def test_a_kind_in_two_kubernetes_groups_is_one_note():
    """Event is served as v1 and as events.k8s.io/v1 (both Kubernetes'): one note counts both."""
    text = (
        "apiVersion: v1\nkind: Event\nmetadata: {name: a}\n---\n"
        "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: b}\n---\n"
        "apiVersion: example.com/v1\nkind: Event\nmetadata: {name: c}\n"
    )
    notes = io.StringIO()
    load_text(text, "in.yaml", notes=notes)
    assert notes.getvalue().splitlines() == [
        "note: skipped 2 Event object(s): not used for placement",
        "note: skipped 1 Event (example.com) object(s): not used for placement",
    ]
