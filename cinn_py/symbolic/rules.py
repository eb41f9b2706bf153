"""The simplifier's rules: one named identity each, valid in C semantics.

Each `Rule` rewrites one node whose children are already simplified and returns the new node or
None. `Analyzer.simplify` runs them bottom-up, re-simplifying every rewrite, until none applies.
Division and remainder are C's (truncate toward zero; the remainder takes the dividend's sign);
a rule that only holds for nonnegative operands says so and proves it with the range analysis
first. Overflow is not modelled (index arithmetic must not wrap, as in CINN/TVM).

Notation: `c`, `a`, `b` are positive integer constants; `x`, `y` index expressions; `d` a positive
symbolic divisor (a monomial of symbolic dims, `S0` or `S0 * S1`).

This module holds constant folding, sums, min/max, comparisons, logic, select and cast, and the
`RULES` table; the division and remainder rules are `rules_divmod`, `Rule` and the node
predicates `rules_base`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from cinn_py.ir import (
    Add, And, BinaryOp, Cast, CmpOp, Div, EQ, Expr, GE, GT, IntImm, LE, LT, LogicalOp, Max, Min, Minus, Mod,
    Mul, NE, Not, Or, Select, Sub,
)
from cinn_py.symbolic.analyzer import Analyzer
from cinn_py.symbolic.integer import c_div, c_mod
from cinn_py.symbolic.poly import Poly, is_index_dtype, to_poly
from cinn_py.symbolic.rules_base import Rule, _int, _pos_const, _bool, _true, _false, _index
from cinn_py.symbolic.rules_divmod import (
    div_by_one, div_exact, div_split_terms, div_small, div_of_div, div_gcd, div_of_mod, mod_by_one, mod_exact,
    mod_split_terms, mod_small, mod_of_mod, mod_gcd,
)


# ------------------------------------------------------------------------------------------------
# Constant folding and sums
# ------------------------------------------------------------------------------------------------
_FOLD: dict[type, Callable[[int, int], int]] = {
    Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b,
    Div: c_div, Mod: c_mod, Min: min, Max: max,
}


def fold_int_binary(node: BinaryOp, an: Analyzer) -> Expr | None:
    # c1 OP c2 -> c3  (C semantics; x / 0 and x % 0 are left alone)
    a, b = _int(node.a), _int(node.b)
    if a is None or b is None or node.a.dtype != node.b.dtype:
        return None
    if isinstance(node, (Div, Mod)) and b == 0:
        return None
    return IntImm(node.dtype, _FOLD[type(node)](a, b))


def merge_div_mod_pairs(p: Poly) -> Poly:
    """`(x / c) * (k * c) + (x % c) * k -> x * k`: C's identity `x == (x / c) * c + x % c`."""
    changed = True
    while changed:
        changed = False
        for mono, k in list(p.terms.items()):
            if len(mono) != 1 or not isinstance(mono[0], Mod):
                continue
            mod = mono[0]
            c = _int(mod.b)
            div_mono = _div_partner(p, mod)
            if c is None or c == 0 or div_mono is None or p.terms[div_mono] % c:
                continue
            m = p.terms[div_mono] // c  # p holds m*c*(x/c) + k*(x%c)
            if m * k <= 0:
                continue
            shared = min(abs(k), abs(m)) * (1 if k > 0 else -1)
            p = p - Poly({mono: shared, div_mono: shared * c}) + to_poly(mod.a).scale(shared)
            changed = True
            break
    return p


def _div_partner(p: Poly, mod: Mod) -> tuple[Expr, ...] | None:
    """The monomial `y / c` matching `y % c` in `p`; `x / (a * c)` stands for `(x / a) / c`."""
    candidates = [(Div(mod.a, mod.b),)]
    a, c = mod.a, _int(mod.b)
    if isinstance(a, Div) and (inner := _pos_const(a.b)) is not None and c is not None and c > 0:
        candidates.append((Div(a.a, IntImm(mod.dtype, inner * c)),))
    return next((m for m in candidates if m in p.terms), None)


def merge_min_max_pairs(p: Poly) -> Poly:
    """`min(x, y) * k + max(x, y) * k -> (x + y) * k`: the pair is always {x, y}."""
    for mono, k in list(p.terms.items()):
        if len(mono) != 1 or not isinstance(mono[0], Min):
            continue
        x, y = mono[0].a, mono[0].b
        partner = next((m for m in ((Max(x, y),), (Max(y, x),)) if m in p.terms), None)
        if partner is None or p.terms[partner] * k <= 0:
            continue
        shared = min(abs(k), abs(p.terms[partner])) * (1 if k > 0 else -1)
        p = p - Poly({mono: shared, partner: shared}) + (to_poly(x) + to_poly(y)).scale(shared)
    return p


def canonical_sum(node: Expr, an: Analyzer) -> Expr | None:
    # x + 0 -> x, x * 1 -> x, x * 0 -> 0, x - x -> 0, (i*8 + j) + 0 -> ((i * 8) + j): polynomial form
    if not is_index_dtype(node.dtype):
        return None
    return merge_min_max_pairs(merge_div_mod_pairs(to_poly(node))).to_expr(node.dtype)


# ------------------------------------------------------------------------------------------------
# Min / max, comparisons, logic, select, cast
# ------------------------------------------------------------------------------------------------
def min_max_same(node: BinaryOp, an: Analyzer) -> Expr | None:
    # min(x, x) -> x, max(x, x) -> x
    return node.a if node.a == node.b else None


def min_max_provable(node: BinaryOp, an: Analyzer) -> Expr | None:
    # min(x, y) -> x when x <= y;  max(x, y) -> y when x <= y
    if not _index(node):
        return None
    if an.prove_le(node.a, node.b):
        return node.a if isinstance(node, Min) else node.b
    if an.prove_le(node.b, node.a):
        return node.b if isinstance(node, Min) else node.a
    return None


def _decide_cmp(node: CmpOp, an: Analyzer) -> bool | None:
    """Truth of an integer comparison when provable from `d = a - b`."""
    d = to_poly(node.a) - to_poly(node.b)
    nonneg = an.bounds.prove_nonneg
    one = Poly.const(1)
    if isinstance(node, LT):
        return True if nonneg(-d - one) else False if nonneg(d) else None
    if isinstance(node, LE):
        return True if nonneg(-d) else False if nonneg(d - one) else None
    if isinstance(node, GT):
        return True if nonneg(d - one) else False if nonneg(-d) else None
    if isinstance(node, GE):
        return True if nonneg(d) else False if nonneg(-d - one) else None
    if d.is_const():
        return (d.constant == 0) == isinstance(node, EQ)
    if nonneg(d - one) or nonneg(-d - one):
        return isinstance(node, NE)
    return None


def compare_fold(node: CmpOp, an: Analyzer) -> Expr | None:
    # i < 32 -> true when i in [0, 32);  x == x -> true;  c1 < c2 -> bool
    if isinstance(node, LogicalOp) or not _index(node) or node.dtype.lanes != 1:
        return None
    truth = _decide_cmp(node, an)
    if truth is None:
        return None
    return _true() if truth else _false()


def _logic_fold(node: And | Or, absorbing: bool) -> Expr | None:
    """`absorbing` decides the result (false for `&&`, true for `||`), the other constant is the
    identity, and `x op x` is `x`."""
    a, b = _bool(node.a), _bool(node.b)
    if a is absorbing or b is absorbing:
        return _true() if absorbing else _false()
    if a is (not absorbing):
        return node.b
    if b is (not absorbing) or node.a == node.b:
        return node.a
    return None


def and_fold(node: And, an: Analyzer) -> Expr | None:
    # true && x -> x, false && x -> false, x && x -> x
    return _logic_fold(node, absorbing=False)


def or_fold(node: Or, an: Analyzer) -> Expr | None:
    # false || x -> x, true || x -> true, x || x -> x
    return _logic_fold(node, absorbing=True)


def min_max_common_terms(node: BinaryOp, an: Analyzer) -> Expr | None:
    # min(x + t, y + t) -> min(x, y) + t;  min(x * g, y * g) -> min(x, y) * g  (g > 0)
    if not _index(node):
        return None
    p, q = to_poly(node.a), to_poly(node.b)
    common = Poly({m: c for m, c in p.terms.items() if q.terms.get(m) == c})
    if common.terms and (p - common).terms and (q - common).terms:
        inner = type(node)((p - common).to_expr(node.dtype), (q - common).to_expr(node.dtype))
        return Add(inner, common.to_expr(node.dtype))
    g = math.gcd(*p.terms.values(), *q.terms.values())
    if g > 1 and not (p.is_const() and q.is_const()):
        inner = type(node)(Poly({m: c // g for m, c in p.terms.items()}).to_expr(node.dtype),
                           Poly({m: c // g for m, c in q.terms.items()}).to_expr(node.dtype))
        return Mul(inner, IntImm(node.dtype, g))
    return None


_NEGATED_CMP: dict[type, type] = {LT: GE, GE: LT, LE: GT, GT: LE, EQ: NE, NE: EQ}


def not_fold(node: Not, an: Analyzer) -> Expr | None:
    # !true -> false, !!x -> x, !(a < b) -> (a >= b) for integer a, b
    v = node.v
    if (b := _bool(v)) is not None:
        return _false() if b else _true()
    if isinstance(v, Not):
        return v.v
    if isinstance(v, CmpOp) and type(v) in _NEGATED_CMP and v.a.dtype.is_integral:
        return _NEGATED_CMP[type(v)](v.a, v.b)
    return None


def select_fold(node: Select, an: Analyzer) -> Expr | None:
    # select(true, x, y) -> x, select(false, x, y) -> y, select(c, x, x) -> x
    c = _bool(node.condition)
    if c is not None:
        return node.true_value if c else node.false_value
    if node.true_value == node.false_value:
        return node.true_value
    return None


def cast_fold(node: Cast, an: Analyzer) -> Expr | None:
    # T(x) -> x when x is already T;  int64(7) -> 7ll when the value fits
    v = node.v
    if v.dtype == node.dtype:
        return v
    value = _int(v)
    if value is not None and node.dtype.is_int and node.dtype.lanes == 1:
        half = 1 << (node.dtype.bits - 1)
        return IntImm(node.dtype, value) if -half <= value < half else None
    return None


def min_max_fold(node: BinaryOp, an: Analyzer) -> Expr | None:
    # min(c1, c2) -> c, max(c1, c2) -> c
    return fold_int_binary(node, an)


RULES: tuple[Rule, ...] = (
    Rule("fold_int_binary", (Add, Sub, Mul, Div, Mod), fold_int_binary),
    Rule("div_by_one", (Div,), div_by_one),
    Rule("div_exact", (Div,), div_exact),
    Rule("div_of_div", (Div,), div_of_div),
    Rule("div_small", (Div,), div_small),
    Rule("div_split_terms", (Div,), div_split_terms),
    Rule("div_gcd", (Div,), div_gcd),
    Rule("div_of_mod", (Div,), div_of_mod),
    Rule("mod_by_one", (Mod,), mod_by_one),
    Rule("mod_exact", (Mod,), mod_exact),
    Rule("mod_of_mod", (Mod,), mod_of_mod),
    Rule("mod_small", (Mod,), mod_small),
    Rule("mod_split_terms", (Mod,), mod_split_terms),
    Rule("mod_gcd", (Mod,), mod_gcd),
    Rule("canonical_sum", (Add, Sub, Mul, Minus), canonical_sum),
    Rule("min_max_fold", (Min, Max), min_max_fold),
    Rule("min_max_same", (Min, Max), min_max_same),
    Rule("min_max_provable", (Min, Max), min_max_provable),
    Rule("min_max_common_terms", (Min, Max), min_max_common_terms),
    Rule("compare_fold", (EQ, NE, LT, LE, GT, GE), compare_fold),
    Rule("and_fold", (And,), and_fold),
    Rule("or_fold", (Or,), or_fold),
    Rule("not_fold", (Not,), not_fold),
    Rule("select_fold", (Select,), select_fold),
    Rule("cast_fold", (Cast,), cast_fold),
)
"""Tried in order on each node; the first that rewrites wins, and the result is re-simplified."""

_BY_KIND: dict[type, tuple[Rule, ...]] = {}


def rules_for(kind: type) -> tuple[Rule, ...]:
    """The rules that apply to nodes of class `kind`, in `RULES` order."""
    cached = _BY_KIND.get(kind)
    if cached is None:
        cached = tuple(r for r in RULES if any(issubclass(kind, k) for k in r.kinds))
        _BY_KIND[kind] = cached
    return cached


__all__ = ["RULES", "Rule", "rules_for"]
