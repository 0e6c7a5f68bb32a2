"""Nothing a model does not encode is called proven (issue 31, items 8 and 9).

* `plan` over zones with a DoNotSchedule topology spread constraint: kube-scheduler places 3 of the
  4 pods on the cluster (zone-a has room for 3, zone-b for 1: the fourth in zone-a would make the
  skew 2) and needs one more node in zone-b. The placement model does not encode spread, so the
  plan is never proven; checked with first-fit it buys the zone-b node.
* `optimal` leaves a pod for another scheduler (kai-scheduler) alone, as kube-scheduler does.
* `optimal`'s victim model makes no eviction for a `preemptionPolicy: Never` pod.

The expected placements on the inputs below are the Go oracle's (`python -m draopt crosscheck -f`,
k8s.io/kubernetes v1.37.2 and v1.36.3, recorded on each test), where it covers the case.
"""

from __future__ import annotations

from fractions import Fraction

from draopt.placement import place
from draopt.studies.node_types import NodeType
from draopt.studies.planning import plan
from tests.helpers import scenario_objects

ZONE = "topology.kubernetes.io/zone"


def node(name: str, cpu: str, zone: str | None = None) -> dict:
    labels = {"kubernetes.io/hostname": name} | ({ZONE: zone} if zone else {})
    res = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": res, "capacity": res},
    }


def pod(name: str, cpu: str = "1", **spec) -> dict:
    meta = {"name": name, "namespace": "default"}
    for key in ("labels", "creationTimestamp"):
        if key in spec:
            meta[key] = spec.pop(key)
    status = spec.pop("status", None)
    out = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]} | spec,
    }
    if status:
        out["status"] = status
    return out


SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]


def spread_docs() -> list[dict]:
    return [node("node-a", "3", "zone-a"), node("node-b", "1", "zone-b")] + [
        pod(f"web-{i}", labels={"app": "web"}, topologySpreadConstraints=SPREAD) for i in range(4)
    ]


def test_first_fit_places_three_of_four_under_zone_spread():
    """Oracle (crosscheck, 1.37.2 and 1.36.3: identical): web-0 node-a, web-1 node-b, web-2 node-a,
    web-3 pending. Kubernetes: pkg/scheduler/framework/plugins/podtopologyspread/filtering.go
    (Filter: matching pods in the node's zone + 1 - the fewest in any zone must not pass maxSkew)."""
    got = {p.pod: p.node for p in place(scenario_objects(spread_docs())).result.pods}
    assert got == {
        "default/web-0": "node-a",
        "default/web-1": "node-b",
        "default/web-2": "node-a",
        "default/web-3": None,
    }


def test_plan_buys_the_node_in_the_short_zone_and_is_not_proven():
    """Before: no new node, 4 of 4, placed_proven and proven minimal. Now the mix is checked with
    first-fit (3 of 4 without a node), a zone-b node is added, and first-fit places 4 of 4: the
    oracle agrees on the cluster with that node (crosscheck of the input plus node-b-plan-0, 1.37.2:
    web-3 on node-b-plan-0, identical)."""
    types = [NodeType("node-a", "node-a", Fraction(1)), NodeType("node-b", "node-b", Fraction(1))]
    out = plan(scenario_objects(spread_docs()), types, time_limit=10)
    assert out.mix == {"node-a": 0, "node-b": 1}
    assert out.placed == 4 and out.first_fit.placed == 4
    assert not out.proven_minimal and not out.placed_proven
    assert out.status == "FEASIBLE" and out.stats.status == "FEASIBLE" and out.stats.model_status == "OPTIMAL"
    assert out.stats.model_placed == 4 and out.stats.repaired_from == {"node-a": 0, "node-b": 0}
    assert out.unencoded_rules == ["topology spread constraints (default/web-0: spec.topologySpreadConstraints)"]
    assert "does not encode topology spread constraints" in out.why_not_proven
    assert "places 3 of 4 with the model's mix" in out.why_not_proven
    js = out.to_json()
    assert js["proven_minimal"] is False and js["first_fit"]["placed"] == 4
    assert "not proven minimal" in out.table()


def test_plan_without_unencoded_rules_stays_proven_and_is_checked():
    """The same cluster without the spread constraint: the model encodes everything, 4 of 4 with
    no new node stays proven, and first-fit on the cluster agrees (4 of 4)."""
    docs = [node("node-a", "3", "zone-a"), node("node-b", "1", "zone-b")] + [pod(f"web-{i}") for i in range(4)]
    types = [NodeType("node-a", "node-a", Fraction(1))]
    out = plan(scenario_objects(docs), types, time_limit=10)
    assert out.proven_minimal and out.status == "OPTIMAL"
    assert out.mix == {"node-a": 0} and out.placed == 4
    assert out.first_fit.placed == 4 and not out.unencoded_rules


def kai_docs() -> list[dict]:
    return [node("node-1", "2"), pod("kai", schedulerName="kai-scheduler"), pod("plain")]


def test_every_policy_leaves_another_schedulers_pod_alone():
    """kube-scheduler leaves a pod whose schedulerName none of its profiles has to that scheduler
    (pkg/scheduler/eventhandlers.go, responsibleForPod; oracle, 1.37.2: default/kai pending,
    default/plain on node-1). Before, optimal and the name-order first-fit placed it (OPTIMAL)."""
    for policy, config in (("first-fit", None), ("first-fit", "builtin:name-order"), ("optimal", None)):
        out = place(scenario_objects(kai_docs()), policy=policy, scheduler_config=config, time_limit=10)
        got = {p.pod: p.node for p in out.result.pods}
        assert got == {"default/kai": None, "default/plain": "node-1"}, (policy, config)
        assert any("'kai-scheduler'" in n and "left pending" in n for n in out.notes)


def test_a_profile_for_the_scheduler_name_serves_its_pods(tmp_path):
    """With a profile named kai-scheduler, the scheduler serves the pod (config.go: one profile
    per schedulerName), and the optimal model may place it."""
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n- schedulerName: kai-scheduler\n"
    )
    for policy in ("first-fit", "optimal"):
        out = place(scenario_objects(kai_docs()), policy=policy, scheduler_config=str(cfg), time_limit=10)
        assert all(p.placed for p in out.result.pods), policy


def never_docs() -> list[dict]:
    classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 0},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    ]
    holders = [
        pod(
            f"holder-{i}",
            nodeName="node-1",
            priorityClassName="low",
            priority=0,
            creationTimestamp=f"2026-01-01T00:00:0{i}Z",
            status={"phase": "Running", "startTime": f"2026-01-01T00:00:0{i}Z"},
        )
        for i in range(2)
    ]
    pending = [
        pod("preemptor", priorityClassName="high", priority=1000, creationTimestamp="2026-01-01T00:01:00Z"),
        pod(
            "never",
            priorityClassName="high",
            priority=1000,
            preemptionPolicy="Never",
            creationTimestamp="2026-01-01T00:01:01Z",
        ),
    ]
    return classes + [node("node-1", "2")] + holders + pending


def test_optimal_makes_no_eviction_for_a_never_preemption_pod():
    """Two low-priority holders fill the node; the preemptor may preempt, the other pod of the same
    priority has preemptionPolicy Never (pkg/scheduler/framework/preemption/preemption.go,
    PodEligibleToPreemptOthers: Never pods do not preempt). Oracle (1.37.2): preemptor on node-1,
    never pending. Before, optimal evicted both holders and placed both pods, OPTIMAL."""
    out = place(scenario_objects(never_docs()), policy="optimal", time_limit=10).result
    got = {p.pod: p.node for p in out.pods}
    assert got == {"default/preemptor": "node-1", "default/never": None}
    assert len(out.evictions) == 1
    ff = place(scenario_objects(never_docs())).result
    assert len(ff.evictions) == 1 and {p.pod: p.node for p in ff.pods} == got


def test_optimal_does_not_encode_a_running_pods_anti_affinity():
    """A running pod's required anti-affinity selects the pending pods: kube-scheduler keeps them
    off its node (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go,
    satisfyExistingPodsAntiAffinity). Oracle (1.37.2 and 1.36.3, identical): web-0 on node-2,
    web-1 pending. The model does not encode it: before, optimal put both on node-1, OPTIMAL; now
    it returns first-fit's placement, UNKNOWN, naming the rule and both pods."""
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}
            ]
        }
    }
    docs = [
        node("node-1", "4"),
        node("node-2", "1"),
        pod("guard", nodeName="node-1", affinity=anti, status={"phase": "Running"}),
        pod("web-0", labels={"app": "web"}),
        pod("web-1", labels={"app": "web"}),
    ]
    out = place(scenario_objects(docs), policy="optimal", time_limit=10).result
    assert {p.pod: p.node for p in out.pods} == {"default/web-0": "node-2", "default/web-1": None}
    assert out.stats["status"] == "UNKNOWN"
    assert (
        "anti-affinity of a running pod (default/guard: spec.affinity.podAntiAffinity, selects default/web-0)"
        in (out.stats["summary"])
    )


def test_cli_plan_spread_json_and_exit(tmp_path):
    """`draopt plan -o json`: the rule named, first-fit's check, and exit 0 once the repaired mix
    places every pod (first-fit's count, not the model's)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    path = tmp_path / "spread.yaml"
    path.write_text(yaml.safe_dump_all(spread_docs()))
    p = subprocess.run(
        [sys.executable, "-m", "draopt", "plan", "-f", str(path), "--node-type", "node-b=1", "-o", "json"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert p.returncode == 0, p.stderr
    js = json.loads(p.stdout)
    assert js["mix"] == {"node-b": 1} and js["placed"] == 4 and js["status"] == "FEASIBLE"
    assert js["proven_minimal"] is False and js["placed_proven"] is False
    assert js["first_fit"] == {"mix": {"node-b": 1}, "placed": 4, "pods": 4}
    assert js["unencoded_rules"][0].startswith("topology spread constraints")


def test_host_ports_and_claimed_volumes_are_noted_and_never_proven():
    """Two pods asking for host port 8080 and one with a persistentVolumeClaim that does not exist.
    Oracle (1.37.2): p0 on node-1, p1 and p2 pending (NodePorts: pkg/scheduler/framework/plugins/
    nodeports/node_ports.go, Filter; VolumeBinding: volumebinding/volume_binding.go, PreFilter).
    draopt models neither (docs/differences.md, host-ports-and-volumes): it places all three, says
    so in a note, and neither optimal nor plan is proven on them."""
    ports = [{"containerPort": 80, "hostPort": 8080}]
    docs = [node("node-1", "4")]
    for name in ("p0", "p1"):
        p = pod(name)
        p["spec"]["containers"][0]["ports"] = ports
        docs.append(p)
    docs.append(pod("p2", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]))
    out = place(scenario_objects(docs))
    assert all(p.placed for p in out.result.pods)  # the documented difference, not Kubernetes' answer
    assert any("hostPort not modelled" in n and "default/p0 and 1 more" in n for n in out.notes)
    assert any("spec.volumes[]" in n and "(default/p2)" in n for n in out.notes)
    opt = place(scenario_objects(docs), policy="optimal", time_limit=10).result
    assert opt.stats["status"] == "FEASIBLE"
    assert opt.stats["summary"].startswith("FEASIBLE, not proven optimal: proven for the filters draopt models:")
    assert "(host ports (NodePorts filter), which draopt does not model" in opt.stats["summary"]
    result = plan(scenario_objects(docs), [NodeType("node-1", "node-1", Fraction(1))], time_limit=10)
    assert not result.proven_minimal and result.status == "FEASIBLE"
    assert [r.split(",")[0] for r in result.unencoded_rules] == [
        "host ports (NodePorts filter)",
        "claimed or attached volumes (VolumeBinding",
    ]


def test_plan_with_self_anti_affinity_buys_a_node_per_pod():
    """Three pods with required hostname anti-affinity among themselves on one roomy node:
    kube-scheduler places one (oracle, 1.37.2: db-0 on node-1, db-1 and db-2 pending;
    interpodaffinity/filtering.go, satisfyPodAntiAffinity). The model alone put all three on node-1;
    checked with first-fit, plan adds two nodes and is not proven."""
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}
            ]
        }
    }
    docs = [node("node-1", "8")] + [pod(f"db-{i}", labels={"app": "db"}, affinity=anti) for i in range(3)]
    assert [p.placed for p in place(scenario_objects(docs)).result.pods] == [True, False, False]
    out = plan(scenario_objects(docs), [NodeType("node-1", "node-1", Fraction(2))], time_limit=10)
    assert out.mix == {"node-1": 2} and out.cost == 4 and out.placed == 3
    assert not out.proven_minimal and out.stats.model_placed == 3 and out.stats.repaired_from == {"node-1": 0}
    assert out.unencoded_rules[0].startswith("required inter-pod anti-affinity (default/db-0")
