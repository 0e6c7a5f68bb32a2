"""Kubernetes' semver library (k8s.io/apiserver/pkg/cel/library/semverlib.go)."""

from __future__ import annotations

from functools import lru_cache

import semver as _semver

from draopt.cel.values import _s_msg, _s_py


def _parse_semver_strict(s: str) -> _semver.Version:
    return _semver.Version.parse(s)


def _normalize_semver(s: str) -> _semver.Version:
    # port of normalizeAndParse in k8s.io/apiserver/pkg/cel/library/semverlib.go
    if s.startswith("v"):
        s = s[1:]
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if len(p) == 0 or p[0] not in "0123456789":
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        while len(parts) < 3:
            parts.append("0")
    return _semver.Version.parse(".".join(parts))


@lru_cache(maxsize=4096)
def _semver_literal(s: str, normalize: bool):
    try:
        v = _normalize_semver(s) if normalize else _parse_semver_strict(s)
    except (ValueError, TypeError) as e:
        return ValueError(str(e))
    return _s_msg(v)


def _fn_semver(s):
    r = _semver_literal(s, False)
    if isinstance(r, Exception):
        raise r
    return r


def _fn_semver_n(s, n):
    r = _semver_literal(s, bool(n))
    if isinstance(r, Exception):
        raise r
    return r


def _fn_is_semver(s):
    return not isinstance(_semver_literal(s, False), Exception)


def _fn_is_semver_n(s, n):
    return not isinstance(_semver_literal(s, bool(n)), Exception)


@lru_cache(maxsize=65536)
def _s_compare_keys(x: str, y: str) -> int:
    # keys are versions without build metadata, which comparisons ignore
    return 0 if x == y else _semver.Version.parse(x).compare(_semver.Version.parse(y))


def _fn_s_cmp(a, b):
    return _s_compare_keys(a.v, b.v)


def _fn_s_gt(a, b):
    return _s_compare_keys(a.v, b.v) == 1


def _fn_s_lt(a, b):
    return _s_compare_keys(a.v, b.v) == -1


def _fn_s_major(a):
    return _s_py(a).major


def _fn_s_minor(a):
    return _s_py(a).minor


def _fn_s_patch(a):
    return _s_py(a).patch
