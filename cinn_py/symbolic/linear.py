"""Linear forms of index expressions over loop variables, and what an index tuple determines.

The syntactic dependence tests (schedule primitives' legality, the interpreter's vectoriser) ask
whether the element an access touches determines a loop's iteration. They decide it without
islpy, which also covers symbolic divisors (`sp / S2`, `sp % S2` with a symbolic `S2`: not
quasi-affine), from three facts:

- `linear_form`: an index component as `sum k_a * a + rest`, `rest` free of the loop vars;
- `recover_div_mod`: a pair `(e / d, e % d)` of components determines `e` (C's identity
  `e == (e / d) * d + e % d`), also for a product divisor read as nested divisions;
- `mixed_radix`: `sum c_k * v_k` over `0 <= v_k < n_k` is injective when, sorted by coefficient,
  each coefficient exceeds the largest value of the smaller terms (a mixed-radix number).

`affine_coefficients` is the run-time variant (the interpreter's vectoriser): the coefficients
may be symbolic (`i * S1`), returned as loop-invariant expressions to evaluate once the symbols
are known, and a vector index (`Ramp`) counts its lane as one more variable.

`is_injective` (distinct points of a box give distinct index tuples) and `determines` (the tuple
fixes one loop var given the others' ranges) combine them. Ranges map a var to `(min, extent)`
(`VarRanges`, what the simplifier's `Analyzer` takes; `var_ranges(loops)` builds them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence, Set

from cinn_py.ir import (
    Add, Broadcast, Cast, Div, Expr, For, IntImm, Minus, Mod, Mul, Ramp, Sub, Var, int64, is_const_int, walk,
)
from cinn_py.symbolic import const_bounds, simplify
from cinn_py.symbolic.analyzer import VarRanges
from cinn_py.symbolic.integer import as_int

__all__ = ["affine_coefficients", "determines", "is_injective", "linear_form", "mixed_radix",
           "recover_div_mod",
           "var_ranges"]


def var_ranges(loops: Iterable[For]) -> dict[Var, tuple[Expr, Expr]]:
    """Loop var -> (min, extent) of each loop."""
    return {lp.loop_var: (lp.min, lp.extent) for lp in loops}


def _uses(e: Expr, vars_: Set[Var]) -> set[Var]:
    return {n for n in walk(e) if isinstance(n, Var) and n in vars_}


def linear_form(e: Expr, wanted: Set[Var], linear_in: Set[Var] | None = None) -> dict[Expr, int] | None:
    """`e` as `sum k_a * a + rest` where `rest` uses no var of `wanted`: the integer coefficient
    of each atom `a`. Atoms are the vars of `wanted` and, for the vars outside `linear_in`, the
    largest non-linear subterms over them (`i / 4` in `i / 4 + j` when `linear_in` is `{j}`).
    None when a var of `linear_in` (default: every var of `wanted`) occurs non-linearly."""
    strict = wanted if linear_in is None else linear_in
    coefs: dict[Expr, int] = {}

    def visit(node: Expr, scale: int) -> bool:
        used = _uses(node, wanted)
        if not used:
            return True
        if isinstance(node, Var):
            coefs[node] = coefs.get(node, 0) + scale
            return True
        if isinstance(node, Add):
            return visit(node.a, scale) and visit(node.b, scale)
        if isinstance(node, Sub):
            return visit(node.a, scale) and visit(node.b, -scale)
        if isinstance(node, Mul):
            for x, y in ((node.a, node.b), (node.b, node.a)):
                if is_const_int(y):
                    return visit(x, scale * int(y.value))
        if used & strict:
            return False
        coefs[node] = coefs.get(node, 0) + scale
        return True

    return coefs if visit(e, 1) else None


def affine_coefficients(e: Expr, loop_vars: Set[str], lane: str | None = None) -> dict[str, Expr] | None:
    """`e` as `sum c_v * v + rest` over the loop vars named in `loop_vars`: the coefficient of
    each var that occurs, an int64 expression free of the loop vars (symbolic coefficients such
    as `S1` in `i * S1` allowed); `rest` is free of them too. With `lane` set, a
    `Ramp(base, stride, lanes)` counts as `base + stride * <lane>` (its coefficient under the key
    `lane`); a `Broadcast` is its value and an integer-to-integer `Cast` its operand. None when a
    loop var occurs non-affinely (in a product of two of them, a division, a call, ...)."""
    if not _uses_names(e, loop_vars) and not isinstance(e, Ramp):
        return {}
    if isinstance(e, Var):
        return {e.name: IntImm(int64, 1)}
    if isinstance(e, (Add, Sub)):
        a, b = affine_coefficients(e.a, loop_vars, lane), affine_coefficients(e.b, loop_vars, lane)
        return None if a is None or b is None else _add_coefs(a, b, -1 if isinstance(e, Sub) else 1)
    if isinstance(e, Minus):
        return _scale_coefs(affine_coefficients(e.v, loop_vars, lane), IntImm(int64, -1))
    if isinstance(e, Mul):
        for factor, term in ((e.a, e.b), (e.b, e.a)):
            if not _uses_names(factor, loop_vars):
                return _scale_coefs(affine_coefficients(term, loop_vars, lane), factor)
        return None
    if isinstance(e, Cast) and e.dtype.is_integral and e.v.dtype.is_integral:
        return affine_coefficients(e.v, loop_vars, lane)
    if isinstance(e, Broadcast):
        return affine_coefficients(e.value, loop_vars, lane)
    if isinstance(e, Ramp) and lane is not None and not _uses_names(e.stride, loop_vars):
        base = affine_coefficients(e.base, loop_vars, lane)
        return None if base is None else _add_coefs(base, {lane: _as_int64(e.stride)}, 1)
    return None


def _uses_names(e: Expr, names: Set[str]) -> bool:
    return any(isinstance(n, Var) and n.name in names for n in walk(e))


def _as_int64(e: Expr) -> Expr:
    return e if e.dtype == int64 else Cast(int64, e)


def _add_coefs(a: dict[str, Expr], b: dict[str, Expr], sign: int) -> dict[str, Expr]:
    out = dict(a)
    for name, coef in b.items():
        term = coef if sign == 1 else _mul(IntImm(int64, -1), coef)
        out[name] = term if name not in out else _add(out[name], term)
    return out


def _scale_coefs(coefs: dict[str, Expr] | None, factor: Expr) -> dict[str, Expr] | None:
    return None if coefs is None else {name: _mul(_as_int64(factor), c) for name, c in coefs.items()}


def _add(a: Expr, b: Expr) -> Expr:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(int64, a.value + b.value)
    return Add(a, b)


def _mul(a: Expr, b: Expr) -> Expr:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(int64, a.value * b.value)
    if is_const_int(a, 1):
        return b
    return a if is_const_int(b, 1) else Mul(a, b)


def mixed_radix(terms: Iterable[tuple[int, int | None]]) -> bool:
    """Whether `sum c * v` over `(c, n)` terms (`0 <= v < n`; `n` None when not constant) takes
    distinct values at distinct points: sorted by coefficient, each positive coefficient exceeds
    the largest value of the smaller terms; an unknown extent is allowed for the largest only.
    Terms with `n == 1` are constants and ignored."""
    ordered = sorted((t for t in terms if t[1] != 1), key=lambda t: t[0])
    span = 0  # the largest value of the terms seen so far
    for k, (coef, extent) in enumerate(ordered):
        if coef <= span:
            return False
        if extent is None:
            if k != len(ordered) - 1:
                return False
            continue
        span += coef * (extent - 1)
    return True


def recover_div_mod(components: Sequence[Expr]) -> list[Expr]:
    """`components` with every pair `(e / d, e % d)` replaced by `e`, to a fixed point. A divisor
    that is a product is also read as nested divisions, `e / (a * b) == (e / b) / a` (C's
    truncation nests): a fused 3-d nest indexes `(f / (S0 * S1), (f / S1) % S0, f % S1)`, which
    recovers `f / S1` and then `f`."""
    out = list(components)
    changed = True
    while changed:
        changed = False
        for k, d in enumerate(out):
            if not isinstance(d, Div):
                continue
            pair = next(((m, form) for form in _div_forms(d) for m, other in enumerate(out)
                         if isinstance(other, Mod) and other.a == form.a and other.b == form.b), None)
            if pair is not None:
                m, form = pair
                out = [x for j, x in enumerate(out) if j not in (k, m)] + [simplify(form.a)]
                changed = True
                break
    return out


def _div_forms(d: Div) -> list[Div]:
    """`d` and, for a product divisor `a * b`, its nested forms `(e / b) / a` and `(e / a) / b`."""
    forms = [d]
    if isinstance(d.b, Mul):
        a, b = d.b.a, d.b.b
        forms += [Div(Div(d.a, b), a), Div(Div(d.a, a), b)]
    return forms


def is_injective(indices: Sequence[Expr], ranges: VarRanges) -> bool:
    """True when distinct points of the box `ranges` (every var starting at 0) always give
    distinct index tuples, other variables held fixed: after `recover_div_mod`, the vars split
    into disjoint groups, one per component, each a mixed-radix sum there. A var whose range has
    one point (a loop of extent 1: a row of a one-row reduction) has nothing to distinguish and
    need not occur."""
    wanted = {v for v, (_, extent) in ranges.items() if as_int(extent) != 1}
    covered: set[Var] = set()
    for comp in recover_div_mod([simplify(e) for e in indices]):
        used = _uses(comp, wanted)
        if not used:
            continue
        coefs = linear_form(comp, used)
        if used & covered or coefs is None or any(c <= 0 for c in coefs.values()):
            return False
        terms = {v: (c, as_int(ranges[v][1])) for v, c in coefs.items() if isinstance(v, Var)}
        if any(n != 1 and as_int(ranges[v][0]) != 0 for v, (_, n) in terms.items()):
            return False
        if not mixed_radix(terms.values()):
            return False
        covered |= used
    return covered == wanted


def determines(indices: Sequence[Expr], key: Var, ranges: VarRanges) -> bool:
    """True when the value of the index tuple fixes `key` (the vars of `ranges` in their ranges,
    everything else fixed): some component is `c*key + sum c_k a_k + rest` with either
    `sum |c_k| span(a_k) < |c|` (key is the most significant digit) or
    `|c| span(key) < gcd(c_k)` (key fits under the others)."""
    wanted = set(ranges)
    for comp in recover_div_mod(indices):
        terms = linear_form(comp, wanted, linear_in={key})
        if terms is None or terms.get(key, 0) == 0:
            continue
        c = abs(terms.pop(key))
        spans = [(abs(k), _span(atom, ranges)) for atom, k in terms.items() if k]
        known = [(k, s) for k, s in spans if s is not None]
        if len(known) == len(spans) and sum(k * s for k, s in known) < c:
            return True
        own = _span(key, ranges)
        if spans and own is not None and c * own < math.gcd(*(k for k, _ in spans)):
            return True
    return False


def _span(atom: Expr, ranges: VarRanges) -> int | None:
    """max - min of `atom` over the ranges, when constant."""
    if isinstance(atom, Var) and atom in ranges:
        extent = as_int(ranges[atom][1])
        return None if extent is None else extent - 1
    bounds = const_bounds(atom, ranges)
    return None if bounds is None else bounds[1] - bounds[0]
