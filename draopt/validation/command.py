"""The `draopt validate` command."""

from __future__ import annotations

import json
import sys

from draopt.errors import DraoptError
from draopt.kube.features import KNOWN_GATES, add_version_flag, features_from_flags
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
        features = features_from_flags(getattr(args, "feature_gates", ""), getattr(args, "kubernetes_version", None))
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
        help="API server feature gates (default: the --kubernetes-version release's; known: "
        + ", ".join(sorted(KNOWN_GATES))
        + ")",
    )
    add_version_flag(p)
    p.add_argument("-o", "--output", default="text", choices=("text", "json"))
    p.set_defaults(func=cmd_validate)
