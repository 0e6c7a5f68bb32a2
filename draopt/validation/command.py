"""The `draopt validate` command."""

from __future__ import annotations

import json
import sys

from draopt.errors import DraoptError
from draopt.kube.features import DEFAULT_GATES, Features, parse_gates
from draopt.validation.documents import validate_files
from draopt.validation.findings import Report


def format_text(report: Report) -> str:
    lines = [str(f) for f in report.findings]
    lines += [f"note: {n}" for n in report.notes]
    if report.findings:
        lines.append(f"{len(report.findings)} error(s) in {report.objects} object(s)")
    else:
        lines.append(f"{report.objects} object(s) valid")
    return "\n".join(lines) + "\n"


def cmd_validate(args) -> int:
    try:
        features = Features.from_gates(parse_gates(getattr(args, "feature_gates", "") or ""))
        report = validate_files(args.filename, features)
    except DraoptError as e:
        print(f"draopt: error: {e}", file=sys.stderr)
        return 2
    if args.output == "json":
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(format_text(report))
    return 1 if report.findings else 0


def register(subparsers) -> None:
    """Add `draopt validate` to the CLI's sub-parsers."""
    p = subparsers.add_parser("validate", help="report objects a Kubernetes API server would reject")
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE",
        help="YAML/JSON documents or a List; '-' reads stdin (repeatable)",
    )
    p.add_argument(
        "--feature-gates",
        default="",
        metavar="G=true|false,...",
        help="API server feature gates (default: Kubernetes 1.36's; known: " + ", ".join(sorted(DEFAULT_GATES)) + ")",
    )
    p.add_argument("-o", "--output", default="text", choices=("text", "json"))
    p.set_defaults(func=cmd_validate)
