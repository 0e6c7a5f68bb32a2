"""`draopt taint-impact`: what a DeviceTaintRule selects, and whom it evicts.

For each DeviceTaintRule: the published devices it selects (devices listed in ResourceSlices,
newest pool generation), which of them are allocated and to which ResourceClaims (admin-access
allocations included), and, for effect NoExecute (or None, as the dry run the Kubernetes docs
describe: "N pods would be evicted ... if the effect was NoExecute"), the claims and pods that
would be evicted. A claim is not evicted when the tolerations of its allocation results (or,
when the claim's status does not record them, of its request) tolerate the taint; tolerations
with `tolerationSeconds` only delay the eviction.

Pods using a claim: `status.reservedFor` entries of resource `pods`, and Pod objects in the input
whose `spec.resourceClaims` name the claim (`resourceClaimName`, or a `resourceClaimTemplateName`
resolved through `status.resourceClaimStatuses`), and pods owning the claim (ownerReferences).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

from draopt.errors import DraoptError, InputError
from draopt.provenance import record
from draopt.kube.features import Features, add_version_flag, features_from_flags
from draopt.dra.inventory import taint_rule_selects
from draopt.kube.loader import KINDS, ObjectSet, custom_resource_group, parse_object
from draopt.kube.models import DeviceTaint, DeviceTaintRule, DeviceToleration, ResourceClaim, ResourceSlice
from draopt.dra.rules import tolerates
from draopt.validation import read_documents

DeviceID = tuple[str, str, str]


@dataclass
class PodRef:
    namespace: str
    name: str
    uid: str | None = None
    via: str = ""  # reservedFor, spec.resourceClaims, ownerReferences

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class ClaimImpact:
    claim: str  # namespace/name
    devices: list[str]  # driver/pool/device of this rule held by the claim
    admin_access: bool = False
    tolerated: bool = False  # tolerated indefinitely: not evicted
    evict_after_seconds: int | None = None  # tolerated for a while, then evicted
    pods: list[PodRef] = field(default_factory=list)

    @property
    def evicted(self) -> bool:
        return not self.tolerated


@dataclass
class RuleImpact:
    rule: str
    taint: dict[str, Any]
    effect: str
    selector_empty: bool
    devices: list[str] = field(default_factory=list)  # selected published devices
    allocated: dict[str, list[str]] = field(default_factory=dict)  # device -> claims
    claims: list[ClaimImpact] = field(default_factory=list)
    evaluates_eviction: bool = False  # NoExecute or None (dry run)
    notes: list[str] = field(default_factory=list)

    @property
    def evicted_claims(self) -> list[ClaimImpact]:
        return [c for c in self.claims if c.evicted] if self.evaluates_eviction else []

    @property
    def evicted_pods(self) -> list[PodRef]:
        seen: dict[str, PodRef] = {}
        for c in self.evicted_claims:
            for p in c.pods:
                seen.setdefault(p.key, p)
        return [seen[k] for k in sorted(seen)]

    def message(self) -> str:
        """The summary the eviction controller writes into the rule's status condition."""
        n, a = len(self.devices), len(self.allocated)
        out = (
            f"{n} published device{'s' if n != 1 else ''} selected. "
            f"{a} allocated device{'s' if a != 1 else ''} selected."
        )
        if not self.evaluates_eviction:
            return out + " No eviction: effect " + self.effect + "."
        pods = self.evicted_pods
        nss = {p.namespace for p in pods}
        verb = "would be evicted" if self.effect == "None" else "to be evicted"
        tail = " if the effect was NoExecute." if self.effect == "None" else "."
        return out + (
            f" {len(pods)} pod{'s' if len(pods) != 1 else ''} {verb} in {len(nss)} "
            f"namespace{'s' if len(nss) != 1 else ''}{tail}"
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rule": self.rule,
            "taint": self.taint,
            "effect": self.effect,
            "selectedDevices": len(self.devices),
            "allocatedDevices": len(self.allocated),
            "devices": self.devices,
            "allocated": [{"device": dev, "claims": claims} for dev, claims in self.allocated.items()],
            "message": self.message(),
        }
        if self.evaluates_eviction:
            d["dryRun"] = self.effect == "None"
            d["evictedClaims"] = [_claim_dict(c) for c in self.evicted_claims]
            d["toleratedClaims"] = [_claim_dict(c) for c in self.claims if c.tolerated]
            d["evictedPods"] = [{"namespace": p.namespace, "name": p.name} for p in self.evicted_pods]
        if self.notes:
            d["notes"] = self.notes
        return d


def _claim_dict(c: ClaimImpact) -> dict[str, Any]:
    d: dict[str, Any] = {"claim": c.claim, "devices": c.devices, "pods": [p.key for p in c.pods]}
    if c.admin_access:
        d["adminAccess"] = True
    if c.evict_after_seconds is not None:
        d["evictAfterSeconds"] = c.evict_after_seconds
    return d


# ------------------------------------------------------------------ inputs
@dataclass
class Inputs:
    objects: ObjectSet
    pods: list[dict[str, Any]]


def load_inputs(paths: list[str]) -> Inputs:
    objects, pods = ObjectSet(), []
    for doc, source in read_documents(paths):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if custom_resource_group(doc) is not None:  # a custom resource's kind of the same name
            continue
        if kind == "Pod":
            pods.append(doc)
        elif (kind is not None and not isinstance(kind, str)) or kind in KINDS:  # a non-string kind: an error
            objects.add(parse_object(doc, source))
        # Namespaces and other kinds are not needed here.
    return Inputs(objects, pods)


# ------------------------------------------------------------------ analysis
def published_devices(slices: list[ResourceSlice]):
    """(driver, pool, slice, device) of the newest generation of every pool."""
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        key = (s.spec.driver, s.spec.pool.name)
        newest[key] = max(newest.get(key, s.spec.pool.generation), s.spec.pool.generation)
    seen: set[DeviceID] = set()
    for s in sorted(slices, key=lambda s: (s.spec.driver, s.spec.pool.name, s.name)):
        if s.spec.pool.generation != newest[(s.spec.driver, s.spec.pool.name)]:
            continue
        for d in s.spec.devices:
            did = (s.spec.driver, s.spec.pool.name, d.name)
            if did in seen:
                continue
            seen.add(did)
            yield s, d


def _claim_pods(claim: ResourceClaim, pods: list[dict[str, Any]]) -> list[PodRef]:
    ns = claim.namespace
    found: dict[str, PodRef] = {}
    for r in claim.status.reserved_for:
        if r.resource == "pods" and (r.api_group or "") == "":
            found.setdefault(f"{ns}/{r.name}", PodRef(ns, r.name, r.uid or None, "reservedFor"))
    owners = getattr(claim.metadata, "ownerReferences", None) or getattr(claim.metadata, "owner_references", None)
    for o in owners or []:
        if isinstance(o, dict) and o.get("kind") == "Pod" and o.get("apiVersion", "v1") == "v1" and o.get("name"):
            found.setdefault(f"{ns}/{o['name']}", PodRef(ns, o["name"], o.get("uid"), "ownerReferences"))
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("namespace") or "default") != ns or not meta.get("name"):
            continue
        generated = {
            s.get("name"): s.get("resourceClaimName")
            for s in ((pod.get("status") or {}).get("resourceClaimStatuses") or [])
            if isinstance(s, dict)
        }
        for rc in (pod.get("spec") or {}).get("resourceClaims") or []:
            if not isinstance(rc, dict):
                continue
            name = rc.get("resourceClaimName")
            if name is None and rc.get("resourceClaimTemplateName"):
                name = generated.get(rc.get("name"))
            if name == claim.name:
                found.setdefault(
                    f"{ns}/{meta['name']}", PodRef(ns, meta["name"], meta.get("uid"), "spec.resourceClaims")
                )
                break
    return [found[k] for k in sorted(found)]


def _request_tolerations(claim: ResourceClaim, request: str) -> list[DeviceToleration]:
    main, _, sub = request.partition("/")
    for r in claim.spec.devices.requests:
        if r.name != main:
            continue
        if sub:
            for s in r.first_available:
                if s.name == sub:
                    return list(s.tolerations)
            return []
        return list(r.exactly.tolerations) if r.exactly is not None else []
    return []


def _toleration_outcome(tolerations: list[DeviceToleration], taint: DeviceTaint) -> tuple[bool, int | None]:
    """(tolerated forever, seconds until eviction if tolerated for a while)."""
    matching = [t for t in tolerations if tolerates(t, taint)]
    if not matching:
        return False, None
    if any(t.toleration_seconds is None for t in matching):
        return True, None
    return False, max(0, min(t.toleration_seconds for t in matching if t.toleration_seconds is not None))


def analyze(inputs: Inputs, features: Features | None = None, rule_name: str | None = None) -> list[RuleImpact]:
    features = features or Features.from_gates()
    objs = inputs.objects
    rules = _selected_rules(objs.taint_rules, rule_name)
    devices = list(published_devices(objs.resource_slices))
    holders = _holders(objs.resource_claims)
    out: list[RuleImpact] = []
    for rule in rules:
        impact = _rule_header(rule, features)
        taint = rule.spec.taint
        # The taint as the eviction controller weighs it: None is evaluated as NoExecute (dry run).
        weighed = taint.model_copy(update={"effect": "NoExecute"}) if taint.effect == "None" else taint
        claims = _ClaimsHit()
        for s, d in devices:
            if not _rule_selects(rule, s, d):
                continue
            _note_device(impact, claims, (s.spec.driver, s.spec.pool.name, d.name), holders, weighed)
        _weigh_claims(impact, claims, inputs.pods)
        out.append(impact)
    return out


def _selected_rules(taint_rules: list[DeviceTaintRule], rule_name: str | None) -> list[DeviceTaintRule]:
    """The rules analyzed: all, or the one named (InputError when the input has none by that name)."""
    rules = taint_rules
    if rule_name is not None:
        rules = [r for r in rules if r.name == rule_name]
        if not rules:
            known = ", ".join(r.name for r in taint_rules) or "none in the input"
            raise InputError(f"--rule: no DeviceTaintRule named {rule_name!r} (known: {known})")
    return rules


def _holders(claims: list[ResourceClaim]) -> dict[DeviceID, list[tuple[ResourceClaim, Any]]]:
    """Allocated devices: device -> [(claim, result)]."""
    holders: dict[DeviceID, list[tuple[ResourceClaim, Any]]] = {}
    for c in claims:
        if c.status.allocation is None:
            continue
        for r in c.status.allocation.devices.results:
            holders.setdefault((r.driver, r.pool, r.device), []).append((c, r))
    return holders


def _rule_header(rule: DeviceTaintRule, features: Features) -> RuleImpact:
    """The rule's impact before any device is looked at: its taint, and notes on its selector."""
    taint = rule.spec.taint
    sel = rule.spec.device_selector
    empty = sel is None or not (sel.driver or sel.pool or sel.device)
    impact = RuleImpact(
        rule=rule.name,
        taint=taint.to_k8s(),
        effect=taint.effect,
        selector_empty=empty,
        evaluates_eviction=taint.effect in ("NoExecute", "None"),
    )
    if empty:
        impact.notes.append(
            "the rule has no selector fields: it selects every device (the empty selector matches all devices)"
        )
    removed = [k for k in ("deviceClassName", "selectors") if sel is not None and (sel.model_extra or {}).get(k)]
    if removed:
        impact.notes.append(
            f"spec.deviceSelector.{' and '.join(removed)}: not in any served version of DeviceTaintRule (only "
            "1.33-1.34's v1alpha3 had deviceClassName and selectors); the API server drops it, so it narrows nothing"
        )
    if not features.device_taint_rules:
        impact.notes.append(
            "DeviceTaintRules are disabled (DRADeviceTaints/DRADeviceTaintRules): the rule has no effect"
        )
    return impact


def _rule_selects(rule: DeviceTaintRule, s: ResourceSlice, d) -> bool:
    return taint_rule_selects(rule, s.spec.driver, s.spec.pool.name, d)


@dataclass
class _ClaimsHit:
    """The allocated claims one rule's devices hold, with each result's toleration outcome."""

    by_claim: dict[str, ClaimImpact] = field(default_factory=dict)
    claim_objs: dict[str, ResourceClaim] = field(default_factory=dict)
    outcomes: dict[str, list[tuple[bool, int | None]]] = field(default_factory=dict)


def _note_device(impact: RuleImpact, claims: _ClaimsHit, did: DeviceID, holders: dict, weighed: DeviceTaint) -> None:
    """A device the rule selects, and the claims allocated on it."""
    dev = "/".join(did)
    impact.devices.append(dev)
    for claim, result in holders.get(did, []):
        key = f"{claim.namespace}/{claim.name}"
        impact.allocated.setdefault(dev, [])
        if key not in impact.allocated[dev]:
            impact.allocated[dev].append(key)
        ci = claims.by_claim.get(key)
        if ci is None:
            ci = claims.by_claim[key] = ClaimImpact(claim=key, devices=[])
            claims.claim_objs[key] = claim
        if dev not in ci.devices:
            ci.devices.append(dev)
        ci.admin_access = ci.admin_access or bool(result.admin_access)
        tols = result.tolerations if result.tolerations is not None else _request_tolerations(claim, result.request)
        claims.outcomes.setdefault(key, []).append(_toleration_outcome(tols, weighed))


def _weigh_claims(impact: RuleImpact, claims: _ClaimsHit, pods) -> None:
    """Each claim hit, in name order: tolerated or when evicted, and its pods."""
    for key in sorted(claims.by_claim):
        ci = claims.by_claim[key]
        results = claims.outcomes[key]
        ci.tolerated = all(forever for forever, _ in results)
        delays = [sec for forever, sec in results if not forever]
        # Evicted now if some result is not tolerated at all, else after the shortest delay.
        ci.evict_after_seconds = (
            None if ci.tolerated or any(d is None for d in delays) else min(d for d in delays if d is not None)
        )
        ci.pods = _claim_pods(claims.claim_objs[key], pods)
        impact.claims.append(ci)


# ------------------------------------------------------------------ output
def format_text(impacts: list[RuleImpact]) -> str:
    lines: list[str] = []
    for imp in impacts:
        t = imp.taint
        taint = f"{t.get('key')}" + (f"={t['value']}" if t.get("value") else "") + f":{imp.effect}"
        lines.append(f"DeviceTaintRule {imp.rule} ({taint})")
        lines.append(f"  {imp.message()}")
        for dev in imp.devices:
            claims = imp.allocated.get(dev)
            lines.append(f"  device {dev}" + (f": allocated to {', '.join(claims)}" if claims else ""))
        if imp.evaluates_eviction:
            word = "would evict" if imp.effect == "None" else "evicts"
            for c in imp.evicted_claims:
                when = f" after {c.evict_after_seconds}s" if c.evict_after_seconds is not None else ""
                pods = ", ".join(p.key for p in c.pods) or "no pods"
                lines.append(
                    f"  {word} claim {c.claim}{when} (admin access)"
                    if c.admin_access
                    else f"  {word} claim {c.claim}{when}"
                )
                lines.append(f"    pods: {pods}")
            for c in imp.claims:
                if c.tolerated:
                    lines.append(f"  claim {c.claim} tolerates the taint: not evicted")
        for n in imp.notes:
            lines.append(f"  note: {n}")
    if not impacts:
        lines.append("no DeviceTaintRule in the input")
    return "\n".join(lines) + "\n"


def render(impacts: list[RuleImpact], fmt: str, provenance: dict[str, Any] | None = None) -> str:
    """The impacts as text, as `pod/NAMESPACE/NAME` lines of the pods evicted (`name`: each
    once, in order of the rules), or as JSON or YAML (with `provenance` when given)."""
    if fmt == "text":
        return format_text(impacts)
    if fmt == "name":
        pods = dict.fromkeys(p.key for i in impacts for p in i.evicted_pods)
        return "".join(f"pod/{key}\n" for key in pods)
    doc: dict[str, Any] = {"rules": [i.to_dict() for i in impacts]}
    if provenance is not None:
        doc["provenance"] = provenance
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    return yaml.safe_dump(doc, sort_keys=False)


def cmd_taint_impact(args) -> int:
    try:
        features = features_from_flags(getattr(args, "feature_gates", ""), getattr(args, "kubernetes_version", None))
        impacts = analyze(load_inputs(args.filename), features, args.rule)
    except DraoptError as e:
        print(f"draopt: error: {e}", file=sys.stderr)
        return 2
    made = record(args.filename, kubernetes_version=features.kubernetes_version)
    sys.stdout.write(render(impacts, args.output, made.to_dict()))
    return 0


def register(subparsers) -> None:
    """Add `draopt taint-impact` to the CLI's sub-parsers."""
    p = subparsers.add_parser("taint-impact", help="devices a DeviceTaintRule selects and the pods it evicts")
    p.add_argument(
        "-f",
        "--filename",
        action="extend",
        nargs="+",
        required=True,
        metavar="FILE",
        help="YAML/JSON documents or a List (Pods and Namespaces allowed); '-' reads stdin",
    )
    p.add_argument("--rule", metavar="NAME", help="only this DeviceTaintRule (default: every rule)")
    p.add_argument("--feature-gates", default="", metavar="G=true|false,...")
    add_version_flag(p)
    p.add_argument(
        "-o",
        "--output",
        default="text",
        choices=("text", "name", "json", "yaml"),
        help="table; name: pod/NAMESPACE/NAME per pod evicted; json, yaml: the rules' impact and the provenance",
    )
    p.set_defaults(func=cmd_taint_impact)


__all__ = [
    "RuleImpact",
    "ClaimImpact",
    "PodRef",
    "Inputs",
    "load_inputs",
    "analyze",
    "render",
    "register",
    "cmd_taint_impact",
]
