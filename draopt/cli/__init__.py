"""`draopt` command line: a thin layer over the Python API (draopt.public).

Exit codes: 0 success, 1 the answer is no (unschedulable, not placed), 2 invalid input or
allocation error, 130 interrupted, 141 output pipe closed. The habits every command shares
(help, output flags, deprecated spellings, pod selection, completion): draopt.cli.conventions.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from fractions import Fraction

import draopt
from draopt import interrupt, notes, progress, public
from draopt.allocation import allocate as api
from draopt.dra import taint_impact
from draopt import validation as validate
from draopt.errors import DraoptError, InputError
from draopt.kube.features import add_version_flag, features_from_flags
from draopt.kube import settle
from draopt.cli import conventions, live
from draopt.cli import consolidate as consolidate_cli
from draopt.kube.loader import dump_objects, load_files


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the time limit must be more than 0 seconds")
    return value


def _input_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-R", "--recursive", action="store_true", help="-f DIR: read the directory's subdirectories too")
    p.add_argument(
        "--strict", action="store_true", help="kinds draopt does not use are errors (exit 2) instead of notes"
    )


def _clock_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-settle",
        action="store_true",
        help="the scheduler's view at the moment of the dump: terminating pods and terminal pods' claims "
        "hold their resources (default: settled, what the controllers are about to do is done)",
    )


def _load(args):
    """The input files; on the clock `--no-settle` chooses where the command has it, its notes
    on stderr (draopt.kube.settle); only the pending pods -n/-l select where it has them."""
    objects = load_files(args.filename, recursive=args.recursive, strict=args.strict)
    objects = _clocked(args, objects) if hasattr(args, "no_settle") else objects
    return conventions.selected(args, objects) if hasattr(args, "selector") else objects


def _clocked(args, objects):
    clocked = settle.apply(objects, settle=not args.no_settle)
    for line in clocked.clock_notes:
        print(f"note: {line}", file=sys.stderr)
    return clocked


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors: exit 2 with usage, as for bad input
        self.print_usage(sys.stderr)
        print(f"draopt: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser(prog: str = "draopt") -> argparse.ArgumentParser:
    p = _Parser(
        prog=prog,
        description="Kubernetes DRA device allocation, first-fit as kube-scheduler does it and optimal, with CP-SAT.",
        epilog=conventions.TOP_EPILOG,
        formatter_class=conventions.HelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {draopt.__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_allocate(sub)
    _add_place(sub)
    _add_explain(sub)
    _add_plan(sub)
    _add_registered(sub)
    for name in PROGRESS_COMMANDS:
        _progress_flags(sub.choices[name])
    conventions.apply(sub, _input_flags)
    live.add_flags(conventions.command_parsers(sub))
    return p


def _filename_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-f",
        "--filename",
        action="extend",
        nargs="+",
        required=True,
        metavar="FILE",
        help="YAML/JSON documents or a List; '-' reads stdin; a directory gives its files (one or more after -f, and -f repeatable)",
    )


def _gates_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--feature-gates", default="", metavar="G=true|false,...")
    add_version_flag(p)


def _add_allocate(sub) -> None:
    a = sub.add_parser("allocate", help="allocate claims on a node as the kube-scheduler would")
    _filename_flag(a)
    a.add_argument("--node", help="node to allocate on (default: the first node, by name, that fits)")
    a.add_argument(
        "--claim",
        action="append",
        metavar="NAMESPACE/NAME",
        help="claims to allocate together, in order (default: every claim without status.allocation)",
    )
    _gates_flags(a)
    a.add_argument(
        "--policy",
        default="first-fit",
        choices=api.POLICIES,
        help="first-fit: kube-scheduler's choice, defects included; first-fit-documented: "
        "first-fit under the documented semantics; optimal: best packing",
    )
    a.add_argument(
        "--engine", default="cp-sat", choices=api.ENGINES, help="cp-sat or the plain-Python reference search"
    )
    a.add_argument(
        "--deterministic-share-ids",
        action="store_true",
        help="derive shareIDs from claim UID and request instead of random UUIDs",
    )
    a.add_argument(
        "--time-limit", type=_positive_seconds, default=None, metavar="S", help="solver time limit in seconds"
    )
    a.add_argument(
        "-o",
        "--output",
        default="yaml",
        choices=("yaml", "json", "name", "table"),
        help="yaml, json: the allocated ResourceClaims as a List; name: resourceclaim/NAMESPACE/NAME per claim; "
        "table: per claim its node and each request's devices",
    )
    a.add_argument("--stats", action="store_true", help="print one JSON line of timings to stderr")
    _input_flags(a)
    _clock_flag(a)
    conventions.selection_flags(a, "allocate only the pending claims")
    a.set_defaults(func=cmd_allocate)


def _add_place(sub) -> None:
    pl = sub.add_parser(
        "place",
        help="place pending pods and PodGroups on nodes: kube-scheduler "
        "simulation (first-fit) or one optimal CP-SAT model",
    )
    _filename_flag(pl)
    pl.add_argument(
        "--policy",
        default="first-fit",
        choices=("first-fit", "optimal", "lp-guided"),
        help="first-fit: kube-scheduler; optimal: one CP-SAT model; lp-guided (with --expect): "
        "today's pods as optimal places them, where the forecast still fits best",
    )
    pl.add_argument("--compare", action="store_true", help="run both policies and print both summaries")
    pl.add_argument(
        "--time-limit", type=_positive_seconds, default=60.0, metavar="S", help="optimal: solver time limit"
    )
    _gates_flags(pl)
    pl.add_argument(
        "-o",
        "--output",
        default="table",
        choices=("table", "wide", "name", "yaml", "json"),
        help="table; wide: the table with the devices each pod's claims hold; name: pod/NAMESPACE/NAME "
        "per placed pod; yaml, json: the placed objects as a List",
    )
    pl.add_argument(
        "--stats",
        action="store_true",
        help="one JSON line per policy on stderr: load_s, place_s, pods_per_s, peak RSS and "
        "the policy's own figures (optimal: model size, phase times, status, gap)",
    )
    from draopt.scheduler import add_scheduler_flags

    add_scheduler_flags(pl)
    _input_flags(pl)
    _clock_flag(pl)
    conventions.selection_flags(pl)
    from draopt.cli import forecast

    forecast.add_flags(pl)
    pl.set_defaults(func=cmd_place)


def _add_explain(sub) -> None:
    ex = sub.add_parser(
        "explain",
        help="why claims cannot be allocated or pods not placed: device rejections "
        "per node and the smallest set of requirements that cannot hold together",
    )
    _filename_flag(ex)
    ex.add_argument("--claim", action="append", metavar="NAMESPACE/NAME", help="claims to explain (allocated together)")
    ex.add_argument(
        "--pod",
        action="append",
        metavar="NAMESPACE/NAME",
        help="pods to explain after a first-fit placement (default: every pod it could not place)",
    )
    ex.add_argument("--node", help="only this node")
    ex.add_argument(
        "--scores",
        action="store_true",
        help="with --pod: each score plugin's normalised score, weight and the weighted total on the "
        "node the scheduler chose and the runners-up, in the pod's own scheduling cycle",
    )
    from draopt.scheduler import add_scheduler_flags

    add_scheduler_flags(ex)
    _gates_flags(ex)
    ex.add_argument(
        "-o",
        "--output",
        default="text",
        choices=("text", "name", "json", "yaml"),
        help="table; name: pod/NAMESPACE/NAME (or resourceclaim/NAMESPACE/NAME) per object explained; "
        "json, yaml: the sections and the provenance",
    )
    _input_flags(ex)
    _clock_flag(ex)
    conventions.selection_flags(ex)
    ex.set_defaults(func=cmd_explain)


def _add_plan(sub) -> None:
    pn = sub.add_parser(
        "plan",
        help="the cheapest mix of new nodes (several node types, each a template Node "
        "and a cost) that places the pending pods, proven by CP-SAT; next to a "
        "first-fit-decreasing estimate (cluster-autoscaler)",
    )
    _filename_flag(pn)
    pn.add_argument(
        "--node-type",
        action="append",
        default=[],
        metavar="NODE=COST",
        help="a node type: the Node NODE of the input (with its slices) as template, at COST per node (repeatable)",
    )
    pn.add_argument(
        "--node-types",
        metavar="FILE",
        help="node types from YAML: a list of {template: NODE, cost: COST, name: optional}",
    )
    pn.add_argument(
        "--node-template",
        action="append",
        default=[],
        metavar="NODE",
        help="shorthand for --node-type NODE=1 (count nodes)",
    )
    pn.add_argument("--max-nodes", type=int, default=256, metavar="N", help="at most N new nodes per type")
    consolidate_cli.add_flags(pn)
    pn.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="NAME",
        help="also run an autoscaler's own loop on the same input and print what optimal saves against it "
        "(repeatable): karpenter, cluster-autoscaler (least-waste), cluster-autoscaler/EXPANDER "
        "(least-waste, most-pods, price, random, priority)",
    )
    pn.add_argument(
        "--expander-priorities",
        metavar="FILE",
        help="the priority expander's priorities: cluster-autoscaler's ConfigMap, or {priority: [regex on type names]}",
    )
    pn.add_argument(
        "--time-limit",
        type=_positive_seconds,
        default=60.0,
        metavar="S",
        help="wall-clock seconds bounding the whole plan (after the input is read); the best mix found "
        "by then is printed with its proven bound. Small inputs: CP-SAT's phases also stop at a share of "
        "S in deterministic seconds (40%% pods, 40%% cost, 20%% one-fewer checks), so the same input gives "
        "the same answer when the limit is not hit; large ones (column generation): 80%% for the columns, "
        "the estimates until 90%% (at least one unless the columns place every pod). With --consolidate: "
        "the whole command too, Karpenter's simulation until 30%%, the best set of nodes printed with its bound",
    )
    _gates_flags(pn)
    pn.add_argument("-o", "--output", default="table", choices=("table", "json", "yaml"))
    pn.add_argument(
        "--stats",
        action="store_true",
        help="one JSON line on stderr: load_s, estimator and solver phase times, model size, status",
    )
    _input_flags(pn)
    _clock_flag(pn)
    conventions.selection_flags(pn)
    pn.set_defaults(func=cmd_plan)


def _add_registered(sub) -> None:
    """The commands whose parsers their own modules define, in their layers."""
    validate.register(sub)
    taint_impact.register(sub)
    from draopt.studies import simulate
    from draopt.studies import trace

    trace.register(sub)
    simulate.register(sub)
    from draopt.studies import paper_protocol  # above draopt.studies.simulate: it picks the protocol

    sub.choices["simulate"].set_defaults(func=paper_protocol.cmd_simulate)
    from draopt.studies import report

    report.register(sub, _input_flags, _positive_seconds, conventions.selection_flags)
    from draopt.studies import sweep

    sweep.register(sub)
    from draopt.crosscheck import command as crosscheck_command

    crosscheck_command.register(sub)
    conventions.selection_flags(sub.choices["crosscheck"], "compare only the pending pods (--node: claims)")
    _add_completion(sub)


# ------------------------------------------------------------------ shell completion
def _add_completion(sub) -> None:
    c = sub.add_parser("completion", help="print a shell completion script (bash; zsh through bashcompinit)")
    c.add_argument("shell", choices=("bash", "zsh"), help="the shell the script is for")
    c.set_defaults(func=cmd_completion)


def cmd_completion(args) -> int:
    script = conventions.completion_script(build_parser())
    if args.shell == "zsh":  # zsh runs bash's completion functions through bashcompinit
        script = "autoload -U +X bashcompinit && bashcompinit\n" + script
    sys.stdout.write(script)
    return 0


# Commands that can run for minutes: a status line on stderr while they work (draopt.progress).
PROGRESS_COMMANDS = ("place", "plan", "simulate", "compare")


def _progress_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        action="store_true",
        help="show progress on stderr even when it is not a terminal (phase, best found, bound "
        "and gap of the solver; arrivals and levels of a simulation)",
    )
    if not any("--quiet" in a.option_strings for a in p._actions):
        p.add_argument("--quiet", action="store_true", help="no progress on stderr (default: shown on a terminal)")


def cmd_allocate(args) -> int:
    api.warm_up()
    t0 = time.perf_counter()
    objects = _clocked(args, load_files(args.filename, recursive=args.recursive, strict=args.strict))
    load_ms = (time.perf_counter() - t0) * 1000
    args.partial_stats = {"load_ms": round(load_ms, 3)}
    features = features_from_flags(args.feature_gates, args.kubernetes_version)
    _print_dropped_fields(objects, features)
    claims = conventions.selected_claims(args, objects)  # (-n/-l: the pending claims they select)
    if claims == []:
        print("note: nothing to allocate: -n/-l select no pending ResourceClaim", file=sys.stderr)
        sys.stdout.write("" if args.output in ("name", "table") else dump_objects([], args.output))
        return 0
    outcome = public.allocate(
        objects,
        node=args.node,
        claims=claims,
        features=features,
        policy=args.policy,
        engine=args.engine,
        deterministic_share_ids=args.deterministic_share_ids,
        time_limit=args.time_limit,
        settle=not args.no_settle,
    )
    if args.stats:
        stats = {"load_ms": round(load_ms, 3)}
        stats.update({k: (round(v, 3) if isinstance(v, float) else v) for k, v in outcome.stats.items()})
        print(json.dumps(stats, sort_keys=True), file=sys.stderr)
        args.partial_stats = None
    for note in outcome.notes:
        print(f"note: {note}", file=sys.stderr)
    if not outcome.allocated:
        print(f"draopt: unschedulable: {outcome.reason}", file=sys.stderr)
        return 1
    documents = [c.to_k8s() for c in outcome.claims]
    if args.output in ("name", "table"):
        from draopt.cli import listing

        sys.stdout.write(listing.object_names(documents) if args.output == "name" else listing.claim_table(outcome))
    else:
        sys.stdout.write(dump_objects(documents, args.output))
    return 0


def _print_dropped_fields(objects, features) -> None:
    """The notes `place` gives (draopt.kube.workload.expand): a gated field the API server drops
    because its gate is off, or one draopt does not model; said once, before the answer."""
    from draopt.kube.workload import gated_field_notes

    for line in gated_field_notes(objects, features):
        print(f"note: {line}", file=sys.stderr)


def cmd_place(args) -> int:
    from draopt.placement import pod_table, summary_table
    from draopt.scheduler import load_config

    scheduler_config = load_config(args.scheduler_config) if args.scheduler_config else None
    api.warm_up()
    t0 = time.perf_counter()
    objects = _load(args)
    load_s = time.perf_counter() - t0
    features = features_from_flags(args.feature_gates, args.kubernetes_version)
    from draopt.cli import forecast

    if forecast.wanted(args):
        return forecast.cmd_place_expecting(args, objects, features, scheduler_config, load_s)

    def run(policy):
        t = time.perf_counter()
        with progress.current().task(f"place: {policy}") as shown:
            shown.time_limit(args.time_limit if policy == "optimal" else None)
            out = public.place(
                objects,
                policy=policy,
                features=features,
                time_limit=args.time_limit,
                scheduler_config=scheduler_config,
                seed=args.seed,
                tie_break=args.tie_break,
                settle=not args.no_settle,
            )
        if args.stats:
            import resource

            elapsed = time.perf_counter() - t
            line = {
                "policy": policy,
                "load_s": round(load_s, 3),
                "place_s": round(elapsed, 3),
                "pods": len(out.result.pods),
                "placed": len(out.result.placed_pods()),
                "pods_per_s": round(len(out.result.pods) / elapsed, 1) if elapsed else None,
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
            line.update({k: v for k, v in out.result.stats.items() if k not in line})
            print(json.dumps(line, sort_keys=True, default=str), file=sys.stderr)
        return out

    outcome = run(args.policy)
    if not outcome.result.pods:
        print("note: nothing to place: no pending Pod (or workload controller) in the input", file=sys.stderr)
    results = [outcome.result]
    if args.compare:
        other = "optimal" if args.policy == "first-fit" else "first-fit"
        results.append(run(other).result)
    if args.output == "name":
        from draopt.cli import listing

        sys.stdout.write(listing.names(outcome))
    elif args.output in ("table", "wide"):
        from draopt.cli import listing

        devices = listing.pod_devices(outcome) if args.output == "wide" else None
        print(pod_table(outcome.result, len(outcome.cluster.nodes), devices))
        print()
        print(summary_table(results))
        for r in results:
            if r.stats.get("summary"):  # what the optimal model proved, in words
                print(f"{r.policy}: {r.stats['summary']}")
    else:
        sys.stdout.write(dump_objects(outcome.objects, args.output))
        for r in results:
            print(json.dumps(r.summary().to_dict(), sort_keys=True, default=str), file=sys.stderr)
    return 0 if all(p.placed for p in outcome.result.pods) else 1


def cmd_explain(args) -> int:
    from draopt.allocation import explain

    api.warm_up()
    raw = load_files(args.filename, recursive=args.recursive, strict=args.strict)
    clocked = _clocked(args, raw)
    objects = conventions.selected(args, clocked)  # (only the pending pods -n/-l select)
    features = features_from_flags(args.feature_gates, args.kubernetes_version)
    sections: list[explain.Section] = []
    if args.scores and not args.pod:
        raise InputError("--scores: name the pods with --pod (each one's scoring cycle is shown)")
    # (pods in the input, selected or not: their placement is explained, not the claims)
    if args.pod or (clocked.extra.get("pods") or getattr(clocked, "pods", None)) and not args.claim:
        from draopt.cluster.firstfit import ClaimBook, filter_reason

        outcome, breakdowns = _explain_placement(args, objects, features)
        book = ClaimBook(outcome.cluster, outcome.workload.claims)
        book.allocations.update(outcome.result.claims)
        wanted = args.pod or [p.pod for p in outcome.result.pods if not p.placed]
        known = {p.key for p in outcome.workload.pending + outcome.workload.running}
        waiting = {d.key: d.hold for d in outcome.workload.waiting}
        if args.node and args.node not in {n.name for n in objects.nodes}:
            raise DraoptError(f"--node {args.node}: no Node {args.node} in the input")
        for ref in wanted:
            key = ref if "/" in ref else f"default/{ref}"
            hold = waiting.get(key)
            if hold is not None:  # never in a scheduling cycle: no node was tried
                sections.append(explain.Section(f"pod {key}", "not placed by any policy", hold.text))
                continue
            if key not in known:
                left_out = " among the pods -n/-l select" if _selected_keys(args, raw) is not None else ""
                raise DraoptError(f"--pod {ref}: no Pod {key} in the input{left_out}")
            exps = explain.explain_pod(outcome.cluster, book, outcome.workload.pod(key), node_check=filter_reason)
            if args.node:
                exps = [e for e in exps if e.node == args.node]
            pl = next((p for p in outcome.result.pods if p.pod == key), None)
            if pl is not None and not pl.placed and args.node:
                sections.extend(_failure_on_node(explain, key, pl, args.node))
            elif pl is not None and not pl.placed:
                message = pl.reason_text(len(outcome.cluster.nodes))
                if pl.error:  # (kube-scheduler stops at the node whose filter errs: nothing is chosen)
                    title = "first-fit could not place it: a filter error ended its scheduling attempt, no node chosen"
                    sections.append(_failure_headline(explain, key, pl, message, title))
                else:
                    sections.append(_failure_headline(explain, key, pl, message))
                if pl.explanation:
                    sections.append(
                        explain.Section(f"pod {key}", "when it failed", pl.explanation, block=True, explained=True)
                    )
            if exps or args.pod:
                sections.append(explain.Section(f"pod {key}", "in the state after first-fit", nodes=exps))
            sections.extend(_preemption_sections(explain, outcome.result, key, narrow=bool(args.node)))
            if breakdowns is not None:
                sections.append(_score_section(explain, key, breakdowns, outcome, pl))
        if not wanted:
            print("note: nothing to explain: first-fit places every pending pod", file=sys.stderr)
        sections.extend(_clock_sections(explain, raw, features, args.pod, _selected_keys(args, raw)))
    else:
        pending = api.select_claims(objects, None)[0]
        selected = conventions.selected_claims(args, objects)  # -n/-l, as allocate and compare choose
        if selected is not None and not args.claim:
            if pending and not selected:
                print("note: nothing to explain: -n/-l select no pending ResourceClaim", file=sys.stderr)
                return 0
            args.claim = selected
        if not args.claim and not pending:
            api._nothing_to_allocate(objects)  # only templates: an error that points to `place`
            print("note: nothing to explain: no pending ResourceClaim in the input", file=sys.stderr)
            return 0
        claims = ", ".join(args.claim or [f"{c.namespace}/{c.name}" for c in pending])
        sections.append(
            explain.Section(
                f"claims {claims}" + (f" on node {args.node}" if args.node else ""),
                "",
                nodes=explain.explain_claims(objects, args.claim, features, args.node),
            )
        )
    _print_explanation(args, explain, sections, features)
    return 0


def _print_explanation(args, explain, sections: list, features) -> None:
    """`explain`'s output: the sections as text, the names of the objects they explain, or JSON
    (or the same as YAML) with the provenance (the input files' digests, the seed, the Kubernetes version)."""
    if args.output in ("json", "yaml"):
        from draopt.provenance import record

        made = record(args.filename, seed=args.seed, kubernetes_version=features.kubernetes_version)
        doc = {"sections": [section.to_json() for section in sections], "provenance": made.to_dict()}
        if args.output == "json":
            print(json.dumps(doc, indent=2))
        else:
            import yaml

            sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
    elif args.output == "name":
        from draopt.cli import listing

        sys.stdout.write(listing.subject_names(section.subject for section in sections))
    else:
        for section in sections:
            print(f"== {section.heading()}")
            print(explain.render(section.nodes))


def _explain_placement(args, objects, features):
    """First-fit's placement for `explain` with the scheduler flags, and (`--scores`) the pods'
    scoring cycles: (outcome, pod key -> ScoreBreakdown, or None without --scores)."""
    from draopt.placement import place

    watch, breakdowns = None, None
    if args.scores:
        from draopt.cli import scores

        watch, breakdowns = scores.watch(args.pod)
    outcome = place(
        objects,
        policy="first-fit",
        features=features,
        scheduler_config=args.scheduler_config,
        seed=args.seed,
        tie_break=args.tie_break,
        watch_scores=watch,
    )
    return outcome, breakdowns


def _score_section(explain, key: str, breakdowns: dict, outcome, pl):
    from draopt.cli import scores

    name_order = outcome.result.stats.get("scheduler") == "builtin:name-order"
    return scores.section(explain, key, breakdowns.get(key), pl, name_order)


def _clock_sections(explain, raw, features, pods: list[str] | None, selected: set[str] | None = None) -> list:
    """Where the clocks disagree (draopt.placement.clocks): one section, whichever clock was asked;
    `selected`: the pending pods -n/-l select (None: every one)."""
    from draopt.placement import clocks

    keys = {ref if "/" in ref else f"default/{ref}" for ref in pods or []}
    lines = [line for line in clocks.differences(raw, features) if not keys or line.split(":")[0][4:] in keys]
    if selected is not None:
        lines = [line for line in lines if line.split(":")[0][4:] in selected]
    if not lines:
        return []
    return [explain.Section("now (--no-settle) and settled differ", "", "\n".join(lines), block=True)]


def _selected_keys(args, raw) -> set[str] | None:
    """The keys of the pods -n/-l select (None: every pod)."""
    chosen = conventions.pending_filter(args.namespace, args.all_namespaces, args.selector)
    return None if chosen is None else {f"{p.namespace}/{p.name}" for p in raw.pods if chosen(p)}


def _failure_headline(explain, key: str, pl, message: str, title: str = "first-fit could not place it"):
    return explain.Section(f"pod {key}", title, message, reasons=dict(sorted(pl.reasons.items())))


def _preemption_sections(explain, result, key: str, narrow: bool = False) -> list:
    """Who preemption evicted for the pod (or its PodGroup) and why, or why it did not help; and
    whether the pod itself was evicted."""
    out = []
    pl = next((p for p in result.pods if p.pod == key), None)
    for_it = [e for e in result.evictions if e.preemptor == key or (pl is not None and e.preemptor == pl.group)]
    if pl is not None and (pl.preemption or for_it):
        # (`--node`: the message counting every node is left out, as the headline's counts are)
        counts_all = narrow and pl.preemption.startswith("preemption: 0/")
        lines = [pl.preemption] if pl.preemption and not counts_all else []
        lines += [f"evicted {e.pod} on {e.node}: {e.why}" for e in for_it]
        if lines:
            out.append(explain.Section(f"pod {key}", "preemption", "\n".join(lines), block=True))
    own = next((e for e in result.evictions if e.pod == key), None)
    if own is not None:
        out.append(explain.Section(f"pod {key}", f"evicted by preemption ({own.condition()['reason']})", own.why))
    return out


def _failure_on_node(explain, key: str, pl, node: str) -> list:
    """`explain --node N`: a failed pod's sections about N alone: the headline without the other
    nodes' counts, and N's block of the explanation taken when the pod failed."""
    out = [explain.Section(f"pod {key}", f"first-fit could not place it (node {node} below)")]
    if pl.error:  # (the attempt ended at one node, maybe another: every node's answer is moot)
        out.append(explain.Section(f"pod {key}", "a filter error ended its scheduling attempt", pl.error))
    if pl.explanation:
        text, found = explain.narrow_to_node(pl.explanation, node)
        if not found:
            text = (
                f"node {node}: not among the nodes whose devices were explained (rejected before its "
                f"devices were looked at, or beyond the first nodes explained): see the state after first-fit"
            )
        out.append(explain.Section(f"pod {key}", "when it failed", text, block=True, explained=found))
    return out


def cmd_plan(args) -> int:
    from draopt.studies.planning import NodeType, load_node_types, parse_node_type

    api.warm_up()
    t0 = time.perf_counter()
    objects = _load(args)
    load_s = time.perf_counter() - t0
    args.partial_stats = {"load_s": round(load_s, 3)}
    types = [parse_node_type(text) for text in args.node_type]
    if args.node_types:
        types += load_node_types(args.node_types)
    types += [NodeType(name, name, Fraction(1)) for name in args.node_template]
    features = features_from_flags(args.feature_gates, args.kubernetes_version)
    consolidate_cli.check_flags(args)
    if args.consolidate:
        return consolidate_cli.cmd_consolidate(args, objects, types, features)  # (clocked by _load)
    result = public.plan(
        objects,
        types,
        features=features,
        time_limit=args.time_limit,
        max_nodes=args.max_nodes,
        settle=not args.no_settle,
        baselines=args.baseline,
        expander_priorities=args.expander_priorities,
    )
    if not result.pods:
        print("note: nothing to place: no pending Pod (or workload controller) in the input", file=sys.stderr)
    if args.stats:
        import resource

        line = {
            "load_s": round(load_s, 3),
            "pods": result.pods,
            "placed": result.placed,
            "candidates": result.candidates,
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
        line.update(result.stats.to_dict())
        print(json.dumps(line, sort_keys=True, default=str), file=sys.stderr)
        args.partial_stats = None
    if args.output == "json":
        print(json.dumps(dict(result.to_json(), provenance=_plan_provenance(args, features)), sort_keys=True))
    elif args.output == "yaml":
        import yaml

        print(
            yaml.safe_dump(dict(result.to_json(), provenance=_plan_provenance(args, features)), sort_keys=False), end=""
        )
    else:
        print(result.table())
    return 0 if result.placed == result.pods else 1


def _plan_provenance(args, features) -> dict:
    """`plan -o json`'s provenance: the inputs (and the node types file), the time limit, the
    Kubernetes version (draopt.provenance)."""
    from draopt.provenance import record

    inputs = list(args.filename) + ([args.node_types] if args.node_types else [])
    made = record(inputs, time_limit=args.time_limit, kubernetes_version=features.kubernetes_version)
    return made.to_dict()


def main(argv: list[str] | None = None, prog: str = "draopt") -> int:
    """Run one command. No traceback for any input: input errors exit 2 with the message; a closed
    output pipe (`draopt place ... | head`) ends quietly with 141 (128 + SIGPIPE), as a program
    killed by SIGPIPE would; with `--stats`, the timings line is printed on the error path too."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        with notes.on_stderr(), live.inputs(args, prog, live.usage_error(parser, args)):
            conventions.resolve(args)
            target = conventions.redirected_output(args)
            with interrupt.installed(), progress.reporting(_progress_for(args)), _stdout_into(target) as captured:
                code = args.func(args)
                stopped = interrupt.requested()
            if target is not None:  # (an answer, even one cut short by Ctrl-C; never on an error)
                conventions.write_output_file(target, captured.getvalue())
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        if code == consolidate_cli.INTERRUPTED:  # the command said what it had when Ctrl-C came
            return code
        if stopped:  # Ctrl-C while the answer was being improved: it was printed as it stood
            print("draopt: interrupted: the answer above is the best found before Ctrl-C", file=sys.stderr)
            return 130
        return code
    except BrokenPipeError:
        _silence_stdout()
        return 141
    except DraoptError as e:
        _error(args, start, e, str(e))
        return 2
    except RecursionError as e:
        _error(args, start, e, "the input is too deeply nested or the search too deep")
        return 2
    except MemoryError as e:
        _error(args, start, e, "out of memory: the input is too large")
        return 2
    except KeyboardInterrupt:
        return 130


@contextlib.contextmanager
def _stdout_into(target: str | None):
    """With --output-file: what the command prints goes into a buffer, written to the file once
    it answered."""
    if target is None:
        yield None
        return
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        yield buffer


def kubectl_main(argv: list[str] | None = None) -> int:
    """`kubectl-draopt`: draopt as a kubectl plugin. kubectl runs the `kubectl-draopt` found on
    PATH for `kubectl draopt ARGS` with ARGS as they are (krew's naming), so this is `main` with
    the usage saying `kubectl draopt`."""
    return main(argv, prog="kubectl draopt")


def _progress_for(args) -> progress.Progress | None:
    """The status lines of a long command: redrawn on a terminal; forced with --progress where
    stderr is not one, plain lines (a CI log gets no carriage returns); none with --quiet, on a
    pipe or a file, or for the other commands."""
    if not hasattr(args, "progress"):
        return None
    if args.progress and args.quiet:
        raise DraoptError("--progress and --quiet: give one of them")
    if not progress.wanted(force=args.progress, quiet=args.quiet, stream=sys.stderr):
        return None
    if not progress.wanted(force=False, quiet=False, stream=sys.stderr):  # forced into a log or a pipe
        return progress.LineProgress(sys.stderr)
    return progress.TerminalProgress(sys.stderr)


def _error(args, start: float, exc: BaseException, message: str) -> None:
    try:
        print(f"draopt: error: {message}", file=sys.stderr)
        stats = getattr(args, "partial_stats", {}) if getattr(args, "stats", False) else None
        if stats is not None:
            # the timings gathered up to the error (allocate's: allocate_ms, build_ms, ...)
            stats = dict(
                stats,
                **{
                    k: (round(v, 3) if isinstance(v, float) else v)
                    for k, v in (getattr(exc, "stats", None) or {}).items()
                },
            )
            stats = dict(stats, error=type(exc).__name__, total_ms=round((time.perf_counter() - start) * 1000, 3))
            print(json.dumps(stats, sort_keys=True), file=sys.stderr)
    except BrokenPipeError:
        pass


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
