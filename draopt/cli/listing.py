"""`-o wide` and `-o name`, as kubectl has them. `place -o wide` is the table with the devices
each pod's claims hold; `-o name` is one `KIND/NAMESPACE/NAME` line (kind in lower case, as
kubectl prints it; the namespace kept, since a dump spans namespaces) per object a command
places or reports, in its own order (for scripts: `draopt place -f dump.yaml -o name | wc -l`)."""

from __future__ import annotations


def pod_devices(outcome) -> dict[str, str]:
    """Pod key -> `POOL/DEVICE,...` over its claims (a shared claim's devices under each of its
    pods), for the pods that were placed."""
    out: dict[str, str] = {}
    for pl in outcome.result.pods:
        if not pl.placed:
            continue
        held: list[str] = []
        for use in outcome.workload.pod(pl.pod).claims:
            allocated = outcome.result.claims.get(use.key)
            if allocated is not None:
                held += [f"{r.pool}/{r.device}" for r in allocated[0].devices.results]
        out[pl.pod] = ",".join(dict.fromkeys(held))
    return out


def claim_table(outcome) -> str:
    """`allocate -o table`: one line per claim allocated, as `place`'s table has one per pod: the
    claim, the node, and each request's devices (`REQUEST=POOL/DEVICE,...`)."""
    lines = []
    for claim in outcome.claims:
        results = claim.status.allocation.devices.results
        held = " ".join(f"{r.request}={r.pool}/{r.device}" for r in results) or "-"
        lines.append(f"{claim.namespace + '/' + claim.name:40s} {outcome.node or '-':20s} {held}")
    return "\n".join(lines) + ("\n" if lines else "")


def names(outcome) -> str:
    return "".join(f"pod/{pl.pod}\n" for pl in outcome.result.pods if pl.placed)


def object_names(documents) -> str:
    """`kind/namespace/name` per Kubernetes object (a dict), `kind/name` for cluster-scoped ones."""
    out = []
    for doc in documents:
        meta = doc.get("metadata") or {}
        namespace = f"{meta['namespace']}/" if meta.get("namespace") else ""
        out.append(f"{str(doc.get('kind', '')).lower()}/{namespace}{meta.get('name', '')}\n")
    return "".join(out)


def subject_names(subjects) -> str:
    """`explain -o name`: the objects its sections are about, once each, in order: `pod NS/NAME`
    subjects as pod/NS/NAME, `claims NS/A, NS/B [on node N]` as one resourceclaim/NS/NAME each."""
    names: dict[str, None] = {}
    for subject in subjects:
        if subject.startswith("pod "):
            names[f"pod/{subject[4:]}"] = None
        elif subject.startswith("claims "):
            claims = subject[len("claims ") :].split(" on node ")[0]
            names.update((f"resourceclaim/{claim}", None) for claim in claims.split(", "))
    return "".join(f"{name}\n" for name in names)
