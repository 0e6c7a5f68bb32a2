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
from draopt.errors import InputError
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


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**20))
def test_fast_paths_give_the_plain_search_answers(minor, seed, monkeypatch):
    scenarios = synth_scenarios(EVERY_FAMILY, minor, seed)
    fast = _answers(scenarios, minor, True, monkeypatch)
    plain = _answers(scenarios, minor, False, monkeypatch)
    assert fast == plain
    # (the scenarios reach the paths compared: allocations, and searches that fail)
    outcomes = {a[0][0] for a in fast[1:] if a[0] != "refused"}
    assert "allocated" in outcomes
