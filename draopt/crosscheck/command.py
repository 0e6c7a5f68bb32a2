"""The `draopt crosscheck` command: a thin layer over draopt.crosscheck.run.

Exit codes: 0 identical, 1 different, 2 bad input or no oracle (Go missing, a build that failed,
an input the oracle refuses).
"""

from __future__ import annotations

import sys

from draopt.crosscheck.run import DEFAULT_TIMEOUT
from draopt.errors import InputError


def register(sub) -> None:
    c = sub.add_parser(
        "crosscheck",
        help="run draopt's first-fit and Kubernetes' own code (kube-scheduler, or the DRA allocator "
        "with --node) on the same input and print every difference",
    )
    c.add_argument("-f", "--filename", action="extend", nargs="+", required=True, metavar="FILE")
    c.add_argument(
        "--kubernetes-version",
        default=None,
        metavar="1.36|1.37",
        help="the release whose code judges draopt (default: the newest this project pins)",
    )
    c.add_argument("--policy", default="first-fit", choices=("first-fit",), help="what is compared: first-fit")
    c.add_argument("--node", help="allocate mode: the claims on this node against the DRA allocator")
    c.add_argument("--claim", action="append", metavar="NAMESPACE/NAME", help="allocate mode: the claims, in order")
    c.add_argument("--feature-gates", default="", metavar="G=true|false,...")
    c.add_argument("--scheduler-config", metavar="FILE", help="a KubeSchedulerConfiguration for both sides")
    c.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S", help="the oracle's time limit")
    c.add_argument(
        "-o",
        "--output",
        default="table",
        choices=("table", "json", "yaml"),
        help="table: a line per pod or claim and each difference; json, yaml: the report",
    )
    c.add_argument("-R", "--recursive", action="store_true", help="-f DIR: read the directory's subdirectories too")
    c.add_argument(
        "--strict", action="store_true", help="kinds draopt does not use are errors (exit 2) instead of notes"
    )
    c.set_defaults(func=cmd_crosscheck)


def cmd_crosscheck(args) -> int:
    from draopt.crosscheck import gobuild
    from draopt.crosscheck.run import crosscheck
    from draopt.kube.features import Features, parse_gates
    from draopt.kube.loader import load_files

    version = args.kubernetes_version or gobuild.SUPPORTED[-1]
    version = version.removeprefix("v")
    if version.count(".") == 2:
        version = version.rsplit(".", 1)[0]
    if args.timeout <= 0:
        raise InputError(f"--timeout {args.timeout}: must be more than 0 seconds")
    features = Features.from_gates(parse_gates(args.feature_gates), version)
    objects = load_files(args.filename, recursive=args.recursive, strict=args.strict)
    objects, claims = _selected(args, objects)
    report = crosscheck(
        objects,
        kubernetes_version=version,
        features=features,
        scheduler_config_path=args.scheduler_config,
        node=args.node,
        claims=claims,
        timeout=args.timeout,
    )
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.output == "yaml":
        import json

        import yaml

        sys.stdout.write(yaml.safe_dump(json.loads(report.to_json()), sort_keys=False))
    else:
        print(report.to_json() if args.output == "json" else report.table())
    if report.refused:
        print(f"draopt: error: the oracle refused the input: {report.refused}", file=sys.stderr)
        return 2
    return 0 if report.identical else 1


def _selected(args, objects):
    """-n, -A, -l (added by the command line): the input both sides read, and the claims both
    allocate. Place mode: only the pending pods they select, left out of the input before either
    side runs; allocate mode (--node): only the pending claims they select."""
    from draopt.kube.selection import select_claim_refs, select_pending

    namespace, every, selector = args.namespace, args.all_namespaces, args.selector
    if args.node is None:
        return select_pending(objects, namespace, every, selector), args.claim
    claims = select_claim_refs(objects.resource_claims, args.claim, namespace, every, selector)
    if claims == []:
        raise InputError("nothing to compare: -n/-l select no pending ResourceClaim")
    return objects, claims
