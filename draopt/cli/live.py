"""The live cluster on every command that reads inputs: `--context`, `--kubeconfig` and
`--save-dump` (docs/cluster-dump.md). The objects read (draopt.kube.live) become one more input
file, read before the `-f` files, so a command reads a cluster exactly as it reads a dump, and
`-f` on the saved dump gives the same answer.

When it runs as `kubectl draopt` (kubectl-draopt) with no `-f`, a command reads the current
context, as a kubectl plugin does; a plain `draopt` with no `-f` keeps its error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator

from draopt.cli import conventions
from draopt.errors import DraoptError
from draopt.kube import live

KUBECTL_PROG = "kubectl draopt"
_REQUIRED = "the following arguments are required: -f/--filename"


def add_flags(parsers: dict[tuple[str, ...], argparse.ArgumentParser]) -> None:
    """--context, --kubeconfig and --save-dump on every command with -f; -f becomes optional
    there (a command with neither -f nor a cluster to read says what argparse said)."""
    for parser in parsers.values():
        filename = parser._option_string_actions.get("-f")
        if filename is None:
            continue
        parser.set_defaults(_filename_required=filename.required)
        filename.required = False
        filename.help = (filename.help or "") + "; with --context/--kubeconfig, read after the cluster"
        group = parser.add_argument_group("live cluster (needs the kubernetes client: pip install 'draopt[live]')")
        group.add_argument(
            "--context",
            metavar="NAME",
            help="read the cluster of this kubeconfig context (kubectl draopt without -f: the current context)",
        )
        group.add_argument(
            "--kubeconfig", metavar="FILE", help="the kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)"
        )
        group.add_argument(
            "--save-dump",
            metavar="FILE",
            help="write what was read from the cluster as one List (YAML; JSON for a .json FILE): "
            "-f FILE gives the same answer",
        )


def usage_error(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Callable[[str], None]:
    """The command's own parser's error (its usage, exit 2), as argparse reports a missing flag."""

    def error(message: str) -> None:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parsers = conventions.command_parsers(sub)
        nested = getattr(args, f"{args.command}_command", None)
        path = (args.command, nested) if nested else (args.command,)
        parsers.get(path, parsers[(args.command,)]).error(message)

    return error


def reads_cluster(args: argparse.Namespace, prog: str) -> bool:
    """Whether the command reads a live cluster: --context or --kubeconfig given, or the kubectl
    plugin with no -f."""
    if not hasattr(args, "_filename_required"):
        return False
    return bool(args.context or args.kubeconfig) or (_as_kubectl_plugin(prog) and not args.filename)


def _as_kubectl_plugin(prog: str) -> bool:
    return prog == KUBECTL_PROG or os.path.basename(sys.argv[0] or "").startswith("kubectl-draopt")


@contextlib.contextmanager
def inputs(args: argparse.Namespace, prog: str, usage_error) -> Iterator[None]:
    """While the command runs: the cluster's objects read into a file first in args.filename
    (the --save-dump FILE, else a temporary file removed afterwards). `usage_error(message)`
    reports a missing -f as argparse does."""
    if not hasattr(args, "_filename_required"):
        yield
        return
    if not reads_cluster(args, prog):
        if args.save_dump:
            raise DraoptError("--save-dump: nothing is read from a cluster (give --context or --kubeconfig)")
        if args._filename_required and not args.filename:
            usage_error(_REQUIRED)
        yield
        return
    read = live.read_cluster(kubeconfig=args.kubeconfig, context=args.context)
    for note in read.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"note: {read.summary()}", file=sys.stderr)
    with _dump_file(read, args.save_dump) as path:
        args.filename = [path] + list(args.filename or [])
        yield


@contextlib.contextmanager
def _dump_file(read: live.ClusterRead, save_to: str | None) -> Iterator[str]:
    if save_to:
        fmt = "json" if save_to.endswith(".json") else "yaml"
        try:
            with open(save_to, "w", encoding="utf-8") as f:
                f.write(live.dump_text(read, fmt))
        except OSError as e:
            raise DraoptError(f"--save-dump {save_to}: cannot write: {e.strerror or e}") from None
        print(f"note: saved to {save_to}", file=sys.stderr)
        yield save_to
        return
    with tempfile.TemporaryDirectory(prefix="draopt-live-") as tmp:
        path = os.path.join(tmp, f"context-{_safe(read.context)}.json")  # JSON: read faster than YAML
        with open(path, "w", encoding="utf-8") as f:
            f.write(live.dump_text(read, "json"))
        yield path


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "current"


__all__ = ["add_flags", "inputs", "reads_cluster", "usage_error"]
