"""Kubernetes' name formats (apimachinery's pkg/util/validation): each check returns its messages.

Objects layer: imports nothing of draopt, so that draopt.cel (whose format library checks
these formats) can import it without loading the rest of validation.
"""

from __future__ import annotations

import re


_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_C_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"

_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    f"validation is '{_DNS1123_LABEL}')"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_DNS1123_SUBDOMAIN}')"
)
_C_ID_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
    f"validation is '{_C_IDENTIFIER}')"
)
_QNAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{_QUALIFIED_NAME}')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE}')"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    f"regex used for validation is '{_DNS1035_LABEL}')"
)


def _full(pattern: str, s: str) -> bool:
    return re.fullmatch(pattern, s) is not None


def _length_and_pattern(s: str, limit: int, pattern: str, message: str, what: str = "") -> list[str]:
    """Kubernetes' usual pair of checks: a maximum length, then a pattern."""
    out = []
    if len(s) > limit:
        out.append(f"{what}must be no more than {limit} characters")
    if not _full(pattern, s):
        out.append(message)
    return out


def is_dns1123_label(s: str) -> list[str]:
    return _length_and_pattern(s, 63, _DNS1123_LABEL, _LABEL_MSG)


def is_dns1123_subdomain(s: str) -> list[str]:
    return _length_and_pattern(s, 253, _DNS1123_SUBDOMAIN, _SUBDOMAIN_MSG)


def is_c_identifier(s: str) -> list[str]:
    return [] if _full(_C_IDENTIFIER, s) else [_C_ID_MSG]


def is_qualified_label_name(s: str) -> list[str]:
    """IsQualifiedName (label keys, taint keys)."""
    parts = s.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        errs = is_dns1123_subdomain(prefix)
        if errs:
            return ["prefix part " + e for e in errs]
    else:
        return [
            "a qualified name "
            + _QNAME_MSG.replace("name part ", "", 1)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        return ["name part must be non-empty"]
    return _length_and_pattern(name, 63, _QUALIFIED_NAME, _QNAME_MSG, "name part ")


def is_dns1035_label(s: str) -> list[str]:
    return _length_and_pattern(s, 63, _DNS1035_LABEL, _DNS1035_MSG)


def is_label_value(s: str) -> list[str]:
    return _length_and_pattern(s, 63, _LABEL_VALUE, _LABEL_VALUE_MSG)
