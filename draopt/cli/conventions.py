"""kubectl's habits on every command of `draopt` (docs/cli.md): help with defaults, examples and
exit codes; -o a format and files with --output-file; the old spellings kept for one release with
a note; -R and --strict where a command's own module reads; which pending pods to place (-n, -A,
-l); the shell completion script. Applied to the parsers after every command has registered."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from draopt.errors import DraoptError
from draopt.kube.loader import expand_paths
from draopt.kube.selection import parse_selector, pending_filter, select_claim_refs, select_pending  # noqa: F401  (kept importable from here)


# ------------------------------------------------------------------ kubectl's conventions
# One meaning per flag on every command (docs/cli.md): -o is an output format and files go to
# --output-file; `-o table` is the human output; --dask-scheduler is a Dask address; -R and
# --strict on every command that reads. The old spellings work for one release, with a note.

EXIT_CODES = {
    "allocate": "0 allocated (stdout: a List of ResourceClaims), 1 unschedulable, 2 invalid input or allocation error",
    "place": "0 every pending pod placed (by --policy), 1 some pod not placed, 2 invalid input",
    "explain": "0 explained, 2 invalid input",
    "plan": "0 the plan places every pending pod, 1 it does not, 2 invalid input",
    "validate": "0 valid, 1 findings, 2 unreadable input",
    "taint-impact": "0 analysed, 2 invalid input",
    "trace": "0 written, 2 bad CSV or flags",
    "simulate": "0 simulated, 2 invalid input",
    "compare": "0 compared, 2 invalid input or an output file that cannot be written",
    "sweep": "0 every scenario done, 2 invalid input or grid",
    "crosscheck": "0 identical, 1 different, 2 bad input, an input the oracle refuses, or no Go",
    "completion": "0 printed, 2 an unknown shell",
}
EXAMPLES = {
    "allocate": [
        "draopt allocate -f examples/cluster.yaml --node gpu-node-1",
        "draopt allocate -f examples/cluster.yaml --policy optimal -o json",
        "draopt allocate -f examples/cluster.yaml -n ml -o name",
    ],
    "place": [
        "draopt place -f examples/gang-stranding.yaml --compare",
        "draopt place -f examples/mig-gangs.yaml --policy optimal --time-limit 30 -o yaml",
        "draopt place -f examples/mig-gangs.yaml --scheduler-config builtin:most-allocated",
    ],
    "explain": [
        "draopt explain -f examples/mig-gangs.yaml --pod ml/trainer-1-chief",
        "draopt explain -f examples/mig-gangs.yaml --pod ml/trainer-0-chief --scores",
        "draopt explain -f examples/cluster.yaml --claim ml/trainer --node gpu-node-1 -o json",
        "draopt explain -f examples/mig-gangs.yaml -n ml -o name",
    ],
    "plan": [
        "draopt plan -f examples/mig-gangs.yaml --node-template node-0",
        "draopt plan -f examples/mig-gangs.yaml --node-type node-0=3 -o json",
    ],
    "validate": ["draopt validate -f examples/cluster.yaml", "draopt validate -R -f examples/ --strict -o json"],
    "taint-impact": ["draopt taint-impact -f examples/cluster.yaml", "draopt taint-impact -f examples/ -o yaml"],
    "trace": [
        "draopt trace import --nodes ../shared/data/openb/openb_node_list_gpu_node.csv --output-file openb.yaml",
    ],
    "simulate": [
        "draopt simulate -f openb.yaml --trace ../shared/data/openb/openb_pod_list_default.csv "
        "--inflation 0.5:1.0:0.05 --policy first-node --policy fgd -o csv",
    ],
    "compare": [
        "draopt compare -f examples/mig-gangs.yaml",
        "draopt compare -f examples/mig-gangs.yaml --policy first-fit --policy optimal -o json",
        "draopt compare -f examples/mig-gangs.yaml -n ml --policy first-fit,optimal",
    ],
    "sweep": [
        "draopt sweep --grid grid.yaml --output-file results.parquet",
        "draopt sweep --grid grid.yaml --output-file results.parquet --dask-scheduler tcp://HOST:8786",
    ],
    "completion": ["draopt completion bash > ~/.draopt-completion.bash", "source <(draopt completion zsh)"],
    "crosscheck": [
        "draopt crosscheck -f examples/cluster.yaml --node gpu-node-1",
        "draopt crosscheck -f examples/gang-stranding.yaml --kubernetes-version 1.36",
        "draopt crosscheck -f examples/mig-gangs.yaml -n ml",
    ],
}
TOP_EPILOG = """examples:
  draopt place -f examples/gang-stranding.yaml --compare
  draopt explain -f examples/mig-gangs.yaml --pod ml/trainer-1-chief
  draopt plan -f examples/mig-gangs.yaml --node-template node-0

exit codes: 0 success, 1 the answer is no (a pod not placed, findings, differences),
2 invalid input or flags, 130 interrupted, 141 output pipe closed.
`draopt COMMAND --help` for each command; the documentation: docs/index.md"""

# Flags that their modules define without help: one meaning each, as docs/cli.md lists them.
FLAG_HELP = {
    "--filename": "YAML/JSON documents or a List; '-' reads stdin; a directory gives its files (one or more after -f, and -f repeatable)",
    "--feature-gates": "Kubernetes feature gates on top of the --kubernetes-version release's defaults",
    "--node": "only this node",
    "--output": "output format",
    "--policy": "the placement policy",
    "--runs": "runs (seeds) per policy and level",
    "--seed": "the first run's seed",
}
# The commands that make files: the formats their -o takes (the first is the default).
FILE_OUTPUT = {("sweep",): ("parquet",), ("trace", "import"): ("yaml",)}
# The commands whose human output was `-o text`, and the name their renderer knows it by.
TEXT_OUTPUT = {("explain",): "table", ("validate",): "table", ("taint-impact",): "text"}
# The commands that read files through their own modules: -R and --strict resolved here.
OWN_READERS = (("validate",), ("taint-impact",))
# The commands whose own modules read with load_files: -R and --strict added here, read there.
LOADERS = (("simulate",), ("sweep",))


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows each flag's default, and the examples of the epilog as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        hidden = default is None or default is False or default == "" or default == [] or default == argparse.SUPPRESS
        if hidden or not action.option_strings or "default" in text or "%(default)" in text:
            return text
        return f"{text} (default: %(default)s)"


class _Choices(tuple):
    """An option's choices that also accept old names (deprecated: help does not list them)."""

    aliases: tuple[str, ...] = ()

    def __new__(cls, names: tuple[str, ...], aliases: tuple[str, ...]) -> "_Choices":
        self = super().__new__(cls, names)
        self.aliases = aliases
        return self

    def __contains__(self, value: object) -> bool:
        return value in self.aliases or tuple.__contains__(self, value)


class _DeprecatedFlag(argparse.Action):
    """An old spelling of a flag, kept for one release: sets the new flag's value, with a note."""

    def __init__(self, option_strings, dest, replacement: str = "", **kwargs):
        self.replacement = replacement
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        _deprecated(f"{option_string}", self.replacement)
        setattr(namespace, self.dest, values)


def _deprecated(old: str, new: str) -> None:
    print(f"draopt: warning: {old} is deprecated and will be removed in the next release: use {new}", file=sys.stderr)


def apply(sub, input_flags) -> None:
    """The same habits on every command, whichever module defines its parser."""
    parsers = command_parsers(sub)
    for path, parser in parsers.items():
        parser.formatter_class = HelpFormatter
        examples = "\n".join(f"  {line}" for line in EXAMPLES.get(path[0], []))
        parser.epilog = (f"examples:\n{examples}\n\n" if examples else "") + f"exit codes: {EXIT_CODES[path[0]]}"
        for action in parser._actions:
            if action.help is None and action.option_strings:
                action.help = FLAG_HELP.get(max(action.option_strings, key=len), "")
        if path in TEXT_OUTPUT:
            output = parser._option_string_actions["-o"]
            names = tuple("table" if c == "text" else c for c in action_choices(output))
            output.choices, output.default = _Choices(names, ("text",)), "table"
        if path in FILE_OUTPUT:
            _output_file_flags(parser, FILE_OUTPUT[path], stdout=path == ("trace", "import"))
        elif "-o" in parser._option_string_actions and "--output-file" not in parser._option_string_actions:
            parser.add_argument(
                "--output-file",
                dest="output_file_redirect",  # (not output_file: simulate's own flag of that name writes its files)
                metavar="FILE",
                help="write the output (-o) to FILE instead of stdout: written whole when the command "
                "answers (exit 0 or 1), not written on an error",
            )
        if path in OWN_READERS or path in LOADERS:
            input_flags(parser)
    _rename_flag(parsers[("sweep",)], "--scheduler", "--dask-scheduler")
    _old_spelling(parsers[("sweep",)], "--seeds", parsers[("sweep",)]._option_string_actions["--seed"])
    _rename_flag(parsers[("sweep",)], "--nodes", "--node-count")  # --nodes: trace import's node CSV
    engine = parsers[("sweep",)]._option_string_actions["--engine"]
    engine.help = (engine.help or "").replace("--scheduler", "--dask-scheduler")


def action_choices(action: argparse.Action) -> tuple[str, ...]:
    return tuple(action.choices or ())


def command_parsers(sub) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every command's parser by its path (`("trace", "import")`), the command groups' own too."""
    out: dict[tuple[str, ...], argparse.ArgumentParser] = {}
    for name, parser in sub.choices.items():
        out[(name,)] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child, child_parser in action.choices.items():
                    out[(name, child)] = child_parser
    return out


def _output_file_flags(parser: argparse.ArgumentParser, formats: tuple[str, ...], stdout: bool) -> None:
    output = parser._option_string_actions["-o"]
    output.required, output.default, output.metavar = False, formats[0], "|".join(formats)
    output.help = "output format; the file is --output-file (-o FILE: deprecated)"
    parser.add_argument(
        "--output-file",
        default="-" if stdout else None,
        metavar="FILE",
        help="where to write ('-': stdout)" if stdout else "where to write (required)",
    )


def _rename_flag(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    action = parser._option_string_actions.pop(old)
    action.option_strings = [new if o == old else o for o in action.option_strings]
    parser._option_string_actions[new] = action
    _old_spelling(parser, old, action)


def _old_spelling(parser: argparse.ArgumentParser, old: str, action: argparse.Action) -> None:
    """`old` sets what `action` sets, with a deprecation note; help does not list it."""
    new = max(action.option_strings, key=len)
    parser.add_argument(
        old, dest=action.dest, action=_DeprecatedFlag, replacement=new, metavar=action.metavar, help=argparse.SUPPRESS
    )


def _command_path(args) -> tuple[str, ...]:
    sub_command = getattr(args, f"{args.command}_command", None)
    return (args.command, sub_command) if sub_command else (args.command,)


def resolve(args) -> None:
    """After parsing: deprecated spellings noted and mapped to what the command reads."""
    path = _command_path(args)
    if path in FILE_OUTPUT:
        _resolve_output_file(args, " ".join(path), FILE_OUTPUT[path])
    if path in TEXT_OUTPUT:
        if args.output == "text":
            _deprecated("-o text", "-o table")
        if args.output in ("text", "table"):
            args.output = TEXT_OUTPUT[path]
    target = redirected_output(args)
    if target is not None and not os.path.isdir(os.path.dirname(os.path.abspath(target))):
        raise DraoptError(f"--output-file {target}: no such directory")  # (said before any work)
    if path in OWN_READERS:
        if args.recursive:
            args.filename = expand_paths(args.filename, recursive=True)
        if args.strict:
            _refuse_unused_kinds(args.filename)


def _looks_like_path(value: str) -> bool:
    return value == "-" or "." in value or "/" in value or os.sep in value


def _resolve_output_file(args, command: str, formats: tuple[str, ...]) -> None:
    """`-o FORMAT --output-file FILE`; the old `-o FILE` kept with a note. The command's module
    reads the file as args.output, the format as args.output_format."""
    value = args.output
    if value not in formats:
        if not _looks_like_path(value):
            raise DraoptError(
                f"-o {value}: not an output format of {command} ({', '.join(formats)}); files: --output-file"
            )
        if args.output_file not in (None, "-"):
            raise DraoptError(f"-o {value} and --output-file {args.output_file}: give the file with --output-file")
        _deprecated(f"-o {value} (a file)", f"-o {formats[0]} --output-file {value}")
        args.output_file, value = value, formats[0]
    if args.output_file is None:
        raise DraoptError(f"{command}: --output-file FILE is required")
    suffix = os.path.splitext(args.output_file)[1]
    if args.output_file != "-" and suffix and suffix != f".{value}" and not (value == "yaml" and suffix == ".yml"):
        print(f"note: {args.output_file}: written as {value}, whatever its name says", file=sys.stderr)
    args.output_format, args.output = value, args.output_file


def _refuse_unused_kinds(paths: list[str]) -> None:
    """--strict for the commands that read through their own modules (draopt.kube.loader.
    refuse_unused_kinds). Stdin is read once and given back to the command."""
    import io

    from draopt.kube.loader import refuse_unused_kinds

    text = sys.stdin.read() if "-" in paths else ""
    sys.stdin = io.StringIO(text)
    try:
        refuse_unused_kinds(paths)
    finally:
        sys.stdin = io.StringIO(text)


# ------------------------------------------------------------------ which pending pods to place
def selection_flags(p: argparse.ArgumentParser, chosen: str = "place only the pending pods") -> None:
    """-n, -A, -l; `chosen` says what they choose, in the command's words."""
    p.add_argument(
        "-n",
        "--namespace",
        action="append",
        metavar="NS",
        help=f"{chosen} of this namespace (repeatable; default: every namespace)",
    )
    p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (wins over -n)")
    p.add_argument(
        "-l",
        "--selector",
        metavar="SELECTOR",
        help=f"{chosen} whose labels match (kubectl's syntax: k=v,k!=v,k in (a,b),k,!k)",
    )


def selected(args, objects):
    """The input with only the pending pods that -n/-l select (draopt.kube.selection)."""
    return select_pending(objects, args.namespace, args.all_namespaces, args.selector)


def selected_claims(args, objects) -> list[str] | None:
    """The claims to allocate once -n/-l have chosen (draopt.kube.selection.select_claim_refs)."""
    return select_claim_refs(objects.resource_claims, args.claim, args.namespace, args.all_namespaces, args.selector)


# ------------------------------------------------------------------ shell completion
def completion_script(parser: argparse.ArgumentParser) -> str:
    """A bash completion function for `draopt` and `kubectl-draopt`, made from the parser: the
    commands, each command's flags, and the choices of the flags that have them; files otherwise."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parsers = command_parsers(sub)
    commands = " ".join(name for name in sub.choices)
    cases, choices = [], []
    for path, p in parsers.items():
        flags = sorted(o for a in p._actions if a.help != argparse.SUPPRESS for o in a.option_strings)
        children = [k[1] for k in parsers if len(k) == 2 and k[0] == path[0]] if len(path) == 1 else []
        cases.append(f'        "{" ".join(path)}") words="{" ".join(children + flags)}" ;;')
        for a in p._actions:
            if a.choices and a.option_strings:
                values = " ".join(str(v) for v in a.choices)
                choices += [f'        "{" ".join(path)}:{o}") words="{values}" ;;' for o in a.option_strings]
    return (
        COMPLETION_TEMPLATE.replace("@COMMANDS@", commands)
        .replace("@CASES@", "\n".join(cases))
        .replace("@CHOICES@", "\n".join(choices))
    )


COMPLETION_TEMPLATE = """# draopt completion for bash: source <(draopt completion bash)
_draopt() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" path="" i w words=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        if [[ -z "$path" && " @COMMANDS@ " == *" $w "* ]]; then
            path="$w"
        elif [[ "$path" == trace && "$w" == import ]]; then
            path="trace import"
        fi
    done
    case "$path:$prev" in
@CHOICES@
    esac
    if [[ -n "$words" ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
        return
    fi
    if [[ -z "$path" ]]; then
        COMPREPLY=($(compgen -W "@COMMANDS@ --help --version" -- "$cur"))
        return
    fi
    case "$path" in
@CASES@
    esac
    if [[ "$cur" == -* || "$path" == trace ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    fi
}
complete -o default -F _draopt draopt kubectl-draopt
"""


def redirected_output(args):
    """The --output-file of a command that writes its answer to stdout (the file-output commands
    handle theirs themselves), or None."""
    return getattr(args, "output_file_redirect", None)


def write_output_file(path: str, text: str) -> None:
    """`text` into `path` whole: a temporary file beside it, renamed over it."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".draopt-", suffix=".tmp")
    except OSError as e:
        raise DraoptError(f"--output-file {path}: cannot write there: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        os.unlink(tmp)
        raise DraoptError(f"--output-file {path}: cannot write it: {e.strerror}") from None
