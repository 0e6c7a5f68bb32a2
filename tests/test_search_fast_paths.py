"""The search's fast paths (draopt.dra.reference.FAST_PATHS: e.g. the undo of a device that took
no share, counters, groups nor constraint, made without _undo_device's closure) give the same
answers as the plain search: `allocate` on the crosscheck's generated scenarios, every feature
family (one at a time and all together), both releases, with and without them."""

from __future__ import annotations

import contextlib
import io
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draopt.allocation.reuse import CALL_REUSE
from draopt.crosscheck.allocator_oracle import draopt_allocation
from draopt.dra import reference
from draopt.errors import AllocationError, InputError
from draopt.testing.crosscheck_scenarios import FAMILY_GATES, GATE_MODES, synth_scenarios

# synth_scenarios takes one family per len(GATE_MODES) scenarios in its single-family modes:
# this many scenarios go through every family, alone and with the others.
EVERY_FAMILY = len(FAMILY_GATES) * len(GATE_MODES)
_ALLOCATE = reference.ReferenceAllocator.allocate  # (the search's own: each run wraps this one)


def _recorded(log: list) -> Callable:
    """ReferenceAllocator.allocate, with what each search leaves in `log`: whether it found an
    allocation, the devices it still marks in use (its undos taken back), the devices tried and
    the steps."""

    def allocate(self):
        chosen = _ALLOCATE(self)
        marked = sorted((reference.device_id_str(d), sorted(c)) for d, c in self.allocating.items() if c)
        log.append((chosen is not None, marked, self.devices_tried, self.nodes_visited))
        return chosen

    return allocate


def _answers(scenarios: list[dict], minor: str, fast: bool, monkeypatch) -> list[tuple]:
    monkeypatch.setattr(reference, "FAST_PATHS", fast)
    searches: list = []
    monkeypatch.setattr(reference.ReferenceAllocator, "allocate", _recorded(searches))
    CALL_REUSE.clear()  # (nothing a search left in the reuse caches read by the other run)
    out: list[tuple] = [("searches", searches)]
    with contextlib.redirect_stderr(io.StringIO()):
        for scenario in scenarios:
            try:
                # twice: the second call runs on what the first one kept (the warm path)
                answers = [draopt_allocation(scenario, minor=minor) for _ in range(2)]
            except InputError as e:
                out.append(("refused", str(e)))
                continue
            out.append(tuple((a.outcome, a.results, a.error) for a in answers))
    return out


# (scenarios of a release, draopt run as a release): 1.35 on 1.36's scenarios for its counter leak
RELEASES = [("1.36", "1.35"), ("1.36", "1.36"), ("1.37", "1.37")]


@pytest.mark.parametrize("scenarios_of,minor", RELEASES)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**20))
def test_fast_paths_give_the_plain_search_answers(scenarios_of, minor, seed, monkeypatch):
    scenarios = synth_scenarios(EVERY_FAMILY, scenarios_of, seed)
    fast = _answers(scenarios, minor, True, monkeypatch)
    plain = _answers(scenarios, minor, False, monkeypatch)
    assert fast == plain
    # (the scenarios reach the paths compared: allocations, and searches that fail)
    outcomes = {a[0][0] for a in fast[1:] if a[0] != "refused"}
    assert "allocated" in outcomes


def _problems(scenarios: list[dict], minor: str) -> list:
    """The problems allocate prepared for the scenarios (each called twice: the selectors'
    answers are known), with the gates of each."""
    CALL_REUSE.clear()
    with contextlib.redirect_stderr(io.StringIO()):
        for scenario in scenarios:
            for _ in range(2):
                try:
                    draopt_allocation(scenario, minor=minor)
                except InputError:
                    break
    return [
        problem
        for _, shared in CALL_REUSE._entries.values()
        for problem in shared.get("problems", {}).values()
        if problem is not None
    ]


@pytest.mark.parametrize("scenarios_of,minor", RELEASES)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**20))
def test_devices_left_out_are_refused_without_a_trace(scenarios_of, minor, seed, monkeypatch):
    """Every device SearchPlan.candidates leaves out of a request is one the search's loop tries
    and refuses at its first step, leaving nothing behind (no device in use, no counter, share
    or group taken) and raising nothing: skipping it changes no answer."""
    monkeypatch.setattr(reference, "FAST_PATHS", True)
    monkeypatch.setattr(CALL_REUSE, "limit", 10**6)  # (every scenario's problems kept)
    left_out = 0
    for problem in _problems(synth_scenarios(EVERY_FAMILY, scenarios_of, seed), minor):
        for claim in problem.claims:
            for group in claim.requests:
                for req in group.alternatives:
                    if req.mode == "All":
                        continue
                    for leak in (False, True):
                        search = reference.ReferenceAllocator(problem)
                        search.leak = leak
                        assert search.plan is not None
                        kept = set(search.plan.candidates(req, leak))
                        for dev in problem.inventory.devices:
                            if dev.index in kept:
                                continue
                            left_out += 1
                            if dev.device.consumes_counters:
                                with contextlib.suppress(Exception):  # (a pool's counters that do not parse)
                                    search._room(dev.pool)  # (made on first use, its counters whole)
                            before = _search_state(search)
                            assert search._try_one(req, dev, req.claim_index) is not None, dev.id
                            assert _search_state(search) == before, dev.id
    assert left_out > 0  # (the scenarios have devices to leave out)


def _search_state(search: reference.ReferenceAllocator) -> tuple:
    return (
        {d: set(c) for d, c in search.allocating.items() if c},
        {d: set(c) for d, c in search.allocating_admin.items() if c},
        {d: dict(c) for d, c in search.allocating_capacity.items()},
        {k: (list(r.room), r.negative) for k, r in search.rooms.items()},
        dict(search.compat),
        dict(search.counted_multi),
        [list(r) for r in search.results],
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_searches_leave_no_reference_cycle(minor, monkeypatch):
    """A search's allocator is freed as soon as it is dropped (its undo functions hold it, and
    none is left on it once the search ends): the cycle collector has nothing to do per search."""
    import gc
    import weakref

    monkeypatch.setattr(CALL_REUSE, "limit", 10**6)
    problems = _problems(synth_scenarios(EVERY_FAMILY, minor, 11), minor)
    found = 0
    gc.disable()
    try:
        for problem in problems:
            search = reference.ReferenceAllocator(problem, node_limit=reference.QUICK_NODE_LIMIT)
            try:
                found += search.allocate() is not None
            except (reference.SearchLimit, AllocationError):
                pass
            kept = weakref.ref(search)
            del search
            assert kept() is None
    finally:
        gc.enable()
    assert found > 0  # (searches that took devices, each with its undo function)
