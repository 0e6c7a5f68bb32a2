"""Kubernetes' IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library/ip.go, cidr.go).

Go's net/netip semantics through Python's ipaddress; values are messages holding the canonical
text.
"""

from __future__ import annotations

import ipaddress

from draopt.cel.values import _CIDRMsg, _IPMsg


def _parse_ip(s: str):
    if "%" in s:
        raise ValueError(f'IP address "{s}" with zone value is not allowed')
    try:
        a = ipaddress.ip_address(s)
    except ValueError as e:
        raise ValueError(f'IP Address "{s}" parse error during conversion from string: {e}') from None
    if a.version == 6 and a.ipv4_mapped is not None:
        raise ValueError(f'IPv4-mapped IPv6 address "{s}" is not allowed')
    return a


def _parse_cidr(s: str):
    if "%" in s:
        raise ValueError(f'CIDR "{s}" with zone value is not allowed')
    addr, sep, bits = s.partition("/")
    try:
        if not sep or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
            raise ValueError("no '/' or invalid prefix length")
        iface = ipaddress.ip_interface(s)
    except ValueError as e:
        raise ValueError(f"network address parse error during conversion from string: {e}") from None
    if iface.version == 6 and iface.ip.ipv4_mapped is not None:
        raise ValueError(f'IPv4-mapped IPv6 address "{s}" is not allowed')
    return iface


def _ip_py(m):
    return ipaddress.ip_address(m.v)


def _cidr_py(m):
    return ipaddress.ip_interface(m.v)


def _fn_ip(s):
    return _IPMsg(v=str(_parse_ip(s)))


def _fn_is_ip(s):
    try:
        _parse_ip(s)
        return True
    except ValueError:
        return False


def _fn_ip_is_canonical(s):
    return str(_parse_ip(s)) == s


def _fn_ip_family(m):
    return _ip_py(m).version


def _fn_ip_is_unspecified(m):
    return _ip_py(m).is_unspecified


def _fn_ip_is_loopback(m):
    a = _ip_py(m)
    return a in _V4_LOOPBACK if a.version == 4 else a == _V6_LOOPBACK


def _fn_ip_is_link_local_multicast(m):
    a = _ip_py(m)
    if a.version == 4:
        return a in _V4_LL_MULTICAST
    b = a.packed
    return b[0] == 0xFF and (b[1] & 0x0F) == 0x02


def _fn_ip_is_link_local_unicast(m):
    a = _ip_py(m)
    return a in (_V4_LL_UNICAST if a.version == 4 else _V6_LL_UNICAST)


def _fn_ip_is_global_unicast(m):
    a = _ip_py(m)
    if a.is_unspecified or a.is_multicast or _fn_ip_is_loopback(m) or _fn_ip_is_link_local_unicast(m):
        return False
    return not (a.version == 4 and a == _V4_BROADCAST)


_V4_LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
_V6_LOOPBACK = ipaddress.ip_address("::1")
_V4_LL_MULTICAST = ipaddress.ip_network("224.0.0.0/24")
_V4_LL_UNICAST = ipaddress.ip_network("169.254.0.0/16")
_V6_LL_UNICAST = ipaddress.ip_network("fe80::/10")
_V4_BROADCAST = ipaddress.ip_address("255.255.255.255")


def _cidr_text(iface) -> str:
    return f"{iface.ip}/{iface.network.prefixlen}"


def _fn_cidr(s):
    return _CIDRMsg(v=_cidr_text(_parse_cidr(s)))


def _fn_is_cidr(s):
    try:
        _parse_cidr(s)
        return True
    except ValueError:
        return False


def _fn_cidr_contains_ip(m, other):
    net = _cidr_py(m).network
    a = _ip_py(other) if type(other) is _IPMsg else _parse_ip(other)
    return a.version == net.version and a in net


def _fn_cidr_contains_cidr(m, other):
    net = _cidr_py(m).network
    o = (_cidr_py(other) if type(other) is _CIDRMsg else _parse_cidr(other)).network
    return o.version == net.version and o.subnet_of(net)


def _fn_cidr_ip(m):
    return _IPMsg(v=str(_cidr_py(m).ip))


def _fn_cidr_masked(m):
    net = _cidr_py(m).network
    return _CIDRMsg(v=f"{net.network_address}/{net.prefixlen}")


def _fn_cidr_prefix_length(m):
    return _cidr_py(m).network.prefixlen
