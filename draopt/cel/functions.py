"""The function table of the environment: every library's declarations, and the cel-cpp
environment built from them.

The implementations are in the library modules (quantity, semverlib, regex, sets, lists,
strings, ip, urls, format, includes) and in draopt.cel.cost (the cost counter, the helpers of
transformMap).  The comprehension runner (draopt.cel.loops) builds environments with this table
too, so it is passed in (``loop_impl``) rather than imported: draopt.cel.loops imports this module.
"""

from __future__ import annotations

from cel_expr_python import cel as _cel
from cel_expr_python.ext import ext_bindings as _ext_bindings
from cel_expr_python.ext import ext_optional as _ext_optional

from draopt.cel.cost import _fn_merge_maps, _fn_tick, _fn_to_map
from draopt.cel.format import _FORMAT_NAMES, _fn_format_errors, _fn_format_known, _fn_format_named
from draopt.cel.includes import _fn_includes_list, _fn_includes_scalar
from draopt.cel.formatting import _fn_format
from draopt.cel.internal import (
    _FORMAT,
    _FORMAT_ERRORS,
    _FORMAT_KNOWN,
    _FORMAT_NAMED,
    _LOOP_FN,
    _MERGE_MAPS,
    _RENAMED,
    _TICK,
    _TO_MAP,
)
from draopt.cel.ip import (
    _fn_cidr,
    _fn_cidr_contains_cidr,
    _fn_cidr_contains_ip,
    _fn_cidr_ip,
    _fn_cidr_masked,
    _fn_cidr_prefix_length,
    _fn_ip,
    _fn_ip_family,
    _fn_ip_is_canonical,
    _fn_ip_is_global_unicast,
    _fn_ip_is_link_local_multicast,
    _fn_ip_is_link_local_unicast,
    _fn_ip_is_loopback,
    _fn_ip_is_unspecified,
    _fn_is_cidr,
    _fn_is_ip,
)
from draopt.cel.lists import (
    _fn_list_index_of,
    _fn_list_is_sorted,
    _fn_list_last_index_of,
    _fn_list_max,
    _fn_list_min,
    _fn_list_sum,
)
from draopt.cel.quantity import (
    _fn_is_quantity,
    _fn_q_add,
    _fn_q_add_int,
    _fn_q_cmp,
    _fn_q_float,
    _fn_q_gt,
    _fn_q_int,
    _fn_q_is_int,
    _fn_q_lt,
    _fn_q_sign,
    _fn_q_sub,
    _fn_q_sub_int,
    _fn_quantity,
)
from draopt.cel.regex import _fn_find, _fn_find_all, _fn_find_all_n
from draopt.cel.semverlib import (
    _fn_is_semver,
    _fn_is_semver_n,
    _fn_s_cmp,
    _fn_s_gt,
    _fn_s_lt,
    _fn_s_major,
    _fn_s_minor,
    _fn_s_patch,
    _fn_semver,
    _fn_semver_n,
)
from draopt.cel.sets import _fn_sets_contains, _fn_sets_equivalent, _fn_sets_intersects
from draopt.cel.strings import _fn_str_index_of, _fn_str_last_index_of
from draopt.cel.urls import (
    _fn_is_url,
    _fn_url,
    _fn_url_escaped_path,
    _fn_url_host,
    _fn_url_hostname,
    _fn_url_port,
    _fn_url_query,
    _fn_url_scheme,
)
from draopt.cel.values import _CIDRT, _FORMATT, _IPT, _POOL, _QT, _ST, _URLT, _FormatMsg, _QMsg, _T


# Extensions of Kubernetes' base environment that cel-cpp provides, at the versions
# Kubernetes pins (apiserver/pkg/cel/environment/base.go): strings v2 (1.29), two-variable
# comprehensions (1.32), lists v3 (1.34; cel-cpp's lists v2 has the same functions: slice,
# flatten, lists.range, reverse, distinct, sort, sortBy; v3 changed cel-go's cost estimates only).
_EXTENSIONS_YAML = """
extensions:
  - name: strings
    version: 2
  - name: lists
    version: 2
  - name: two-var-comprehensions
"""


# isGreaterThan / isLessThan / compareTo exist for quantity and semver: one declaration per name
# holds both overloads, and one implementation (per runtime kind) dispatches on the receiver.
def _fn_gt(a, b):
    if type(a) is _QMsg:
        return _fn_q_gt(a, b)
    return _fn_s_gt(a, b)


def _fn_lt(a, b):
    if type(a) is _QMsg:
        return _fn_q_lt(a, b)
    return _fn_s_lt(a, b)


def _fn_cmp(a, b):
    if type(a) is _QMsg:
        return _fn_q_cmp(a, b)
    return _fn_s_cmp(a, b)


def _runtime_kind(t) -> str:
    # both custom types are protobuf messages: the same runtime kind
    if t == _QT or t == _ST:
        return "message"
    return t.name().split("<")[0]


def _decl(name, overloads):
    """FunctionDecl whose overloads share one implementation per runtime kind
    signature (cel-cpp refuses two implementations for the same kinds)."""
    seen = set()
    ovs = []
    for oid, ret, params, member, impl in overloads:
        sig = (member, tuple(_runtime_kind(p) for p in params))
        if sig in seen:
            ovs.append(_cel.Overload(oid, return_type=ret, parameters=params, is_member=member))
        else:
            seen.add(sig)
            ovs.append(_cel.Overload(oid, return_type=ret, parameters=params, is_member=member, impl=impl))
    return _cel.FunctionDecl(name, ovs)


def _quantity_and_semver_functions() -> list:
    """Kubernetes' quantity and semver libraries (their comparisons share overload names)."""
    T = _T
    QT, ST = _QT, _ST
    return [
        _decl("quantity", [("string_to_quantity", QT, [T.STRING], False, _fn_quantity)]),
        _decl("isQuantity", [("is_quantity_string", T.BOOL, [T.STRING], False, _fn_is_quantity)]),
        _decl("sign", [("quantity_sign", T.INT, [QT], False, _fn_q_sign)]),
        _decl(
            "isGreaterThan",
            [
                ("quantity_is_greater_than", T.BOOL, [QT, QT], True, _fn_gt),
                ("semver_is_greater_than", T.BOOL, [ST, ST], True, _fn_gt),
            ],
        ),
        _decl(
            "isLessThan",
            [
                ("quantity_is_less_than", T.BOOL, [QT, QT], True, _fn_lt),
                ("semver_is_less_than", T.BOOL, [ST, ST], True, _fn_lt),
            ],
        ),
        _decl(
            "compareTo",
            [
                ("quantity_compare_to", T.INT, [QT, QT], True, _fn_cmp),
                ("semver_compare_to", T.INT, [ST, ST], True, _fn_cmp),
            ],
        ),
        _decl("asApproximateFloat", [("quantity_get_float", T.DOUBLE, [QT], True, _fn_q_float)]),
        _decl("asInteger", [("quantity_get_int", T.INT, [QT], True, _fn_q_int)]),
        _decl("isInteger", [("quantity_is_integer", T.BOOL, [QT], True, _fn_q_is_int)]),
        _decl(
            "add",
            [
                ("quantity_add", QT, [QT, QT], True, _fn_q_add),
                ("quantity_add_int", QT, [QT, T.INT], True, _fn_q_add_int),
            ],
        ),
        _decl(
            "sub",
            [
                ("quantity_sub", QT, [QT, QT], True, _fn_q_sub),
                ("quantity_sub_int", QT, [QT, T.INT], True, _fn_q_sub_int),
            ],
        ),
        _decl(
            "semver",
            [
                ("string_to_semver", ST, [T.STRING], False, _fn_semver),
                ("string_bool_to_semver", ST, [T.STRING, T.BOOL], False, _fn_semver_n),
            ],
        ),
        _decl(
            "isSemver",
            [
                ("is_semver_string", T.BOOL, [T.STRING], False, _fn_is_semver),
                ("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], False, _fn_is_semver_n),
            ],
        ),
        _decl("major", [("semver_major", T.INT, [ST], True, _fn_s_major)]),
        _decl("minor", [("semver_minor", T.INT, [ST], True, _fn_s_minor)]),
        _decl("patch", [("semver_patch", T.INT, [ST], True, _fn_s_patch)]),
    ]


def _regex_and_sets_functions() -> list:
    """Kubernetes' regex library and cel-go's ext.Sets."""
    T = _T
    return [
        _decl("find", [("string_find_string", T.STRING, [T.STRING, T.STRING], True, _fn_find)]),
        _decl(
            "findAll",
            [
                ("string_find_all_string", T.List(T.STRING), [T.STRING, T.STRING], True, _fn_find_all),
                ("string_find_all_string_int", T.List(T.STRING), [T.STRING, T.STRING, T.INT], True, _fn_find_all_n),
            ],
        ),
        # cel-go ext.Sets
        _decl("sets.contains", [("list_sets_contains_list", T.BOOL, [T.LIST, T.LIST], False, _fn_sets_contains)]),
        _decl("sets.equivalent", [("list_sets_equivalent_list", T.BOOL, [T.LIST, T.LIST], False, _fn_sets_equivalent)]),
        _decl("sets.intersects", [("list_sets_intersects_list", T.BOOL, [T.LIST, T.LIST], False, _fn_sets_intersects)]),
    ]


def _list_functions() -> list:
    """Kubernetes' lists library."""
    T = _T
    QT, ST = _QT, _ST
    fns = []
    # Kubernetes lists library: one overload per element type as Kubernetes declares them
    # (cel-cpp calls one implementation per runtime kind; all list overloads share it).
    comparable = [
        ("int", T.INT),
        ("uint", T.UINT),
        ("double", T.DOUBLE),
        ("bool", T.BOOL),
        ("duration", T.DURATION),
        ("timestamp", T.TIMESTAMP),
        ("string", T.STRING),
        ("bytes", T.BYTES),
    ]
    summable = [("int", T.INT), ("uint", T.UINT), ("double", T.DOUBLE), ("duration", T.DURATION)]
    fns.append(
        _decl(
            "isSorted",
            [(f"list_{n}_is_sorted_bool", T.BOOL, [T.List(t)], True, _fn_list_is_sorted) for n, t in comparable],
        )
    )

    # The binding converts an implementation's result to the return type of the overload that
    # carries it, so that overload (the least used element type: duration, bytes) returns dyn.
    def _first_dyn(ovs):
        return [(ovs[-1][0], T.DYN) + ovs[-1][2:]] + ovs[:-1]

    fns.append(
        _decl("sum", _first_dyn([(f"list_{n}_sum_{n}", t, [T.List(t)], True, _fn_list_sum) for n, t in summable]))
    )
    fns.append(
        _decl("min", _first_dyn([(f"list_{n}_min_{n}", t, [T.List(t)], True, _fn_list_min) for n, t in comparable]))
    )
    fns.append(
        _decl("max", _first_dyn([(f"list_{n}_max_{n}", t, [T.List(t)], True, _fn_list_max) for n, t in comparable]))
    )
    elem = comparable + [("quantity", QT), ("semver", ST), ("list", T.LIST), ("map", T.MAP)]
    # indexOf / lastIndexOf are declared by the strings extension too, and cel-cpp cannot add
    # overloads to a function an extension declares: member calls are renamed (_rename_members)
    # to one function with the strings extension's overloads and the lists library's.
    for name, lst_impl, str_impl in (
        ("indexOf", _fn_list_index_of, _fn_str_index_of),
        ("lastIndexOf", _fn_list_last_index_of, _fn_str_last_index_of),
    ):
        fns.append(
            _decl(
                _RENAMED[name],
                [
                    (f"string_{name}", T.INT, [T.STRING, T.STRING], True, str_impl),
                    (f"string_{name}_int", T.INT, [T.STRING, T.STRING, T.INT], True, str_impl),
                ]
                + [(f"list_{n}_{name}_int", T.INT, [T.List(t), t], True, lst_impl) for n, t in elem],
            )
        )
    return fns


def _ip_functions() -> list:
    """IP / CIDR (Kubernetes 1.30)."""
    T = _T
    IPT, CIDRT = _IPT, _CIDRT
    return [
        _decl("ip", [("string_to_ip", IPT, [T.STRING], False, _fn_ip), ("cidr_ip", IPT, [CIDRT], True, _fn_cidr_ip)]),
        _decl("isIP", [("is_ip", T.BOOL, [T.STRING], False, _fn_is_ip)]),
        _decl("ip.isCanonical", [("ip_is_canonical", T.BOOL, [T.STRING], False, _fn_ip_is_canonical)]),
        _decl("family", [("ip_family", T.INT, [IPT], True, _fn_ip_family)]),
        _decl("isUnspecified", [("ip_is_unspecified", T.BOOL, [IPT], True, _fn_ip_is_unspecified)]),
        _decl("isLoopback", [("ip_is_loopback", T.BOOL, [IPT], True, _fn_ip_is_loopback)]),
        _decl(
            "isLinkLocalMulticast",
            [("ip_is_link_local_multicast", T.BOOL, [IPT], True, _fn_ip_is_link_local_multicast)],
        ),
        _decl("isLinkLocalUnicast", [("ip_is_link_local_unicast", T.BOOL, [IPT], True, _fn_ip_is_link_local_unicast)]),
        _decl("isGlobalUnicast", [("ip_is_global_unicast", T.BOOL, [IPT], True, _fn_ip_is_global_unicast)]),
        _decl("cidr", [("string_to_cidr", CIDRT, [T.STRING], False, _fn_cidr)]),
        _decl("isCIDR", [("is_cidr", T.BOOL, [T.STRING], False, _fn_is_cidr)]),
        _decl(
            "containsIP",
            [
                ("cidr_contains_ip_string", T.BOOL, [CIDRT, T.STRING], True, _fn_cidr_contains_ip),
                ("cidr_contains_ip_ip", T.BOOL, [CIDRT, IPT], True, _fn_cidr_contains_ip),
            ],
        ),
        _decl(
            "containsCIDR",
            [
                ("cidr_contains_cidr_string", T.BOOL, [CIDRT, T.STRING], True, _fn_cidr_contains_cidr),
                ("cidr_contains_cidr", T.BOOL, [CIDRT, CIDRT], True, _fn_cidr_contains_cidr),
            ],
        ),
        _decl("masked", [("cidr_masked", CIDRT, [CIDRT], True, _fn_cidr_masked)]),
        _decl("prefixLength", [("cidr_prefix_length", T.INT, [CIDRT], True, _fn_cidr_prefix_length)]),
    ]


def _url_functions() -> list:
    """URLs (Kubernetes base environment since 1.0)."""
    T = _T
    URLT = _URLT
    return [
        _decl("url", [("string_to_url", URLT, [T.STRING], False, _fn_url)]),
        _decl("isURL", [("is_url_string", T.BOOL, [T.STRING], False, _fn_is_url)]),
        _decl("getScheme", [("url_get_scheme", T.STRING, [URLT], True, _fn_url_scheme)]),
        _decl("getHost", [("url_get_host", T.STRING, [URLT], True, _fn_url_host)]),
        _decl("getHostname", [("url_get_hostname", T.STRING, [URLT], True, _fn_url_hostname)]),
        _decl("getPort", [("url_get_port", T.STRING, [URLT], True, _fn_url_port)]),
        _decl("getEscapedPath", [("url_get_escaped_path", T.STRING, [URLT], True, _fn_url_escaped_path)]),
        _decl("getQuery", [("url_get_query", T.Map(T.STRING, T.List(T.STRING)), [URLT], True, _fn_url_query)]),
    ]


def _format_functions() -> list:
    """The format library (Kubernetes 1.31) and cel-go's string.format."""
    T = _T
    fns = []
    # format library (Kubernetes 1.31): format.<name>() and, through _rewrite_format,
    # format.named() and <Format>.validate()
    for fname in _FORMAT_NAMES:
        fns.append(
            _decl(
                f"format.{fname}",
                [(f"format.{fname}", _FORMATT, [], False, (lambda n: lambda: _FormatMsg(v=n))(fname))],
            )
        )
    fns.append(_decl(_FORMAT_KNOWN, [(_FORMAT_KNOWN, T.BOOL, [T.STRING], False, _fn_format_known)]))
    fns.append(_decl(_FORMAT_NAMED, [(_FORMAT_NAMED, _FORMATT, [T.STRING], False, _fn_format_named)]))
    fns.append(
        _decl(_FORMAT_ERRORS, [(_FORMAT_ERRORS, T.List(T.STRING), [_FORMATT, T.STRING], True, _fn_format_errors)])
    )
    # "...".format([...]) with cel-go's formatter (member calls renamed by _rename_members)
    fns.append(_decl(_FORMAT, [("string_format_list", T.STRING, [T.STRING, T.LIST], True, _fn_format)]))
    return fns


def _internal_functions(loop_impl) -> list:
    """draopt's own helpers that rewritten expressions call (cost ticks, loops run from Python,
    list-to-map conversions)."""
    T = _T
    fns = [_decl(_TICK, [(f"{_TICK}_int", T.BOOL, [T.INT], False, _fn_tick)])]
    if loop_impl is not None:
        fns.append(
            _decl(
                _LOOP_FN,
                [
                    (f"{_LOOP_FN}_list", T.DYN, [T.INT, T.LIST, T.MAP], False, loop_impl),
                    (f"{_LOOP_FN}_map", T.DYN, [T.INT, T.MAP, T.MAP], False, loop_impl),
                ],
            )
        )
    fns.append(_decl(_TO_MAP, [(f"{_TO_MAP}_list", T.Map(T.DYN, T.DYN), [T.LIST], True, _fn_to_map)]))
    fns.append(_decl(_MERGE_MAPS, [(f"{_MERGE_MAPS}_list", T.Map(T.DYN, T.DYN), [T.LIST], True, _fn_merge_maps)]))
    return fns


def _includes_functions() -> list:
    """ListTypeAttributes' includes(), one overload per pair of concrete kinds."""
    T = _T
    QT, ST = _QT, _ST
    # Kubernetes declares one overload dra_includes_dyn_dyn.  cel-cpp never
    # matches dyn parameters at runtime, so enumerate the concrete kinds.
    kinds = [
        ("bool", T.BOOL),
        ("int", T.INT),
        ("uint", T.UINT),
        ("double", T.DOUBLE),
        ("string", T.STRING),
        ("bytes", T.BYTES),
        ("quantity", QT),
        ("semver", ST),
    ]
    ovs = []
    for an, at in kinds:
        ovs.append((f"dra_includes_list_{an}", T.BOOL, [T.LIST, at], True, _fn_includes_list))
    for tn, tt in kinds:
        for an, at in kinds:
            ovs.append((f"dra_includes_{tn}_{an}", T.BOOL, [tt, at], True, _fn_includes_scalar))
    return [_decl("includes", ovs)]


def _build_functions(list_type_attributes: bool, loop_impl):
    """Every function declaration of the environment, family by family (the order cel-cpp gets)."""
    fns = _quantity_and_semver_functions()
    fns += _regex_and_sets_functions()
    fns += _list_functions()
    fns += _ip_functions()
    fns += _url_functions()
    fns += _format_functions()
    fns += _internal_functions(loop_impl)
    if list_type_attributes:
        fns += _includes_functions()
    return fns


def new_env(variables, list_type_attributes: bool, loop_impl):
    """A cel-cpp environment with Kubernetes' extensions, these functions and ``variables``."""
    return _cel.NewEnv(
        _POOL,
        variables=variables,
        config=_cel.NewEnvConfigFromYaml(_EXTENSIONS_YAML),
        extensions=[
            _ext_bindings.ExtBindings(),
            _ext_optional.ExtOptional(),
        ],
        functions=_build_functions(list_type_attributes, loop_impl),
    )
