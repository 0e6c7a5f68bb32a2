"""The optimal policy's figures as typed records: `PartStats` for one independent part of the
model (what `optimal._solve_part` found and took), `SolverStats` for the whole run (the parts
summed, what was proven, the summary in words). `SolverStats.to_dict()` gives the keys the
result's stats have always had (`PlacementResult.stats`, the CLI's `--stats` and summary lines):
a field that is None is left out, as a key that was never set.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from draopt.progress import format_gap

# Phase 1 (placed pods) is proven when these hold; with victims, "victims" comes after "placed".
PHASES = ("placed", "preferences", "packing")
PHASES_WITH_VICTIMS = ("placed", "victims", "preferences", "packing")


def unproven(with_victims: bool = False) -> dict[str, bool]:
    return dict.fromkeys(PHASES_WITH_VICTIMS if with_victims else PHASES, False)


@dataclass
class PartStats:
    """What solving one part found and took. Times in seconds (wall), rounded to the millisecond."""

    status: str = "UNKNOWN"  # OPTIMAL, FEASIBLE, UNKNOWN or CP-SAT's status name of phase 1
    objective: int | None = 0  # priority-weighted placed pods of the placement returned
    bound: int | None = 0  # proven upper bound of `objective`
    variables: int = 0  # the CP-SAT model's size (column generation: its columns)
    constraints: int = 0
    cheap_bound: int = 0  # pods with a feasible node, each weighted: a bound without the model
    proven: dict[str, bool] = field(default_factory=unproven)  # phase -> proven optimal
    build_s: float | None = None
    warm_start_s: float | None = None  # completing first-fit's placement into a solution
    count_s: float | None = None  # phase 1
    phase_s: dict[str, float] = field(default_factory=dict)  # later phase name -> its time
    phase_value: dict[str, int] = field(default_factory=dict)  # later phase name -> its objective
    build_solve_s: float | None = None
    owned_across_nodes: int | None = None  # owners of a kind's devices for all its nodes
    victim_variables: int | None = None
    first_fit_in_model: bool | None = None  # first-fit's placement is a solution of the model
    proof: str | None = None  # why phase 1 is proven without a search
    floor_dropped: str | None = None  # why first-fit's objective is not required
    fallback: str | None = None  # no placement of the model: first-fit's is kept, and why
    no_better_found: str | None = None
    lns: dict[str, Any] = field(default_factory=dict)  # the neighbourhood search's lns_* figures
    colgen: dict[str, Any] = field(default_factory=dict)  # column generation's colgen_* figures

    @property
    def victim_cost(self) -> int | None:
        return self.phase_value.get("victims")


# The later phases' times summed over parts, in this order (the victims' phase is not summed).
_SUMMED_TIMES = ("build_s", "warm_start_s", "count_s", "preferences_s", "packing_s", "owned_across_nodes")


@dataclass
class SolverStats:
    """The optimal policy's figures for one run (the keys of `PlacementResult.stats` it sets).
    Counts of pods are pods; objective and bounds are priority-weighted placed pods (weight
    `max(1, 1 + priority)`); times are wall seconds rounded to the millisecond."""

    # The reductions: identical pods counted together (kinds), and why the others are not.
    kinds: int | None = None
    counted_kinds: int | None = None
    pods_counted: int | None = None
    pods_single: int | None = None
    not_counted_because: dict[str, int] | None = None
    pinned_pods: int = 0  # pods that keep first-fit's answer (a part without a solution in time)
    prepare_s: float | None = None
    cel_error_candidates_skipped: int | None = None  # devices no candidate by a CEL runtime error
    components: int | None = None  # independent parts solved apart
    proof: str | None = None
    colgen: dict[str, Any] = field(default_factory=dict)  # colgen_*: the last part's that used it
    lns: dict[str, Any] = field(default_factory=dict)  # lns_*: summed over parts
    first_fit_in_model: bool | None = None  # first-fit's placement is a solution of every part
    floor_dropped: str | None = None
    fallback: str | None = None
    no_better_found: str | None = None
    objective: int | None = 0
    bound: int | None = 0
    variables: int | None = None
    constraints: int | None = None
    victim_cost: int | None = None
    subrequest_index_sum: int | None = None  # phase 2: the chosen sub-requests' indexes summed
    cheap_bound: int | None = None
    build_s: float | None = None
    warm_start_s: float | None = None
    count_s: float | None = None
    preferences_s: float | None = None
    packing_s: float | None = None
    owned_across_nodes: int | None = None
    proven: dict[str, bool] = field(default_factory=unproven)
    status: str = "UNKNOWN"  # OPTIMAL (every phase proven), FEASIBLE or UNKNOWN (first-fit's kept)
    part_status: dict[str, int] | None = None  # status -> parts
    gap: float | None = None  # (bound - objective) / bound
    first_fit_objective: int | None = None
    solve_s: float | None = None
    summary: str | None = None  # what was proven, in words
    first_fit_scheduler: str | None = None  # the first-fit that is the floor (its profile)

    def to_dict(self) -> dict[str, Any]:
        """The stats as the result has them: None fields left out (objective, bound and gap
        always given), colgen_* and lns_* figures flat."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("colgen", "lns"):
                out.update(value)
            elif value is not None or f.name in ("objective", "bound", "gap"):
                out[f.name] = value
        return out


class PartsTotal:
    """The parts' figures summed as they come (`add`), into `SolverStats`."""

    def __init__(self, stats: SolverStats, with_victims: bool):
        self.stats = stats
        self.objective: int | None = 0
        self.bound: int | None = 0
        self.variables: int | None = 0
        self.constraints: int | None = 0
        self.victim_cost: int | None = 0 if with_victims else None
        # (set by the first part: no part, no figure)
        self.subrequest_index_sum: int | None = None
        self.cheap_bound: int | None = None
        self.times: dict[str, float] = {}
        self.proven = dict.fromkeys(PHASES_WITH_VICTIMS if with_victims else PHASES, True)
        self.statuses: Counter = Counter()

    def add(self, st: PartStats, pods: int) -> None:
        """One part's figures (`pods`: its pending pods, pinned to first-fit's answer on a fallback)."""
        total = self.stats
        self.objective = None if self.objective is None or st.objective is None else self.objective + st.objective
        self.bound = None if self.bound is None or st.bound is None else self.bound + st.bound
        self.variables = None if self.variables is None else self.variables + st.variables
        self.constraints = None if self.constraints is None else self.constraints + st.constraints
        self.subrequest_index_sum = (self.subrequest_index_sum or 0) + st.phase_value.get("preferences", 0)
        self.cheap_bound = (self.cheap_bound or 0) + st.cheap_bound
        for key in _SUMMED_TIMES:
            value = _part_time(st, key)
            if value is not None:
                self.times[key] = round(self.times.get(key, 0) + value, 3)
        if st.proof is not None:
            total.proof = st.proof
        total.colgen.update(st.colgen)
        for key, v in st.lns.items():
            total.lns[key] = v if isinstance(v, str) else round(total.lns.get(key, 0) + v, 3)
        for key in self.proven:
            self.proven[key] = self.proven[key] and st.proven.get(key, True)  # a part without victims decides none
        if st.victim_cost is not None and self.victim_cost is not None:
            self.victim_cost += st.victim_cost
        self.statuses[st.status] += 1
        total.first_fit_in_model = (True if total.first_fit_in_model is None else total.first_fit_in_model) and (
            True if st.first_fit_in_model is None else st.first_fit_in_model
        )
        for key in ("floor_dropped", "fallback", "no_better_found"):
            if getattr(st, key) is not None:
                setattr(total, key, getattr(st, key))
        if st.fallback is not None:
            total.pinned_pods += pods

    def close(self) -> SolverStats:
        """The sums into the stats, with the status, the parts' statuses and the gap."""
        total = self.stats
        total.objective, total.bound = self.objective, self.bound
        total.variables, total.constraints = self.variables, self.constraints
        total.victim_cost = self.victim_cost
        total.subrequest_index_sum, total.cheap_bound = self.subrequest_index_sum, self.cheap_bound
        for key, value in self.times.items():
            setattr(total, key, value)
        total.proven = self.proven
        total.status = (
            "OPTIMAL"
            if all(self.proven.values()) and not total.fallback
            else ("FEASIBLE" if not total.fallback else "UNKNOWN")
        )
        total.part_status = dict(self.statuses)
        total.gap = (
            None
            if self.bound is None
            else (
                round((self.bound - self.objective) / self.bound, 4)
                if self.bound and self.objective is not None
                else 0.0
            )
        )
        return total


def _part_time(st: PartStats, key: str) -> float | None:
    if key in ("preferences_s", "packing_s"):
        return st.phase_s.get(key[: -len("_s")])
    return getattr(st, key)


def name_first_fit(stats: SolverStats, label: str) -> None:
    """Say which first-fit is the floor (its scheduler profile), in the stats and in the messages
    that mention its placement."""
    stats.first_fit_scheduler = label
    for key in ("summary", "fallback", "no_better_found"):
        value = getattr(stats, key)
        if isinstance(value, str):
            setattr(stats, key, value.replace("first-fit's placement", f"first-fit's placement ({label})"))


def summary_text(stats: dict, scope: str = "") -> str:
    """What the model proved, in words, led by the status: "proven optimal" only when the status is
    OPTIMAL (every phase proven); otherwise the status, what was proven (`scope`: what the proofs hold
    for, when not the whole question) and what is best found only."""
    p = stats["proven"]
    levels = [("placed pods", p["placed"])]
    if "victims" in p:  # victims chosen by the model (draopt.model.victims)
        levels.append(("victims (fewest, then lowest priority)", p["victims"]))
    levels += [("sub-request preferences", p["preferences"]), ("packing", p["packing"])]
    done = [name for name, ok in levels if ok]
    not_done = [name for name, ok in levels if not ok]
    if stats.get("fallback"):
        text = f"{stats['fallback']} for {stats['pinned_pods']} pending pod(s)"
        if stats.get("gap") is not None:
            which = (
                "every pod placed" if "preparing" in stats["fallback"] else "every pod that has a feasible node placed"
            )
            if p["placed"]:
                return (
                    text + f"; placed pods proven optimal: it reaches the bound ({which}: {stats['bound']}); "
                    "nothing else proven"
                )
            return text + f"; nothing proven but a bound ({which}: {stats['bound']}, gap {_gap(stats['gap'])})"
        return text + "; nothing proven"
    status = stats.get("status", "FEASIBLE")
    if status == "OPTIMAL":
        text = f"proven optimal: {', '.join(done)}"
    else:
        text = f"{status}, not proven optimal: " + (f"proven{scope}: {', '.join(done)}" if done else "nothing proven")
    if stats.get("no_better_found"):
        text = f"{stats['no_better_found']} (first-fit's placement kept, bound {stats['bound']}); " + text
    if not_done:
        text += f"; best found, not proven: {', '.join(not_done)} (gap of placed pods {_gap(stats['gap'])})"
    return text


def _gap(value: Any) -> str:
    """A gap in the summary text: a percentage, as the progress line and the tables show it."""
    return format_gap(value) if isinstance(value, (int, float)) else str(value)
