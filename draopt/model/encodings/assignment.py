"""Device-assignment variables: one boolean per (claim, request, sub-request, candidate device).

A device is a candidate for a (sub-)request when it passes everything that does not depend
on other choices: class and request selectors, per-device node selection, binding-condition
gate, not held by an allocated claim (unless admin access), its taints tolerated, its
capacity big enough on its own, counters allowed by the gate. `ExactCount` takes `count`
candidates, `All` takes every matching device (and fails if one of them is no candidate),
a `firstAvailable` request takes exactly one of its sub-requests. At most 32 results per claim.
"""
from __future__ import annotations

from draopt.dra.problem import MAX_RESULTS, RequestSpec
from draopt.model.encodings.base import ModelData


def is_candidate(m: ModelData, spec: RequestSpec, dev) -> bool:
    return m.problem.usable_alone(spec, dev)

def encode(m: ModelData) -> None:
    cp = m.cp
    p = m.problem
    for claim in p.claims:
        claim_xs = []
        for group in claim.requests:
            selectors = []
            for spec in group.alternatives:
                m.specs.append(spec)
                if group.has_subrequests:
                    sel = cp.new_bool_var(f"sub[{spec.key}]")
                    selectors.append(sel)
                else:
                    sel = None   # a plain request is always "selected"
                m.select[spec.key] = sel
                pool = spec.all_devices if spec.mode == "All" else p.devices
                devs = [d for d in pool if is_candidate(m, spec, d)]
                m.by_spec[spec.key] = devs
                xs = []
                for d in devs:
                    v = cp.new_bool_var(f"x[{spec.key},{d.index}]")
                    m.x[(spec.key, d.index)] = v
                    m.by_device.setdefault(d.index, []).append(spec)
                    xs.append(v)
                claim_xs.extend(xs)
                if spec.mode == "All":
                    need = f"claim {claim.key} request {spec.full_name}: all {len(spec.all_devices)} matching devices"
                    if (len(devs) < len(spec.all_devices) or not devs) and m.explain:
                        # Keep the unmeetable requirement, guarded, so that explain can name it.
                        m.add(cp.add(sum(xs) == max(1, len(spec.all_devices)) * (1 if sel is None else sel)), need)
                        continue
                    if len(devs) < len(spec.all_devices) or not devs:
                        # A matching device cannot be used, or none matches: this alternative fails.
                        if sel is not None:
                            m.add(cp.add(sel == 0))
                        else:
                            m.infeasible_reasons.append(
                                f"claim {claim.key}, request {spec.full_name}: not every matching device is usable"
                                if devs else f"claim {claim.key}, request {spec.full_name}: no matching device")
                        for v in xs:
                            m.add(cp.add(v == 0))
                        continue
                    for v in xs:
                        m.add(cp.add(v == (1 if sel is None else sel)), need)
                else:
                    need = f"claim {claim.key} request {spec.full_name}: {spec.count} device(s)"
                    if len(devs) < spec.count and not m.explain:
                        if sel is None:
                            m.infeasible_reasons.append(
                                f"claim {claim.key}, request {spec.full_name}: {len(devs)} candidate devices, "
                                f"{spec.count} needed")
                        else:
                            m.add(cp.add(sel == 0))
                        for v in xs:
                            m.add(cp.add(v == 0))
                        continue
                    m.add(cp.add(sum(xs) == (spec.count if sel is None else spec.count * sel)), need)
            if selectors:
                m.add(cp.add_exactly_one(selectors))
        if claim_xs:
            m.add(cp.add(sum(claim_xs) <= MAX_RESULTS), f"claim {claim.key}: at most {MAX_RESULTS} results")
