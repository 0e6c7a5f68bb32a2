"""Kubernetes' own DRA allocator as an oracle for draopt's first-fit.

The oracle (oracles/allocator/, Go) reads scenarios as JSON Lines and answers each with
Kubernetes' allocation; this module writes the scenarios, runs one oracle process for many of
them, runs draopt on the same scenarios and lists where the two answers differ.

    scenario = scenario_from_objects(node, objects, claims, Features.from_gates())
    [oracle] = run_allocator_oracle([scenario], "1.37", timeout=60)
    compare_allocation(draopt_allocation(scenario), oracle)   # [] when they agree
"""

from __future__ import annotations

import dataclasses
import json
import queue
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from draopt.crosscheck.gobuild import oracle_binary
from draopt.errors import DraoptError, InputError
from draopt.kube.features import DEFAULT_GATES, Features, parse_kubernetes_version
from draopt.kube.loader import ObjectSet, parse_object

OUTCOMES = ("allocated", "unschedulable", "error", "timeout", "invalid")
# The conformance cases' allocator feature names, as gates (shared/conformance/README.md).
CONFORMANCE_GATES: dict[str, tuple[str, ...]] = {
    "AdminAccess": ("DRAAdminAccess",),
    "ConsumableCapacity": ("DRAConsumableCapacity",),
    "DeviceBindingAndStatus": ("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"),
    # The rules are applied with the taints: the cases were computed that way (DRADeviceTaintRules
    # is on by default wherever DRADeviceTaints is).
    "DeviceTaints": ("DRADeviceTaints", "DRADeviceTaintRules"),
    "ListTypeAttributes": ("DRAListTypeAttributes",),
    "PartitionableDevices": ("DRAPartitionableDevices",),
    "PrioritizedList": ("DRAPrioritizedList",),
    "DeviceCompatibilityGroups": ("DRADeviceCompatibilityGroups",),
    "DerivedAttributes": ("DRADerivedAttributes",),
}
RESOURCE_V1 = "resource.k8s.io/v1"


@dataclass
class OracleAllocation:
    """Kubernetes' answer for one scenario. `results`: AllocationResult JSON, one per claim;
    `nanos`: elapsed ns of each repeat (allocator construction + Allocate)."""

    name: str
    outcome: str
    results: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    nanos: list[int] = field(default_factory=list)
    allocator: str = ""  # the variant that ran: stable, incubating, experimental ("" if none did)


@dataclass
class DraoptAllocation:
    """draopt's answer in the oracle's terms."""

    outcome: str  # allocated, unschedulable, error
    results: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    nanos: list[int] = field(default_factory=list)  # elapsed ns of each repeat of the allocate call


class OracleFailed(DraoptError):
    """The oracle process died, hung or answered out of turn."""


def _as_dict(obj: Any) -> dict[str, Any]:
    return obj.to_k8s() if hasattr(obj, "to_k8s") else dict(obj)


def _default_request(request: dict[str, Any]) -> dict[str, Any]:
    request = dict(request)
    request.setdefault("allocationMode", "ExactCount")
    if request["allocationMode"] == "ExactCount":
        request.setdefault("count", 1)
    if request.get("tolerations"):
        request["tolerations"] = [{"operator": "Equal", **t} for t in request["tolerations"]]
    return request


def with_api_defaults(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The claim as the API server stores it: each request's allocationMode (ExactCount), count
    (1) and tolerations' operator (Equal) defaulted, as the scheduler then reads them; draopt
    applies the same defaults itself, the oracle's allocator does not."""
    spec = claim.get("spec") or {}
    devices = spec.get("devices") or {}
    requests = []
    for request in devices.get("requests") or []:
        request = dict(request)
        if request.get("exactly") is not None:
            request["exactly"] = _default_request(request["exactly"])
        if request.get("firstAvailable"):
            request["firstAvailable"] = [_default_request(sub) for sub in request["firstAvailable"]]
        requests.append(request)
    return {**claim, "spec": {**spec, "devices": {**devices, "requests": requests}}}


def scenario_from_objects(
    node: Any,
    objects: Iterable[Any],
    claims: Iterable[Any],
    features: Features,
    *,
    name: str = "",
    repeat: int = 1,
    timeout_seconds: float = 10.0,
) -> dict[str, Any]:
    """One oracle scenario: `node` (a Node model or dict), `objects` (DeviceClasses,
    ResourceSlices, DeviceTaintRules and in-use ResourceClaims, models or v1 dicts), `claims`
    (to allocate together, in order). Every gate is written out: the oracle takes a gate not
    given as off, draopt as its default."""
    docs = []
    for obj in objects:
        doc = _as_dict(obj)
        if doc.get("kind") in ("DeviceClass", "ResourceSlice", "ResourceClaim"):
            doc = {**doc, "apiVersion": RESOURCE_V1}
        if doc.get("kind") == "ResourceClaim":
            doc = with_api_defaults(doc)
        docs.append(doc)
    return {
        "name": name,
        "gates": dict(sorted(features.gates.items())),
        "node": _as_dict(node),
        "objects": docs,
        "claims": [with_api_defaults({**_as_dict(c), "apiVersion": RESOURCE_V1}) for c in claims],
        "repeat": repeat,
        "timeoutSeconds": timeout_seconds,
    }


def conformance_gates(feature_names: Iterable[str]) -> dict[str, bool]:
    """Gates for a conformance case's `features` list: those named on, every other one off."""
    on = {g for f in feature_names for g in CONFORMANCE_GATES.get(f, ("DRA" + f,))}
    return {g: g in on for g in sorted(set(DEFAULT_GATES) | on)}


def scenario_from_case(case: Mapping[str, Any]) -> dict[str, Any]:
    """A conformance case (shared/conformance format) as an oracle scenario."""
    node = {"apiVersion": "v1", "kind": "Node", **(case.get("node") or {})}
    return {
        "name": case.get("name", ""),
        "gates": conformance_gates(case.get("features") or []),
        "node": node,
        "objects": [with_api_defaults(o) if o.get("kind") == "ResourceClaim" else o for o in case.get("objects") or []],
        "claims": [with_api_defaults(c) for c in case.get("claims") or []],
        "repeat": 1,
        "timeoutSeconds": 10.0,
    }


def scenarios_from_object_set(
    objects: ObjectSet, features: Features, name: str = ""
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(node name, scenario) for each node of the input with the pending claims, as
    `draopt allocate --node NAME` takes them (every claim without status.allocation, together)."""
    from draopt.allocation.allocate import select_claims

    todo, in_use = select_claims(objects, None)
    if not todo:
        return
    shared = [*objects.device_classes, *objects.resource_slices, *objects.taint_rules, *in_use]
    for node in sorted(objects.nodes, key=lambda n: n.name):
        yield node.name, scenario_from_objects(node, shared, todo, features, name=f"{name}@{node.name}")


def _objects_of(scenario: Mapping[str, Any]) -> ObjectSet:
    objs = ObjectSet()
    docs = [scenario["node"], *scenario["objects"], *scenario["claims"]]
    for i, doc in enumerate(docs):
        objs.add(parse_object(doc, f"{scenario.get('name') or 'scenario'} document {i}"))
    return objs


def draopt_allocation(scenario: Mapping[str, Any], repeat: int = 1, minor: str | None = None) -> DraoptAllocation:
    """draopt's first-fit (`draopt allocate --node N --claim ...`) on an oracle scenario, the
    allocate call made `repeat` times and timed as the oracle times Kubernetes' (the objects
    read once, before). `minor`: the release whose allocator behaviour draopt reproduces (the
    oracle's; None: the default release); the scenario's gates are taken as given. An input
    draopt refuses raises InputError."""
    from draopt.allocation.allocate import _cel_env, allocate

    objects = _objects_of(scenario)
    refs = scenario_claim_refs(scenario)
    features = Features.from_gates(dict(scenario.get("gates") or {}))
    if minor is not None:
        features = dataclasses.replace(features, kubernetes_version=parse_kubernetes_version(minor))
    # The CEL environment is built before the first timed call, as the oracle builds Kubernetes'
    # CEL compiler (cel.NewCache) before its timer: the expressions are still compiled in the call.
    _cel_env(features)
    nanos = []
    answer = DraoptAllocation("error")
    for _ in range(max(1, repeat)):
        start = time.perf_counter_ns()
        try:
            out = allocate(
                objects,
                node=scenario["node"]["metadata"]["name"],
                claims=refs,
                features=features,
                deterministic_share_ids=True,
            )
        except InputError:
            raise
        except DraoptError as e:
            nanos.append(time.perf_counter_ns() - start)
            answer = DraoptAllocation("error", [], str(e))
            continue
        # The results are read inside the timer: they are decoded when first read, and
        # Kubernetes' timed Allocate returns its AllocationResults built.
        results = out.results
        nanos.append(time.perf_counter_ns() - start)
        if results is None:
            answer = DraoptAllocation("unschedulable", [], out.reason)
        else:
            answer = DraoptAllocation("allocated", [r.to_k8s() for r in results])
    answer.nanos = nanos
    return answer


def scenario_claim_refs(scenario: Mapping[str, Any]) -> list[str]:
    """The scenario's claims as `namespace/name` references, in order (`default` when unset)."""
    refs = []
    for c in scenario["claims"]:
        meta = c.get("metadata") or {}
        refs.append(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
    return refs


def run_allocator_oracle(
    scenarios: Iterable[Mapping[str, Any]], minor: str, *, timeout: float = 120.0
) -> list[OracleAllocation]:
    """Kubernetes `minor`'s answers, in order, from one oracle process fed as answers come
    (scenarios may be a generator). `timeout`: seconds to wait for any one answer."""
    binary = oracle_binary("allocator", minor)
    proc = subprocess.Popen(
        [str(binary)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert proc.stdin is not None and proc.stdout is not None
    names: list[str] = []
    write_error: list[BaseException] = []
    lines: queue.Queue[str | None] = queue.Queue()
    writer = threading.Thread(target=_feed, args=(proc, scenarios, names, write_error), daemon=True)
    reader = threading.Thread(target=_drain, args=(proc, lines), daemon=True)
    writer.start()
    reader.start()
    try:
        answers = _read_answers(lines, minor, timeout)
        writer.join()
        if write_error:
            raise write_error[0]
        code = proc.wait(timeout=timeout)
        if code != 0 or len(answers) != len(names):
            stderr = proc.stderr.read() if proc.stderr else ""
            raise OracleFailed(
                f"allocator oracle {minor}: exit {code}, {len(answers)} answers to {len(names)} scenarios: "
                f"{stderr.strip()[-500:]}"
            )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
        proc.stdout.close()
    for answer, name in zip(answers, names):
        if answer.name != name:
            raise OracleFailed(f"allocator oracle {minor}: answer {answer.name!r} in the place of {name!r}")
    return answers


def _feed(
    proc: subprocess.Popen[str],
    scenarios: Iterable[Mapping[str, Any]],
    names: list[str],
    write_error: list[BaseException],
) -> None:
    """Write the scenarios to the oracle, one JSON line each (their names into `names`), then
    close its input; an error goes to `write_error` (the reading side reports it)."""
    try:
        for scenario in scenarios:
            names.append(str(scenario.get("name", "")))
            proc.stdin.write(json.dumps(scenario, separators=(",", ":")) + "\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
    except BaseException as e:  # noqa: BLE001 - reported by the reading side
        write_error.append(e)
    finally:
        try:
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass


def _drain(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    """The oracle's output lines into `lines`, then None."""
    for line in proc.stdout:  # type: ignore[union-attr]
        lines.put(line)
    lines.put(None)


def _read_answers(lines: queue.Queue[str | None], minor: str, timeout: float) -> list[OracleAllocation]:
    """The oracle's answers until its output ends; OracleFailed when none comes within `timeout`."""
    answers: list[OracleAllocation] = []
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            raise OracleFailed(f"allocator oracle {minor}: no answer within {timeout}s") from None
        if line is None:
            return answers
        data = json.loads(line)
        answers.append(
            OracleAllocation(
                name=data.get("name", ""),
                outcome=data.get("outcome", ""),
                results=list(data.get("results") or []),
                error=data.get("error", ""),
                nanos=list(data.get("nanos") or []),
                allocator=data.get("allocator", ""),
            )
        )


POOL_ORDER_SUFFIX = "#pool-order"
# The variants that visit pools in pool-ID order; `stable` visits them in Go map order (random).
SORTED_VARIANTS = ["incubating", "experimental"]


def in_pool_order(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario pinned to the variants that visit pools in pool-ID order (Kubernetes >= 1.36's
    order, the one draopt reproduces): where the scheduler would pick the stable variant, whose
    order is random, this is the same search in that deterministic order."""
    return {**scenario, "name": f"{scenario.get('name', '')}{POOL_ORDER_SUFFIX}", "allocators": SORTED_VARIANTS}


def with_pool_order(scenarios: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Each scenario, then the same in pool order (in_pool_order): answers come in pairs."""
    for scenario in scenarios:
        yield scenario
        yield in_pool_order(scenario)


def paired(answers: list[OracleAllocation]) -> list[tuple[OracleAllocation, OracleAllocation]]:
    """Answers of with_pool_order's stream, per scenario: (the scheduler's, the pool-order one)."""
    return list(zip(answers[::2], answers[1::2]))


def normalized_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of one device result that first-fit must reproduce exactly (what
    shared/conformance/run.py compares): request, driver, pool, device, adminAccess, binding
    conditions, consumed capacity and whether a shareID is set (its value is random)."""
    out: dict[str, Any] = {k: result.get(k) for k in ("request", "driver", "pool", "device")}
    if result.get("adminAccess"):
        out["adminAccess"] = True
    for key in ("bindingConditions", "bindingFailureConditions"):
        if result.get(key):
            out[key] = list(result[key])
    if result.get("consumedCapacity"):
        out["consumedCapacity"] = {k: str(v) for k, v in sorted(result["consumedCapacity"].items())}
    out["shareID"] = bool(result.get("shareID"))
    return out


def _normalized_config(configs: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    return [
        {"source": c.get("source"), "requests": list(c.get("requests") or []), "opaque": c.get("opaque")}
        for c in configs or []
    ]


def compare_allocation(draopt_results: DraoptAllocation, oracle: OracleAllocation) -> list[str]:
    """Where draopt's answer differs from Kubernetes': the outcome, then per claim and in
    order each device result (normalized_result), the config entries and whether a
    nodeSelector is set. An empty list: they agree."""
    if draopt_results.outcome != oracle.outcome:
        return [
            f"outcome: draopt {draopt_results.outcome} ({draopt_results.error[:200]}), "
            f"kubernetes {oracle.outcome} ({oracle.error[:200]})".replace(" ()", "")
        ]
    if draopt_results.outcome != "allocated":
        return []
    if len(draopt_results.results) != len(oracle.results):
        return [f"claims: draopt allocated {len(draopt_results.results)}, kubernetes {len(oracle.results)}"]
    diffs = []
    for i, (mine, theirs) in enumerate(zip(draopt_results.results, oracle.results)):
        got = [normalized_result(r) for r in (mine.get("devices") or {}).get("results") or []]
        want = [normalized_result(r) for r in (theirs.get("devices") or {}).get("results") or []]
        if got != want:
            diffs.append(f"claim {i}: draopt {json.dumps(got)}, kubernetes {json.dumps(want)}")
            continue
        got_cfg = _normalized_config((mine.get("devices") or {}).get("config"))
        want_cfg = _normalized_config((theirs.get("devices") or {}).get("config"))
        if got_cfg != want_cfg:
            diffs.append(f"claim {i} config: draopt {json.dumps(got_cfg)}, kubernetes {json.dumps(want_cfg)}")
        if bool(mine.get("nodeSelector")) != bool(theirs.get("nodeSelector")):
            diffs.append(
                f"claim {i} nodeSelector: draopt {json.dumps(mine.get('nodeSelector'))}, "
                f"kubernetes {json.dumps(theirs.get('nodeSelector'))}"
            )
    return diffs


__all__ = [
    "CONFORMANCE_GATES",
    "DraoptAllocation",
    "OracleAllocation",
    "OracleFailed",
    "in_pool_order",
    "paired",
    "with_pool_order",
    "compare_allocation",
    "conformance_gates",
    "draopt_allocation",
    "normalized_result",
    "run_allocator_oracle",
    "scenario_from_case",
    "scenario_from_objects",
    "scenarios_from_object_set",
    "with_api_defaults",
]
