"""`draopt plan --consolidate`: its flags and its command (draopt.studies.consolidate)."""

from __future__ import annotations

import argparse
import json
import sys

# the command said itself what it had when Ctrl-C came (draopt.cli's main adds nothing)
INTERRUPTED = 130


def add_flags(pn: argparse.ArgumentParser) -> None:
    """The flags of `plan --consolidate` (on plan's parser)."""
    pn.add_argument(
        "--consolidate",
        action="store_true",
        help="on a running cluster: the cheapest of its nodes (plus new ones of the --node-type types) that hold "
        "every running and pending pod, pods moved within the drain rules; beside it, Karpenter's consolidation",
    )
    pn.add_argument(
        "--node-costs",
        metavar="FILE",
        help="with --consolidate: the cost of each node type, YAML {TYPE: COST} (a node's type: --type-label)",
    )
    pn.add_argument(
        "--cost-label",
        metavar="LABEL",
        help="with --consolidate: the node label that holds each node's cost (before --node-costs)",
    )
    pn.add_argument(
        "--type-label",
        default="node.kubernetes.io/instance-type",
        metavar="LABEL",
        help="with --consolidate: the node label that names its type (default %(default)s; else the node's name)",
    )
    pn.add_argument(
        "--no-karpenter",
        action="store_true",
        help="with --consolidate: do not simulate Karpenter's consolidation beside the optimum",
    )


def check_flags(args) -> None:
    """Flags given without --consolidate, or that --consolidate does not take: an input error."""
    from draopt.errors import InputError

    if not args.consolidate:
        given = [f for f, v in (("--node-costs", args.node_costs), ("--cost-label", args.cost_label)) if v]
        if args.no_karpenter:
            given.append("--no-karpenter")
        if given:
            raise InputError(f"{given[0]}: only with --consolidate")
        return
    if args.baseline:
        raise InputError("--baseline: not with --consolidate (Karpenter's consolidation is printed beside it)")


def cmd_consolidate(args, objects, types, features) -> int:
    """Run it and print the answer: 0 when every pod is placed, 1 when some pending pod is not.
    Ctrl-C: the best answer found so far (draopt.cli's main says it was interrupted), or before
    any, what was known then; 130."""
    from draopt.studies.consolidate import Interrupted, consolidate
    from draopt.studies.consolidate_rules import CostSource, load_type_costs

    source = CostSource(
        cost_label=args.cost_label,
        type_costs=load_type_costs(args.node_costs) if args.node_costs else {},
        type_label=args.type_label,
    )
    try:
        result = consolidate(
            objects,
            source,
            types,
            features=features,
            time_limit=args.time_limit,
            max_nodes=args.max_nodes,
            karpenter=not args.no_karpenter,
        )
    except Interrupted as stop:
        _print(args, stop.to_json(), stop.lines())
        print(
            "draopt: interrupted: no consolidation was found before Ctrl-C (what was known is above)", file=sys.stderr
        )
        return INTERRUPTED
    if args.stats:
        import resource

        line = dict(getattr(args, "partial_stats", None) or {}) | result.stats
        line["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        line.update(nodes=len(result.nodes), movable=len(result.rules.movable()), moved=len(result.moves))
        print(json.dumps(line, sort_keys=True, default=str), file=sys.stderr)
        args.partial_stats = None
    if args.output in ("json", "yaml"):
        _print(args, result.to_json(), [])
    else:
        print(result.table())
    return 0 if result.placed_all else 1


def _print(args, made: dict, lines: list[str]) -> None:
    """-o json|yaml: `made`; else the lines."""
    if args.output == "json":
        print(json.dumps(made, sort_keys=True))
    elif args.output == "yaml":
        import yaml

        print(yaml.safe_dump(made, sort_keys=False), end="")
    else:
        print("\n".join(lines))
