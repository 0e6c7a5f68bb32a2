"""The scheduler differences of docs/differences.md ("kube-scheduler"), each on its minimal input
(tests/data/crosscheck/), answered by kube-scheduler itself (the scheduler oracle, 1.36 and 1.37):
a fixed one must stay identical, an open one must stay exactly the difference documented (when it
goes, the docs and this test change with it). Needs Go; skipped without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from draopt.crosscheck import gobuild
from draopt.crosscheck.run import crosscheck
from draopt.kube.features import Features
from draopt.kube.loader import load_files

DATA = Path(__file__).resolve().parent / "data" / "crosscheck"

pytestmark = pytest.mark.skipif(gobuild.go_path() is None, reason="Go is not installed: no scheduler oracle")


def _report(name: str, minor: str):
    return crosscheck(
        load_files([str(DATA / name)]),
        kubernetes_version=minor,
        features=Features.from_gates({}, minor),
        timeout=120,
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_preemption_does_not_free_a_victims_devices(minor):
    report = _report("gpu-preemption.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    (pre,) = [p for p in report.pods if p.pod == "default/preemptor"]
    assert pre.kubernetes_node == "" and "Preemption is not helpful for scheduling" in pre.kubernetes_message


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_preemption_asks_the_filters_in_their_order(minor):
    """A node InterPodAffinity rejects (an existing pod's anti-affinity) before DynamicResources
    would: preemption may help there, and its dry run, the holder removed, fails on the devices
    (random scheduler seed 192 of 1.37). The oracle's answer, recorded."""
    report = _report("preemption-filter-order.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    (row,) = report.pods
    assert row.kubernetes_message.endswith(
        "preemption: 0/2 nodes are available: 1 Preemption is not helpful for scheduling, 1 cannot allocate all claims."
    )


def test_explained_starved_in_an_oracle_livelock():
    """Random scheduler seed 224 of 1.37: pods of higher priority fail again and again (one at
    PreBind: extended-resources-prebind) and, the oracle's clock stepped past every back-off, go
    back to the active queue at once, ahead of pods of lower priority (in one run the ReplicaSet
    api-1's five pods, in another three team-b pods), which kube-scheduler never tries before the
    oracle stops the run as a livelock; draopt places them (as a cluster, whose back-offs last
    seconds, would)."""
    import random

    from draopt.testing.scheduler_scenarios import random_scheduler_scenario

    from crosscheck_record import explained_by
    from helpers import scenario_objects

    s = random_scheduler_scenario(random.Random(224), nodes=(1, 12), pods=(1, 40))
    report = crosscheck(
        scenario_objects(s.documents), kubernetes_version="1.37", features=Features.from_gates(s.gates), timeout=120
    )
    # (which pods starve varies between runs of the oracle: the run was stopped, not settled)
    assert any("pods still retried: " in n for n in report.notes)
    tried = {a["pod"] for a in report.kubernetes_attempts}
    starved = [
        d for d in report.differences if d.kind == "pending" and d.draopt != "pending" and d.subject not in tried
    ]
    assert all(explained_by(d, report) == "starved-in-an-oracle-livelock" for d in starved)


def test_explained_errored_then_starved_in_an_oracle_livelock():
    """Random scheduler seed 144 of 1.36: `ml/pod-1`'s first attempt ends with a selector's CEL
    runtime error (the DynamicResources Filter's Error status: the pod goes to back-off), while two
    PodGroups that cannot fit keep their members cycling through the active queue (1.36's gang
    Permit). The oracle pops its back-off queue only when the active one is empty, so it never
    tries the pod again before it stops the run as a livelock; draopt retries it after the other
    pods (as a cluster does once the back-off's second is over) and words the nodes' reasons."""
    import random

    from draopt.cluster.filter_error import is_filter_error
    from draopt.testing.scheduler_scenarios import random_scheduler_scenario

    from crosscheck_record import explained_by
    from helpers import scenario_objects
    from test_crosscheck_scheduler import _served

    s = random_scheduler_scenario(random.Random(144), nodes=(1, 12), pods=(1, 40))
    report = crosscheck(
        scenario_objects(_served(s.documents, "1.36")),
        kubernetes_version="1.36",
        features=Features.from_gates(s.gates),
        timeout=120,
    )
    (row,) = [p for p in report.pods if p.pod == "ml/pod-1"]
    tries = [a.get("message") for a in report.kubernetes_attempts if a["pod"] == "ml/pod-1"]
    assert tries == [row.kubernetes_message] and is_filter_error(row.kubernetes_message)
    assert any("pods still retried: " in n and "ml/pod-1" in n for n in report.notes)
    assert row.draopt_node == "" and not is_filter_error(row.draopt_message)
    (d,) = [d for d in report.differences if d.subject == "ml/pod-1"]
    assert explained_by(d, report) == "errored-then-starved-in-an-oracle-livelock"


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_node_tree_order(minor):
    """kube-scheduler lists nodes one of each zone in turn (its node tree): n1, n3, n2 for zones x,
    x, y. The filter loop goes in that order, so the selector's CEL runtime error ends the attempt
    on n3's GPU, which 1.37's message names; draopt went in name order and named n2's."""
    report = _report("node-tree-order.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    (row,) = report.pods
    assert "CEL runtime error: no such key: tier" in row.kubernetes_message
    assert ("gpu.example.com/n3/gpu-0" in row.kubernetes_message) == (minor == "1.37")


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_select_on_an_attributes_value(minor):
    """`device.attributes["gpu.example.com"].model.x` on a string attribute: cel-go's runtime error
    is "no such key: x"; draopt's CEL (cel-cpp) said "Applying SELECT to non-message type"."""
    report = _report("cel-select-on-a-value.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    (row,) = report.pods
    assert "CEL runtime error: no such key: x" in row.kubernetes_message


def test_fixed_start_index_after_a_pod_groups_placement():
    """Random scheduler seed 130 of 1.37: a PodGroup placed in one of its zones (its pods assumed
    on the nodes its placement's trial found, assumeSubtreeWithRevert: no filter runs) leaves the
    filter loop's start index where the trials left it; draopt placed each pod again on its one
    node, which moved the start to 0, and the CEL runtime errors of `ml/pod-64` and `ml/pod-59`
    later named node-25's GPU where kube-scheduler's name node-4's (in its node order)."""
    import random

    from draopt.testing.scheduler_scenarios import random_scheduler_scenario

    from helpers import scenario_objects

    s = random_scheduler_scenario(random.Random(130))
    report = crosscheck(
        scenario_objects(s.documents), kubernetes_version="1.37", features=Features.from_gates(s.gates), timeout=120
    )
    for pod in ("ml/pod-64", "ml/pod-59"):
        (row,) = [p for p in report.pods if p.pod == pod]
        assert row.same and "on device gpu.example.com/node-4-gpu/gpu-1: CEL runtime error" in row.kubernetes_message


def test_fixed_spread_rejects_before_devices_behind_a_kinds_frontier():
    """The nodes a kind of pod already found without devices keep that reason in draopt's filter
    loop (the kind's frontier); a pod of that kind whose own PodTopologySpread rejects them is
    rejected there by spread first, as kube-scheduler's filter order has it (random scheduler seed
    280 of 1.37, `ml/pod-108`: 3 of those nodes said `cannot allocate all claims`). Not reduced
    below the generated cluster (49 nodes); kube-scheduler's answer, recorded: its first attempt."""
    import random

    from draopt.testing.scheduler_scenarios import random_scheduler_scenario

    from helpers import scenario_objects

    s = random_scheduler_scenario(random.Random(280))
    report = crosscheck(
        scenario_objects(s.documents), kubernetes_version="1.37", features=Features.from_gates(s.gates), timeout=120
    )
    (row,) = [p for p in report.pods if p.pod == "ml/pod-108"]
    first = next(a for a in report.kubernetes_attempts if a["pod"] == "ml/pod-108")
    assert (
        first["message"]
        == row.draopt_message
        == (
            "0/49 nodes are available: 1 Insufficient cpu, 1 Too many pods, 47 node(s) didn't match pod topology "
            "spread constraints. preemption: 0/49 nodes are available: 49 No preemption victims found for incoming pod."
        )
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_scheduling_gates(minor):
    """A gated pod stays out of the queue on both sides (issue 31 item 2; tests/test_waiting_pods.py)."""
    report = _report("gated.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    (row,) = report.pods
    assert row.kubernetes_node == "" and row.kubernetes_message == "SchedulingGated"


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_extended_resources_device_plugin(minor):
    """A DRA-backed extended resource on a mixed cluster: device plugin where the node's
    allocatable lists it, DRA elsewhere (extendeddynamicresources.go filterExtendedResources,
    noderesources/fit.go shouldDelegateResourceToDRA). The oracle's answers, recorded: a and c on
    dp-1 (device plugin, 2 GPUs; dp-2's two held by a running pod), b and e (the implicit
    deviceclass.resource.kubernetes.io name: DRA on every node) on dra-1, d (2 GPUs) pending."""
    report = _report("extended-mixed.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    nodes = {p.pod: p.kubernetes_node for p in report.pods}
    assert nodes == {
        "default/a": "dp-1",
        "default/b": "dra-1",
        "default/c": "dp-1",
        "default/d": "",
        "default/e": "dra-1",
    }
    (d,) = [p for p in report.pods if p.pod == "default/d"]
    assert d.kubernetes_message.startswith(
        "0/3 nodes are available: 1 cannot allocate all claims, 2 Insufficient nvidia.com/gpu."
    )
    assert "2 No preemption victims found for incoming pod" in d.kubernetes_message


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_extended_resources_of_init_containers(minor):
    """Init containers reuse the long-lived containers' requests (extendeddynamicresources.go,
    createRequestsAndMappings). The oracle's answers, recorded: a (2 devices) on dra-1, b (1) and c
    (2) on dra-2, d (2) pending; draopt asked 4 devices for a and 3 for c, leaving both pending."""
    report = _report("extended-init-containers.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    nodes = {p.pod: p.kubernetes_node for p in report.pods}
    assert nodes == {"default/a": "dra-1", "default/b": "dra-2", "default/c": "dra-2", "default/d": ""}


PREEMPTION = "priority-classes-preemption.yaml"


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_preemption_with_priority_classes_and_devices(minor):
    """PriorityClasses as a cluster has them (value, preemptionPolicy Never, globalDefault; pods
    name them, one names none). The oracle's answers, recorded: the GPU pod short of cpu is not
    helped by evicting the GPU holders (DynamicResources has no PreFilterExtensions: their devices
    stay held in the dry run, dynamicresources.go; pkg/scheduler/framework/preemption/preemption.go
    SelectVictimsOnNode); the Never pod fits nowhere and evicts nothing (default_preemption.go
    PodEligibleToPreemptOthers); cpu-high evicts holder-0 on n1, whose victim priority 10 is below
    no-class's global default 100 on n2 (pickOneNodeForPreemption)."""
    report = _report(PREEMPTION, minor)
    assert report.identical, [d.text() for d in report.differences]
    by_pod = {p.pod: p for p in report.pods}
    assert by_pod["default/cpu-high"].kubernetes_node == "n1"
    gpu = by_pod["default/gpu-high"]
    assert gpu.kubernetes_node == "" and gpu.kubernetes_message.startswith(
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector."
    )
    assert gpu.kubernetes_message.endswith(
        "preemption: 0/2 nodes are available: 1 Preemption is not helpful for scheduling, 1 cannot allocate all claims."
    )
    never = by_pod["default/never"]
    assert never.kubernetes_node == "" and never.kubernetes_message.startswith(
        "0/2 nodes are available: 2 Insufficient cpu."
    )
    assert never.kubernetes_message.endswith("preemption: not eligible due to preemptionPolicy=Never.")
    # 1.36's DynamicResources PostFilter words before preemption's (dynamicresources.go PostFilter)
    assert ("still not schedulable, preemption:" in gpu.kubernetes_message) == (minor == "1.36")


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_open_extended_resources_prebind(minor):
    """A pod with a claim of its own whose extended resources a node's device plugin serves:
    kube-scheduler fails PreBind on that node (extendeddynamicresources.go,
    patchPodExtendedResourceClaimStatus: no request mappings), draopt places it (with a note). The
    oracle's other answers, recorded: allocatable "0" is served by DRA (filterExtendedResources:
    allocatable == 0), an extended resource no class names is Insufficient on both nodes."""
    report = _report("extended-prebind.yaml", minor)
    d, then = report.differences
    assert (d.kind, d.subject, d.draopt, d.kubernetes) == ("pending", "default/a-user-and-ext", "both-1", "pending")
    # and after it: a-user-and-ext holds both-1's device-plugin GPU in draopt's run only
    assert (then.kind, then.subject) == ("reason", "default/c-other")
    assert "1 Insufficient nvidia.com/gpu, 2 Insufficient example.com/fpga." in then.draopt
    by_pod = {p.pod: p for p in report.pods}
    assert by_pod["default/a-user-and-ext"].kubernetes_message == (
        'running PreBind plugin "DynamicResources": nil or empty request mappings, no update of pod '
        "default/a-user-and-ext ExtendedResourceClaimStatus"
    )
    assert by_pod["default/b-zero"].kubernetes_node == "zero-1"
    assert by_pod["default/c-other"].kubernetes_message.startswith(
        "0/2 nodes are available: 2 Insufficient example.com/fpga."
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_all_insufficient_resources(minor):
    """NodeResourcesFit names every resource a node lacks, "Too many pods" among them, and the
    FitError counts each (noderesources/fit.go fitsRequest); a pod requesting nothing is checked
    for its pod slot only."""
    report = _report("insufficient.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    by_pod = {p.pod: p.kubernetes_message for p in report.pods}
    assert by_pod["default/big"].startswith(
        "0/2 nodes are available: 1 Too many pods, 2 Insufficient cpu, 2 Insufficient example.com/gpu, "
        "2 Insufficient memory."
    )
    assert by_pod["default/zero"].startswith(
        "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match Pod's node affinity/selector."
    )


def test_fixed_node_allocatable_resources_wording():
    """DynamicResources' check of the devices' node-allocatable resources (1.37, gate
    DRANodeAllocatableResources) says "Insufficient cpu", each resource counted, as NodeResourcesFit
    does (draopt's explain keeps its note); above the node's allocatable, preemption cannot help."""
    report = crosscheck(
        load_files([str(DATA / "node-allocatable-insufficient.yaml")]),
        kubernetes_version="1.37",
        features=Features.from_gates({"DRANodeAllocatableResources": True}, "1.37"),
        timeout=120,
    )
    assert report.identical, [d.text() for d in report.differences]
    (row,) = report.pods
    assert row.kubernetes_message == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize(
    ("name", "minor", "message"),
    [
        ("node-allocatable-136.yaml", "1.36", "0/1 nodes are available: 1 Insufficient cpu. still not schedulable, "),
        ("node-allocatable-136.yaml", "1.37", "0/1 nodes are available: 1 Insufficient cpu. preemption: "),
        (
            "node-allocatable-136-unlisted.yaml",
            "1.36",
            "0/1 nodes are available: 1 claim unlisted-gpu: node-allocatable resource claim not referenced by any "
            "container within the pod. still not schedulable, ",
        ),
        ("node-allocatable-136-unlisted.yaml", "1.37", None),
    ],
)
def test_fixed_node_allocatable_resources_in_136s_field(name, minor, message):
    """A device's node-allocatable resources written in 1.36's nodeAllocatableResourceMappings reach
    the 1.36 oracle in that field (1.36 drops 1.37's nodeAllocatableResources; random scheduler
    seed 93 of 1.36), and 1.36's DynamicResources rejects a claim with a mapped device that no
    container lists, which 1.37 places (seed 1 of 1.36). The oracle's answers, recorded."""
    report = crosscheck(
        load_files([str(DATA / name)]),
        kubernetes_version=minor,
        features=Features.from_gates({"DRANodeAllocatableResources": True}, minor),
        timeout=120,
    )
    assert report.identical, [d.text() for d in report.differences]
    (row,) = report.pods
    if message is None:
        assert row.kubernetes_node == "n1"
    else:
        assert row.kubernetes_node == "" and row.kubernetes_message.startswith(message)


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_claim_not_available_on_the_node(minor):
    """An allocated claim the node cannot reach: DynamicResources' Filter allocates the pod's other
    claims first ("cannot allocate all claims" where they do not fit), then says "resourceclaim not
    available on the node" (dynamicresources.go Filter)."""
    report = _report("claim-on-another-node.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    (p2,) = [p for p in report.pods if p.pod == "default/p2"]
    assert p2.kubernetes_message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 1 cannot allocate all claims, "
        "1 resourceclaim not available on the node."
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gang-retry-none.yaml", {"default/g-0": "0/1 nodes are available: 1 Insufficient cpu, 1 Too many pods."}),
        ("gang-retry-gave.yaml", {"default/g-0": "0/1 nodes are available: 1 Too many pods."}),
        ("gang-retry-leftover.yaml", {"default/g-1": "0/1 nodes are available: 1 Too many pods."}),
    ],
)
def test_fixed_which_pods_are_tried_again(name, expected):
    """kube-scheduler 1.37 tries a failed gang, and the unplaced pods of a PodGroup that reached
    minCount, again after the other pods (their messages read the final state); a plain pod its
    devices rejected is not tried again (no event that may help it)."""
    report = _report(name, "1.37")
    assert report.identical, [d.text() for d in report.differences]
    by_pod = {p.pod: p.kubernetes_message for p in report.pods}
    assert by_pod["default/a"].startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    for pod, message in expected.items():
        assert by_pod[pod] == message


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_preemptor_retried_after_the_queue(minor):
    """Random scheduler seeds 26 and 37 (1.37), reduced: kube-scheduler tries the preemptor again
    only after the follower (its back-off); the follower lands in zone a, so the preemptor's next
    attempt fails zone spread on za-1 and preempts again on zb-1. draopt placed the preemptor at
    once on za-1; it now waits too (tests/test_queue_retries.py)."""
    report = _report("preemptor-retried-later.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    assert [a["pod"] for a in report.kubernetes_attempts] == ["default/preemptor", "default/follower"] + [
        "default/preemptor"
    ] * 2
    assert [a.get("nominatedNode") for a in report.kubernetes_attempts][:3] == ["za-1", None, "zb-1"]
    assert {p.pod: p.kubernetes_node for p in report.pods} == {"default/preemptor": "zb-1", "default/follower": "za-1"}


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_retried_after_cluster_events(minor):
    """Random scheduler seed 22 (1.37), reduced: the pod's required pod affinity matches nothing at
    its first attempt; the db pod bound after it moves it back to the queue (InterPodAffinity's
    queueing hint) and kube-scheduler places it at its second attempt. draopt tried each pod once
    and left it pending; it now tries it again too (tests/test_queue_retries.py)."""
    report = _report("retried-after-events.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    tries = [a for a in report.kubernetes_attempts if a["pod"] == "default/follows-db"]
    assert len(tries) == 2 and "didn't match pod affinity rules" in tries[0]["message"]
    assert tries[1]["node"] == "n1"


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_explained_victim_claims_kept_by_the_oracle(minor):
    """Random scheduler seed 28 (1.37), reduced: the victim's claim keeps gpu-0 in the oracle (no
    ResourceClaim controller), so kube-scheduler gives the preemptor gpu-1 and gpu-2; draopt
    deallocates the claim of the evicted pod, its last consumer, and allocates gpu-0 and gpu-2."""
    report = _report("victim-claims-kept.yaml", minor)
    (d,) = report.differences
    assert (d.kind, d.subject) == ("device", "default/two")
    assert "n1/gpu-0" in d.draopt and "n1/gpu-0" not in d.kubernetes and "n1/gpu-1" in d.kubernetes


EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_fixed_every_example_is_identical_on_the_default_release(example):
    """Issue 30's bar: `draopt crosscheck -f examples/...` says identical (1.37, the default). The
    gang examples hold the three messages of a failed pod-group cycle (schedule_one_podgroup.go):
    a member tried that did not fit (its FitError), one not tried ("minCount (2) cannot be
    satisfied: ..."), one that fitted and was taken back ("pod group is unschedulable, ...")."""
    report = crosscheck(
        load_files([str(example)]), kubernetes_version="1.37", features=Features.from_gates({}, "1.37"), timeout=300
    )
    assert report.identical, [d.text() for d in report.differences]


def test_fixed_pod_group_cycle_messages():
    report = crosscheck(
        load_files([str(EXAMPLES[0].parent / "mig-gangs.yaml")]),
        kubernetes_version="1.37",
        features=Features.from_gates({}, "1.37"),
        timeout=300,
    )
    by_pod = {p.pod: p for p in report.pods}
    worker, chief = by_pod["ml/trainer-1-worker"], by_pod["ml/trainer-1-chief"]
    # the worker comes first in the group's queue order (created first) and fits; the chief does not
    assert worker.kubernetes_message.startswith("pod group is unschedulable, minCount (2) cannot be satisfied: 1")
    assert chief.kubernetes_message == "0/4 nodes are available: 4 cannot allocate all claims."
    assert (worker.draopt_message, chief.draopt_message) == (worker.kubernetes_message, chief.kubernetes_message)
    stranded = crosscheck(
        load_files([str(EXAMPLES[0].parent / "gang-preemption.yaml")]),
        kubernetes_version="1.37",
        features=Features.from_gates({}, "1.37"),
        timeout=300,
    )
    not_tried = [p for p in stranded.pods if p.kubernetes_message.startswith("minCount (")]
    assert not_tried and all(p.draopt_message == p.kubernetes_message for p in not_tried)


@pytest.mark.parametrize(
    "pair",
    [
        ("gang-preemption.yaml", "gang-topology.yaml"),
        ("gang-preemption.yaml", "mig-gangs.yaml"),
        ("gang-topology.yaml", "mig-gangs.yaml"),
    ],
)
def test_fixed_gang_retried_after_later_pods_on_merged_examples(pair):
    """Fixed (docs/differences.md): kube-scheduler 1.37 tries a failed gang again once the other
    pods were tried, and tries no plain pod again for the room it gave back; its members' messages
    are their last attempt's. On these merged examples (ml/llama-rack, ml/gpt-rack, ml/backfill)
    draopt's messages were the first attempt's."""
    report = crosscheck(
        load_files([str(EXAMPLES[0].parent / name) for name in pair]),
        kubernetes_version="1.37",
        features=Features.from_gates({}, "1.37"),
        timeout=300,
    )
    assert report.differences == [], [(d.subject, d.draopt, d.kubernetes) for d in report.differences]


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_binding_conditions_answered_not_timed_out(minor):
    """Devices with binding conditions and no driver to set them: kube-scheduler picks the node and
    waits in PreBind. The oracle reports that pod on its node at once (it used to wait for the
    scheduler to settle until its timeout, and crosscheck could not answer)."""
    report = _report("binding-conditions.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    rows = {p.pod: p for p in report.pods}
    assert rows["default/a"].kubernetes_node == rows["default/b"].kubernetes_node == "worker-1"
    assert (
        rows["default/c"].kubernetes_node == "" and "cannot allocate all claims" in rows["default/c"].kubernetes_message
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_cel_compile_error_wording(minor):
    """A selector naming a field the device type lacks (`device.atributes`, the realworld typo
    r04b), a field selected on a string, a Quantity or a Semver: cel-cpp's words are put in
    cel-go's ("undefined field", "does not support field selection", "unexpected failed
    resolution", no follow-on error on an error), as kube-scheduler's message gives them."""
    report = _report("cel-compile-errors.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    assert len(report.pods) == 15 and all(not p.kubernetes_node for p in report.pods)
