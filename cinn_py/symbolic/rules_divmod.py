"""The simplifier's division and remainder rules (`rules` lists them in `RULES`): C semantics
(truncate toward zero; the remainder takes the dividend's sign), rules that hold for nonnegative
operands only proving it with the range analysis first. Divisors may be positive constants or
positive symbolic monomials (`S0`, `S0 * S1`): exact quotients, splitting a sum into the terms
the divisor divides and the rest, nested div/mod, common factors (gcd).
"""

from __future__ import annotations

from functools import lru_cache

from cinn_py.ir import Add, BinaryOp, Div, Expr, IntImm, Mod, Mul
from cinn_py.symbolic.analyzer import Analyzer
from cinn_py.symbolic.poly import Poly, to_poly
from cinn_py.symbolic.rules_base import _index, _int, _pos_const


# ------------------------------------------------------------------------------------------------
# Division and remainder
# ------------------------------------------------------------------------------------------------
def _split_by(p: Poly, divisor: Poly) -> tuple[Poly, Poly]:
    """(quotient q, rest r) with `p == q * divisor + r`, taking every term divisor divides."""
    (dmono, dcoef), = divisor.terms.items()
    q: dict[tuple[Expr, ...], int] = {}
    r: dict[tuple[Expr, ...], int] = {}
    for mono, coef in p.terms.items():
        rest = _mono_quotient(mono, dmono)
        if rest is not None and coef % dcoef == 0:
            q[rest] = q.get(rest, 0) + coef // dcoef
        else:
            r[mono] = coef
    return Poly(q), Poly(r)


def _mono_quotient(mono: tuple[Expr, ...], dmono: tuple[Expr, ...]) -> tuple[Expr, ...] | None:
    rest = list(mono)
    for atom in dmono:
        if atom not in rest:
            return None
        rest.remove(atom)
    return tuple(rest)


def _divisor_poly(node: BinaryOp, an: Analyzer) -> Poly | None:
    """The divisor as a single positive term (`8`, `S0`, `4 * S0`), else None."""
    d = to_poly(node.b)
    if len(d.terms) != 1:
        return None
    ((mono, coef),) = d.terms.items()
    if coef <= 0:
        return None
    if mono and not an.bounds.prove_nonneg(d - Poly.const(1)):
        return None
    return d


def _split_dividend(node: Div | Mod, an: Analyzer) -> tuple[Poly, Poly] | None:
    """`(q, r)` with `x == q * d + r` for `x / d` or `x % d` with a single-term divisor `d`."""
    if not _index(node) or (d := _divisor_poly(node, an)) is None:
        return None
    return _split_by(to_poly(node.a), d)


def _split_nonneg_terms(node: Div | Mod, an: Analyzer) -> tuple[Poly, Poly] | None:
    """`(q, r)`, both non-empty, when `x == q * d + r` with `x >= 0` and `r >= 0`, where C's
    truncating division is floor division and `q * d` can be split off."""
    split = _split_dividend(node, an)
    if split is None:
        return None
    q, r = split
    if not q.terms or not r.terms:
        return None
    if not (an.bounds.prove_nonneg(r) and an.bounds.prove_nonneg(to_poly(node.a))):
        return None
    return q, r


def div_by_one(node: Div, an: Analyzer) -> Expr | None:
    # x / 1 -> x
    return node.a if _int(node.b) == 1 else None


def div_exact(node: Div, an: Analyzer) -> Expr | None:
    # (x * d) / d -> x  (exact division: valid for any sign)
    split = _split_dividend(node, an)
    if split is None:
        return None
    q, r = split
    return q.to_expr(node.dtype) if not r.terms else None


def div_split_terms(node: Div, an: Analyzer) -> Expr | None:
    # (x * d + r) / d -> x + r / d   when x*d + r >= 0 and r >= 0 (floor == trunc there)
    split = _split_nonneg_terms(node, an)
    if split is None:
        return None
    q, r = split
    return Add(q.to_expr(node.dtype), Div(r.to_expr(node.dtype), node.b))


def div_small(node: Div, an: Analyzer) -> Expr | None:
    # x / d -> 0   when -d < x < d
    if not _index(node) or (d := _divisor_poly(node, an)) is None:
        return None
    x = to_poly(node.a)
    if an.bounds.prove_nonneg(d - x - Poly.const(1)) and an.bounds.prove_nonneg(d + x - Poly.const(1)):
        return IntImm(node.dtype, 0)
    return None


def div_of_div(node: Div, an: Analyzer) -> Expr | None:
    # (x / a) / b -> x / (a * b)   (truncation nests for positive a, b)
    inner = node.a
    b = _pos_const(node.b)
    if not isinstance(inner, Div) or b is None or (a := _pos_const(inner.b)) is None:
        return None
    return Div(inner.a, IntImm(node.dtype, a * b))


def div_gcd(node: Div, an: Analyzer) -> Expr | None:
    # (x * g + r) / (g * m) -> x / m   when x >= 0 and 0 <= r < g
    found = _gcd_split(node, an)
    if found is None:
        return None
    x, _, g, m = found
    return Div(x.to_expr(node.dtype), IntImm(node.dtype, m)) if m != 1 else x.to_expr(node.dtype)


def div_of_mod(node: Div, an: Analyzer) -> Expr | None:
    # (x % (a * b)) / a -> (x / a) % b   when x >= 0
    inner = node.a
    a = _pos_const(node.b)
    if not isinstance(inner, Mod) or a is None or (ab := _pos_const(inner.b)) is None:
        return None
    if ab % a or not an.prove_nonneg(inner.a):
        return None
    return Mod(Div(inner.a, node.b), IntImm(node.dtype, ab // a))


def mod_by_one(node: Mod, an: Analyzer) -> Expr | None:
    # x % 1 -> 0
    return IntImm(node.dtype, 0) if _int(node.b) in (1, -1) else None


def mod_exact(node: Mod, an: Analyzer) -> Expr | None:
    # (x * d) % d -> 0
    split = _split_dividend(node, an)
    if split is None:
        return None
    return IntImm(node.dtype, 0) if not split[1].terms else None


def mod_split_terms(node: Mod, an: Analyzer) -> Expr | None:
    # (x * d + r) % d -> r % d   when x*d + r >= 0 and r >= 0
    split = _split_nonneg_terms(node, an)
    if split is None:
        return None
    return Mod(split[1].to_expr(node.dtype), node.b)


def mod_small(node: Mod, an: Analyzer) -> Expr | None:
    # x % d -> x   when 0 <= x < d  (or -d < x <= 0)
    if not _index(node) or (d := _divisor_poly(node, an)) is None:
        return None
    x = to_poly(node.a)
    below = an.bounds.prove_nonneg(d - x - Poly.const(1))
    above = an.bounds.prove_nonneg(d + x - Poly.const(1))
    if (below and an.bounds.prove_nonneg(x)) or (above and an.bounds.prove_nonneg(-x)):
        return node.a
    return None


def mod_of_mod(node: Mod, an: Analyzer) -> Expr | None:
    # (x % (k * b)) % b -> x % b   (the inner remainder keeps x's sign)
    inner = node.a
    b = _pos_const(node.b)
    if not isinstance(inner, Mod) or b is None or (kb := _pos_const(inner.b)) is None or kb % b:
        return None
    return Mod(inner.a, node.b)


def mod_gcd(node: Mod, an: Analyzer) -> Expr | None:
    # (x * g + r) % (g * m) -> (x % m) * g + r   when x >= 0 and 0 <= r < g
    found = _gcd_split(node, an)
    if found is None:
        return None
    x, r, g, m = found
    xm = Mod(x.to_expr(node.dtype), IntImm(node.dtype, m)) if m != 1 else IntImm(node.dtype, 0)
    return Add(Mul(xm, IntImm(node.dtype, g)), r.to_expr(node.dtype))


def _gcd_split(node: BinaryOp, an: Analyzer) -> tuple[Poly, Poly, int, int] | None:
    """Find `g | c`, 1 < g < c, with `x = y * g + r`, `y >= 0`, `0 <= r < g`: (y, r, g, c / g)."""
    c = _pos_const(node.b)
    if not _index(node) or c is None or c == 1:
        return None
    p = to_poly(node.a)
    for g in _divisors_desc(c):
        y, r = _split_by(p, Poly.const(g))
        if not y.terms or not r.terms:
            continue
        if an.bounds.prove_nonneg(r) and an.bounds.prove_nonneg(Poly.const(g - 1) - r) \
                and an.bounds.prove_nonneg(y):
            return y, r, g, c // g
    return None


@lru_cache(maxsize=1024)
def _divisors_desc(c: int) -> tuple[int, ...]:
    """Divisors g of c with 1 < g < c, largest first (c up to 2**20; larger: none)."""
    if c > (1 << 20):
        return ()
    return tuple(g for g in range(c - 1, 1, -1) if c % g == 0)
