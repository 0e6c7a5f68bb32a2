"""Kubernetes' regex library: ``find`` and ``findAll`` (k8s.io/apiserver/pkg/cel/library/regex.go)."""

from __future__ import annotations

import re
from functools import lru_cache


try:  # RE2, like Go's regexp (used by find/findAll)
    import re2 as _re2  # type: ignore
except Exception:  # pragma: no cover
    _re2 = re


@lru_cache(maxsize=1024)
def _regex(pattern: str):
    return _re2.compile(pattern)


def _fn_find(s, pattern):
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def _fn_find_all(s, pattern):
    return [m.group(0) for m in _regex(pattern).finditer(s)]


def _fn_find_all_n(s, pattern, n):
    if n == 0:
        return []
    out = []
    for m in _regex(pattern).finditer(s):
        out.append(m.group(0))
        if n > 0 and len(out) >= n:
            break
    return out
