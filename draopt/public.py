"""draopt's public Python API, the top layer: `import draopt`, then `draopt.place(...)` and so on.

Each function takes what a user has at hand (an ObjectSet or the paths of YAML/JSON files)
and the options the command line names (`--time-limit` is `time_limit=`), and returns the
result object the command prints; `features=` (gates) and `kubernetes_version=` ("1.35" ..
"1.38", default 1.37's gates) are `--feature-gates` and `--kubernetes-version`. Bad input raises draopt.errors.InputError naming the file
and field, as the command line reports it (exit 2). `settle=` (allocate, place, plan, explain, compare;
default True) is the clock: True applies what the controllers are about to do (terminal pods release their
claims, deletions and NoExecute evictions finish, replacements are created); False is
`--no-settle`, the scheduler's view at the moment of the dump (draopt.kube.settle; docs/inputs.md).
`place`, `plan`, `simulate` and `compare` also take `progress=`: None (the default) shows their
long work as tqdm.auto bars inside a Jupyter notebook only, True or False forces it.

    >>> import draopt
    >>> out = draopt.place("examples/gang-stranding.yaml", policy="optimal")
    >>> [p.pod for p in out.result.pods if p.placed]
    ['ml/trainer-0', 'ml/trainer-1']
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from draopt.errors import InputError
from draopt.kube.features import Features, parse_gates, parse_kubernetes_version
from draopt.kube.loader import ObjectSet, load_files

if TYPE_CHECKING:
    from draopt.allocation.allocate import AllocateOutcome
    from draopt.allocation.explain import NodeExplanation
    from draopt.placement import PlaceOutcome
    from draopt.studies.planning import MixPlan, NodeType
    from draopt.studies.report import PolicyReport
    from draopt.studies.simulate import Record, SimRows
    from draopt.validation.findings import Report

__all__ = ["allocate", "compare", "explain", "load", "place", "plan", "simulate", "validate"]

Inputs = ObjectSet | str | Iterable[str]
_R = TypeVar("_R")


def _shows_progress(fn: Callable[..., _R]) -> Callable[..., _R]:
    """The API call takes `progress=` (None: bars in a Jupyter notebook only; True/False: forced)
    and shows its long work as tqdm.auto bars (draopt.progress.api_call); the command line's
    reporter, when it calls, stays."""

    @functools.wraps(fn)
    def call(*args: Any, progress: bool | None = None, **kwargs: Any) -> _R:
        from draopt.progress import api_call

        with api_call(progress):
            return fn(*args, **kwargs)

    return call


FeaturesLike = Features | str | Mapping[str, bool] | None


def _paths(inputs: str | Iterable[str], what: str) -> list[str]:
    if isinstance(inputs, str):
        return [inputs]
    try:
        paths = list(inputs)
    except TypeError:
        raise InputError(
            f"{what}: expected an ObjectSet, a file path or a list of paths, got {type(inputs).__name__}"
        ) from None
    bad = [p for p in paths if not isinstance(p, str)]
    if bad:
        raise InputError(f"{what}: expected file paths (str), got {type(bad[0]).__name__}")
    if not paths:
        raise InputError(f"{what}: no file given")
    return paths


def _objects(inputs: Inputs, *, recursive: bool = False, strict: bool = False) -> ObjectSet:
    if isinstance(inputs, ObjectSet):
        return inputs
    return load_files(_paths(inputs, "inputs"), recursive=recursive, strict=strict)


def _clocked(inputs: Inputs, settle: bool) -> ObjectSet:
    """The input on the settled clock (controllers' pending actions applied) or, with
    `settle=False`, as the scheduler sees it at the moment of the dump (draopt.kube.settle)."""
    from draopt.kube import settle as clock

    return clock.apply(_objects(inputs), settle=settle)


def _features(features: FeaturesLike, kubernetes_version: str | None = None) -> Features:
    """A Features, `--feature-gates` text ("G=true,H=false") or a mapping of gates, on top of the
    defaults of `kubernetes_version` ("1.35" .. "1.38"; None: 1.37, no lock checks), as
    `--kubernetes-version` does."""
    version = parse_kubernetes_version(kubernetes_version) if kubernetes_version is not None else None
    if features is None:
        return Features.from_gates(None, version)
    if isinstance(features, Features):
        if version is not None and features.kubernetes_version != version:
            raise InputError(
                f"kubernetes_version={kubernetes_version!r}: the Features given are Kubernetes "
                f"{features.kubernetes_version}'s; give gates instead, or Features.from_gates(..., version)"
            )
        return features
    if isinstance(features, str):
        return Features.from_gates(parse_gates(features), version)
    if isinstance(features, Mapping):
        return Features.from_gates(dict(features), version)
    raise InputError(f"features: expected Features, 'G=true,...' text or a mapping, got {type(features).__name__}")


_warmed_up = False


def _warm_up() -> None:
    """draopt.allocation.allocate.warm_up once per process: the CEL environments and the solvers' first-call costs."""
    global _warmed_up
    if not _warmed_up:
        from draopt.allocation.allocate import warm_up

        warm_up()
        _warmed_up = True


def load(paths: str | Iterable[str], *, recursive: bool = False, strict: bool = False) -> ObjectSet:
    """Read Kubernetes objects from YAML/JSON files (`-` is stdin; a directory gives its
    .yaml/.yml/.json files, its subdirectories too with `recursive`); kinds draopt does not use
    are a note on stderr, an InputError with `strict`; workload controllers become their Pods.

        >>> objects = draopt.load("examples/cluster.yaml")
        >>> [n.name for n in objects.nodes]
        ['gpu-node-1', 'gpu-node-2']
    """
    return load_files(_paths(paths, "paths"), recursive=recursive, strict=strict)


def allocate(
    inputs: Inputs,
    *,
    node: str | None = None,
    claims: list[str] | None = None,
    features: FeaturesLike = None,
    kubernetes_version: str | None = None,
    policy: str = "first-fit",
    engine: str = "cp-sat",
    deterministic_share_ids: bool = False,
    time_limit: float | None = None,
    settle: bool = True,
) -> AllocateOutcome:
    """Allocate the pending ResourceClaims together on `node` (default: the first node, by name,
    where they fit), as `draopt allocate`. Returns a draopt.allocation.allocate.AllocateOutcome: `allocated`,
    `node`, `claims` (with status.allocation set), `reason` when unschedulable, `notes`.

        >>> out = draopt.allocate("examples/cluster.yaml", node="gpu-node-1", deterministic_share_ids=True)
        >>> out.allocated, [c.name for c in out.claims]
        (True, ['trainer', 'notebook'])
    """
    from draopt.allocation import allocate as api

    _warm_up()
    objects = _clocked(inputs, settle)
    outcome = api.allocate(
        objects,
        node=node,
        claims=claims,
        features=_features(features, kubernetes_version),
        policy=policy,
        engine=engine,
        deterministic_share_ids=deterministic_share_ids,
        time_limit=time_limit,
    )
    outcome.notes[:0] = objects.clock_notes
    return outcome


@_shows_progress
def place(
    inputs: Inputs,
    *,
    policy: str = "first-fit",
    features: FeaturesLike = None,
    kubernetes_version: str | None = None,
    time_limit: float = 60.0,
    scheduler_config: Any = None,
    seed: int = 0,
    tie_break: str = "random",
    settle: bool = True,
    expect: str | Iterable[str] | ObjectSet | None = None,
) -> PlaceOutcome:
    """Place the pending Pods and PodGroups on the nodes, as `draopt place`: `first-fit`
    (kube-scheduler's choice; `scheduler_config` a KubeSchedulerConfiguration path,
    `builtin:NAME` or SchedulerConfig, ties random from `seed` or by `tie_break="name"`) or
    `optimal` (one CP-SAT model, `time_limit` seconds). Returns a draopt.placement.PlaceOutcome:
    `result` (a PlacementResult: `pods`, `placed_pods()`, `summary()`, `stats`), `objects` (the
    Pods and ResourceClaims as Kubernetes would hold them).
    `expect` (`--expect`): a forecast, the paths of an openb trace CSV or of manifests (Pods,
    Deployments, Jobs, JobSets, ... with their counts); `policy="lp-guided"` (which needs it)
    places today's pods so that the forecast still fits, and `forecast` (a
    draopt.studies.forecast.ForecastReport) says, for first-fit, optimal and lp-guided, how many
    forecast pods fit after today's pods, each count solved by the optimal model with its bound.

        >>> out = draopt.place("examples/gang-stranding.yaml", policy="optimal")
        >>> len(out.result.placed_pods()), out.result.summary().nodes_used
        (2, 1)
    """
    from draopt.placement import place as place_pods

    objects = _clocked(inputs, settle)
    solve: Callable[..., Any] = place_pods
    if expect is not None or policy == "lp-guided":
        if expect is None:
            raise InputError("--policy lp-guided: give the forecast to keep room for (--expect FORECAST, expect=)")
        from draopt.studies.forecast import place_expecting

        solve = functools.partial(place_expecting, expect=expect)
    outcome = solve(
        objects,
        policy=policy,
        features=_features(features, kubernetes_version),
        time_limit=time_limit,
        scheduler_config=scheduler_config,
        seed=seed,
        tie_break=tie_break,
    )
    outcome.workload.notes[:0] = objects.clock_notes
    return outcome


@_shows_progress
def plan(
    inputs: Inputs,
    node_types: Iterable[NodeType | str] | str,
    *,
    features: FeaturesLike = None,
    kubernetes_version: str | None = None,
    time_limit: float = 60.0,
    max_nodes: int = 256,
    settle: bool = True,
    baselines: Iterable[str] = (),
    expander_priorities: str | None = None,
) -> MixPlan:
    """The cheapest mix of new nodes that places the pending pods, as `draopt plan`. A node type is
    a draopt.studies.planning.NodeType or `--node-type` text `NODE=COST` (the input's Node NODE with its
    slices as template, COST per node); a str that is not `NODE=COST` is a `--node-types` YAML file.
    Returns a draopt.studies.planning.MixPlan: `placed`, `pods`, `status`, `table()`, `to_json()`.
    `baselines`: the autoscalers' own loops to run beside it (`karpenter`,
    `cluster-autoscaler/least-waste|most-pods|price|random|priority`; `expander_priorities` the
    priority expander's ConfigMap or mapping file), in `MixPlan.baselines`; run before the plan,
    which starts from the cheapest that places every pod (never answering dearer than it).

        >>> mix = draopt.plan("examples/gang-stranding.yaml", ["node-1=1"], time_limit=10)
        >>> mix.placed, mix.pods
        (2, 2)
    """
    from draopt.studies.planning import NodeType, load_node_types, parse_node_type
    from draopt.studies.planning import plan as plan_mix

    if isinstance(node_types, str):
        node_types = load_node_types(node_types)
    types: list[NodeType] = []
    for t in node_types:
        if isinstance(t, NodeType):
            types.append(t)
        elif isinstance(t, str):
            types.append(parse_node_type(t))
        else:
            raise InputError(f"node_types: expected NodeType or 'NODE=COST' text, got {type(t).__name__}")
    objects = _clocked(inputs, settle)
    chosen = _features(features, kubernetes_version)
    names = list(baselines)
    done: list = []
    plan_limit = time_limit
    if names:
        # The baselines first: the cheapest that places every pod is the plan's incumbent (its
        # answer is never dearer than a baseline it prints beside it). They are simulations run
        # to the end; `time_limit` covers them and the plan, which gets what they left.
        from draopt.studies.autoscalers import load_priorities
        from draopt.studies.baselines import run_baselines

        started = _clock()
        priorities = load_priorities(expander_priorities) if expander_priorities else None
        done = run_baselines(objects, types, names, features=chosen, priorities=priorities)
        plan_limit = _left_for_the_plan(time_limit, _clock() - started)
    mix = plan_mix(objects, types, features=chosen, time_limit=plan_limit, max_nodes=max_nodes, incumbents=done)
    mix.baselines = done
    return mix


_clock = time.monotonic  # (a name of its own, so that a test can move it)
PLAN_SHARE_AT_LEAST = 0.05  # of --time-limit, for the plan after baselines that took (nearly) all of it


def _left_for_the_plan(time_limit: float, baselines_took: float) -> float:
    """The plan's seconds after the baselines: the rest of `time_limit`, and never less than a
    small share of it, so that the plan still starts from the cheapest baseline and says so."""
    return max(time_limit - baselines_took, PLAN_SHARE_AT_LEAST * time_limit)


def _cluster_and_trace(cluster: Inputs, trace: str) -> ObjectSet:
    """The cluster's objects and the trace's Pods, as simulate.cmd_simulate reads them: a task CSV
    becomes Pods; YAML is read with the cluster."""
    from draopt.studies import simulate as sim

    is_csv = trace.lower().endswith(".csv")
    if isinstance(cluster, ObjectSet):
        both = ObjectSet()
        both.extend(cluster)  # the caller's set is left as it was
        if not is_csv:
            both.extend(load_files([trace]))
    else:
        both = load_files(_paths(cluster, "cluster") + ([] if is_csv else [trace]))
    if is_csv:
        from draopt.studies.trace import read_tasks, workload_objects

        both.extend(sim._object_set(workload_objects(read_tasks(trace, what="--trace")), trace))
    return both


@_shows_progress
def simulate(
    cluster: Inputs,
    trace: str,
    *,
    levels: list[float] | str = "0.5:1.3:0.05",
    policies: list[str] | str | None = None,
    runs: int = 3,
    seed: int = 0,
    batch: int | None = None,
    time_limit: float = 60.0,
    offline_optimum: bool = False,
    capacity: str | None = None,
    protocol: str = "draopt",
    records: bool = False,
    features: FeaturesLike = None,
    kubernetes_version: str | None = None,
) -> SimRows | list[Record]:
    """Online placement of a trace under workload inflation, as `draopt simulate`: `cluster` the
    Nodes/ResourceSlices/DeviceClasses, `trace` an openb task CSV or a YAML/JSON file of Pods;
    `levels` a list or `--inflation` text; `policies` a list or `--policy` text. `protocol`:
    "draopt" (default) or "fgd-paper" (the FGD paper's protocol, draopt.studies.paper_protocol; seeds
    `seed`..`seed+runs-1`). Returns the aggregated rows, a draopt.studies.simulate.SimRows of
    SimRow records (inflation, policy, unallocated_pct, ...: what `-o csv` prints; `row.to_dict()`,
    `row["policy"]`, `rows.to_frame()`), or with `records=True` (draopt protocol) the per-run
    draopt.studies.simulate.Record list. `features`/`kubernetes_version`: as for `place`
    (`--feature-gates`, `--kubernetes-version`).

        >>> rows = draopt.simulate(
        ...     "examples/openb-mini/cluster.yaml", "examples/openb-mini/tasks.csv", levels=[1.0], runs=1
        ... )
        >>> [(r["policy"], r["unallocated_pct"]) for r in rows]
        [('first-node', 17.0), ('best-fit', 17.0), ('least-allocated', 17.0), ('fgd', 17.0)]

    (`examples/openb-mini`: two nodes and five tasks in the openb trace's CSV format; the
    cluster is `draopt trace import --nodes examples/openb-mini/nodes.csv`. A trace of gangs is
    refused: `simulate` places pods one by one.)
    """
    from draopt.studies import simulate as sim

    if protocol not in ("draopt", "fgd-paper"):
        raise InputError(f"--protocol: unknown protocol {protocol!r} (known: draopt, fgd-paper)")
    level_list = sim.parse_levels(levels) if isinstance(levels, str) else list(levels)
    if not isinstance(trace, str):
        raise InputError(f"--trace: expected a file path, got {type(trace).__name__}")
    c = sim.build(
        _cluster_and_trace(cluster, trace),
        capacity_name=capacity or sim.DEFAULT_CAPACITY,
        features=_features(features, kubernetes_version),
    )
    if protocol == "fgd-paper":
        from draopt.studies import paper_protocol as paper

        if offline_optimum:
            raise InputError("offline_optimum: with protocol='fgd-paper' use `draopt simulate --offline-optimum`")
        names = _policy_names(policies, ",".join(paper.PAPER_POLICIES))
        rows, _runs = paper.simulate_paper(
            c,
            seeds=[seed + i for i in range(runs)],
            policies=[paper.make_policy(p, batch=batch) for p in names],
            bins=paper.level_bins(level_list),
        )
        return sim.SimRows(rows)
    return _simulate_draopt(
        c,
        level_list,
        policies,
        runs=runs,
        seed=seed,
        batch=batch,
        time_limit=time_limit,
        offline_optimum=offline_optimum,
        records=records,
    )


def _simulate_draopt(
    c: Any,
    level_list: list[float],
    policies: list[str] | str | None,
    *,
    runs: int,
    seed: int,
    batch: int | None,
    time_limit: float,
    offline_optimum: bool,
    records: bool,
) -> SimRows | list[Record]:
    """`simulate` under draopt's own protocol, on the built cluster arrays `c`."""
    from draopt.studies import simulate as sim

    notes: list[str] = []
    names = sim.parse_policies(policies or sim.DEFAULT_POLICIES, notes)
    for note in notes:  # an old policy name: a deprecation the caller sees (stacklevel: their line)
        warnings.warn(note, FutureWarning, stacklevel=4)  # (the caller of simulate)
    if "kube-scheduler" in names:
        from draopt.scheduler import SchedulerConfig
        from draopt.scheduler.trace import TraceScheduler

        # the policy's node choice, as simulate.cmd_simulate sets it (SimCluster.kube_scheduler)
        c.kube_scheduler = TraceScheduler(c, SchedulerConfig.default(), seed=seed, tie_break="random")
    got = sim.simulate(
        c,
        levels=level_list,
        policies=names,
        runs=runs,
        seed=seed,
        batch=batch or sim.DEFAULT_BATCH,
        time_limit=time_limit,
        offline_optimum=offline_optimum,
    )
    return got if records else sim.aggregate(got, names + [sim.OFFLINE])


def _policy_names(policies: list[str] | str | None, default: str) -> list[str]:
    text = policies if isinstance(policies, str) else ",".join(policies) if policies else default
    names = list(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not names:
        raise InputError(f"--policy {text!r}: no policy")
    return names


@_shows_progress
def compare(
    inputs: Inputs,
    policies: list[str] | None = None,
    *,
    features: FeaturesLike = None,
    kubernetes_version: str | None = None,
    time_limit: float = 60.0,
    scheduler_config: Any = None,
    seed: int = 0,
    tie_break: str = "random",
    settle: bool = True,
) -> list[PolicyReport]:
    """Place the workload with each policy (default first-fit and optimal; `first-fit:CONFIG` is
    first-fit under its own scheduler configuration) and measure the state each leaves, as
    `draopt compare`. Returns a list of draopt.studies.report.PolicyReport (placed, stranded devices,
    fragmentation, `proven`, `to_json()`), one per policy, in order.

        >>> reports = draopt.compare("examples/gang-stranding.yaml", time_limit=10)
        >>> [(r.policy, r.placed) for r in reports]
        [('first-fit', 0), ('optimal', 2)]
    """
    from draopt.studies.report import compare as compare_policies

    return compare_policies(
        _clocked(inputs, settle),
        list(policies or ["first-fit", "optimal"]),
        features=_features(features, kubernetes_version),
        time_limit=time_limit,
        scheduler_config=scheduler_config,
        seed=seed,
        tie_break=tie_break,
    )


def validate(
    paths: str | Iterable[str] | ObjectSet, *, features: FeaturesLike = None, kubernetes_version: str | None = None
) -> Report:
    """What a Kubernetes API server would reject, as `draopt validate`. Validation reads the
    documents as written, so it takes file paths (an ObjectSet is already parsed: InputError).
    Returns a draopt.validation.Report: `findings` (empty: valid), `notes`, `objects`, `to_dict()`.

        >>> report = draopt.validate("examples/cluster.yaml")
        >>> report.findings
        []
    """
    from draopt.validation.documents import validate_files

    if isinstance(paths, ObjectSet):
        raise InputError(
            "validate: give the file paths; an ObjectSet is already parsed (validation reads the documents as written)"
        )
    return validate_files(_paths(paths, "paths"), _features(features, kubernetes_version))


def explain(
    inputs: Inputs,
    *,
    claims: list[str] | None = None,
    node: str | None = None,
    features: FeaturesLike = None,
    kubernetes_version: str | None = None,
    settle: bool = True,
) -> list[NodeExplanation]:
    """Why the claims cannot be allocated together, per node, as `draopt explain --claim`: each
    draopt.allocation.explain.NodeExplanation says which devices each request rejects and why, and the
    smallest set of requirements that cannot hold together (`conflict`; `fits` when they can).
    `claims`: NAMESPACE/NAME (default every pending claim); `node`: only that node.

        >>> exps = draopt.explain("examples/cluster.yaml", node="gpu-node-1")
        >>> [(e.node, e.fits) for e in exps]
        [('gpu-node-1', True)]
    """
    from draopt.allocation import allocate as api
    from draopt.allocation.explain import explain_claims

    objects = _clocked(inputs, settle)
    _warm_up()
    if not claims and not api.select_claims(objects, None)[0]:
        api._nothing_to_allocate(objects)
        return []
    return explain_claims(objects, claims, _features(features, kubernetes_version), node)
