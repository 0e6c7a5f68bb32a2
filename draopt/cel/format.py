"""Kubernetes' format library (k8s.io/apiserver/pkg/cel/library/format.go).

``format.<name>()`` is declared per format (draopt.cel.functions); ``format.named(n)`` and
``<Format>.validate(s)`` return optionals, which a Python implementation cannot return through
the binding, so they are rewritten (draopt.cel.rewrite._rewrite_format) around the helpers here,
which return a plain Format and a list of messages.  The name formats are apimachinery's
(draopt.kube.names), as Kubernetes' library calls them.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List

from draopt.kube.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_label_name,
)
from draopt.cel.values import _FormatMsg

_UUID_RE = re.compile(r"(?i)^(?:urn:uuid:)?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})?$")


def _mask_trailing_dash(s: str) -> str:
    return s[:-1] + "a" if len(s) > 1 and s.endswith("-") else s


def _validate_uri(s: str) -> list:
    # Go's url.ParseRequestURI: an absolute URI or an absolute path, no fragment handling needed
    if not s:
        return [f'parse "{s}": empty url']
    if s.startswith("/"):
        return []
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", s, re.S)
    if not m:
        return [f'parse "{s}": invalid URI for request']
    return []


def _validate_byte(s: str) -> list:
    import base64

    try:
        base64.b64decode(s, validate=True)
        return []
    except Exception:
        return ["invalid base64"]


def _validate_date(s: str) -> list:
    import datetime as _dt

    try:
        if not _DATE_RE.match(s):
            raise ValueError
        _dt.date.fromisoformat(s)
        return []
    except ValueError:
        return ["invalid date"]


# every format of Kubernetes' library, in its order, and the check behind it
_FORMATS: Dict[str, Callable[[str], List[str]]] = {
    "dns1123Label": is_dns1123_label,
    "dns1123Subdomain": is_dns1123_subdomain,
    "dns1035Label": is_dns1035_label,
    "qualifiedName": is_qualified_label_name,
    "dns1123LabelPrefix": lambda s: is_dns1123_label(_mask_trailing_dash(s)),
    "dns1123SubdomainPrefix": lambda s: is_dns1123_subdomain(_mask_trailing_dash(s)),
    "dns1035LabelPrefix": lambda s: is_dns1035_label(_mask_trailing_dash(s)),
    "labelValue": is_label_value,
    "uri": _validate_uri,
    "uuid": lambda s: [] if _UUID_RE.match(s) else ["does not match the UUID format"],
    "byte": _validate_byte,
    "date": _validate_date,
    "datetime": lambda s: [] if _DATETIME_RE.match(s) else ["invalid datetime"],
}
_FORMAT_NAMES = tuple(_FORMATS)


def _fn_format_known(name):
    return name in _FORMATS


def _fn_format_named(name):
    if name not in _FORMATS:
        raise ValueError(f"unknown format {name}")
    return _FormatMsg(v=name)


def _fn_format_errors(fmt, s):
    return list(_FORMATS[fmt.v](s))
