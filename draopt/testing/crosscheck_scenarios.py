"""Allocator scenarios for the crosscheck, from three sources: generated instances
(draopt.testing.synth.random_instance over its feature families, with matching gates), the
conformance cases (shared/conformance format) and input files (each node with the pending
claims, as `draopt allocate --node` takes them). Deterministic for a seed."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from draopt.crosscheck.allocator_oracle import scenario_from_case, scenarios_from_object_set, with_api_defaults
from draopt.errors import InputError
from draopt.kube.features import DEFAULT_GATES, Features
from draopt.testing.synth import random_instance

# random_instance's feature families and the gates that turn their features on.
FAMILY_GATES: dict[str, tuple[str, ...]] = {
    "counters": ("DRAPartitionableDevices", "DRADeviceCompatibilityGroups"),
    "capacity": ("DRAConsumableCapacity",),
    "taints": ("DRADeviceTaints",),
    "admin": ("DRAAdminAccess",),
    "prioritized": ("DRAPrioritizedList",),
    "constraints": (),
    "all": (),
    "lists": ("DRAListTypeAttributes",),
    "derived": ("DRADerivedAttributes",),
    "binding": ("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"),
    "taint-rules": ("DRADeviceTaints", "DRADeviceTaintRules"),
    "shared-pools": (),
}
# Gates a release does not have: off for its scenarios (its scheduler would refuse them).
ABSENT_GATES: dict[str, tuple[str, ...]] = {
    "1.36": ("DRADerivedAttributes", "DRADeviceCompatibilityGroups"),
    "1.37": (),
}
# Fields a release does not have: its API server drops them, so its scenarios go without.
ABSENT_FIELDS: dict[str, tuple[str, ...]] = {
    "1.36": ("compatibilityGroups", "derivedAttributes"),
    "1.37": (),
}
ALLOCATOR_GATES = sorted({g for gates in FAMILY_GATES.values() for g in gates})
# How the gates of a generated scenario are chosen, in turn.
GATE_MODES = ("family-only", "family-on-defaults", "all-on", "random")


@dataclass
class Source:
    """Scenarios of one source, and the inputs that gave none (refused, or no node)."""

    name: str
    scenarios: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "path: reason"
    without_nodes: list[str] = field(default_factory=list)


def _gates(rng: random.Random, mode: str, families: set[str], minor: str) -> dict[str, bool]:
    wanted = {g for f in families for g in FAMILY_GATES[f]}
    if mode == "family-only":
        gates = {g: g in wanted for g in DEFAULT_GATES}
    elif mode == "family-on-defaults":
        gates = dict(DEFAULT_GATES, **{g: True for g in wanted})
    elif mode == "all-on":
        gates = dict(DEFAULT_GATES, **{g: True for g in ALLOCATOR_GATES})
    else:
        gates = dict(DEFAULT_GATES, **{g: rng.random() < 0.6 for g in ALLOCATOR_GATES})
    for g in ABSENT_GATES[minor]:
        gates[g] = False
    return gates


def _without(value: Any, fields: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, fields) for k, v in value.items() if k not in fields}
    if isinstance(value, list):
        return [_without(v, fields) for v in value]
    return value


def synth_scenarios(count: int, minor: str, seed: int = 0) -> list[dict[str, Any]]:
    """`count` generated scenarios for Kubernetes `minor`: one family at a time (its gates on)
    in the first two gate modes, every family together in the others."""
    rng = random.Random(f"{seed}-{minor}")
    families = sorted(FAMILY_GATES)
    out = []
    for i in range(count):
        mode = GATE_MODES[i % len(GATE_MODES)]
        if mode in ("family-only", "family-on-defaults"):
            chosen = {families[(i // len(GATE_MODES)) % len(families)]}
        else:
            chosen = set(families)
        instance = _without(random_instance(rng, features=chosen), ABSENT_FIELDS[minor])
        gates = _gates(rng, mode, chosen, minor)
        label = "+".join(sorted(chosen)) if len(chosen) == 1 else "every-family"
        out.append(
            {
                "name": f"synth-{i:05d}-{label}-{mode}",
                "gates": dict(sorted(gates.items())),
                "node": instance["node"],
                "objects": [with_api_defaults(o) if o["kind"] == "ResourceClaim" else o for o in instance["objects"]],
                "claims": [with_api_defaults(c) for c in instance["claims"]],
                "repeat": 1,
                "timeoutSeconds": 10.0,
            }
        )
    return out


def conformance_cases(case_dir: Path) -> list[dict[str, Any]]:
    """The cases of a conformance directory (those with an expected answer), by file name."""
    cases = []
    for path in sorted(case_dir.glob("*.yaml")):
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
        if (case.get("expect") or {}).get("outcome") in (None, "timeout"):
            continue
        case.setdefault("name", path.stem)
        cases.append(case)
    return cases


def conformance_scenarios(case_dir: Path) -> list[dict[str, Any]]:
    return [scenario_from_case(c) for c in conformance_cases(case_dir)]


def file_scenarios(name: str, paths: list[Path], minor: str) -> Source:
    """Each node of each input file with its pending claims; gates: draopt's defaults, less
    those `minor` lacks. Inputs draopt refuses (InputError) are counted, not run."""
    from draopt.kube.loader import load_files

    gates = dict(DEFAULT_GATES, **{g: False for g in ABSENT_GATES[minor]})
    features = Features.from_gates(gates)
    source = Source(name)
    for path in paths:
        try:
            objects = load_files([str(path)])
            found = list(scenarios_from_object_set(objects, features, name=path.name))
        except InputError as e:
            source.refused.append(f"{path}: {str(e)[:200]}")
            continue
        if not found and objects.resource_claims and not objects.nodes:
            source.without_nodes.append(str(path))
        source.scenarios.extend(scenario for _, scenario in found)
    return source


def yaml_files(root: Path) -> Iterator[Path]:
    yield from sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


__all__ = [
    "ABSENT_FIELDS",
    "ABSENT_GATES",
    "FAMILY_GATES",
    "Source",
    "conformance_cases",
    "conformance_scenarios",
    "file_scenarios",
    "synth_scenarios",
    "yaml_files",
]
