"""KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`): profiles, score plugins and
their weights, plugin arguments, `percentageOfNodesToScore`; the defaults of Kubernetes 1.36
(the same plugins and weights in 1.37 and 1.38; docs/versions.md).

Sources (kubernetes/kubernetes):
* default plugins and weights: pkg/scheduler/apis/config/v1/default_plugins.go
  (commit 01db4ae9e74af4d97f67d2e92060f72ed91898da): TaintToleration 3, NodeAffinity 2,
  NodeResourcesFit 1, PodTopologySpread 2, InterPodAffinity 2, NodeResourcesBalancedAllocation 1,
  ImageLocality 1, DynamicResources with weight 2 inserted before DefaultPreemption when the DRA
  gate is on (GA; applyDynamicResources, the same at v1.36.3 and v1.37.2);
  merging a profile's plugins into the defaults: mergePluginSet in the same file;
* argument defaults: pkg/scheduler/apis/config/v1/defaults.go
  (commit 00fe7a377bc3c858548409173dff587de03d455c): NodeResourcesFit LeastAllocated over
  cpu 1 / memory 1, a resource weight 0 means 1; BalancedAllocation cpu 1 / memory 1;
  PodTopologySpread defaultingType System; InterPodAffinity hardPodAffinityWeight 1;
  percentageOfNodesToScore 0 (adaptive); a single profile is named default-scheduler;
* the system default spreading constraints: pkg/scheduler/framework/plugins/podtopologyspread/
  plugin.go (systemDefaultConstraints: hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway);
* argument validation: pkg/scheduler/apis/config/validation/validation_pluginargs.go (resource
  weights 1-100, shape utilization 0-100 increasing, score 0-10, BalancedAllocation weight 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draopt.errors import InputError
from draopt.kube.optionfiles import read_yaml_option

API_VERSION = "kubescheduler.config.k8s.io/v1"
DEFAULT_SCHEDULER = "default-scheduler"
MAX_NODE_SCORE = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

# In-tree plugin names (pkg/scheduler/framework/plugins/names/names.go). Plugins that only act at
# other extension points (queue sort, binding, preemption, volumes, ports) are accepted and have
# no effect on draopt's node choice (no volumes or host ports are modelled).
IN_TREE = frozenset(
    (
        "PrioritySort",
        "DefaultBinder",
        "DefaultPreemption",
        "DynamicResources",
        "ImageLocality",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeName",
        "NodePorts",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "NodeUnschedulable",
        "NodeVolumeLimits",
        "PodTopologySpread",
        "SchedulingGates",
        "TaintToleration",
        "VolumeBinding",
        "VolumeRestrictions",
        "VolumeZone",
        "GangScheduling",
        "NodeDeclaredFeatures",
        "EBSLimits",
        "GCEPDLimits",
        "AzureDiskLimits",
        "CinderLimits",
    )
)
# Plugins with a Score extension; those draopt computes are in SCORED.
SCORE_CAPABLE = frozenset(
    (
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "DynamicResources",
    )
)
# Filters draopt always applies (the node filters of `draopt place`); disabling them is refused.
ALWAYS_FILTERED = frozenset(
    ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit", "DynamicResources")
)
# Filters a profile may turn off.
OPTIONAL_FILTERS = frozenset(("PodTopologySpread", "InterPodAffinity"))

# getDefaultPlugins (MultiPoint), with DynamicResources inserted before DefaultPreemption.
DEFAULT_MULTIPOINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)

DEFAULT_RESOURCES: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))


@dataclass(frozen=True)
class SpreadConstraint:
    """A PodTopologySpread default constraint (args.defaultConstraints)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str


SYSTEM_DEFAULT_CONSTRAINTS = (
    SpreadConstraint(3, HOSTNAME, "ScheduleAnyway"),
    SpreadConstraint(5, ZONE, "ScheduleAnyway"),
)


@dataclass
class FitStrategy:
    type: str = "LeastAllocated"
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()  # (utilization, score 0-10), RequestedToCapacityRatio only


@dataclass
class Profile:
    name: str
    score_weights: dict[str, int]  # score plugin -> weight (enabled ones only)
    filters: frozenset[str]  # OPTIONAL_FILTERS that are on
    fit: FitStrategy = field(default_factory=FitStrategy)
    balanced_resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    spread_defaulting: str = "System"
    spread_default_constraints: tuple[SpreadConstraint, ...] = ()
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False
    percentage_of_nodes_to_score: int | None = None
    # DefaultPreemptionArgs: minCandidateNodesPercentage, minCandidateNodesAbsolute
    preemption_candidates: tuple[int, int] = (10, 100)
    preemption: bool = True  # DefaultPreemption enabled at postFilter

    @property
    def default_spread_constraints(self) -> tuple[SpreadConstraint, ...]:
        return SYSTEM_DEFAULT_CONSTRAINTS if self.spread_defaulting == "System" else self.spread_default_constraints


@dataclass
class SchedulerConfig:
    profiles: dict[str, Profile]
    percentage_of_nodes_to_score: int = 0
    source: str = "builtin:default"
    name_order: bool = False  # draopt's legacy first-fit: every node, DRA score, first by name

    def profile_for(self, scheduler_name: str | None) -> Profile | None:
        return self.profiles.get(scheduler_name or DEFAULT_SCHEDULER)

    @classmethod
    def default(cls) -> SchedulerConfig:
        """Kubernetes 1.36's defaults: one profile, default-scheduler."""
        return parse_config({"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration"}, "builtin:default")


BUILTIN = ("default", "most-allocated", "name-order")


def builtin(name: str) -> SchedulerConfig:
    """Named configurations: `default` (Kubernetes 1.36's), `most-allocated` (the defaults with
    NodeResourcesFit MostAllocated, bin packing), `name-order` (draopt's legacy first-fit: every
    node filtered, only DynamicResources' score, ties to the first node by name)."""
    if name == "default":
        return SchedulerConfig.default()
    if name == "most-allocated":
        return parse_config(
            {
                "apiVersion": API_VERSION,
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "pluginConfig": [
                            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
                        ]
                    }
                ],
            },
            "builtin:most-allocated",
        )
    if name == "name-order":
        cfg = SchedulerConfig.default()
        cfg.name_order, cfg.source = True, "builtin:name-order"
        return cfg
    raise InputError(
        f"--scheduler-config builtin:{name}: unknown built-in configuration (known: "
        + ", ".join(f"builtin:{b}" for b in BUILTIN)
        + ")"
    )


def load_config(path: str) -> SchedulerConfig:
    """A file, or `builtin:<name>` (see :func:`builtin`)."""
    if path.startswith("builtin:"):
        return builtin(path.split(":", 1)[1])
    return parse_config(read_yaml_option("--scheduler-config", path), path)


_TOP = {
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "healthzBindAddress",
    "metricsBindAddress",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
    "featureGates",
}
_PROFILE = {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
_POINTS = {
    "multiPoint",
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
}


class _Where:
    def __init__(self, source: str):
        self.source = source

    def error(self, path: str, msg: str) -> InputError:
        return InputError(f"{self.source}: field {path}: {msg}")


def _mapping(w: _Where, value: Any, path: str, allowed: set[str] | None = None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise w.error(path, f"must be a mapping, not {type(value).__name__}")
    if allowed is not None:
        unknown = sorted(str(k) for k in value if k not in allowed)
        if unknown:
            raise w.error(f"{path}.{unknown[0]}" if path else unknown[0], "unknown field")
    return value


def _list(w: _Where, value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise w.error(path, f"must be a list, not {type(value).__name__}")
    return value


def _int(w: _Where, value: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise w.error(path, f"must be a whole number, not {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = (
            f"between {lo} and {hi}"
            if lo is not None and hi is not None
            else (f"at least {lo}" if lo is not None else f"at most {hi}")
        )
        raise w.error(path, f"{value} out of range: must be {rng}")
    return value


def _str(w: _Where, value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise w.error(path, f"must be a non-empty string, not {value!r}")
    return value


def _plugin_set(w: _Where, value: Any, path: str) -> tuple[list[tuple[str, int]], list[str]]:
    m = _mapping(w, value, path, {"enabled", "disabled"})
    enabled: list[tuple[str, int]] = []
    for i, p in enumerate(_list(w, m.get("enabled"), f"{path}.enabled")):
        pm = _mapping(w, p, f"{path}.enabled[{i}]", {"name", "weight"})
        name = _str(w, pm.get("name"), f"{path}.enabled[{i}].name")
        if name not in IN_TREE:
            raise w.error(
                f"{path}.enabled[{i}].name",
                f"{name!r} is not a kube-scheduler in-tree plugin (draopt models the in-tree plugins only)",
            )
        weight = _int(w, pm.get("weight", 0), f"{path}.enabled[{i}].weight", 0)
        enabled.append((name, weight))
    disabled: list[str] = []
    for i, p in enumerate(_list(w, m.get("disabled"), f"{path}.disabled")):
        pm = _mapping(w, p, f"{path}.disabled[{i}]", {"name"})
        name = _str(w, pm.get("name"), f"{path}.disabled[{i}].name")
        if name != "*" and name not in IN_TREE:
            raise w.error(f"{path}.disabled[{i}].name", f"{name!r} is not a kube-scheduler in-tree plugin")
        disabled.append(name)
    return enabled, disabled


def _merge(
    default: list[tuple[str, int]], enabled: list[tuple[str, int]], disabled: list[str]
) -> list[tuple[str, int]]:
    """mergePluginSet: defaults minus the disabled ones (all with "*"), re-configured in place,
    then the other enabled ones appended."""
    custom = {n: (i, (n, wgt)) for i, (n, wgt) in enumerate(enabled)}
    replaced: set[int] = set()
    out: list[tuple[str, int]] = []
    if "*" not in disabled:
        for name, weight in default:
            if name in disabled:
                continue
            if name in custom:
                i, p = custom[name]
                replaced.add(i)
                out.append(p)
            else:
                out.append((name, weight))
    out += [p for i, p in enumerate(enabled) if i not in replaced]
    return out


def _expanded(
    multi: list[tuple[str, int]], enabled: list[tuple[str, int]], disabled: list[str], capable: frozenset[str]
) -> dict[str, int]:
    """The plugins of one extension point after the framework expands multiPoint
    (pkg/scheduler/framework/runtime/framework.go expandMultiPointPlugins): the extension
    point's own enabled plugins, then the multiPoint ones it implements unless disabled there
    (or "*"); a weight of 0 means 1 (NewFramework)."""
    out: dict[str, int] = {}
    for name, weight in enabled:
        if name in capable:
            out[name] = weight or 1
    if "*" not in disabled:
        for name, weight in multi:
            if name in capable and name not in disabled and name not in out:
                out[name] = weight or 1
    return out


def _resources(w: _Where, value: Any, path: str, *, weight_one: bool = False) -> tuple[tuple[str, int], ...]:
    out = []
    seen = set()
    for i, r in enumerate(_list(w, value, path)):
        rm = _mapping(w, r, f"{path}[{i}]", {"name", "weight"})
        name = _str(w, rm.get("name"), f"{path}[{i}].name")
        if name in seen:
            raise w.error(f"{path}[{i}].name", f"{name!r} given twice")
        seen.add(name)
        weight = _int(w, rm.get("weight", 0), f"{path}[{i}].weight") or 1  # 0 (or unset) means 1
        if weight_one and weight != 1:
            raise w.error(f"{path}[{i}].weight", f"{weight}: must be 1 for NodeResourcesBalancedAllocation")
        if not 1 <= weight <= 100:
            raise w.error(f"{path}[{i}].weight", f"{weight} out of range: must be between 1 and 100")
        out.append((name, weight))
    return tuple(out)


def _fit_args(w: _Where, args: Any, path: str) -> FitStrategy:
    a = _mapping(w, args, path, {"apiVersion", "kind", "ignoredResources", "ignoredResourceGroups", "scoringStrategy"})
    for name in ("ignoredResources", "ignoredResourceGroups"):
        if a.get(name):
            raise w.error(
                f"{path}.{name}", "not modelled by draopt (its node resource filter checks every requested resource)"
            )
    s = a.get("scoringStrategy")
    if s is None:
        return FitStrategy()
    sp = f"{path}.scoringStrategy"
    sm = _mapping(w, s, sp, {"type", "resources", "requestedToCapacityRatio"})
    kind = sm.get("type", "LeastAllocated")
    if kind not in ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"):
        raise w.error(f"{sp}.type", f"{kind!r}: must be LeastAllocated, MostAllocated or RequestedToCapacityRatio")
    resources = _resources(w, sm.get("resources"), f"{sp}.resources") or DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()
    if kind == "RequestedToCapacityRatio":
        rp = f"{sp}.requestedToCapacityRatio"
        rm = _mapping(w, sm.get("requestedToCapacityRatio"), rp, {"shape"})
        points = _list(w, rm.get("shape"), f"{rp}.shape")
        if not points:
            raise w.error(f"{rp}.shape", "required for RequestedToCapacityRatio: at least one point")
        got: list[tuple[int, int]] = []
        for i, pt in enumerate(points):
            pm = _mapping(w, pt, f"{rp}.shape[{i}]", {"utilization", "score"})
            u = _int(w, pm.get("utilization"), f"{rp}.shape[{i}].utilization", 0, 100)
            sc = _int(w, pm.get("score"), f"{rp}.shape[{i}].score", 0, MAX_CUSTOM_PRIORITY_SCORE)
            if got and u <= got[-1][0]:
                raise w.error(
                    f"{rp}.shape[{i}].utilization", f"{u}: utilization values must be sorted in increasing order"
                )
            got.append((u, sc))
        shape = tuple(got)
    elif sm.get("requestedToCapacityRatio") is not None:
        raise w.error(f"{sp}.requestedToCapacityRatio", f"only for type RequestedToCapacityRatio, not {kind}")
    return FitStrategy(kind, resources, shape)


def _spread_args(w: _Where, args: Any, path: str) -> tuple[str, tuple[SpreadConstraint, ...]]:
    a = _mapping(w, args, path, {"apiVersion", "kind", "defaultConstraints", "defaultingType"})
    defaulting = a.get("defaultingType") or "System"
    if defaulting not in ("System", "List"):
        raise w.error(f"{path}.defaultingType", f"{defaulting!r}: must be System or List")
    cons: list[SpreadConstraint] = []
    for i, c in enumerate(_list(w, a.get("defaultConstraints"), f"{path}.defaultConstraints")):
        cp = f"{path}.defaultConstraints[{i}]"
        cm = _mapping(
            w,
            c,
            cp,
            {
                "maxSkew",
                "topologyKey",
                "whenUnsatisfiable",
                "labelSelector",
                "minDomains",
                "nodeAffinityPolicy",
                "nodeTaintsPolicy",
                "matchLabelKeys",
            },
        )
        if cm.get("labelSelector") is not None:
            raise w.error(f"{cp}.labelSelector", "must not be set in default constraints")
        skew = _int(w, cm.get("maxSkew"), f"{cp}.maxSkew", 1)
        key = _str(w, cm.get("topologyKey"), f"{cp}.topologyKey")
        when = cm.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise w.error(f"{cp}.whenUnsatisfiable", f"{when!r}: must be DoNotSchedule or ScheduleAnyway")
        if any(x.topology_key == key and x.when_unsatisfiable == when for x in cons):
            raise w.error(cp, f"duplicate constraint on {key} ({when})")
        cons.append(SpreadConstraint(skew, key, when))
    if defaulting == "System" and cons:
        raise w.error(f"{path}.defaultConstraints", "must be empty when defaultingType is System")
    return defaulting, tuple(cons)


def _profile(w: _Where, doc: Any, path: str, name_default: str | None) -> Profile:
    p = _mapping(w, doc, path, _PROFILE)
    name = p.get("schedulerName", name_default)
    name = _str(w, name, f"{path}.schedulerName")
    pct = p.get("percentageOfNodesToScore")
    if pct is not None:
        pct = _int(w, pct, f"{path}.percentageOfNodesToScore", 0, 100)
    plugins = _mapping(w, p.get("plugins"), f"{path}.plugins", _POINTS)
    sets = {k: _plugin_set(w, plugins.get(k), f"{path}.plugins.{k}") for k in _POINTS}
    multi = _merge(list(DEFAULT_MULTIPOINT), *sets["multiPoint"])
    score = _expanded(multi, *sets["score"], SCORE_CAPABLE)
    filters = _expanded(multi, *sets["filter"], ALWAYS_FILTERED | OPTIONAL_FILTERS)
    preempts = "DefaultPreemption" in _expanded(multi, *sets["postFilter"], frozenset({"DefaultPreemption"}))
    _refuse_filters_off(w, path, sets, multi)
    args = _plugin_config(w, p, path)
    return Profile(
        name=name,
        score_weights=score,
        filters=frozenset(f for f in filters if f in OPTIONAL_FILTERS),
        fit=args.fit,
        balanced_resources=args.balanced,
        spread_defaulting=args.defaulting,
        spread_default_constraints=args.spread,
        hard_pod_affinity_weight=args.hard_weight,
        ignore_preferred_terms_of_existing_pods=args.ignore_existing_preferred,
        percentage_of_nodes_to_score=pct,
        preemption_candidates=args.preemption_candidates,
        preemption=preempts,
    )


def _refuse_filters_off(w: _Where, path: str, sets: dict, multi: list) -> None:
    """The filters draopt always applies cannot be turned off (under filter, or multiPoint
    without re-enabling them under filter)."""
    for i, name_off in enumerate(sets["filter"][1]):
        if name_off in ALWAYS_FILTERED or (name_off == "*"):
            raise w.error(
                f"{path}.plugins.filter.disabled[{i}].name",
                f"{name_off}: draopt always applies the filters {', '.join(sorted(ALWAYS_FILTERED))}",
            )
    multi_names = {n for n, _ in multi}
    for i, name_off in enumerate(sets["multiPoint"][1]):
        if name_off == "*" or name_off in ALWAYS_FILTERED:
            # Turning a filter off through multiPoint is refused too, unless re-enabled for filter.
            lost = ALWAYS_FILTERED - multi_names if name_off == "*" else {name_off} - multi_names
            lost -= {n for n, _ in sets["filter"][0]}
            if lost:
                raise w.error(
                    f"{path}.plugins.multiPoint.disabled[{i}].name",
                    f"{name_off}: disables the filter(s) {', '.join(sorted(lost))}, which draopt always "
                    f"applies (enable them under plugins.filter, or disable only their score)",
                )


@dataclass
class _PluginArgs:
    """A profile's pluginConfig, read (the defaults where a plugin has none)."""

    fit: FitStrategy = field(default_factory=FitStrategy)
    balanced: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    defaulting: str = "System"
    spread: tuple[SpreadConstraint, ...] = ()
    hard_weight: int = 1
    ignore_existing_preferred: bool = False
    preemption_candidates: tuple[int, int] = (10, 100)


def _plugin_config(w: _Where, p: dict, path: str) -> _PluginArgs:
    out = _PluginArgs()
    seen = set()
    for i, pc in enumerate(_list(w, p.get("pluginConfig"), f"{path}.pluginConfig")):
        cp = f"{path}.pluginConfig[{i}]"
        pm = _mapping(w, pc, cp, {"name", "args"})
        pname = _str(w, pm.get("name"), f"{cp}.name")
        if pname in seen:
            raise w.error(f"{cp}.name", f"{pname!r} configured twice")
        seen.add(pname)
        ap = f"{cp}.args"
        if pname == "NodeResourcesFit":
            out.fit = _fit_args(w, pm.get("args"), ap)
        elif pname == "NodeResourcesBalancedAllocation":
            a = _mapping(w, pm.get("args"), ap, {"apiVersion", "kind", "resources"})
            out.balanced = _resources(w, a.get("resources"), f"{ap}.resources", weight_one=True) or DEFAULT_RESOURCES
        elif pname == "PodTopologySpread":
            out.defaulting, out.spread = _spread_args(w, pm.get("args"), ap)
        elif pname == "InterPodAffinity":
            out.hard_weight, out.ignore_existing_preferred = _affinity_args(w, pm.get("args"), ap)
        elif pname == "NodeAffinity":
            a = _mapping(w, pm.get("args"), ap, {"apiVersion", "kind", "addedAffinity"})
            if a.get("addedAffinity"):
                raise w.error(f"{ap}.addedAffinity", "not modelled by draopt")
        elif pname == "DefaultPreemption":
            out.preemption_candidates = _preemption_args(w, pm.get("args"), ap)
        elif pname in ("VolumeBinding", "NodeVolumeLimits", "DynamicResources"):
            pass  # volumes, DRA timeouts: no effect on the node choice draopt models
        elif pname not in IN_TREE:
            raise w.error(f"{cp}.name", f"{pname!r} is not a kube-scheduler in-tree plugin")
        elif pm.get("args"):
            raise w.error(f"{ap}", f"arguments of {pname} are not modelled by draopt")
    return out


def _affinity_args(w: _Where, args: Any, ap: str) -> tuple[int, bool]:
    """InterPodAffinityArgs: (hardPodAffinityWeight, ignorePreferredTermsOfExistingPods)."""
    a = _mapping(w, args, ap, {"apiVersion", "kind", "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"})
    hard_weight = _int(w, a.get("hardPodAffinityWeight", 1), f"{ap}.hardPodAffinityWeight", 0, 100)
    ignore = a.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        raise w.error(f"{ap}.ignorePreferredTermsOfExistingPods", f"{ignore!r}: must be true or false")
    return hard_weight, ignore


def _preemption_args(w: _Where, args: Any, ap: str) -> tuple[int, int]:
    """DefaultPreemptionArgs, as ValidateDefaultPreemptionArgs (pkg/scheduler/apis/config/validation)
    accepts them: (minCandidateNodesPercentage, minCandidateNodesAbsolute)."""
    a = _mapping(w, args, ap, {"apiVersion", "kind", "minCandidateNodesPercentage", "minCandidateNodesAbsolute"})
    share = _int(w, a.get("minCandidateNodesPercentage", 10), f"{ap}.minCandidateNodesPercentage", 0, 100)
    absolute = _int(w, a.get("minCandidateNodesAbsolute", 100), f"{ap}.minCandidateNodesAbsolute", 0)
    if share == 0 and absolute == 0:
        raise w.error(ap, "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero")
    return share, absolute


def parse_config(doc: Any, source: str) -> SchedulerConfig:
    w = _Where(source)
    if not isinstance(doc, dict):
        raise InputError(f"{source}: not a KubeSchedulerConfiguration (a YAML mapping)")
    top = _mapping(w, doc, "", _TOP)
    if top.get("apiVersion") != API_VERSION:
        raise w.error("apiVersion", f"{top.get('apiVersion')!r}: must be {API_VERSION}")
    if top.get("kind") != "KubeSchedulerConfiguration":
        raise w.error("kind", f"{top.get('kind')!r}: must be KubeSchedulerConfiguration")
    if _list(w, top.get("extenders"), "extenders"):
        raise w.error("extenders", "scheduler extenders are not modelled by draopt")
    pct = _int(w, top.get("percentageOfNodesToScore", 0) or 0, "percentageOfNodesToScore", 0, 100)
    docs = _list(w, top.get("profiles"), "profiles") or [{}]
    profiles: dict[str, Profile] = {}
    for i, pd in enumerate(docs):
        prof = _profile(w, pd, f"profiles[{i}]", DEFAULT_SCHEDULER if len(docs) == 1 else None)
        if prof.name in profiles:
            raise w.error(f"profiles[{i}].schedulerName", f"{prof.name!r}: given to two profiles")
        profiles[prof.name] = prof
    return SchedulerConfig(profiles, pct, source)
