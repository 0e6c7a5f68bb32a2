"""Past cel-cpp's iteration budget: comprehensions evaluated from Python.

cel-cpp stops an evaluation after 10,000 comprehension iterations; Kubernetes only has its cost
limit.  When the budget stops an evaluation that the cost limit would not, the expression is
compiled again with every comprehension replaced by a call ``__dra_loop(id, range, {captured
variables})``: a Python function that runs the macro over the range, evaluating its body
(compiled on its own, with the iteration and captured variables declared dyn) once per element,
with cel-go's semantics for errors (all/exists absorb an error when the result is decided by
another element), and counts the same cost as the ticks (draopt.cel.cost).  Each body evaluation
has its own budget.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Tuple

from draopt.cel.cost import (
    _COST_EXCEEDED,
    _COST_STATE,
    _LOOP_OVERHEAD,
    _PREDICATE_MACROS,
    _instrument,
    _instrument_terms,
    _iteration_costs,
)
from draopt.cel.device import _base_variables
from draopt.cel.errors import _runtime_message
from draopt.cel.functions import new_env
from draopt.cel.internal import _LOOP_FN
from draopt.cel.rewrite import _postfix_start, _rewrite_map_literals, _split_args, _tokenize
from draopt.cel.values import _ERROR_TYPE, _T


_LOOP_STATE = threading.local()
_LOOP_REGISTRY: list = []  # id -> (macro, variable names, body sources, captured names, env key)
_LOOP_ENVS: Dict[Tuple[Any, ...], Any] = {}
_LOOP_LOCK = threading.Lock()


def _offload(src: str, scope: Tuple[str, ...], env_key) -> str:
    """Replace every comprehension macro (and descend into cel.bind scopes) in src."""
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
    for j in range(len(sig)):
        kind, t = toks[sig[j]]
        nxt = toks[sig[j + 1]][1] if j + 1 < len(sig) else ""
        prev = toks[sig[j - 1]][1] if j > 0 else ""
        if kind != "id" or nxt != "(":
            continue
        if t == "bind" and prev == "." and j >= 2 and toks[sig[j - 2]][1] == "cel":
            close, args = _split_args(sig, toks, j + 1)
            if close is None or len(args) != 3 or args[0][1] - args[0][0] != 1:
                continue
            texts = ["".join(x for _, x in toks[sig[a] : sig[b]]) for a, b in args]
            name = texts[0].strip()
            new = (
                f"cel.bind({name}, {_offload(texts[1], scope, env_key)}, "
                f"{_offload(texts[2], scope + (name,), env_key)})"
            )
            head = "".join(x for _, x in toks[: sig[j - 2]])
            return head + new + _offload("".join(x for _, x in toks[sig[close] + 1 :]), scope, env_key)
        if t not in _LOOP_OVERHEAD or prev != ".":
            continue
        close, args = _split_args(sig, toks, j + 1)
        if close is None:
            continue
        if t in _PREDICATE_MACROS:
            nvars = len(args) - 1 if len(args) in (2, 3) else 0
        elif t == "map":
            nvars = 1 if len(args) in (2, 3) else 0
        else:
            nvars = 2 if len(args) in (3, 4) else 0
        if not nvars or not all(b - a == 1 and toks[sig[a]][0] == "id" for a, b in args[:nvars]):
            continue
        rs = _postfix_start(sig, toks, j - 2) if j >= 2 else None
        if rs is None:
            continue
        texts = ["".join(x for _, x in toks[sig[a] : sig[b]]) for a, b in args]
        names = tuple(x.strip() for x in texts[:nvars])
        receiver = _offload("".join(x for _, x in toks[sig[rs] : sig[j - 1]]), scope, env_key)
        inner_scope = scope + names
        bodies = [_offload(x, inner_scope, env_key) for x in texts[nvars:]]
        per_iter, kept = _iteration_costs(t, [_instrument(x)[1] for x in texts[nvars:]])
        # costs that depend on sizes known only at runtime (draopt.cel.cost._instrument_terms)
        runtime = [
            term[0]
            for x in texts[nvars:]
            for term in _instrument_terms(x, False, True, None, frozenset(inner_scope))[4]
        ]
        with _LOOP_LOCK:
            _LOOP_REGISTRY.append((t, names, bodies + [" + ".join(runtime)], scope, env_key, (per_iter, kept)))
            loop_id = len(_LOOP_REGISTRY) - 1
        caps = ", ".join(f'"{n}": {n}' for n in dict.fromkeys(scope))
        new = f"{_LOOP_FN}({loop_id}, dyn({receiver}), {{{caps}}})"
        head = "".join(x for _, x in toks[: sig[rs]])
        return _offload(head + new + "".join(x for _, x in toks[sig[close] + 1 :]), scope, env_key)
    return src


def _loop_env(env_key, names: Tuple[str, ...]):
    key = (env_key, tuple(sorted(set(names))))
    env = _LOOP_ENVS.get(key)
    if env is None:
        list_types = env_key
        variables = _base_variables()
        variables.update({n: _T.DYN for n in names})
        env = new_env(variables, list_types, _fn_loop)
        _LOOP_ENVS[key] = env
    return env


_LOOP_BODIES: Dict[Tuple[int, int], Any] = {}


def _loop_body(loop_id: int, k: int):
    hit = _LOOP_BODIES.get((loop_id, k))
    if hit is None:
        macro, names, bodies, scope, env_key, _ = _LOOP_REGISTRY[loop_id]
        env = _loop_env(env_key, names + scope)
        hit = _LOOP_BODIES[(loop_id, k)] = env.compile(_rewrite_map_literals(bodies[k]), disable_check=False)
    return hit


class _BodyError(Exception):
    pass


def _fn_loop(loop_id, rng, caps):
    macro, names, bodies, scope, env_key, (per_iter, kept_cost) = _LOOP_REGISTRY[loop_id]
    runtime_cost = len(bodies) - 1 if bodies[-1] else None  # the body computing runtime-size costs
    bodies = bodies[:-1]
    base = dict(_LOOP_STATE.data)
    base.update(caps)
    st = _COST_STATE
    env = _loop_env(env_key, names + scope)
    items = list(rng.items()) if isinstance(rng, dict) else list(enumerate(rng))
    if isinstance(rng, dict) and len(names) == 1:
        items = [(k, k) for k, _ in items]

    def run(k, i, v):
        data = dict(base)
        if len(names) == 1:
            data[names[0]] = v
        else:
            data[names[0]], data[names[1]] = i, v
        r = _loop_body(loop_id, k).eval(env.Activation(data))
        if r.type() == _ERROR_TYPE:
            raise _BodyError(_runtime_message(str(r.value())))
        return r.plain_value()

    out_list, out_map, count, error = [], {}, 0, None
    for i, v in items:
        st.cost += per_iter
        if runtime_cost is not None:
            try:
                st.cost += int(run(runtime_cost, i, v))
            except (_BodyError, TypeError, ValueError):
                pass  # a size of something not sized: the body reports it if it matters
        if st.cost > st.limit:
            raise ValueError(_COST_EXCEEDED)
        try:
            if macro in ("all", "exists"):
                p = run(0, i, v)
                if p is (macro == "exists"):
                    return p
                continue
            if macro in ("exists_one", "existsOne"):
                true = run(0, i, v) is True
                count += true
                st.cost += kept_cost if true else 0
                continue
            keep = True
            if macro == "filter" or len(bodies) == 2:
                keep = run(0, i, v) is True
            if not keep:
                continue
            st.cost += kept_cost
            if macro == "filter":
                out_list.append(v)
                continue
            value = run(len(bodies) - 1, i, v)
            if macro in ("map", "transformList"):
                out_list.append(value)
            elif macro == "transformMap":
                out_map[i] = value
            else:  # transformMapEntry
                for mk, mv in value.items():
                    if mk in out_map:
                        raise _BodyError(f"insert failed: key {mk} already exists")
                    out_map[mk] = mv
        except _BodyError as e:
            if macro in ("all", "exists"):
                error = error or str(e)
                continue
            raise ValueError(str(e)) from None
    if macro in ("all", "exists"):
        if error:
            raise ValueError(error)
        return macro == "all"
    if macro in ("exists_one", "existsOne"):
        return count == 1
    return out_map if macro in ("transformMap", "transformMapEntry") else out_list
