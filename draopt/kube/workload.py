"""From pods to claims: what the kube-scheduler works on once the pods are known.

:func:`expand` turns the Pods, PodGroups, PriorityClasses, ResourceClaims, ResourceClaimTemplates,
DeviceClasses and Nodes of an :class:`~draopt.kube.loader.ObjectSet` into a :class:`Workload`:

* every pod's demand: priority, queue position, node selector, effective requests (as the
  scheduler's ``NodeResourcesFit`` computes them) and the claims it uses;
* the claims: existing ones, plus those the resourceclaim controller / the scheduler would make
  here (from templates per pod or per PodGroup, and for extended resources backed by DRA);
* gangs (PodGroups), ``status.reservedFor`` after the pending pods are added (at most 256
  entries), and the nodes' allocatable resources.

Naming (deterministic; Kubernetes uses ``generateName`` with a random suffix):

* claim from a template for a pod: ``<pod>-<pod claim name>`` (or the name in the pod's
  ``status.resourceClaimStatuses``); for a PodGroup: ``<podgroup>-<claim name>`` (or the name
  in the PodGroup's, or a member pod's, ``status.resourceClaimStatuses``). A claim of that name
  already in the input is used as is (not generated again);
* the extended-resource claim: ``<pod>-extended-resources`` (Kubernetes: generateName
  ``<pod>-extended-resources-``), or the existing one (``status.extendedResourceClaimStatus``, or
  a claim annotated ``resource.kubernetes.io/extended-resource-claim: "true"`` owned by the pod);
  its requests are named ``container-<i>-request-<j>`` as kube-scheduler names them: ``i`` is the
  container's index in ``initContainers + containers``, ``j`` the resource's index among the
  container's request names sorted; requests are sorted by name; init containers reuse the
  requests of the long-lived containers after them
  (draopt.kube.extended_resources.claim_requests); its :class:`ClaimUse` name is
  ``<extended-resources>`` (kube-scheduler's in-memory name; never a valid pod claim name);
* ``reservedFor`` consumers: ``pods/<name>`` and ``podgroups.scheduling.k8s.io/<name>``
  (``<resource>[.<apiGroup>]/<name>``; the namespace is the claim's).
"""

from __future__ import annotations

import json
from datetime import timezone
from fractions import Fraction
from typing import Any

from draopt.errors import InputError
from draopt.kube.admission import (
    MIRROR_POD_ANNOTATION,
    REFUSED_GROUP_PLUGIN,
    SCHEDULING_GATED,
    admitted_priorities,
    priority_refusal,
    served_notes,
    gate_hold,
    group_hold,
    hold_groups_never_tried,
    missing_claim_hold,
    refused_objects,
    unchecked_admin_namespaces,
)
from draopt.kube.extended_resources import (
    EXTENDED_CLAIM_USE,
    claim_requests,
    device_class_mapping,
    is_extended_name,
    prebind_failure_notes,
)
from draopt.kube.extended_resources import creation_time as _ts
from draopt.kube.features import Features
from draopt.kube.field_notes import gated_field_notes
from draopt.kube.releases import at_least
from draopt.kube.loader import ObjectSet
from draopt.kube.models import Node, ResourceClaim, ResourceClaimTemplate
from draopt.kube.models.clone import ClaimCopier
from draopt.kube.models.workload import (
    CompositePodGroup,
    Container,
    Pod,
    PodGroup,
    PodResourceClaim,
    disruption_mode,
    topology_key,
)
from draopt.kube.pod_requests import (
    containers_referencing,
    effective_container_requests,
    pod_requests,
    q,
    requests_shape,
)
from draopt.kube.workload_types import ClaimUse, CompositeGang, Gang, PodDemand, Workload

MAX_RESERVED_FOR = 256
MAX_POD_GROUP_CLAIMS = 4
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
POD_GROUP_API_VERSION = "scheduling.k8s.io/v1beta1"
# Built into every cluster (kube-apiserver creates them).


# ------------------------------------------------------------------ helpers
_ZERO, _ONE = Fraction(0), Fraction(1)  # (immutable: shared by every pod's requests)
# json.dumps(x, sort_keys=True) without making an encoder per call
_sorted_json = json.JSONEncoder(sort_keys=True).encode


def _key(obj) -> str:
    return f"{obj.namespace}/{obj.name}"


def pod_consumer(name: str) -> str:
    return f"pods/{name}"


def group_consumer(name: str) -> str:
    return f"podgroups.scheduling.k8s.io/{name}"


def consumer_string(ref) -> str:
    """A status.reservedFor entry as `<resource>[.<apiGroup>]/<name>`."""
    group = ref.api_group or ""
    return f"{ref.resource}.{group}/{ref.name}" if group else f"{ref.resource}/{ref.name}"


def _queue_time(pod: Pod) -> str:
    d = _ts(pod)
    if d is None:
        return ""
    return d.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ------------------------------------------------------------------ expansion
class _Missing(Exception):
    """A claim a pod uses does not exist (yet): the pod waits (draopt.kube.admission); str() says
    which object."""

    def __init__(self, what: str, template: bool):
        super().__init__(what)
        self.template = template  # the resourceclaim controller stops at a template it cannot use


class _Expander:
    def __init__(self, objects: ObjectSet, features: Features):
        self.o = objects
        self.features = features
        # Claims and templates the API server refuses (admin access) do not exist for anyone.
        refused = refused_objects(objects, features.admin_access)
        self.refused: dict[str, str] = {}  # "ResourceClaim ns/name" -> why the API server refuses it
        for kind, objs in (
            ("ResourceClaim", objects.resource_claims),
            ("ResourceClaimTemplate", objects.claim_templates),
        ):
            for obj in objs:
                if id(obj) in refused:
                    self.refused[f"{kind} {_key(obj)}"] = refused[id(obj)]
        self.claims: dict[str, ResourceClaim] = {_key(c): c for c in objects.resource_claims if id(c) not in refused}
        self.templates: dict[str, ResourceClaimTemplate] = {
            _key(t): t for t in objects.claim_templates if id(t) not in refused
        }
        self.notes: list[str] = []  # what run() adds to the workload's notes
        self.groups: dict[str, PodGroup] = {}
        for g in objects.pod_groups:
            self.groups[_key(g)] = g
        self.composite_objects: dict[str, CompositePodGroup] = (
            {_key(c): c for c in getattr(objects, "composite_pod_groups", [])} if features.composite_pod_group else {}
        )
        # What the Priority admission plugin gives a pod per class (several global defaults: the
        # lowest value), the one source of the classes' values and the default priority.
        self.admitted = admitted_priorities(
            [(pc.name, pc.value, bool(pc.global_default), pc.preemption_policy) for pc in objects.priority_classes]
        )
        self.classes: dict[str, int] = {name: a.value for name, a in self.admitted[0].items()}
        self.default_priority = self.admitted[1].value
        self.ext_mapping = device_class_mapping(objects.device_classes) if features.extended_resource else {}
        self.group_claims: dict[tuple[str, str], str] = {}  # (group key, claim name) -> claim key
        self._generated: set[str] = set()  # keys of the claims made here
        # id(template) -> (template, its spec as JSON text, a generated claim's canonical spec text)
        self._template_specs: dict[int, tuple[ResourceClaimTemplate, str, str | None, Any]] = {}
        self.spec_texts: dict[str, str] = {}  # generated claim key -> canonical spec text
        self._extended_specs: dict[str, tuple[str, Any]] = {}  # extended requests (JSON) -> (canonical spec text, spec)
        self._copier = ClaimCopier()
        self._request_shapes: dict[tuple, tuple] = {}  # see _requests
        # Extended-resource claims by (namespace, owning pod name), in self.claims order: finding
        # a pod's claim must not scan every claim for every pod (quadratic on large inputs).
        self._extended_by_owner: dict[tuple[str, str], list[str]] = {}
        for key, c in self.claims.items():
            self._index_extended(key, c)

    def _index_extended(self, key: str, c: ResourceClaim) -> None:
        if c.metadata.annotations.get(EXTENDED_CLAIM_ANNOTATION) != "true":
            return
        owners = (c.metadata.model_extra or {}).get("ownerReferences") or []
        for name in dict.fromkeys(o.get("name") for o in owners if isinstance(o, dict) and o.get("kind") == "Pod"):
            if isinstance(name, str):
                self._extended_by_owner.setdefault((c.namespace, name), []).append(key)

    def _add_claim(self, key: str, claim: ResourceClaim) -> None:
        self.claims[key] = claim
        self._index_extended(key, claim)

    # -------------------------------------------------------------- priorities
    def priority(self, obj, spec) -> int:
        if spec.priority is not None:
            return spec.priority
        if spec.priority_class_name:
            if spec.priority_class_name not in self.classes:
                raise InputError(
                    f"{obj.ref}: field spec.priorityClassName: PriorityClass {spec.priority_class_name!r} not found"
                )
            return self.classes[spec.priority_class_name]
        return self.default_priority

    def _check_priority_admission(self, pod: Pod) -> None:
        """A note for a pod the API server would refuse to create (Priority admission): draopt goes on
        with the spec's values, as a scheduler would see them had the pod been created; `draopt
        validate` reports it as an error. A pod with a uid was created by an API server already (the
        check runs at creation only: its class may have changed since); a mirror pod is not checked."""
        if self.o.made_by_draopt or pod.metadata.uid or MIRROR_POD_ANNOTATION in pod.metadata.annotations:
            return
        given_policy = getattr(pod.spec, "preemption_policy", None) or (pod.spec.model_extra or {}).get(
            "preemptionPolicy"
        )
        refusal = priority_refusal(pod.spec.priority, given_policy, pod.spec.priority_class_name, *self.admitted)
        if refusal is not None:
            self.notes.append(f"{pod.ref}: field {refusal[0]}: {refusal[1]}; draopt uses the spec's value")

    # -------------------------------------------------------------- claims
    def _generate(
        self, name: str, namespace: str, template: ResourceClaimTemplate, owner: dict[str, Any], claim_name: str
    ) -> ResourceClaim:
        tmeta = template.spec.metadata or {}
        # Every claim of a template gets the same spec: dumped and validated once per template (a
        # pydantic dump per claim was a tenth of first-fit's time on scheduler_perf's workloads,
        # validating it per claim a tenth of the expansion). The claims share that one spec object:
        # nothing changes a claim's spec once read (a copy is made where one is changed).
        cached = self._template_specs.get(id(template))
        if cached is None or cached[0] is not template:
            text = json.dumps(template.spec.spec.to_k8s())
            cached = self._template_specs[id(template)] = (
                template,
                text,
                None,
                ResourceClaim.model_validate({"spec": json.loads(text)}).spec,
            )

        def metadata() -> dict[str, Any]:
            annotations = dict(tmeta.get("annotations") or {})
            annotations[POD_CLAIM_NAME_ANNOTATION] = claim_name
            labels = dict(tmeta.get("labels") or {})
            return dict(name=name, namespace=namespace, labels=labels, annotations=annotations, ownerReferences=[owner])

        # (the claims of one template and pod claim name differ in name and owner only)
        claim = self._copier.claim((id(template), namespace, claim_name), name, owner, metadata, cached[3])
        canonical = cached[2]
        if canonical is None:
            # The claim spec's canonical text (what draopt.cluster.firstfit.ClaimBook.signature
            # computes): the same for every claim validated from the same spec document.
            canonical = json.dumps(claim.spec.to_k8s(), sort_keys=True)
            self._template_specs[id(template)] = (template, cached[1], canonical, cached[3])
        self.spec_texts[f"{namespace}/{name}"] = canonical
        return claim

    @staticmethod
    def _owner(api_version: str, kind: str, obj) -> dict[str, Any]:
        ref = {
            "apiVersion": api_version,
            "kind": kind,
            "name": obj.name,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        if obj.metadata.uid:
            ref["uid"] = obj.metadata.uid
        return ref

    @staticmethod
    def _status_name(statuses, claim_name: str) -> tuple[bool, str | None]:
        for s in statuses:
            if s.name == claim_name:
                return True, s.resource_claim_name
        return False, None

    def _template(self, pod: Pod, i: int, pc: PodResourceClaim) -> ResourceClaimTemplate:
        tkey = f"{pod.namespace}/{pc.resource_claim_template_name}"
        t = self.templates.get(tkey)
        if t is None:
            raise _Missing(self._not_found("ResourceClaimTemplate", tkey), template=True)
        return t

    def _not_found(self, kind: str, key: str) -> str:
        return self.refused.get(f"{kind} {key}") or f"{kind} {key} not found"

    def resolve(self, pod: Pod, i: int, pc: PodResourceClaim, group: PodGroup | None) -> ClaimUse | None:
        if bool(pc.resource_claim_name) == bool(pc.resource_claim_template_name):
            raise InputError(
                f"{pod.ref}: field spec.resourceClaims[{i}]: exactly one of resourceClaimName "
                f"and resourceClaimTemplateName must be set"
            )
        ns = pod.namespace
        group_key = _key(group) if group is not None else None
        # Without DRAWorkloadResourceClaims the API server drops PodGroup.spec.resourceClaims.
        matches = (
            group is not None
            and self.features.workload_resource_claims
            and any(
                g.name == pc.name
                and (g.resource_claim_name or None) == (pc.resource_claim_name or None)
                and (g.resource_claim_template_name or None) == (pc.resource_claim_template_name or None)
                for g in group.spec.resource_claims
            )
        )
        for_group = group_key if matches else None
        if pc.resource_claim_name:
            key = f"{ns}/{pc.resource_claim_name}"
            if key not in self.claims:
                raise _Missing(self._not_found("ResourceClaim", key), template=False)
            return ClaimUse(pc.name, key, False, for_group)
        # From a template.
        if matches:
            assert group is not None and group_key is not None
            cached = self.group_claims.get((group_key, pc.name))
            if cached is not None:
                return ClaimUse(pc.name, cached, cached in self._generated, group_key)
            found, name = self._status_name(group.status.resource_claim_statuses, pc.name)
            if not found or not name:
                found, name = self._status_name(pod.status.resource_claim_statuses, pc.name)
            name = name or f"{group.name}-{pc.name}"
            key = f"{ns}/{name}"
            if key not in self.claims:
                t = self._template(pod, i, pc)
                self._add_claim(
                    key,
                    self._generate(
                        name, ns, t, self._owner(group.api_version or POD_GROUP_API_VERSION, "PodGroup", group), pc.name
                    ),
                )
                self._generated.add(key)
            self.group_claims[(group_key, pc.name)] = key
            return ClaimUse(pc.name, key, key in self._generated, group_key)
        found, name = self._status_name(pod.status.resource_claim_statuses, pc.name)
        if found and name is None:
            return None  # status says: no claim needed for this pod claim
        name = name or f"{pod.name}-{pc.name}"
        key = f"{ns}/{name}"
        if key not in self.claims:
            t = self._template(pod, i, pc)
            self._add_claim(key, self._generate(name, ns, t, self._owner("v1", "Pod", pod), pc.name))
            self._generated.add(key)
        return ClaimUse(pc.name, key, key in self._generated, None)

    # -------------------------------------------------------------- extended resources
    def _extended(self, pod: Pod) -> tuple[list[dict[str, Any]], dict[str, Fraction], dict[str, Fraction] | None]:
        """(device requests, pod totals) for the extended resources backed by DRA, and the pod's
        requests (pod_requests) when they were computed for it."""
        if not self.ext_mapping:
            return [], {}, None
        inits = len(pod.spec.init_containers)
        containers: list[Container] = [*pod.spec.init_containers, *pod.spec.containers]
        used: set[str] = set()
        # per container: every request name (their sorted order names the requests), the
        # whole-number amounts of those DRA may serve; and whether it runs the pod's whole life
        per_container: list[tuple[dict[str, int], bool]] = []
        for ci, c in enumerate(containers):
            creqs = effective_container_requests(c.resources)
            amounts = dict.fromkeys(creqs, 0)
            for rname in creqs:
                if rname not in self.ext_mapping or not is_extended_name(rname):
                    continue
                value = q(creqs[rname])
                if value == 0:
                    continue
                if value.denominator != 1 or value < 0:
                    path = f"spec.initContainers[{ci}]" if ci < inits else f"spec.containers[{ci - inits}]"
                    raise InputError(
                        f"{pod.ref}: field {path}.resources.requests[{rname}]: "
                        f"{creqs[rname]!r}: an extended resource must be a whole number"
                    )
                used.add(rname)
                amounts[rname] = int(value)
            per_container.append((amounts, ci >= inits or c.restart_policy == "Always"))
        requests = claim_requests(per_container, self.ext_mapping, sorted(used))
        if not requests:
            return [], {}, None
        everything = pod_requests(pod)
        totals = {k: v for k, v in everything.items() if k in used}
        return requests, totals, everything

    def extended_claim(self, pod: Pod, requests: list[dict[str, Any]], requests_text: str | None = None) -> ClaimUse:
        """`requests_text`: _sorted_json(requests), when known."""
        ns = pod.namespace
        st = pod.status.extended_resource_claim_status
        if st is not None and st.resource_claim_name and f"{ns}/{st.resource_claim_name}" in self.claims:
            return ClaimUse(EXTENDED_CLAIM_USE, f"{ns}/{st.resource_claim_name}", False, None)
        for key in self._extended_by_owner.get((ns, pod.name), ()):
            c = self.claims[key]
            owners = (c.metadata.model_extra or {}).get("ownerReferences") or []
            if any(
                isinstance(o, dict)
                and o.get("kind") == "Pod"
                and o.get("name") == pod.name
                and (not pod.metadata.uid or not o.get("uid") or o.get("uid") == pod.metadata.uid)
                for o in owners
            ):
                return ClaimUse(EXTENDED_CLAIM_USE, key, key in self._generated, None)
        name = f"{pod.name}-extended-resources"
        key = f"{ns}/{name}"
        if key in self.claims:
            raise InputError(
                f"{pod.ref}: field spec.containers: the extended-resource claim name {key} is "
                f"taken by a ResourceClaim that is not this pod's extended-resource claim"
            )
        owner = self._owner("v1", "Pod", pod)
        # Pods with the same extended resources get claims with the same spec: validated once per
        # distinct request list (the claims share it: nothing changes a claim's spec once read),
        # its canonical text (first-fit's claim signature) computed once.
        if requests_text is None:
            try:
                requests_text = _sorted_json(requests)
            except (TypeError, ValueError):
                requests_text = None
        known = self._extended_specs.get(requests_text) if requests_text is not None else None

        def metadata() -> dict[str, Any]:
            annotations = {EXTENDED_CLAIM_ANNOTATION: "true"}
            return dict(name=name, namespace=ns, annotations=annotations, ownerReferences=[owner])

        # (the claims of one request list and namespace differ in name and owner only)
        kind = ("extended", requests_text, ns) if requests_text is not None else None
        spec = known[1] if known is not None else {"devices": {"requests": requests}}
        claim = self._copier.claim(kind, name, owner, metadata, spec)
        # _add_claim, with what _index_extended would read from the claim made just above.
        self.claims[key] = claim
        self._extended_by_owner.setdefault((ns, pod.name), []).append(key)
        self._generated.add(key)
        if requests_text is not None:
            if known is None:
                known = self._extended_specs[requests_text] = (
                    json.dumps(claim.spec.to_k8s(), sort_keys=True),
                    claim.spec,
                )
            self.spec_texts[key] = known[0]
        return ClaimUse(EXTENDED_CLAIM_USE, key, True, None)

    # -------------------------------------------------------------- pods
    def demand(self, pod: Pod) -> PodDemand:
        key = _key(pod)
        group: PodGroup | None = None
        gname = pod.spec.scheduling_group.pod_group_name if pod.spec.scheduling_group else None
        if gname:
            group = self.groups.get(f"{pod.namespace}/{gname}")
            if group is None:
                raise InputError(
                    f"{pod.ref}: field spec.schedulingGroup.podGroupName: PodGroup {pod.namespace}/{gname} not found"
                )
        # SchedulingGates runs before DynamicResources among the PreEnqueue plugins.
        hold = gate_hold(pod) if not pod.spec.node_name else None
        claims: list[ClaimUse] = []
        seen: set[str] = set()
        controller_stopped = False
        for i, pc in enumerate(pod.spec.resource_claims):
            if pc.name in seen:
                raise InputError(f"{pod.ref}: field spec.resourceClaims[{i}].name: duplicate name {pc.name!r}")
            seen.add(pc.name)
            if controller_stopped:
                continue  # (handleClaim returned at the template it could not use; it retries)
            try:
                use = self.resolve(pod, i, pc, group)
            except _Missing as e:
                controller_stopped = e.template
                if pod.spec.node_name:
                    self.notes.append(f"{pod.ref} is bound to node {pod.spec.node_name}, but {e}: it holds no devices")
                elif hold is None:
                    hold = missing_claim_hold(str(e))
                continue
            if use is not None:
                claims.append(use)
        ext_requests, ext_text, ext_totals, resources = self._requests(pod)
        if ext_requests and hold is None:  # (the scheduler makes this claim in PreBind)
            claims.append(self.extended_claim(pod, ext_requests, ext_text))
        self._check_priority_admission(pod)
        priority = self.priority(pod, pod.spec)
        return PodDemand(
            pod=pod,
            key=key,
            priority=priority,
            queue_key=(-priority, _queue_time(pod), *self._created(key)),
            node_name=pod.spec.node_name or None,
            node_selector=dict(pod.spec.node_selector),
            resources=dict(resources),
            claims=claims,
            group=_key(group) if group is not None else None,
            extended_resources=dict(ext_totals),
            hold=hold,
        )

    def _requests(self, pod: Pod) -> tuple[list[dict[str, Any]], str | None, dict[str, Fraction], dict[str, Fraction]]:
        """(extended-resource device requests, _sorted_json of them, their pod totals, the pod's
        other requests as the scheduler counts them), worked out once per distinct set of
        container, pod-level and overhead requests (these are all they depend on; callers copy
        the dicts they keep)."""
        shape = requests_shape(pod)
        known = self._request_shapes.get(shape) if shape is not None else None
        if known is not None:
            return known
        ext_requests, ext_totals, everything = self._extended(pod)
        if everything is not None:
            # pod_requests(pod, skip=ext_totals): each resource is summed on its own, so leaving
            # some out is leaving their entries out (in the same order); not computed twice.
            resources = {k: v for k, v in everything.items() if k not in ext_totals}
        else:
            resources = pod_requests(pod, skip=ext_totals)
        for name in ("cpu", "memory"):
            resources.setdefault(name, _ZERO)
        resources["pods"] = _ONE
        resources = {k: v for k, v in resources.items() if v or k in ("cpu", "memory", "pods")}
        try:
            ext_text = _sorted_json(ext_requests) if ext_requests else None
        except (TypeError, ValueError):
            ext_text = None
        known = (ext_requests, ext_text, ext_totals, resources)
        if shape is not None:
            self._request_shapes[shape] = known
        return known

    def _created(self, key: str) -> tuple:
        """Queue tie-break after priority and creation time: the pod's key; a pod made from a
        workload controller (draopt.kube.controllers) sorts by (controller key, creation index)."""
        order = getattr(self.o, "creation_order", {}).get(key)
        return (*order, key) if order else (key,)

    # -------------------------------------------------------------- all
    def run(self) -> Workload:
        self.check_pod_groups()
        self.check_unique_pods()
        # Finished pods hold nothing (the scheduler does not count Succeeded/Failed pods).
        demands = [self.demand(p) for p in self.o.pods if p.status.phase not in ("Succeeded", "Failed")]
        if at_least(self.features.version, "1.37"):  # (1.36's queue pops pods one by one: NextPod)
            _hold_groups_of_waiting_pods(demands)
        pending = sorted((d for d in demands if d.node_name is None and d.hold is None), key=lambda d: d.queue_key)
        waiting = sorted((d for d in demands if d.hold is not None), key=lambda d: d.queue_key)
        running = [d for d in demands if d.node_name is not None]
        reserved = self.reserved_for(pending)
        groups = self.gangs(demands)
        composites = self.composites(groups)
        pending, waiting = hold_groups_never_tried(
            groups, pending, waiting, running, at_least(self.features.version, "1.37"), self.o.priority_classes
        )
        return Workload(
            pending=pending,
            running=running,
            claims=self.claims,
            groups=groups,
            reserved_for=reserved,
            node_allocatable=node_allocatable(self.o.nodes),
            composites=composites,
            spec_texts=self.spec_texts,
            claim_copies=self._copier,
            waiting=waiting,
            notes=self.notes + waiting_notes(waiting),
        )

    def check_pod_groups(self) -> None:
        """What the API server refuses of a PodGroup's spec.resourceClaims: an input error."""
        for g in self.o.pod_groups:
            if len(g.spec.resource_claims) > MAX_POD_GROUP_CLAIMS:
                raise InputError(
                    f"{g.ref}: field spec.resourceClaims: {len(g.spec.resource_claims)} entries, "
                    f"at most {MAX_POD_GROUP_CLAIMS} allowed"
                )
            for i, gc in enumerate(g.spec.resource_claims):
                if bool(gc.resource_claim_name) == bool(gc.resource_claim_template_name):
                    raise InputError(
                        f"{g.ref}: field spec.resourceClaims[{i}]: exactly one of "
                        f"resourceClaimName and resourceClaimTemplateName must be set"
                    )

    def check_unique_pods(self) -> None:
        """One object per namespace/name, as the API server holds it."""
        seen_pods: set[str] = set()
        for p in self.o.pods:
            key = _key(p)
            if key in seen_pods:
                raise InputError(f"Pod {key}: given twice (field metadata.name): one object per namespace and name")
            seen_pods.add(key)

    def reserved_for(self, pending: list[PodDemand]) -> dict[str, list[str]]:
        """Every claim's status.reservedFor once the pending pods are added (in queue order); an input
        error where that would exceed MAX_RESERVED_FOR entries."""
        reserved: dict[str, list[str]] = {
            k: [consumer_string(r) for r in c.status.reserved_for] for k, c in self.claims.items()
        }
        beyond: dict[str, list[tuple[PodDemand, str]]] = {}
        for d in pending:
            for use in d.claims:
                consumer = group_consumer(use.for_group.split("/", 1)[1]) if use.for_group else pod_consumer(d.pod.name)
                entries = reserved.setdefault(use.key, [])
                if consumer in entries:
                    continue
                if len(entries) >= MAX_RESERVED_FOR:
                    beyond.setdefault(use.key, []).append((d, use.name))
                else:
                    entries.append(consumer)
        if beyond:
            raise _reserved_for_overflow(beyond)
        return reserved

    def gangs(self, demands: list[PodDemand]) -> dict[str, Gang]:
        """Every PodGroup, with its members in the queue (in queue order)."""
        groups: dict[str, Gang] = {}
        by_group: dict[str, list] = {}
        for d in demands:
            if d.group is not None and d.hold is None:  # (a waiting member is not in the queue)
                by_group.setdefault(d.group, []).append(d)
        for g in self.o.pod_groups:
            gkey = _key(g)
            members = sorted(by_group.get(gkey, ()), key=lambda d: d.queue_key)
            policy = g.spec.scheduling_policy
            if policy is not None and policy.gang is not None:
                kind, min_count = "gang", policy.gang.min_count
                if min_count < 1:
                    raise InputError(f"{g.ref}: field spec.schedulingPolicy.gang.minCount: must be at least 1")
            else:
                kind, min_count = "basic", 1
            if g.spec.priority is not None or g.spec.priority_class_name:
                prio = self.priority(g, g.spec)
            else:
                prio = max((d.priority for d in members), default=self.default_priority)
            groups[gkey] = Gang(
                key=gkey,
                min_count=min_count,
                pods=[d.key for d in members],
                priority=prio,
                policy=kind,
                topology_key=self.topology(g),
                parent=self.parent_of(g),
                disruption_mode=disruption_mode(g.spec.disruption_mode),
                preemption_policy=g.spec.preemption_policy,
                admitted_priority=self.priority(g, g.spec),
            )
        return groups

    # -------------------------------------------------------------- KEP-5732 / KEP-6012
    def topology(self, obj: PodGroup | CompositePodGroup) -> str | None:
        """The topology key the scheduler sees: none while TopologyAwareWorkloadScheduling is off
        (the API server drops the field; gated_field_notes says so). What the API server refuses
        (pkg/apis/scheduling/validation: at most one constraint, a key required) is an input error."""
        constraints = obj.spec.scheduling_constraints
        if not self.features.topology_aware_workload_scheduling or constraints is None:
            return None
        if len(constraints.topology) > 1:
            raise InputError(
                f"{obj.ref}: field spec.schedulingConstraints.topology: {len(constraints.topology)} "
                f"entries, at most 1 allowed"
            )
        key = topology_key(constraints)
        if key is not None and not key:
            raise InputError(f"{obj.ref}: field spec.schedulingConstraints.topology[0].key: Required value")
        return key

    def parent_of(self, obj: PodGroup | CompositePodGroup) -> str | None:
        """The parent CompositePodGroup's key; a name that no CompositePodGroup of the namespace
        has is an input error naming both objects. Gate off: the field is dropped."""
        name = obj.spec.parent_composite_pod_group_name
        if not name or not self.features.composite_pod_group:
            return None
        key = f"{obj.namespace}/{name}"
        if key not in self.composite_objects:
            raise InputError(f"{obj.ref}: field spec.parentCompositePodGroupName: CompositePodGroup {key} not found")
        return key

    def composites(self, groups: dict[str, Gang]) -> dict[str, CompositeGang]:
        if not self.features.composite_pod_group:
            return {}
        out: dict[str, CompositeGang] = {}
        for key, obj in self.composite_objects.items():
            policy = obj.spec.scheduling_policy
            if policy is not None and policy.gang is not None:
                kind, count = "gang", policy.gang.min_group_count
                if count < 1:
                    raise InputError(f"{obj.ref}: field spec.schedulingPolicy.gang.minGroupCount: must be at least 1")
            else:
                kind, count = "basic", 1
            prio = (
                self.priority(obj, obj.spec)
                if obj.spec.priority is not None or obj.spec.priority_class_name
                else self.default_priority
            )
            out[key] = CompositeGang(
                key=key,
                min_group_count=count,
                policy=kind,
                children=[],
                topology_key=self.topology(obj),
                parent=self.parent_of(obj),
                priority=prio,
                disruption_mode=disruption_mode(obj.spec.disruption_mode),
            )
        children: dict[str, list[tuple[str, str]]] = {k: [] for k in out}
        for key, g in groups.items():
            if g.parent is not None:
                children[g.parent].append(("PodGroup", key))
        for key, c in out.items():
            if c.parent is not None:
                children[c.parent].append(("CompositePodGroup", key))
        for key, c in out.items():
            c.children = sorted(children[key], key=lambda kk: (kk[1], kk[0]))
        for key in out:  # a parent chain that comes back to itself is no tree
            seen, at = {key}, out[key].parent
            while at is not None:
                if at in seen:
                    raise InputError(
                        f"CompositePodGroup {key}: field spec.parentCompositePodGroupName: the "
                        f"parent chain comes back to CompositePodGroup {at}"
                    )
                seen.add(at)
                at = out[at].parent
        return out


def node_allocatable(nodes: list[Node]) -> dict[str, dict[str, Fraction]]:
    """node name -> status.allocatable as exact values (cpu in cores, memory in bytes, pods)."""
    return {n.name: {k: q(v) for k, v in n.status.allocatable.items()} for n in nodes}


def expand(objects: ObjectSet, features: Features | None = None) -> Workload:
    """The pods of `objects` as the scheduler sees them; see the module docstring."""
    from draopt.kube.field_notes import say_note, unmodelled_pod_fields

    features = features or Features.from_gates()
    notes = served_notes(objects, features.kubernetes_version) + gated_field_notes(objects, features)
    if features.admin_access:
        notes += unchecked_admin_namespaces(objects)
    workload = _Expander(objects, features).run()
    later = prebind_failure_notes(workload.pending, objects.nodes)
    workload.notes = notes + workload.notes + unmodelled_pod_fields(workload.pending) + later
    for line in workload.notes:
        say_note(line)  # (printed once per run, however many policies expand the same input)
    return workload


def _reserved_for_overflow(beyond: dict[str, list[tuple[PodDemand, str]]]) -> InputError:
    """The error for claims whose status.reservedFor would exceed MAX_RESERVED_FOR entries (`beyond`:
    the pods past the limit, with their claim names, per claim)."""
    key, over = next(iter(beyond.items()))
    d, claim_name = over[0]
    idx = next((i for i, pc in enumerate(d.pod.spec.resource_claims) if pc.name == claim_name), None)
    fld = f"spec.resourceClaims[{idx}]" if idx is not None else "spec.containers"
    return InputError(
        f"{d.pod.ref}: field {fld}: ResourceClaim {key}: status.reservedFor would exceed "
        f"{MAX_RESERVED_FOR} entries; pods beyond the limit: "
        + ", ".join(x.key for x, _ in over)
        + "".join(
            f"; ResourceClaim {k}: pods beyond the limit: " + ", ".join(x.key for x, _ in v)
            for k, v in list(beyond.items())[1:]
        )
    )


def _hold_groups_of_waiting_pods(demands: list[PodDemand]) -> None:
    """A PodGroup with a waiting pod waits whole (draopt.kube.admission.group_hold)."""
    first: dict[str, PodDemand] = {}
    for d in demands:
        if d.hold is not None and d.group is not None:
            first.setdefault(d.group, d)
    for d in demands:
        if d.hold is None and d.node_name is None and d.group in first:
            member = first[d.group]
            assert member.hold is not None
            d.hold = group_hold(d.group, member.key, member.hold)


def waiting_notes(waiting: list[PodDemand]) -> list[str]:
    """One line per reason pods wait outside kube-scheduler's queue: the first pod, and how many more."""
    by_reason: dict[tuple[str, str], list[str]] = {}
    for d in waiting:
        assert d.hold is not None
        gated = d.hold.condition_reason == SCHEDULING_GATED  # (one line for every gated pod, whatever its gates)
        by_reason.setdefault((d.hold.plugin, "" if gated else d.hold.message), []).append(d.key)
    lines = []
    for (plugin, message), pods in by_reason.items():
        who = f"pods {pods[0]} and {len(pods) - 1} more wait" if len(pods) > 1 else f"pod {pods[0]} waits"
        if plugin == REFUSED_GROUP_PLUGIN:  # (not a PreEnqueue plugin: every cycle of the group fails)
            lines.append(f"{message}: {who}, the PodGroup refused before its cycle ({plugin}), not placed")
            continue
        why = message or "spec.schedulingGates is not empty"
        lines.append(f"{why}: {who} outside the scheduling queue ({plugin} PreEnqueue), not placed")
    return lines


__all__ = [
    "ClaimUse",
    "PodDemand",
    "Gang",
    "CompositeGang",
    "Workload",
    "expand",
    "gated_field_notes",
    "containers_referencing",
    "pod_requests",
    "effective_container_requests",
    "q",
    "requests_shape",
    "device_class_mapping",
    "node_allocatable",
    "MAX_RESERVED_FOR",
    "EXTENDED_CLAIM_USE",
]
