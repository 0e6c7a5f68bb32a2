"""`place -o wide` and `-o name`, as kubectl has them: wide is the table with the devices each
pod's claims hold; name is one `pod/NAMESPACE/NAME` line per placed pod, in queue order (for
scripts: `draopt place -f dump.yaml -o name | wc -l`)."""

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


def names(outcome) -> str:
    return "".join(f"pod/{pl.pod}\n" for pl in outcome.result.pods if pl.placed)
