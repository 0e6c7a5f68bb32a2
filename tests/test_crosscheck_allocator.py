"""draopt's first-fit against Kubernetes' own allocator (the Go oracle, draopt/crosscheck), for
Kubernetes 1.36 and 1.37: generated scenarios over every feature family of
draopt.testing.synth, the conformance cases, and each node of every input file of
shared/realworld and examples/ with its pending claims. One oracle process per release.

Every difference must fall in a category of docs/differences.md (KNOWN below, checked in order);
an unexplained one fails. Categories that are draopt's own faults are "open" there and have an
xfail(strict=True) test on a pinned scenario. Counts are printed (pytest -s) and written to
crosscheck-allocator-<minor>.json under the test's tmp dir.

Skips when no go command is found or the modules cannot be downloaded; a compile error fails.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from draopt.allocation.allocate import warm_up
from draopt.crosscheck.allocator_oracle import (
    DraoptAllocation,
    OracleAllocation,
    compare_allocation,
    draopt_allocation,
    normalized_result,
    paired,
    run_allocator_oracle,
    with_pool_order,
)
from draopt.crosscheck.gobuild import SUPPORTED, OracleUnavailable, oracle_binary
from draopt.testing.crosscheck_scenarios import (
    conformance_cases,
    conformance_scenarios,
    file_scenarios,
    synth_scenarios,
    yaml_files,
)
from draopt.errors import InputError
from draopt.kube.quantity import Quantity

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DRAOPT_SHARED_DIR", ROOT.parent / "shared"))
CONFORMANCE = (
    SHARED / "conformance" / "cases" if (SHARED / "conformance").exists() else ROOT / "tests/conformance/cases"
)
REALWORLD = SHARED / "realworld"
EXAMPLES = ROOT / "examples"
SYNTH_COUNT = int(os.environ.get("DRAOPT_CROSSCHECK_SYNTH", "2000"))
SEED = 20261206


def oracle_or_skip(minor: str) -> Path:
    try:
        return oracle_binary("allocator", minor)
    except OracleUnavailable as e:
        if e.cause == "compile":
            pytest.fail(str(e))
        pytest.skip(str(e))


# ------------------------------------------------------------------ classifying differences
@dataclass
class Case:
    """One scenario's answers: the scheduler's (`kubernetes`), the pool-ordered run's
    (`pool_order`), draopt's, and the differences against the scheduler's."""

    minor: str
    scenario: Mapping[str, Any]
    kubernetes: OracleAllocation
    pool_order: OracleAllocation
    draopt: DraoptAllocation
    diffs: list[str]

    @property
    def text(self) -> str:
        return json.dumps(self.scenario)

    def gate(self, name: str) -> bool:
        return bool(self.scenario["gates"].get(name))


def _by_value(answer: Any) -> Any:
    """The answer with each consumedCapacity quantity as its exact value."""
    results = []
    for result in answer.results:
        devices = []
        for r in (result.get("devices") or {}).get("results") or []:
            r = dict(r)
            if r.get("consumedCapacity"):
                r["consumedCapacity"] = {k: str(Quantity.parse(v).value) for k, v in r["consumedCapacity"].items()}
            devices.append(r)
        results.append({**result, "devices": {**(result.get("devices") or {}), "results": devices}})
    return type(answer)(**{**answer.__dict__, "results": results})


def _list_attributes_matter_on_136(case: Case) -> bool:
    """1.36's CEL fails on a list-valued attribute while DRAListTypeAttributes is off, and its
    allocator compares list attributes as scalars in constraints even when it is on."""
    if "unsupported attribute value" in case.kubernetes.error:
        return True
    return case.gate("DRAListTypeAttributes") and "/links" in case.text


def _rejected_by_prefilter(case: Case) -> bool:
    """The plugin's PreFilter marks the pod unschedulable before any allocator runs (a request
    with subrequests while DRAPrioritizedList is off, a DeviceClass that does not exist); draopt
    reports the allocator's error for the same conditions."""
    messages = ("has subrequests, but the DRAPrioritizedList feature is disabled", "does not exist")
    return (
        case.kubernetes.outcome == "unschedulable"
        and any(m in case.kubernetes.error for m in messages)
        and case.draopt.outcome == "error"
    )


# name -> predicate, in order; the names are docs/differences.md's section anchors.
KNOWN: list[tuple[str, Callable[[Case], bool]]] = [
    # explained: Kubernetes' own behaviour, draopt reproduces the documented one
    (
        "stable-variant",
        lambda c: c.kubernetes.allocator == "stable" and not compare_allocation(c.draopt, c.pool_order),
    ),
    ("prefilter", _rejected_by_prefilter),
    (
        "consumed-capacity-format",
        lambda c: c.minor == "1.37" and not compare_allocation(_by_value(c.draopt), _by_value(c.kubernetes)),
    ),
    (
        "invalid-pools-per-node",
        lambda c: (
            c.kubernetes.outcome == "unschedulable"
            and c.kubernetes.error == "invalid resource pools were encountered"
            and c.draopt.outcome == "error"
            and "invalid resource pools were encountered" in c.draopt.error
        ),
    ),
    (
        "release-1.36-config-requests",
        lambda c: c.minor == "1.36" and all(d.split(":")[0].endswith(" config") for d in c.diffs),
    ),
    (
        "search-timeout",
        lambda c: (
            c.kubernetes.outcome in ("timeout", "unschedulable")
            and "did not finish within its step limit" in c.draopt.error
        ),
    ),
    ("release-1.36-list-attributes", lambda c: c.minor == "1.36" and _list_attributes_matter_on_136(c)),
]


def classify(case: Case) -> str | None:
    for name, matches in KNOWN:
        if matches(case):
            return name
    return None


# ------------------------------------------------------------------ the differential run
def _sources(minor: str) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    sources = {
        "synth": synth_scenarios(SYNTH_COUNT, minor, SEED),
        "conformance": conformance_scenarios(CONFORMANCE),
    }
    refused: dict[str, Any] = {}
    for name, root in (("realworld", REALWORLD), ("examples", EXAMPLES)):
        with contextlib.redirect_stderr(io.StringIO()):  # the loader's notes on unused kinds
            found = file_scenarios(name, list(yaml_files(root)) if root.exists() else [], minor)
        sources[name] = found.scenarios
        refused[name] = {"refused": len(found.refused), "without_nodes": len(found.without_nodes)}
    return sources, refused


def _draopt(scenario: Mapping[str, Any], minor: str) -> DraoptAllocation | None:
    """draopt's answer as the release `minor` allocates (its release-dependent behaviour)."""
    with contextlib.redirect_stderr(io.StringIO()):  # warnings on fields of newer releases
        try:
            return draopt_allocation(scenario, minor=minor)
        except InputError:
            return None


@pytest.mark.parametrize("minor", SUPPORTED)
def test_draopt_agrees_with_kubernetes(minor, tmp_path_factory):
    oracle_or_skip(minor)
    warm_up()
    started = time.perf_counter()
    sources, file_refusals = _sources(minor)
    order = [(name, scenario) for name, scenarios in sources.items() for scenario in scenarios]
    answers = paired(run_allocator_oracle(with_pool_order(s for _, s in order), minor, timeout=120))
    oracle_seconds = time.perf_counter() - started
    counts: dict[str, Counter] = {name: Counter() for name in sources}
    categories: Counter = Counter()
    examples: dict[str, str] = {}
    unexplained = []
    for (source, scenario), (kubernetes, pool_order) in zip(order, answers):
        mine = _draopt(scenario, minor)
        tally = counts[source]
        tally["scenarios"] += 1
        if mine is None:
            tally["refused by draopt"] += 1
            continue
        tally[f"kubernetes {kubernetes.outcome}"] += 1
        diffs = compare_allocation(mine, kubernetes)
        if not diffs:
            continue
        tally["differences"] += 1
        case = Case(minor, scenario, kubernetes, pool_order, mine, diffs)
        category = classify(case)
        if category is None:
            unexplained.append(f"{scenario['name']}: {diffs[0][:600]}")
            continue
        categories[category] += 1
        examples.setdefault(category, scenario["name"])
    report = {
        "minor": minor,
        "seconds": round(time.perf_counter() - started, 1),
        "oracle_and_setup_seconds": round(oracle_seconds, 1),
        "sources": {k: dict(v) for k, v in counts.items()},
        "input_files": file_refusals,
        "differences_by_category": dict(categories.most_common()),
        "first_scenario_per_category": examples,
        "unexplained": len(unexplained),
    }
    out = tmp_path_factory.mktemp("crosscheck") / f"crosscheck-allocator-{minor}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"\ncrosscheck allocator {minor}: {json.dumps(report, indent=2)}\n(written to {out})")
    assert sum(c["scenarios"] for c in counts.values()) >= SYNTH_COUNT
    assert not unexplained, f"{len(unexplained)} unexplained differences:\n" + "\n".join(unexplained[:20])


# ------------------------------------------------------------------ the conformance answers
def _oracle_matches_expectation(case: Mapping[str, Any], kubernetes: OracleAllocation, pool_order) -> str | None:
    expect = case["expect"]
    want = expect["outcome"]
    answer = pool_order if kubernetes.allocator == "stable" and kubernetes.outcome == pool_order.outcome else kubernetes
    if want == "error-or-unschedulable" or (
        want == "unschedulable" and "invalid resource pools" in (expect.get("error") or "")
    ):
        return None if answer.outcome in ("error", "unschedulable") else f"expected {want}, got {answer.outcome}"
    if answer.outcome != want:
        return f"expected {want}, got {answer.outcome}: {answer.error[:300]}"
    if want != "allocated":
        return None
    for i, (wanted, got) in enumerate(zip(expect["results"], answer.results)):
        wanted_results = (wanted.get("devices") or {}).get("results") or []
        got_results = (got.get("devices") or {}).get("results") or []
        w = [normalized_result(r) for r in wanted_results]
        g = [normalized_result(r) for r in got_results]
        for item, source in zip(w + g, wanted_results + wanted_results):
            if "shareID" not in source:  # the case does not say: not compared
                item.pop("shareID", None)
        if w != g:
            return f"claim {i}: expected {json.dumps(w)}, got {json.dumps(g)}"
    return None


# Conformance cases whose answer differs on a release (docs/differences.md, "Conformance cases").
CONFORMANCE_RELEASE_DIFFERENCES: dict[str, set[str]] = {"1.36": set(), "1.37": set()}


@pytest.mark.parametrize("minor", SUPPORTED)
def test_oracle_reproduces_conformance_expectations(minor):
    """The oracle gives each conformance case's expected answer (computed with the real allocator)."""
    oracle_or_skip(minor)
    cases = conformance_cases(CONFORMANCE)
    assert cases, f"no conformance cases under {CONFORMANCE}"
    answers = paired(run_allocator_oracle(with_pool_order(conformance_scenarios(CONFORMANCE)), minor, timeout=120))
    failures = {}
    for case, (kubernetes, pool_order) in zip(cases, answers):
        problem = _oracle_matches_expectation(case, kubernetes, pool_order)
        if problem:
            failures[case["name"]] = problem
    print(f"\nconformance on {minor}: {len(cases) - len(failures)}/{len(cases)} as expected")
    unexpected = {k: v for k, v in failures.items() if k not in CONFORMANCE_RELEASE_DIFFERENCES[minor]}
    assert not unexpected, json.dumps(unexpected, indent=1)
    assert set(failures) == CONFORMANCE_RELEASE_DIFFERENCES[minor], "a listed release difference is gone"


# ------------------------------------------------------------------ pinned differences
# One scenario per category of docs/differences.md. An explained one asserts that the difference
# is still there (so the document stays true); an open one (draopt's fault) asserts agreement and
# is xfail(strict=True) until draopt is fixed.
V1 = "resource.k8s.io/v1"
GPU_CLASS = {
    "apiVersion": V1,
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}


def _slice(name: str, pool: str, devices: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "node-1",
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
            **spec,
        },
    }


def _claim(requests: list[dict[str, Any]], **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": "claim-0", "namespace": "default", "uid": "uid-0"},
        "spec": {"devices": {"requests": requests, **devices}},
    }


def _scenario(name: str, gates_on: list[str], objects: list[dict[str, Any]], claims: list[dict[str, Any]]):
    from draopt.crosscheck.allocator_oracle import with_api_defaults
    from draopt.kube.features import DEFAULT_GATES

    gates = {g: g in gates_on for g in DEFAULT_GATES}
    return {
        "name": name,
        "gates": gates,
        "node": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        "objects": objects,
        "claims": [with_api_defaults(c) for c in claims],
        "repeat": 1,
        "timeoutSeconds": 10.0,
    }


def _both(scenario: Mapping[str, Any], minor: str) -> tuple[OracleAllocation, DraoptAllocation]:
    oracle_or_skip(minor)
    [kubernetes] = run_allocator_oracle([scenario], minor, timeout=60)
    mine = _draopt(scenario, minor)
    assert mine is not None, "draopt refused the pinned scenario"
    return kubernetes, mine


def _device(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def _synth(minor: str, index: int) -> dict[str, Any]:
    return synth_scenarios(index + 1, minor, SEED)[index]


def test_stable_variant_pool_order():
    """stable-variant: with only stable features on, the scheduler's allocator visits pools in Go
    map order; pinned to the sorted variants it takes the first pool by name, as draopt does."""
    objects = [GPU_CLASS] + [_slice(f"s-{p}", f"pool-{p}", [_device("dev")]) for p in "abcd"]
    scenario = _scenario(
        "stable-pool-order", [], objects, [_claim([{"name": "r", "exactly": {"deviceClassName": "gpu"}}])]
    )
    oracle_or_skip("1.37")
    answers = run_allocator_oracle([dict(scenario, name=f"try-{i}") for i in range(40)], "1.37", timeout=60)
    pools = {a.results[0]["devices"]["results"][0]["pool"] for a in answers}
    assert {a.allocator for a in answers} == {"stable"}
    assert len(pools) > 1, pools  # 40 tries over 4 pools: a single pool would be a 4**-39 chance
    [(_, ordered)] = paired(run_allocator_oracle(with_pool_order([scenario]), "1.37", timeout=60))
    mine = _draopt(scenario, "1.37")
    assert ordered.allocator == "incubating"
    assert mine is not None and not compare_allocation(mine, ordered)


@pytest.mark.parametrize("minor", SUPPORTED)
def test_stable_variant_distinct_attribute(minor):
    """stable-variant: distinctAttribute while DRAConsumableCapacity is off; the stable variant
    does not know the constraint ("empty constraint", an error), the sorted variants and draopt
    enforce it (two devices of numa 0: unschedulable)."""
    devices = [_device(f"d{i}", attributes={"numa": {"int": 0}}) for i in range(2)]
    claim = _claim(
        [{"name": "r", "exactly": {"deviceClassName": "gpu", "count": 2}}],
        constraints=[{"distinctAttribute": "gpu.example.com/numa"}],
    )
    scenario = _scenario("distinct", [], [GPU_CLASS, _slice("s", "p", devices)], [claim])
    oracle_or_skip(minor)
    [(kubernetes, ordered)] = paired(run_allocator_oracle(with_pool_order([scenario]), minor, timeout=60))
    mine = _draopt(scenario, minor)
    assert (kubernetes.allocator, kubernetes.outcome) == ("stable", "error") and "empty constraint" in kubernetes.error
    assert mine is not None and (ordered.outcome, mine.outcome) == ("unschedulable", "unschedulable")


@pytest.mark.parametrize("minor", SUPPORTED)
def test_prefilter(minor):
    """prefilter: firstAvailable with DRAPrioritizedList off; a DeviceClass that does not exist."""
    request = {"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "gpu"}]}
    scenario = _scenario("prefilter", [], [GPU_CLASS, _slice("s", "p", [_device("d")])], [_claim([request])])
    kubernetes, mine = _both(scenario, minor)
    assert (kubernetes.outcome, mine.outcome) == ("unschedulable", "error")
    missing = _claim([{"name": "r", "exactly": {"deviceClassName": "missing"}}])
    scenario = _scenario("no-class", [], [GPU_CLASS, _slice("s", "p", [_device("d")])], [missing])
    kubernetes, mine = _both(scenario, minor)
    assert (kubernetes.outcome, mine.outcome) == ("unschedulable", "error")
    assert "device class missing does not exist" in kubernetes.error


def _bandwidth_scenario() -> dict[str, Any]:
    policy = {"default": "1G", "validRange": {"min": "1G", "step": "1G"}}
    device = _device(
        "d", allowMultipleAllocations=True, capacity={"bandwidth": {"value": "10G", "requestPolicy": policy}}
    )
    request = {"name": "r", "exactly": {"deviceClassName": "gpu", "capacity": {"requests": {"bandwidth": "1500M"}}}}
    return _scenario("format", ["DRAConsumableCapacity"], [GPU_CLASS, _slice("s", "p", [device])], [_claim([request])])


@pytest.mark.parametrize("minor", SUPPORTED)
def test_consumed_capacity_format(minor):
    """consumed-capacity-format: 1500M rounded up to the 1G step; 1.37 writes it in the step's
    format, 1.36 (and draopt) in binary SI."""
    kubernetes, mine = _both(_bandwidth_scenario(), minor)
    consumed = kubernetes.results[0]["devices"]["results"][0]["consumedCapacity"]["bandwidth"]
    assert consumed == {"1.36": "1953125Ki", "1.37": "2G"}[minor]
    assert mine.results[0]["devices"]["results"][0]["consumedCapacity"]["bandwidth"] == "1953125Ki"


@pytest.mark.parametrize("minor", SUPPORTED)
def test_invalid_pools_per_node(minor):
    """invalid-pools-per-node: a pool with a duplicate device name."""
    scenario = _scenario(
        "invalid-pool",
        [],
        [GPU_CLASS, _slice("s", "p", [_device("d"), _device("d")])],
        [_claim([{"name": "r", "exactly": {"deviceClassName": "gpu"}}])],
    )
    kubernetes, mine = _both(scenario, minor)
    assert (kubernetes.outcome, mine.outcome) == ("unschedulable", "error")


def test_release_136_list_attributes():
    """release-1.36-list-attributes: 1.36's CEL fails on a list-valued attribute with the gate off."""
    device = _device("d", attributes={"links": {"strings": ["l0"]}, "model": {"string": "a"}})
    request = {
        "name": "r",
        "exactly": {
            "deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "a"'}}],
        },
    }
    scenario = _scenario("lists", [], [GPU_CLASS, _slice("s", "p", [device])], [_claim([request])])
    kubernetes, mine = _both(scenario, "1.36")
    assert kubernetes.outcome == "error" and "unsupported attribute value" in kubernetes.error
    assert mine.outcome == "allocated"


def _grouped_counters_scenario(gates_on: list[str]) -> dict[str, Any]:
    counters = _slice("counters", "p", [], sharedCounters=[{"name": "cs", "counters": {"mem": {"value": "8Gi"}}}])
    counters["spec"].pop("devices")
    consumes = [{"counterSet": "cs", "counters": {"mem": {"value": "4Gi"}}, "compatibilityGroups": ["mig"]}]
    devices = _slice("devices", "p", [_device("d", consumesCounters=consumes)])
    for s in (counters, devices):
        s["spec"]["pool"]["resourceSliceCount"] = 2
    request = {"name": "r", "exactly": {"deviceClassName": "gpu"}}
    return _scenario("grouped", gates_on, [GPU_CLASS, counters, devices], [_claim([request])])


def test_fixed_release_136_compatibility_groups():
    """Fixed release-1.36-compatibility-groups: 1.36 has no compatibilityGroups field (its API
    server drops it), so the grouped device is a plain one there: allocated. 1.37 with the gate
    off ignores the slice naming groups, which leaves the pool incomplete: unschedulable. draopt
    took the pool as incomplete on 1.36 too."""
    scenario = _grouped_counters_scenario(["DRAPartitionableDevices"])
    for minor, outcome in (("1.36", "allocated"), ("1.37", "unschedulable")):
        kubernetes, mine = _both(scenario, minor)
        assert kubernetes.outcome == outcome
        assert compare_allocation(mine, kubernetes) == []


def test_release_136_config_requests():
    """release-1.36-config-requests: a DeviceClass config; 1.36 names the requests it applies to
    in the allocation's config, 1.37 (and draopt) leave the list empty."""
    config = [{"opaque": {"driver": "gpu.example.com", "parameters": {"x": 1}}}]
    gpu_class = {**GPU_CLASS, "spec": {**GPU_CLASS["spec"], "config": config}}
    claim = _claim([{"name": "r", "exactly": {"deviceClassName": "gpu"}}])
    scenario = _scenario("config", [], [gpu_class, _slice("s", "p", [_device("d")])], [claim])
    for minor, requests in (("1.36", ["r"]), ("1.37", [])):
        kubernetes, mine = _both(scenario, minor)
        assert kubernetes.results[0]["devices"]["config"][0].get("requests", []) == requests
        assert mine.results[0]["devices"]["config"][0].get("requests", []) == []


@pytest.mark.parametrize("minor", SUPPORTED)
def test_fixed_taint_rule_removed_selector_fields(minor):
    """Fixed taint-rule-removed-selector-fields: a rule selecting by deviceClassName only, a field
    of no served version: Kubernetes decodes the empty selector and taints the device; draopt
    applied the class match and allocated."""
    rule = {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "rule"},
        "spec": {"deviceSelector": {"deviceClassName": "other"}, "taint": {"key": "k", "effect": "NoSchedule"}},
    }
    scenario = _scenario(
        "taint-rule",
        ["DRADeviceTaints", "DRADeviceTaintRules"],
        [GPU_CLASS, _slice("s", "p", [_device("d")]), rule],
        [_claim([{"name": "r", "exactly": {"deviceClassName": "gpu"}}])],
    )
    kubernetes, mine = _both(scenario, minor)
    assert kubernetes.outcome == "unschedulable"
    assert compare_allocation(mine, kubernetes) == []


def test_fixed_release_137_distinct_attribute():
    """Fixed release-1.37-distinct-attribute (reduced from generated scenario 54): devices of numa
    0, 2, 2, 1; two requests of two devices each under distinctAttribute numa
    (DRAConsumableCapacity on). 1.36 allocates d1, d3 and d0, d2 (numa 2 twice: one value kept
    per request name); 1.37 finds no four distinct values: unschedulable. draopt gives each
    release's answer."""
    devices = [_device(f"d{i}", attributes={"numa": {"int": v}}) for i, v in enumerate([0, 2, 2, 1])]
    claim = _claim(
        [{"name": n, "exactly": {"deviceClassName": "gpu", "count": 2}} for n in ("a", "b")],
        constraints=[{"distinctAttribute": "gpu.example.com/numa"}],
    )
    scenario = _scenario("distinct", ["DRAConsumableCapacity"], [GPU_CLASS, _slice("s", "p", devices)], [claim])
    k136, mine136 = _both(scenario, "1.36")
    k137, mine137 = _both(scenario, "1.37")
    assert k136.outcome == "allocated" and compare_allocation(mine136, k136) == []
    assert k137.outcome == "unschedulable" and compare_allocation(mine137, k137) == []


@pytest.mark.parametrize("minor", ["1.37"])
def test_fixed_derived_attributes_gate_off(minor):
    """Fixed derived-attributes-gate-off: derivedAttributes while DRADerivedAttributes is off (a
    claim stored while it was on): every variant refuses the request with an error; draopt did
    ignore the derived attributes and found the matchAttribute constraint unmet."""
    request = {
        "name": "r",
        "exactly": {
            "deviceClassName": "gpu",
            "derivedAttributes": [{"name": "derived/numa", "expression": 'device.attributes["gpu.example.com"].numa'}],
        },
    }
    devices = [_device("d", attributes={"numa": {"int": 0}})]
    claim = _claim([request], constraints=[{"matchAttribute": "derived/numa"}])
    kubernetes, mine = _both(_scenario("derived-off", [], [GPU_CLASS, _slice("s", "p", devices)], [claim]), minor)
    assert kubernetes.outcome == "error" and "cannot handle request with derived attributes" in kubernetes.error
    assert compare_allocation(mine, kubernetes) == []


def test_fixed_all_mode_incomplete_pool():
    """Fixed all-mode-incomplete-pool (reduced from generated scenario 187): gates off; the only
    slice of a pool of 3 slices has a device whose counters name compatibilityGroups;
    allocationMode All. Kubernetes ignores that slice, so the pool is not there at all:
    unschedulable; draopt kept the pool as incomplete: error "asks for all devices, but resource
    pool ... is currently being updated"."""
    consumes = [{"counterSet": "cs-0", "counters": {"mem": {"value": "6Gi"}}, "compatibilityGroups": ["vgpu"]}]
    pool = _slice("s1", "p", [_device("d", consumesCounters=consumes)])
    pool["spec"]["pool"]["resourceSliceCount"] = 3
    claim = _claim([{"name": "r", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}])
    kubernetes, mine = _both(_scenario("all-incomplete", [], [GPU_CLASS, pool], [claim]), "1.37")
    assert kubernetes.outcome == "unschedulable"
    assert compare_allocation(mine, kubernetes) == []


def test_fixed_release_137_all_mode_shared_device():
    """Fixed release-1.37-all-mode-shared-device (reduced from generated scenario 899):
    DRAConsumableCapacity on; a shared device s (allowMultipleAllocations, memory 2Gi) whose 2Gi
    an in-use claim holds (shareID set), a device d; a request for All devices. 1.36 allocates d
    alone; 1.37 counts s among all devices, and s has no memory left: unschedulable. draopt
    gives each release's answer."""
    shared = _device("s", allowMultipleAllocations=True, capacity={"memory": {"value": "2Gi"}})
    held = {
        "request": "r",
        "driver": "gpu.example.com",
        "pool": "p",
        "device": "s",
        "shareID": "00000000-0000-0000-0000-000000000001",
        "consumedCapacity": {"memory": "2Gi"},
    }
    in_use = _claim([{"name": "r", "exactly": {"deviceClassName": "gpu"}}])
    in_use["metadata"] = {"name": "running", "namespace": "default", "uid": "u-run"}
    in_use["status"] = {"allocation": {"devices": {"results": [held]}}}
    claim = _claim([{"name": "r", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}])
    objects = [GPU_CLASS, _slice("s", "p", [shared, _device("d")]), in_use]
    scenario = _scenario("all-shared", ["DRAConsumableCapacity"], objects, [claim])
    k136, mine136 = _both(scenario, "1.36")
    k137, mine137 = _both(scenario, "1.37")
    assert k136.outcome == "allocated" and compare_allocation(mine136, k136) == []
    assert k137.outcome == "unschedulable" and compare_allocation(mine137, k137) == []


def _counter_pool_and_plain_pool() -> list[dict[str, Any]]:
    """Pool p0: counter set cs of 6Gi, d1 (numa 0, no model) takes 6Gi, d2 (model a) 4Gi; pool
    p1: d0 (model a)."""
    counters = _slice("counters", "p0", [], sharedCounters=[{"name": "cs", "counters": {"mem": {"value": "6Gi"}}}])
    counters["spec"].pop("devices")

    def uses(mem: str) -> list[dict[str, Any]]:
        return [{"counterSet": "cs", "counters": {"mem": {"value": mem}}}]

    devices = _slice(
        "devices",
        "p0",
        [
            _device("d1", attributes={"numa": {"int": 0}}, consumesCounters=uses("6Gi")),
            _device("d2", attributes={"model": {"string": "a"}}, consumesCounters=uses("4Gi")),
        ],
    )
    for s in (counters, devices):
        s["spec"]["pool"]["resourceSliceCount"] = 2
    return [GPU_CLASS, counters, devices, _slice("other", "p1", [_device("d0", attributes={"model": {"string": "a"}})])]


def _shared_counter_device_scenario() -> dict[str, Any]:
    """Reduced from generated scenario 422: pool p, counter set cs of 8Gi; d0 (model a, shared:
    allowMultipleAllocations, bandwidth 10G of validValues 1G/2G/5G, takes 6Gi of cs), d1 (model
    a), d3 (model c). claim-0: firstAvailable [alt1: two devices of model a, alt2: one device
    with 3G of bandwidth]; claim-1: two requests of one device."""
    counters = _slice("counters", "p", [], sharedCounters=[{"name": "cs", "counters": {"mem": {"value": "8Gi"}}}])
    counters["spec"].pop("devices")
    bandwidth = {"value": "10G", "requestPolicy": {"default": "2G", "validValues": ["1G", "2G", "5G"]}}
    shared = _device(
        "d0",
        attributes={"model": {"string": "a"}},
        capacity={"memory": {"value": "2Gi"}, "bandwidth": bandwidth},
        allowMultipleAllocations=True,
        consumesCounters=[{"counterSet": "cs", "counters": {"mem": {"value": "6Gi"}}}],
    )
    plain = [_device("d1", attributes={"model": {"string": "a"}}), _device("d3", attributes={"model": {"string": "c"}})]
    devices = _slice("devices", "p", [shared, *plain])
    for s in (counters, devices):
        s["spec"]["pool"]["resourceSliceCount"] = 2
    model_a = [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "a"'}}]
    first = _claim(
        [
            {
                "name": "r",
                "firstAvailable": [
                    {"name": "alt1", "deviceClassName": "gpu", "count": 2, "selectors": model_a},
                    {"name": "alt2", "deviceClassName": "gpu", "capacity": {"requests": {"bandwidth": "3G"}}},
                ],
            }
        ]
    )
    second = _claim([{"name": n, "exactly": {"deviceClassName": "gpu"}} for n in ("r0", "r1")])
    second["metadata"] = {"name": "claim-1", "namespace": "default", "uid": "uid-1"}
    gates = ["DRAConsumableCapacity", "DRAPartitionableDevices", "DRAPrioritizedList"]
    return _scenario("shared-counter-device", gates, [GPU_CLASS, counters, devices], [first, second])


@pytest.mark.parametrize("minor", SUPPORTED)
def test_fixed_counter_leak(minor):
    """Fixed counter-leak: the allocator's counter leak (counters kept after a constraint refuses
    the device, or after backtracking a shared device), which 1.36.3 and 1.37.0 fixed
    (rollbackDevice); draopt keeps it for 1.35 only. (a) Two requests of one device under
    matchAttribute model: Kubernetes tries d1 for r0 (no model: refused), then d2 (4Gi of 6Gi),
    then d0 for r1: allocated (1.35 kept d1's 6Gi: unschedulable). (b)
    _shared_counter_device_scenario: Kubernetes backtracks claim-0 to alt2 on d0: allocated."""
    claim = _claim(
        [{"name": n, "exactly": {"deviceClassName": "gpu"}} for n in ("r0", "r1")],
        constraints=[{"matchAttribute": "gpu.example.com/model"}],
    )
    gates = ["DRAPartitionableDevices", "DRAConsumableCapacity"]  # the incubating variant: pools in order
    constrained = _scenario("counters-constraint", gates, _counter_pool_and_plain_pool(), [claim])
    for scenario in (constrained, _shared_counter_device_scenario()):
        kubernetes, mine = _both(scenario, minor)
        assert kubernetes.outcome == "allocated"
        assert compare_allocation(mine, kubernetes) == []
        # 1.35 (k8s.io/dynamic-resource-allocation v0.35.0) still leaks: draopt keeps its answer.
        leaked = _draopt(scenario, "1.35")
        assert leaked is not None and leaked.outcome == "unschedulable"


# ------------------------------------------------------------------ the protocol and the build
def test_oracle_protocol_survives_malformed_lines():
    """A malformed line is answered "invalid" and the stream goes on."""
    import subprocess

    binary = oracle_or_skip("1.37")
    good = _scenario(
        "good",
        [],
        [GPU_CLASS, _slice("s", "p", [_device("d")])],
        [_claim([{"name": "r", "exactly": {"deviceClassName": "gpu"}}])],
    )
    lines = ["not json", json.dumps({"name": "no-node", "claims": []}), json.dumps(dict(good, repeat=3))]
    out = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(a["name"], a["outcome"]) for a in answers] == [
        ("", "invalid"),
        ("no-node", "invalid"),
        ("good", "allocated"),
    ]
    assert len(answers[2]["nanos"]) == 3 and answers[2]["results"][0]["devices"]["results"][0]["device"] == "d"


def test_oracle_binary_is_built_once():
    """The binary is cached under $DRAOPT_CACHE_DIR by the sources' hash and reused."""
    first = oracle_or_skip("1.37")
    assert first.parent.name.startswith("allocator-1.37-") and first.name == "oracle"
    stamp = first.stat().st_mtime_ns
    assert oracle_binary("allocator", "1.37") == first and first.stat().st_mtime_ns == stamp
    with pytest.raises(InputError, match="not supported"):
        oracle_binary("allocator", "1.35")
