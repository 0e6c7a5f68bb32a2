"""The `draopt validate` command."""

from __future__ import annotations

import json
import sys

from draopt.errors import DraoptError
from draopt.provenance import record
from draopt.kube.features import KNOWN_GATES, add_version_flag, features_from_flags
from draopt.validation.documents import validate_files
from draopt.validation.findings import Report


def format_text(report: Report, wide: bool = False) -> str:
    """The findings, one a line (`wide`: each with the file and document it is in), the notes,
    and the count."""
    lines = [f"{f}  [{f.source}]" if wide and f.source else str(f) for f in report.findings]
    lines += [f"note: {n}" for n in report.notes]
    if report.findings:
        lines.append(f"{len(report.findings)} error(s) in {report.objects} object(s)")
    else:
        lines.append(f"{report.objects} object(s) valid")
    return "\n".join(lines) + "\n"


def object_names(report: Report) -> str:
    """`validate -o name`: `kind/namespace/name` (kubectl's `-o name`, the namespace kept) of each
    object with findings, once, in the order of its first finding."""
    names: dict[str, None] = {}
    for finding in report.findings:
        kind, _, name = finding.object.partition(" ")
        names[f"{kind.lower()}/{name}"] = None
    return "".join(f"{name}\n" for name in names)


def cmd_validate(args) -> int:
    try:
        features = features_from_flags(getattr(args, "feature_gates", ""), getattr(args, "kubernetes_version", None))
        report = validate_files(args.filename, features)
    except DraoptError as e:
        print(f"draopt: error: {e}", file=sys.stderr)
        return 2
    if args.output in ("json", "yaml"):
        made = record(args.filename, kubernetes_version=features.kubernetes_version)
        doc = dict(report.to_dict(), provenance=made.to_dict())
        if args.output == "json":
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            import yaml

            sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
    elif args.output == "name":
        sys.stdout.write(object_names(report))
    else:
        sys.stdout.write(format_text(report, wide=args.output == "wide"))
    return 1 if report.findings else 0


def register(subparsers) -> None:
    """Add `draopt validate` to the CLI's sub-parsers."""
    p = subparsers.add_parser("validate", help="report objects a Kubernetes API server would reject")
    p.add_argument(
        "-f",
        "--filename",
        action="extend",
        nargs="+",
        required=True,
        metavar="FILE",
        help="YAML/JSON documents or a List; '-' reads stdin (one or more after -f, and -f repeatable)",
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
    p.add_argument(
        "-o",
        "--output",
        default="text",
        choices=("text", "wide", "name", "json", "yaml"),
        help="table: one finding a line; wide: with the file and document of each; name: "
        "KIND/NAMESPACE/NAME per object with findings; json, yaml: the report and its provenance",
    )
    p.set_defaults(func=cmd_validate)
