"""Source rewriting before compiling: what cel-cpp cannot say directly.

* An unknown domain is an empty map (Kubernetes' mapper with default): ``device.attributes[K]``
  / ``device.capacity[K]`` (and ``device.attributes.dom``) become ``(K in device.attributes ?
  device.attributes[K] : <empty>)``; ``[?K]`` / ``.?dom`` become ``optional.of(...)`` of that.
* ``has(device.driver)`` (and the other device fields, and ``has(device.attributes.dom)``) is true.
* ``format.named(n)`` / ``<Format>.validate(s)`` return optionals (draopt.cel.format).
* ``indexOf`` / ``lastIndexOf`` member calls are renamed to one function (draopt.cel.strings).
* Cross-type numeric ordering (``1 < 1.5``): the right operand is wrapped in ``dyn()``.
* A map literal with a repeated key: the last entry wins, as in cel-go.

And the tokenizer and bracket helpers that these, draopt.cel.cost and draopt.cel.loops share.
"""

from __future__ import annotations

import re
from typing import Optional

from draopt.cel.internal import (
    _BIND_VAR,
    _EMPTY_ATTRS,
    _EMPTY_CAP,
    _FORMAT_ERRORS,
    _FORMAT_KNOWN,
    _FORMAT_NAMED,
    _RENAMED,
    _TO_MAP,
)


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<str>
        (?:[rR][bB]?|[bB][rR])(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"[^"\n\r]*"|'[^'\n\r]*')
      | [bB]?(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''|"(?:\\.|[^"\\\n\r])*"|'(?:\\.|[^'\\\n\r])*')
    )
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<other>[\s\S])
    """,
    re.X,
)


def _tokenize(src: str):
    return [(m.lastgroup, m.group()) for m in _TOKEN_RE.finditer(src)]


def _rewrite(src: str, guards: Optional[list] = None) -> str:
    """Rewrite ``device.attributes[K]``/``device.capacity[K]`` lookups so that an
    unknown domain yields an empty map (Kubernetes' mapper with default). ``guards``: each
    lookup rewritten is added to it, as (field, K's source text when a literal, else None)."""
    if "attributes" not in src and "capacity" not in src:
        return src  # (nothing to rewrite: most class selectors, which compare the driver)
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]  # indices of significant tokens
    if guards is not None and any(
        toks[i] == ("id", "device") and (j + 1 == len(sig) or toks[sig[j + 1]][1] != ".") for j, i in enumerate(sig)
    ):
        guards.append(("device", None))  # `device` as a macro's variable (see guarded_domains)
    out = []
    pos = 0  # next token index to copy
    j = 0
    changed = False
    while j < len(sig):
        i0 = sig[j]
        if (
            toks[i0] == ("id", "device")
            and j + 3 < len(sig)
            and toks[sig[j + 1]][1] == "."
            and toks[sig[j + 2]][0] == "id"
            and toks[sig[j + 2]][1] in ("attributes", "capacity")
            and toks[sig[j + 3]][1] in ("[", ".")
            and (j == 0 or toks[sig[j - 1]][1] != ".")
        ):
            field = toks[sig[j + 2]][1]
            var = "device." + field
            empty = _EMPTY_ATTRS if field == "attributes" else _EMPTY_CAP
            optional = False
            if toks[sig[j + 3]][1] == "[":
                end = _matching(sig, toks, j + 3, 1)
                if end is None:
                    break  # unbalanced: let the compiler report it
                first = j + 4
                if first < end and toks[sig[first]][1] == "?":  # device.attributes[?K]
                    optional = True
                    first += 1
                if first >= end:
                    j += 1
                    continue
                key_src = "".join(t for _, t in toks[sig[first] : sig[end]])
                key_sig = [toks[sig[x]] for x in range(first, end)]
                literal = key_sig[0][1] if len(key_sig) == 1 and key_sig[0][0] == "str" else None
            else:  # device.attributes.dom / device.attributes.?dom (a domain without dots)
                k = j + 4
                if k < len(sig) and toks[sig[k]][1] == "?":
                    optional = True
                    k += 1
                if k >= len(sig) or toks[sig[k]][0] != "id" or (k + 1 < len(sig) and toks[sig[k + 1]][1] == "("):
                    j += 1
                    continue
                end = k
                literal = '"' + toks[sig[k]][1] + '"'
            out.append("".join(t for _, t in toks[pos:i0]))
            if guards is not None:
                guards.append((field, literal))
            if literal is not None:
                lookup = f"({literal} in {var} ? {var}[{literal}] : {empty})"
            else:
                inner = _rewrite(key_src, guards)
                lookup = f"cel.bind({_BIND_VAR}, ({inner}), {_BIND_VAR} in {var} ? {var}[{_BIND_VAR}] : {empty})"
            # Kubernetes' mapper finds every domain (Find returns the empty map), so an
            # optional lookup always has a value; "in" and iteration see the real domains only
            out.append(f"optional.of({lookup})" if optional else lookup)
            pos = sig[end] + 1
            j = end + 1
            changed = True
            continue
        j += 1
    if not changed:
        return src
    out.append("".join(t for _, t in toks[pos:]))
    return "".join(out)


def guarded_domains(guards: list) -> Optional[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The domains (of device.attributes, of device.capacity) that the lookups ``_rewrite``
    guarded name (``guards``, as it reported them), when the source without the guards is the
    same program on every device that has them all; None when the guards must run.

    On such a device each guard's condition holds, so each guarded lookup is the lookup itself;
    and the guard's two branches have the lookup's type (the empty maps are declared so), so
    the checker types everything else alike: the same overloads, errors and result type. That
    holds when every key is a plain string literal (its value read here) and ``device`` is
    never a macro's variable (every ``device`` token is followed by a dot: a variable is
    followed by a comma; _rewrite reports one that is not)."""
    if not guards:
        return None
    named: dict[str, set[str]] = {"attributes": set(), "capacity": set()}
    for field, literal in guards:
        if (
            literal is None
            or len(literal) < 2
            or literal[0] not in "\"'"
            or literal[-1] != literal[0]
            or literal[:3] in ('"""', "'''")
            or "\\" in literal
        ):
            return None
        named[field].add(literal[1:-1])
    return tuple(sorted(named["attributes"])), tuple(sorted(named["capacity"]))


def _split_args(sig, toks, open_idx):
    """Given the significant-token index of '(' return (close_idx, [arg token-index ranges])."""
    depth = 0
    args = []
    start = open_idx + 1
    k = open_idx
    while k < len(sig):
        kind, t = toks[sig[k]]
        if kind == "other":
            if t in "([{":
                depth += 1
            elif t in ")]}":
                depth -= 1
                if depth == 0:
                    args.append((start, k))
                    return k, args
            elif t == "," and depth == 1:
                args.append((start, k))
                start = k + 1
        k += 1
    return None, None


def _rename_members(src: str) -> str:
    if "ndexOf" not in src and "format" not in src:
        return src
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
    for j, i in enumerate(sig):
        kind, t = toks[i]
        if (
            kind == "id"
            and t in _RENAMED
            and j > 0
            and toks[sig[j - 1]][1] == "."
            and j + 1 < len(sig)
            and toks[sig[j + 1]][1] == "("
        ):
            toks[i] = (kind, _RENAMED[t])
    return "".join(t for _, t in toks)


def _matching(sig, toks, k, step):
    """Index (in sig) of the bracket matching the one at sig index k, scanning by step (+1/-1)."""
    depth = 0
    while 0 <= k < len(sig):
        kind, t = toks[sig[k]]
        if kind == "other":
            if t in "([{":
                depth += step
            elif t in ")]}":
                depth -= step
            if depth == 0:
                return k
        k += step
    return None


def _postfix_start(sig, toks, k):
    """Start (sig index) of the postfix expression ending at sig index k."""
    while True:
        kind, t = toks[sig[k]]
        if kind == "other" and t in ")]}":
            m = _matching(sig, toks, k, -1)
            if m is None:
                return None
            prev = toks[sig[m - 1]] if m > 0 else ("", "")
            if t == ")" and prev[0] == "id":
                k = m - 1
                continue
            if t == "]" and (prev[0] in ("id", "str") or prev[1] in (")", "]", "}")):
                k = m - 1
                continue
            k = m
        if k > 1 and toks[sig[k - 1]][1] == "." and toks[sig[k]][0] == "id":
            k -= 2
            continue
        return k


def _rewrite_format(src: str) -> str:
    """``format.named(n)`` and ``<Format>.validate(s)`` return optionals, which functions
    implemented in Python cannot: they are rewritten around helpers returning plain values."""
    if "named" not in src and "validate" not in src:
        return src
    for _ in range(64):
        toks = _tokenize(src)
        sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
        done = True
        for j in range(1, len(sig) - 1):
            kind, t = toks[sig[j]]
            if kind != "id" or toks[sig[j - 1]][1] != "." or toks[sig[j + 1]][1] != "(":
                continue
            if t == "named" and j >= 2 and toks[sig[j - 2]][1] == "format" and (j < 3 or toks[sig[j - 3]][1] != "."):
                close = _matching(sig, toks, j + 1, 1)
                if close is None:
                    return src
                arg = "".join(x for _, x in toks[sig[j + 1] + 1 : sig[close]])
                new = (
                    f"cel.bind(__dra_fn, ({arg}), {_FORMAT_KNOWN}(__dra_fn) ? "
                    f"optional.of({_FORMAT_NAMED}(__dra_fn)) : optional.none())"
                )
                start = sig[j - 2]
            elif t == "validate":
                close = _matching(sig, toks, j + 1, 1)
                rs = _postfix_start(sig, toks, j - 2) if j >= 2 else None
                if close is None or rs is None:
                    return src
                recv = "".join(x for _, x in toks[sig[rs] : sig[j - 1]])
                arg = "".join(x for _, x in toks[sig[j + 1] + 1 : sig[close]])
                new = (
                    f"cel.bind(__dra_fv, ({recv}).{_FORMAT_ERRORS}({arg}), "
                    f"__dra_fv.size() == 0 ? optional.none() : optional.of(__dra_fv))"
                )
                start = sig[rs]
            else:
                continue
            src = "".join(x for _, x in toks[:start]) + new + "".join(x for _, x in toks[sig[close] + 1 :])
            done = False
            break
        if done:
            return src
    return src


_ALWAYS_PRESENT = {"driver", "allowMultipleAllocations", "attributes", "capacity"}


def _rewrite_has(src: str) -> str:
    """``has(device.driver)`` (and the other device fields) is true, as on Kubernetes'
    device object; here they are variables, for which cel-cpp's has() means something else."""
    if "has" not in src:
        return src
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
    for j in range(len(sig) - 5):
        if toks[sig[j]][1] != "has":
            continue
        w = [toks[sig[j + x]][1] for x in range(6)]
        if (
            w[0] == "has"
            and w[1] == "("
            and w[2] == "device"
            and w[3] == "."
            and w[4] in _ALWAYS_PRESENT
            and w[5] == ")"
            and (j == 0 or toks[sig[j - 1]][1] != ".")
        ):
            for x in range(6):
                toks[sig[j + x]] = ("ws", "")
            toks[sig[j]] = ("id", "true")
        elif (
            w[0] == "has"
            and w[1] == "("
            and w[2] == "device"
            and w[3] == "."
            and w[4] in ("attributes", "capacity")
            and w[5] == "."
            and j + 7 < len(sig)
            and toks[sig[j + 6]][0] == "id"
            and toks[sig[j + 7]][1] == ")"
            and (j == 0 or toks[sig[j - 1]][1] != ".")
        ):
            # has(device.attributes.dom): Kubernetes' mapper finds every domain (the empty map)
            for x in range(8):
                toks[sig[j + x]] = ("ws", "")
            toks[sig[j]] = ("id", "true")
    return "".join(t for _, t in toks)


# --------------------------------------------------------------------------
# Cross-type numeric ordering (cel.CrossTypeNumericComparisons, Kubernetes >= 1.28)
#
# cel-cpp's checker has no such option, but its runtime compares numbers of
# different types.  When the checker rejects ``a < b`` for two different
# numeric types, the right operand is wrapped in ``dyn(...)`` and the
# expression compiled again; the comparison then runs on the values.

_NUMERIC_OVERLOAD = re.compile(
    r"<input>:(\d+):(\d+): found no matching overload for '_(<|<=|>|>=)_' applied to "
    r"'\((int|uint|double), (int|uint|double)\)'"
)


def _token_spans(src: str):
    """Tokens with their start offsets: [(kind, text, start)]."""
    return [(m.lastgroup, m.group(), m.start()) for m in _TOKEN_RE.finditer(src)]


def _rewrite_numeric(src: str, message: str) -> Optional[str]:
    m = _NUMERIC_OVERLOAD.search(message)
    if m is None or m.group(4) == m.group(5):
        return None
    line, col = int(m.group(1)), int(m.group(2))
    lines = src.split("\n")
    if line > len(lines):
        return None
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1
    op = m.group(3)
    if src[offset : offset + len(op)] != op:
        return None
    start = offset + len(op)
    toks = [t for t in _token_spans(src) if t[2] >= start and t[0] != "ws"]
    depth = 0
    first = last = None
    prev = None
    for i, (kind, text, pos) in enumerate(toks):
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind == "other":
            if text in "([{":
                depth += 1
            elif text in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0:
                if (
                    text in ",:<>="
                    or (text == "!" and nxt == "=")
                    or (text == "&" and nxt == "&")
                    or (text == "|" and nxt == "|")
                    or (text == "?" and prev not in (".", "["))
                ):
                    break
        elif kind == "id" and text == "in" and depth == 0:
            break
        if first is None:
            first = pos
        last = pos + len(text)
        prev = text
    if first is None:
        return None
    return src[:first] + "dyn(" + src[first:last] + ")" + src[last:]


# --------------------------------------------------------------------------
# Repeated keys in a map literal
#
# cel-go builds a map literal entry by entry into a Go map (interpreter/interpretable.go,
# evalMap.Eval: ``entries[keyVal] = valVal``): a repeated key is no error, the last entry
# wins.  cel-cpp fails with "duplicate key in map".  A literal whose repeated keys are written
# as constants (and whose dropped entries have constant values) loses its earlier entries; one
# whose keys are only known at runtime is built by a helper, last entry winning
# (``[[dyn(k), dyn(v)], ...].__dra_to_map()``, typed map(dyn, dyn)).

_INT_KEY = re.compile(r"^-?(?:0[xX][0-9a-fA-F]+|\d+)$")
_UINT_KEY = re.compile(r"^(?:0[xX][0-9a-fA-F]+|\d+)[uU]$")
_CONSTANT_VALUE = re.compile(r"^(?:-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?[uU]?|true|false|null)$")


def _constant_key(text: str, sig_toks) -> Optional[tuple]:
    """(type, value) of a map key written as a constant, None otherwise (an escaped or raw
    string counts as not constant: it takes the helper, which is right either way)."""
    if len(sig_toks) == 1 and sig_toks[0][0] == "str":
        s = sig_toks[0][1]
        if s[0] in "\"'" and "\\" not in s and not s.startswith(('"""', "'''")):
            return ("string", s[1:-1])
        return None
    t = text.strip()
    if _INT_KEY.match(t):
        return ("int", int(t, 0) if not t.lstrip("-").startswith(("0x", "0X")) else int(t, 16))
    if _UINT_KEY.match(t):
        return ("uint", int(t[:-1], 16) if t.startswith(("0x", "0X")) else int(t[:-1]))
    if t in ("true", "false"):
        return ("bool", t)
    return None


def _map_entries(sig, toks, open_j: int, close_j: int):
    """[(key sig range, value sig range)] of the map literal between sig indices open_j and
    close_j, or None (an optional entry ``?k: v``, or no key/value colon)."""
    entries: list[tuple[tuple[int, int], tuple[int, int]]] = []
    start = open_j + 1
    depth = 0
    colon = None
    pending = 0  # '?' of ternaries waiting for their ':'
    for k in range(open_j + 1, close_j + 1):
        kind, t = toks[sig[k]]
        if kind == "other" and t in "([{":
            depth += 1
        elif kind == "other" and t in ")]}" and k < close_j:
            depth -= 1
        elif depth == 0 and kind == "other" and (t == "," or k == close_j):
            if start == k:
                if k == close_j and entries:  # trailing comma
                    break
                return None
            if colon is None:
                return None
            entries.append(((start, colon), (colon + 1, k)))
            start, colon, pending = k + 1, None, 0
        elif depth == 0 and kind == "other" and t == "?":
            if k == start:
                return None  # optional entry
            pending += 1
        elif depth == 0 and kind == "other" and t == ":":
            if pending:
                pending -= 1
            elif colon is None:
                colon = k
    return entries


def _rewrite_map_literals(src: str) -> str:
    """Map literals with a repeated key as cel-go evaluates them (last entry wins)."""
    if "{" not in src or ":" not in src:
        return src
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
    for j in range(len(sig)):
        kind, t = toks[sig[j]]
        if kind != "other" or t != "{":
            continue
        if j > 0 and toks[sig[j - 1]][0] == "id" and toks[sig[j - 1]][1] != "in":
            continue  # a message literal Type{field: ...}
        close = _matching(sig, toks, j, 1)
        if close is None:
            return src
        entries = _map_entries(sig, toks, j, close)
        if entries is None or len(entries) < 2:
            continue

        def text(r):
            return "".join(x for _, x in toks[sig[r[0]] : sig[r[1]]]) if r[1] > r[0] else ""

        keys = [_constant_key(text(kr), [toks[sig[x]] for x in range(*kr)]) for kr, _ in entries]
        if all(k is not None for k in keys) and len(set(keys)) == len(keys):
            continue  # no key can repeat
        head = "".join(x for _, x in toks[: sig[j]])
        tail = "".join(x for _, x in toks[sig[close] + 1 :])
        if all(k is not None for k in keys):
            last = {k: i for i, k in enumerate(keys)}
            dropped = [i for i, k in enumerate(keys) if last[k] != i]
            if all(
                _CONSTANT_VALUE.match(text(entries[i][1]).strip())
                or [toks[sig[x]][0] for x in range(*entries[i][1])] == ["str"]
                for i in dropped
            ):
                kept = [
                    f"{text(kr)}:{_rewrite_map_literals(text(vr))}"
                    for i, (kr, vr) in enumerate(entries)
                    if last[keys[i]] == i
                ]
                return head + "{" + ",".join(kept) + "}" + _rewrite_map_literals(tail)
        pairs = [
            f"[dyn({_rewrite_map_literals(text(kr))}), dyn({_rewrite_map_literals(text(vr))})]" for kr, vr in entries
        ]
        return head + "[" + ", ".join(pairs) + f"].{_TO_MAP}()" + _rewrite_map_literals(tail)
    return src
