"""The string forms of ``indexOf``/``lastIndexOf`` (after cel-go's ext/strings.go).

The strings extension declares them, and so does Kubernetes' lists library; cel-cpp cannot add
overloads to an extension's function, so member calls are renamed to one function holding both
(draopt.cel.rewrite._rename_members, draopt.cel.functions) and these implement its string forms.
"""

from __future__ import annotations


def _str_offset(s, sub, offset):
    # cel-go ext/strings.go: a negative offset is an error; one past the end finds only ""
    if offset < 0:
        raise ValueError(f"index out of range: {offset}")
    if offset > len(s):
        return len(s) if sub == "" else -1
    return None


def _fn_str_index_of(s, sub, offset=None):
    if offset is None:
        return s.find(sub)
    r = _str_offset(s, sub, offset)
    return s.find(sub, offset) if r is None else r


def _fn_str_last_index_of(s, sub, offset=None):
    if offset is None:
        return s.rfind(sub)
    r = _str_offset(s, sub, offset)
    return s.rfind(sub, 0, offset + len(sub)) if r is None else r
