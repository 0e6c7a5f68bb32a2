"""Dual-optimal inequalities for the covering column generation (colgen_plan.py): a pod of a
smaller kind can always take the place of a pod of a larger one.

Kind `a` dominates kind `b` when, on every class where `a` can run, `b` can run too and needs no
more of anything: no more of each limited node resource, and no more of the devices (whole
devices: no more of them; a share: no larger, or one of `a`'s whole devices). Replacing an `a` in
any configuration by a `b` then gives a configuration, so the configuration LP may cover a `b`
with an `a`'s place at no cost (Ben Amor, Desrosiers and Valerio de Carvalho, "Dual-optimal
inequalities for stabilized column generation", Operations Research 54(3), 2006). The LP's
value does not change; its duals must keep pi_b <= pi_a, which cuts the dual space the
generation wanders through and shortens its tail.

Dominance is read from the compact pricing structure (colgen_pricing.DevicePricing), which
states exactly what a node of the class holds; the configurations the substitutions give are
checked by the one model all the same before a plan uses them (`realize`).
"""

from __future__ import annotations

from collections import defaultdict


def substitutions(classes, fast) -> list[tuple[int, int]]:
    """(a, b) pairs of kinds, `b`'s pods may take `a`'s places (transitively reduced: a chain
    a -> c -> b stands for a -> b). Empty unless every class has the compact structure."""
    if not classes or any(f is None for f in fast):
        return []
    where: dict[int, list[tuple[int, int]]] = defaultdict(list)  # kind -> (class, index), admissible
    for j, f in enumerate(fast):
        for i, ki in enumerate(f.kinds):
            if f.ub[i] > 0:
                where[ki].append((j, i))
    kinds = sorted(where)
    index_of = [{ki: i for i, ki in enumerate(f.kinds)} for f in fast]
    pairs: set[tuple[int, int]] = set()
    for a in kinds:
        for b in kinds:
            if a == b:
                continue
            for j, ia in where[a]:
                ib = index_of[j].get(b)
                if ib is None or fast[j].ub[ib] <= 0 or not _takes_place(fast[j], ia, ib):
                    break
            else:
                pairs.add((a, b))
    same = {(a, b) for a, b in pairs if (b, a) in pairs}
    succ: dict[int, set[int]] = defaultdict(set)
    for a, b in pairs:
        succ[a].add(b)
    reduced = []
    for a, b in sorted(pairs):
        through = any((c, b) in pairs and (a, c) not in same and (c, b) not in same for c in succ[a] if c != b)
        if not through:
            reduced.append((a, b))
    return reduced


def _takes_place(f, ia: int, ib: int) -> bool:
    """A pod of index `ib` fits wherever one of index `ia` is taken out (class structure `f`)."""
    da, db = f.demand[ia], f.demand[ib]
    for r in f.free:
        if db.get(r, 0) > da.get(r, 0):
            return False
    wa, wb, sa, sb = f.whole[ia], f.whole[ib], f.share[ia], f.share[ib]
    if wb:
        return wa >= wb
    if sb:
        return wa >= 1 or (sa > 0 and sb <= sa)
    return True


def realize(
    classes, columns, free_counts: list[int], copy_counts: list[int], moves: dict[tuple[int, int], int]
) -> tuple[list[tuple[int, tuple[int, ...], bool, int]], bool]:
    """The configurations a cover uses once `moves[(a, b)]` places of kind `a` go to pods of kind
    `b`: ((class, counts, a copy, nodes) per distinct configuration, in a deterministic order;
    whether every move found its places). Chains (a -> c -> b) are followed: a move waits for
    the places it takes."""
    instances: list[list[int]] = []
    where: list[tuple[int, bool]] = []
    for col, x, y in zip(columns, free_counts, copy_counts):
        for copy, n in ((False, x), (True, y)):
            for _ in range(n):
                instances.append(list(col.counts))
                where.append((col.cls, copy))
    index_of = [{ki: i for i, ki in enumerate(nc.kinds)} for nc in classes]
    holders: dict[int, list[int]] = defaultdict(list)  # kind -> instances with a place of it
    for n, ((j, _), got) in enumerate(zip(where, instances)):
        for ki, k in zip(classes[j].kinds, got):
            if k:
                holders[ki].append(n)
    left = {p: m for p, m in sorted(moves.items()) if m > 0}
    progressed = True
    while left and progressed:
        progressed = False
        for (a, b), m in list(left.items()):
            while m and holders[a]:
                n = holders[a][-1]
                j = where[n][0]
                ia, ib = index_of[j][a], index_of[j].get(b)
                if ib is None:  # not a dominance pair on this class: its places stay a's
                    holders[a].pop()
                    continue
                instances[n][ia] -= 1
                if not instances[n][ia]:
                    holders[a].pop()
                if not instances[n][ib]:
                    holders[b].append(n)
                instances[n][ib] += 1
                m -= 1
                progressed = True
            if m:
                left[(a, b)] = m
            else:
                del left[(a, b)]
    grouped: dict[tuple[int, tuple[int, ...], bool], int] = defaultdict(int)
    for (j, copy), got in zip(where, instances):
        grouped[(j, tuple(got), copy)] += 1
    return [(j, c, copy, n) for (j, c, copy), n in sorted(grouped.items())], not left
