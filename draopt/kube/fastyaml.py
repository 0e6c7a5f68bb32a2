"""Large YAML texts read through rapidyaml, when that gives exactly what PyYAML gives.

PyYAML builds every node of a document as a Python object in Python code (even with libyaml
doing the scanning): a 30 MB `kubectl get -o yaml` dump takes 10-80 s. rapidyaml (C++) parses
it and writes it out as JSON in well under a second, and the JSON parser builds the Python
objects. The two do not agree on every document, so this path is taken only for texts on which
they provably agree; everything else goes through PyYAML (see :mod:`draopt.kube.loader`):

* rapidyaml's JSON keeps quoted scalars as strings and writes plain ones as JSON numbers (when
  they look like numbers), ``true``/``false``/``null`` (empty values too), or strings. PyYAML
  resolves plain scalars by YAML 1.1 rules (``yes``/``on``/``~``/``0x10``/``0755``/``1_000``/
  ``1:20``/``.inf``, ...) and reads ``1e3`` and ``-.5`` as strings; rapidyaml also rewrites the
  plain scalars ``inf``/``nan``. A text with any plain scalar (or key) where the two may
  differ is refused: :func:`unsafe` finds every such token where a plain scalar can start.
  Plain decimal integers and ``digits.digits`` floats are the numbers both read alike (as
  values; as keys PyYAML's key text is ``str(value)``, so floats and ``-0`` are refused there).
  Block scalars (``key: |``) are text: their lines are not scanned.
* refused too: anchors, aliases and tags (PyYAML expands aliases with a size check and
  constructs tags), directives, complex keys (``?``), flow collections other than ``[]`` and
  ``{}``, ``...`` lines and ``---`` lines with content after the marker, tabs, carriage returns
  and control characters. Several documents are split at their ``---`` lines and read one by
  one.
* a document rapidyaml cannot parse, or whose JSON the JSON parser refuses (rapidyaml does not
  escape control characters written as escapes), is refused.

Refusing is never an error: the caller reads the text with libyaml or PyYAML, which gives its
usual result or message. Only texts of at least :data:`MIN_CHARS` are tried: smaller ones
(hand-written manifests) PyYAML reads in about 10 ms, and they keep its reading unchanged. This
path is faster at every size measured (2 KB: 0.1 against 1.2 ms). (The bound was 1 MiB: a 0.7 MB
dump then took 0.6-0.9 s to read, twice as long as a 3.4 MB one.)
Tests: ``tests/test_load_fast.py``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

try:  # optional at import time: without it every text goes through PyYAML
    import ryml as _ryml
except ImportError:  # pragma: no cover - rapidyaml is a dependency
    _ryml = None

MIN_CHARS = 1 << 14  # 16 KiB

# Where a plain scalar can end: spaces, then end of line, a comment, a flow indicator, or the
# `:` of a key.
_END = r"(?=[ ]*+(?:\n|\Z|#|[,\]}]|:(?:[ ]|\n|\Z)))"
# Everything that may read as a number to either parser (one dot at most; also hex, octal,
# binary, base 60 and underscores, which only YAML 1.1 reads as numbers).
_NUMBERISH = (
    r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9_]*)?"
    r"|[-+]?0(?:[xX][0-9a-fA-F_]*|[bB][01_]*|[oO][0-7_]*)"
    r"|[-+]?[0-9][0-9_]*(?::[0-9_]+)+(?:\.[0-9_]*)?"
)
# ... of which these read the same in both as values (not followed by a key's `:`).
_SAME_NUMBER = r"(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?)(?=[ ]*+(?:\n|\Z|#|[,\]}]))"
# ... and base-60 shapes (`0000:68:00.0`, `10:20`): strings to rapidyaml, and to draopt.kube.loader
# too, as to Kubernetes (its go-yaml never read YAML 1.1's base-60 numbers).
_STRING_BASE60 = r"[-+]?[0-9][0-9_]*(?::[0-9_]+)+(?:\.[0-9_]*)?" + _END
# (`y`, `n`: YAML 1.1's spec and Kubernetes' go-yaml v2 read them as booleans, but PyYAML's resolver,
# which draopt.kube.loader follows, reads strings, and so does rapidyaml: not refused.)
_WORDS = (
    r"yes|Yes|YES|no|No|NO|True|TRUE|False|FALSE|on|On|ON|off|Off|OFF|~|Null|NULL|=|<<"
    r"|[-+]?\.?(?:[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])"
)
_RISKY = (
    r"(?=[yYnNoOTF~=<.+\-0-9iI&*!?%@`:])(?:"
    r"(?:"
    + _WORDS
    + r")"
    + _END
    + r"|(?!"
    + _SAME_NUMBER
    + r"|"
    + _STRING_BASE60
    + r")(?:"
    + _NUMBERISH
    + r")"
    + _END
    + r"|[&*!?%@`]"  # anchor, alias, tag, complex key, directive, reserved
    r"|:(?=[ ]|\n|\Z)"  # an empty key
    r")"
)
# Plain scalars start after `: ` or at the start of a line (after its indentation and `- `
# entries); in flow collections too, which are refused unless empty. Separate patterns, each
# with a literal first character, scan much faster than one alternation.
# Flow collections (`[a, b]`, `{a: b}`): PyYAML and rapidyaml end plain scalars in them at
# different characters (`?`, brackets), so only empty ones (`[]`, `{}`, what kubectl and
# PyYAML write) are accepted; a flow collection as a key is refused with them.
_FLOW_OPEN = r"(?:\[(?!\][ ]*+(?:\n|\Z|#))|\{(?!\}[ ]*+(?:\n|\Z|#)))"
_CLOSER = r"[\]},]"  # cannot start a plain scalar: PyYAML refuses it where rapidyaml reads a string
_AFTER_COLON = re.compile(r": ++(?:" + _RISKY + "|" + _FLOW_OPEN + "|" + _CLOSER + ")")
_LINE_START = re.compile(r"\n *+(?:-(?: ++|(?=\n)))*+(?:" + _RISKY + "|" + _FLOW_OPEN + "|" + _CLOSER + ")")
# Several documents: split at their `---` lines (alone on their line, or with a comment), as
# PyYAML splits them; `--- value` and `...` are left to PyYAML.
_DOCUMENT_START = re.compile(r"^---[ ]*+(?:#[^\n]*)?$", re.M)
_CONTENT = re.compile(r"^[ ]*+[^ #\n]", re.M)  # a line that is not blank or a comment
_CONTROL = re.compile(r"[\t\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff]")
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\n"


# A block scalar (`key: |`, `- >-`, as kubectl writes `last-applied-configuration`): its lines
# are text, not YAML, so they are not scanned. It ends at the first non-blank line indented no
# deeper than its key (or its `- `). (A line that only looks like a header, inside a multi-line
# quoted scalar, hides the lines after it that are indented deeper than itself: only more of
# that scalar, as every YAML writer indents continuation lines deeper than their key.)
_BLOCK_HEADER = re.compile(r"(?:: |- )[|>][-+1-9]{0,2}[ ]*+(?:#[^\n]*)?(?=\n)")
_LINE_INDENT = re.compile(r" *+(?:- ++)*+")
_BLOCK_ENDS: dict[int, re.Pattern] = {}


def _may_have_block_header(text: str) -> bool:
    """Whether `text` has `: |`, `: >`, `- |` or `- >`: each `|` and `>` found at memory speed
    (a dump has none, or a few in CEL expressions), and looked behind; past a few thousand, True."""
    for char in "|>":
        i, seen = text.find(char), 0
        while i >= 0:
            if i >= 2 and text[i - 2 : i] in (": ", "- ") or seen > 5000:
                return True
            i, seen = text.find(char, i + 1), seen + 1
    return False


def _without_block_scalars(text: str) -> str:
    if not _may_have_block_header(text):
        return text  # no header (the usual dump)
    pieces, pos = [], 0
    for header in _BLOCK_HEADER.finditer(text):
        if header.start() < pos:
            continue  # inside a block already left out
        line_start = text.rfind("\n", 0, header.start()) + 1
        indent = _LINE_INDENT.match(text, line_start, header.start())
        assert indent is not None  # (the pattern matches the empty string)
        column = indent.end() - line_start
        end = _BLOCK_ENDS.get(column)
        if end is None:  # a newline, then a line with content indented `column` or less
            end = _BLOCK_ENDS[column] = re.compile(r"\n(?= {0," + str(column) + r"}[^ \n])")
        stop = end.search(text, header.end())
        pieces.append(text[pos : header.end()])
        pos = stop.start() if stop else len(text)
    if not pieces:
        return text
    pieces.append(text[pos:])
    return "".join(pieces)


def unsafe(text: str) -> str | None:
    """Why rapidyaml's reading of `text` might differ from PyYAML's (a short description of the
    first suspect found), or None when the two agree on it."""
    if text.isascii():  # the usual case, checked at memory speed
        if text.encode("ascii").translate(None, _PRINTABLE_ASCII):
            return "a tab, carriage return or control character"
    elif _CONTROL.search(text):
        return "a tab, carriage return or control character"
    if text.startswith("...") or "\n..." in text:
        return "a document end marker (...)"
    if text.startswith("---") or "\n---" in text:
        if text.count("\n---") + text.startswith("---") != len(_DOCUMENT_START.findall(text)):
            return "a document start marker (---) followed by content on its line"
    text = _without_block_scalars(text)
    # The scans below look at one line at a time: each distinct line is scanned once (a dump
    # repeats most of its lines: round 2's gen_big.py, 828,000 lines, has 7,700 distinct ones),
    # and only when one is suspect is the text scanned, for the first one as written.
    distinct = "\n" + "\n".join(set(text.split("\n"))) + "\n"
    if _suspect(distinct) is None:
        return None
    return _suspect(text)


def _suspect(text: str) -> str | None:
    first_line = "\n" + text[: text.find("\n") + 1 or len(text)]
    for pattern, what in (
        (_AFTER_COLON, "a plain value PyYAML may read differently"),
        (_LINE_START, "a plain key or item PyYAML may read differently"),
    ):
        m = pattern.search(text) or (pattern is _LINE_START and pattern.match(first_line))
        if m:
            return f"{what}: {m.string[m.start() : m.end() + 10]!r}"
    return None


class _QuietStderr:
    """rapidyaml prints its parse errors on file descriptor 2 before raising; the caller then
    reads the text again with PyYAML and reports the error its own way, so they are silenced."""

    def __enter__(self):
        try:
            self.saved = os.dup(2)
        except OSError:
            self.saved = None
            return self
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            os.dup2(self.saved, 2)
            os.close(self.saved)
        return False


def available() -> bool:
    return _ryml is not None


def load(text: str, *, min_chars: int = MIN_CHARS) -> tuple[bool, list[Any]]:
    """(True, the documents of `text`) when rapidyaml reads them as PyYAML would (empty ones left
    out, as the loader leaves PyYAML's null documents out); (False, []) when the text is too
    small, refused (see the module's doc), or not parsed."""
    if _ryml is None or len(text) < min_chars or unsafe(text) is not None:
        return False, []
    parts = _DOCUMENT_START.split(text) if text.startswith("---") or "\n---" in text else [text]
    docs = []
    for part in parts:
        if not _CONTENT.search(part):
            continue  # nothing but blank lines and comments: no document
        ok, doc = _load_one(part)
        if not ok:
            return False, []
        docs.append(doc)
    return True, docs


def _load_one(text: str) -> tuple[bool, Any]:
    try:
        with _QuietStderr():
            tree = _ryml.parse_in_arena(text.encode("utf-8"))
            root = tree.root_id() if tree.size() else None
            if root is None or not (tree.is_map(root) or tree.is_seq(root)):  # streams, scalars, nothing
                return False, None
            tree.set_container_style(root, _ryml.FLOW_SL)  # JSON on one line: half the text to write and read
            out = _ryml.emit_json_malloc(tree, root)
        del tree
        if not isinstance(out, str):
            return False, None
    except Exception:  # noqa: BLE001 - any rapidyaml failure: PyYAML reads it and says what is wrong
        return False, None
    try:
        return True, json.loads(out)
    except ValueError:
        return False, None


__all__ = ["MIN_CHARS", "available", "load", "unsafe"]
