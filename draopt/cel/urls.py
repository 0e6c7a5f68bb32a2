"""Kubernetes' URL library (k8s.io/apiserver/pkg/cel/library/urls.go).

Go's url.ParseRequestURI (an absolute URI or an absolute path) and the accessors of its result.
"""

from __future__ import annotations

import re
from typing import Dict, NoReturn

from draopt.cel.values import _URLMsg


_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):(.*)$", re.S)


def _parse_url(s: str):
    def fail(why: str) -> NoReturn:
        raise ValueError(f'URL parse error during conversion from string: parse "{s}": {why}')

    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        fail("net/url: invalid control character in URL")
    if not s:
        fail("empty url")
    if s.startswith("/"):
        return "", "", s
    m = _URL_SCHEME.match(s)
    if not m:
        fail("invalid URI for request")
    scheme, rest = m.group(1), m.group(2)
    if rest.startswith("//"):
        rest = rest[2:]
        cut = min([i for i in (rest.find("/"), rest.find("?")) if i >= 0] or [len(rest)])
        host = rest[:cut].rpartition("@")[2]
        if " " in host:
            fail('invalid character " " in host name')
        if not host.startswith("["):
            port = host.rpartition(":")[2] if ":" in host else ""
            if port and not port.isdigit():
                fail(f'invalid port ":{port}" after host')
        return scheme, rest[:cut], rest[cut:]
    if not rest.startswith("/"):
        return scheme, "", rest  # opaque
    return scheme, "", rest


def _url_parts(m):
    scheme, host, tail = _parse_url(m.v)
    path, _, query = tail.partition("#")[0].partition("?")
    return scheme, host, path, query


def _fn_url(s):
    _parse_url(s)
    return _URLMsg(v=s)


def _fn_is_url(s):
    try:
        _parse_url(s)
        return True
    except ValueError:
        return False


def _fn_url_scheme(m):
    return _url_parts(m)[0]


def _fn_url_host(m):
    host = _url_parts(m)[1]
    return host.rpartition("@")[2]


def _url_host_port(m):
    host = _fn_url_host(m)
    if host.startswith("["):
        end = host.find("]")
        return host[1:end], host[end + 2 :] if host[end + 1 : end + 2] == ":" else ""
    name, sep, port = host.rpartition(":")
    return (name, port) if sep else (host, "")


def _fn_url_hostname(m):
    return _url_host_port(m)[0]


def _fn_url_port(m):
    return _url_host_port(m)[1]


def _fn_url_escaped_path(m):
    from urllib.parse import quote, unquote

    path = _url_parts(m)[2]
    return quote(unquote(path), safe="/:@!$&'()*+,;=-._~")


def _fn_url_query(m):
    from urllib.parse import parse_qs

    out: Dict[str, list] = {}
    for k, vs in parse_qs(_url_parts(m)[3], keep_blank_values=True).items():
        out[k] = vs
    return out
