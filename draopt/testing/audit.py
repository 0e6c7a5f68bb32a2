"""Both placement policies on one generated cluster (draopt.testing.synth_cluster), and what the
property tests (`tests/test_optimal_families.py`) and `benchmarks/fuzz_place.py` check: validity by
the checker, first-fit's known defects, optimal never worse, honest status."""

from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

# Violations first-fit is expected to show: the kube-scheduler's known allocator defects, which
# `first-fit` reproduces on purpose (docs/semantics.md: distinct-last-only up to 1.36, and
# match-intersection with list-type attributes).
FIRST_FIT_DEFECTS = ("distinctAttribute", "matchAttribute")


@dataclass
class Audit:
    """What placing one cluster with both policies gave."""

    invalid: str | None = None  # DraoptError from reading or first-fit: the input is invalid
    crash: str | None = None  # any other exception (or optimal rejecting what first-fit read)
    ff_errors: list[str] = field(default_factory=list)
    opt_errors: list[str] = field(default_factory=list)
    ff_defects: list[str] = field(default_factory=list)  # first-fit's violations explained by its defects
    ff_weighted: int = 0
    opt_weighted: int = 0
    pods: int = 0
    pinned: int = 0  # pods kept at first-fit's answer (fixed_pods + pinned_pods)
    status: str | None = None
    gap: float | None = None
    bound: float | None = None
    reordered_weighted: int = 0  # best first-fit over other queue orders (valid placements only)
    opt_s: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def worse(self) -> bool:
        """Optimal placed fewer priority-weighted pods than a valid first-fit placement."""
        return self.ok and not self.ff_defects and self.opt_weighted < self.ff_weighted

    @property
    def ok(self) -> bool:
        return self.invalid is None and self.crash is None

    @property
    def dishonest(self) -> bool:
        """OPTIMAL reported with a non-zero gap."""
        return self.status == "OPTIMAL" and self.gap not in (0, 0.0)

    @property
    def nontrivial(self) -> bool:
        """First-fit is short of the optimum bound, or optimal beats it."""
        if self.invalid is not None:
            return False
        return (
            self.opt_weighted > self.ff_weighted
            or self.reordered_weighted > self.ff_weighted
            or (self.bound is not None and self.ff_weighted < self.bound)
        )

    @property
    def worse_than_reordered(self) -> bool:
        """Optimal placed fewer priority-weighted pods than first-fit in another queue order."""
        return self.ok and self.opt_weighted < self.reordered_weighted


def _crash_text(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno} in {tb[-1].name}" if tb else ""
    return f"{type(e).__name__}: {e}{where}"


def objects_of(docs: list[dict[str, Any]]):
    """An ObjectSet of the documents, as `draopt place -f` reads them."""
    from draopt.kube.loader import ObjectSet, parse_object

    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    return objs


def reordered_first_fit(
    docs: list[dict[str, Any]], priorities: dict[str, int], rng: random.Random, *, tries: int, features=None
) -> int:
    """The most priority-weighted pods first-fit places when the queue order is shuffled (pods
    given new priorities; weights stay the pods' own), over `tries` orders; only placements the
    checker accepts count. Every such placement is one optimal must match or beat, and one that
    beats first-fit's own order shows the instance is not trivial."""
    import copy

    from draopt.placement import place
    from draopt.cluster.check import check_placement
    from draopt.cluster.result import weight

    best = 0
    pods = [d for d in docs if d.get("kind") == "Pod"]
    for t in range(tries):
        keys = [f'{p["metadata"].get("namespace", "default")}/{p["metadata"]["name"]}' for p in pods]
        # Half the orders (by chance) keep the priority tiers and shuffle inside them; half shuffle all.
        tiers = rng.random() < 0.5
        ranks = sorted(range(len(pods)), key=lambda i: ((-priorities.get(keys[i], 0)) if tiers else 0, rng.random()))
        shuffled = copy.deepcopy(docs)
        spods = [d for d in shuffled if d.get("kind") == "Pod"]
        for pos, i in enumerate(ranks):
            spods[i]["spec"]["priority"] = len(pods) - pos
            spods[i]["spec"].pop("priorityClassName", None)
            # A queue order, not a preemption: the new priorities must not let a pod evict another.
            spods[i]["spec"]["preemptionPolicy"] = "Never"
        out = place(objects_of(shuffled), policy="first-fit", features=features)
        value = sum(weight(priorities.get(p.pod, 0)) for p in out.result.pods if p.placed)
        if value > best and not check_placement(out):
            best = value
    return best


def audit(
    docs: list[dict[str, Any]], *, features=None, time_limit: float = 10.0, reorders: int = 0, seed: int = 0
) -> Audit:
    """Place `docs` with first-fit and optimal (public API only) and check both placements;
    `reorders` > 0 also runs first-fit in that many other queue orders (see
    :func:`reordered_first_fit`, drawn from `seed`)."""
    from draopt.errors import DraoptError
    from draopt.placement import place
    from draopt.cluster.check import check_placement

    out = Audit()
    try:
        objs = objects_of(docs)
        ff = place(objs, policy="first-fit", features=features)
    except DraoptError as e:
        out.invalid = str(e)
        return out
    except Exception as e:  # noqa: BLE001 - a crash is what is being counted
        out.crash = "first-fit: " + _crash_text(e)
        return out
    out.pods = len(ff.result.pods)
    out.ff_weighted = ff.result.weighted_placed()
    try:
        # match-intersection only exists with list-type attributes (DRAListTypeAttributes),
        # distinct-last-only up to 1.36 (Features.distinct_last_only).
        from draopt.kube.features import Features

        f = features or Features.from_gates()
        on = (f.distinct_last_only, f.list_type_attributes)
        defects = tuple(d for d, applies in zip(FIRST_FIT_DEFECTS, on) if applies)
        for err in check_placement(ff):
            (out.ff_defects if any(d in err for d in defects) else out.ff_errors).append(err)
    except Exception as e:  # noqa: BLE001
        out.crash = "checker on first-fit: " + _crash_text(e)
        return out
    if reorders:
        priorities = {p.pod: p.priority for p in ff.result.pods}
        out.reordered_weighted = reordered_first_fit(
            docs, priorities, random.Random(seed), tries=reorders, features=features
        )
    t0 = time.perf_counter()
    try:
        opt = place(objects_of(docs), policy="optimal", features=features, time_limit=time_limit)
    except DraoptError as e:
        out.crash = "optimal rejects input first-fit reads: " + _crash_text(e)
        return out
    except Exception as e:  # noqa: BLE001
        out.crash = "optimal: " + _crash_text(e)
        return out
    finally:
        out.opt_s = time.perf_counter() - t0
    out.opt_weighted = opt.result.weighted_placed()
    stats = opt.result.stats
    out.stats = dict(stats)
    out.pinned = int(stats.get("fixed_pods", 0) or 0) + int(stats.get("pinned_pods", 0) or 0)
    out.status = stats.get("status")
    out.gap = stats.get("gap")
    out.bound = stats.get("bound")
    try:
        out.opt_errors = check_placement(opt)
    except Exception as e:  # noqa: BLE001
        out.crash = "checker on optimal: " + _crash_text(e)
    return out


class IsolatedAudit:
    """:func:`audit` in a child process, so that native code aborting the process (a CP-SAT
    check failure, a segfault) is counted as a crash of that instance instead of ending the test
    run or the benchmark. The child is started once and replaced only after such a death.
    Use as a context manager, or call :meth:`close`."""

    DIED = "the placement process died (exit code {code}; -6: an abort, e.g. a CP-SAT check failure)"

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    def __call__(self, docs: list[dict[str, Any]], *, timeout: float | None = None, **kwargs: Any) -> Audit:
        """audit(docs, **kwargs) in the child. `timeout` (default: 4 x time_limit + 60 s) ends a
        child that does not answer; that counts as a crash too."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, TimeoutError as FutureTimeout
        from concurrent.futures.process import BrokenProcessPool

        if self._pool is None:
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=ctx)
        if timeout is None:
            timeout = 4 * float(kwargs.get("time_limit", 10.0)) + 60
        future = self._pool.submit(audit, docs, **kwargs)
        try:
            return future.result(timeout=timeout)
        except BrokenProcessPool:
            codes = [p.exitcode for p in getattr(self._pool, "_processes", {}).values()]
            self.close()
            return Audit(crash=self.DIED.format(code=codes[0] if codes else "?"))
        except FutureTimeout:
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                proc.kill()
            self.close()
            return Audit(crash=f"no answer within {timeout:.0f} s (time limit {kwargs.get('time_limit', 10.0)} s)")

    def close(self) -> None:
        if self._pool is not None:
            try:
                self._pool.shutdown(wait=True, cancel_futures=True)
            except Exception:  # noqa: BLE001 - a broken pool has nothing left to shut down
                pass
            self._pool = None

    def __enter__(self) -> "IsolatedAudit":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["IsolatedAudit", "audit", "Audit", "objects_of", "reordered_first_fit"]
