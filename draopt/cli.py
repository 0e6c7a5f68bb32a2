"""`draopt` command line: a thin layer over draopt.api.

Exit codes: 0 success, 1 unschedulable, 2 invalid input or allocation error.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from . import api
from .errors import DraoptError
from .features import Features, parse_gates
from .loader import dump_objects, load_files


_COMMAND_MODULES: list = []


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors: exit 2 with usage, as for bad input
        self.print_usage(sys.stderr)
        print(f"draopt: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="draopt", description="Kubernetes DRA device allocation, first-fit as kube-scheduler "
                                             "does it and optimal, with CP-SAT.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    a = sub.add_parser("allocate", help="allocate claims on a node as the kube-scheduler would")
    a.add_argument("-f", "--filename", action="append", required=True, metavar="FILE",
                   help="YAML/JSON documents or a List; '-' reads stdin (repeatable)")
    a.add_argument("--node", help="node to allocate on (default: the first node, by name, that fits)")
    a.add_argument("--claim", action="append", metavar="NAMESPACE/NAME",
                   help="claims to allocate together, in order (default: every claim without status.allocation)")
    a.add_argument("--feature-gates", default="", metavar="G=true|false,...")
    a.add_argument("--policy", default="first-fit", choices=api.POLICIES,
                   help="first-fit: kube-scheduler's choice, defects included; first-fit-documented: "
                        "first-fit under the documented semantics; optimal: best packing")
    a.add_argument("--engine", default="cp-sat", choices=api.ENGINES,
                   help="cp-sat (default) or the plain-Python reference search")
    a.add_argument("--deterministic-share-ids", action="store_true",
                   help="derive shareIDs from claim UID and request instead of random UUIDs")
    a.add_argument("--time-limit", type=float, default=None, metavar="S", help="solver time limit in seconds")
    a.add_argument("-o", "--output", default="yaml", choices=("yaml", "json"))
    a.add_argument("--stats", action="store_true", help="print one JSON line of timings to stderr")
    a.set_defaults(func=cmd_allocate)
    for module in _COMMAND_MODULES:
        module.register(sub)
    return p


def cmd_allocate(args) -> int:
    api.warm_up()
    t0 = time.perf_counter()
    objects = load_files(args.filename)
    load_ms = (time.perf_counter() - t0) * 1000
    features = Features.from_gates(parse_gates(args.feature_gates))
    outcome = api.allocate(objects, node=args.node, claims=args.claim, features=features, policy=args.policy,
                           engine=args.engine, deterministic_share_ids=args.deterministic_share_ids,
                           time_limit=args.time_limit)
    if args.stats:
        stats = {"load_ms": round(load_ms, 3)}
        stats.update({k: (round(v, 3) if isinstance(v, float) else v) for k, v in outcome.stats.items()})
        print(json.dumps(stats, sort_keys=True), file=sys.stderr)
    if not outcome.allocated:
        print(f"draopt: unschedulable: {outcome.reason}", file=sys.stderr)
        return 1
    sys.stdout.write(dump_objects([c.to_k8s() for c in outcome.claims], args.output))
    return 0


def _command_modules():
    import importlib
    mods = []
    for name in ("validate", "taint_impact"):
        try:
            mods.append(importlib.import_module(f"draopt.{name}"))
        except ModuleNotFoundError:
            continue
    return mods


def main(argv: list[str] | None = None) -> int:
    global _COMMAND_MODULES
    _COMMAND_MODULES = _command_modules()
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DraoptError as e:
        print(f"draopt: error: {e}", file=sys.stderr)
        return 2
    except RecursionError:
        print("draopt: error: the input is too deeply nested or the search too deep", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
