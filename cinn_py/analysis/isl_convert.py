"""Conversions between index expressions and isl's text syntax / affine objects.

`IslNames` gives every Var an isl identifier (isl names are C identifiers: `threadIdx.x` becomes
`threadIdx_x`, clashes get a suffix). `affine_text` renders an index expression as an isl
quasi-affine expression, or returns None when it is not one:

- `+ - *` by constants, `cinn_min`/`cinn_max` are affine (piecewise);
- `x / c` and `x % c` (positive constant `c`) are quasi-affine *when `x >= 0` is proven*: C
  truncates, isl floors, and the two agree only there (the analyzer decides with loop ranges);
- anything else (loads, products of variables, division by a symbolic dim) is not affine, and the
  caller over-approximates (documented per analysis as an `exact=False` flag).

`condition_text` renders a guard (comparisons, and/or/not of affine expressions). `aff_to_expr` and
`pw_aff_to_expr` map isl results (`dim_min`, `dim_max`) back to expressions of the parameters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import islpy as isl

from cinn_py.ir import (
    Add, And, BinaryOp, Cast, CmpOp, DType, Div, EQ, Expr, GE, GT, IntImm, LE, LT, Max, Min, Minus,
    Mod, Mul, NE,
    Not, Or, Sub, UIntImm, Var,
)
from cinn_py.symbolic.analyzer import Analyzer

_CMP_TEXT = {LT: "<", LE: "<=", GT: ">", GE: ">=", EQ: "=", NE: "!="}
_ISL_KEYWORDS = frozenset({"and", "or", "not", "exists", "mod", "floor", "ceil", "min", "max", "true",
                           "false", "infty", "NaN", "implies", "xor"})


class IslNames:
    """A bijection between Vars and isl identifiers."""

    def __init__(self) -> None:
        self.by_var: dict[Var, str] = {}
        self.by_name: dict[str, Var] = {}

    def name(self, var: Var) -> str:
        known = self.by_var.get(var)
        if known is not None:
            return known
        base = re.sub(r"\W", "_", var.name)
        if not base or base[0].isdigit() or base in _ISL_KEYWORDS:
            base = f"v_{base}"
        name, k = base, 0
        while name in self.by_name:
            k += 1
            name = f"{base}_{k}"
        self.by_var[var] = name
        self.by_name[name] = var
        return name

    def names(self, vars_: Iterable[Var]) -> list[str]:
        return [self.name(v) for v in vars_]


def affine_text(expr: Expr, names: IslNames, known: set[Var], an: Analyzer) -> str | None:
    """isl text of `expr` if it is quasi-affine in the `known` vars, else None."""
    if isinstance(expr, IntImm):
        return str(expr.value)
    if isinstance(expr, Var):
        return names.name(expr) if expr in known else None
    if isinstance(expr, Minus):
        inner = affine_text(expr.v, names, known, an)
        return None if inner is None else f"(-{inner})"
    if isinstance(expr, (Add, Sub, Min, Max)):
        a, b = affine_text(expr.a, names, known, an), affine_text(expr.b, names, known, an)
        if a is None or b is None:
            return None
        if isinstance(expr, Min):
            return f"min({a}, {b})"
        if isinstance(expr, Max):
            return f"max({a}, {b})"
        return f"({a} {'+' if isinstance(expr, Add) else '-'} {b})"
    if isinstance(expr, Mul):
        return _mul_text(expr, names, known, an)
    if isinstance(expr, (Div, Mod)):
        return _div_mod_text(expr, names, known, an)
    if isinstance(expr, Cast) and expr.v.dtype.is_int and expr.dtype.is_int:
        return affine_text(expr.v, names, known, an)
    return None


def _mul_text(expr: Mul, names: IslNames, known: set[Var], an: Analyzer) -> str | None:
    a, b = an.simplify(expr.a), an.simplify(expr.b)
    if isinstance(a, IntImm):
        a, b = b, a
    if not isinstance(b, IntImm):
        return None
    inner = affine_text(a, names, known, an)
    return None if inner is None else f"({b.value} * {inner})"


def _div_mod_text(expr: BinaryOp, names: IslNames, known: set[Var], an: Analyzer) -> str | None:
    divisor = an.simplify(expr.b)
    if not isinstance(divisor, IntImm) or divisor.value <= 0 or not an.prove_nonneg(expr.a):
        return None
    inner = affine_text(expr.a, names, known, an)
    if inner is None:
        return None
    if isinstance(expr, Div):
        return f"floor(({inner}) / {divisor.value})"
    return f"(({inner}) mod {divisor.value})"


def condition_text(cond: Expr, names: IslNames, known: set[Var], an: Analyzer) -> str | None:
    """isl text of a guard, or None when part of it is not affine."""
    if isinstance(cond, UIntImm) and cond.dtype.is_bool:
        return "true" if cond.value else "false"
    if isinstance(cond, (And, Or)):
        a = condition_text(cond.a, names, known, an)
        b = condition_text(cond.b, names, known, an)
        if a is None or b is None:
            return None
        return f"(({a}) {'and' if isinstance(cond, And) else 'or'} ({b}))"
    if isinstance(cond, Not):
        inner = condition_text(cond.v, names, known, an)
        return None if inner is None else f"(not ({inner}))"
    if isinstance(cond, CmpOp) and type(cond) in _CMP_TEXT and cond.a.dtype.is_int:
        a = affine_text(cond.a, names, known, an)
        b = affine_text(cond.b, names, known, an)
        if a is None or b is None:
            return None
        return f"({a} {_CMP_TEXT[type(cond)]} {b})"
    return None


# ------------------------------------------------------------------------------------------------
# isl -> Expr
# ------------------------------------------------------------------------------------------------
def _val_int(val: isl.Val) -> int:
    return int(val.to_python())


def aff_to_expr(aff: isl.Aff, names: IslNames, dtype: DType, an: Analyzer) -> Expr | None:
    """An Aff over parameters as an expression, or None (input dims, unprovable floors)."""
    if aff.dim(isl.dim_type.in_) and any(
            not aff.get_coefficient_val(isl.dim_type.in_, k).is_zero() for k
            in range(aff.dim(isl.dim_type.in_))):
        return None
    denom = _val_int(aff.get_denominator_val())
    scaled = aff.scale_val(isl.Val.int_from_si(aff.get_ctx(), denom))
    total: Expr = IntImm(dtype, _val_int(scaled.get_constant_val()))
    for k in range(scaled.dim(isl.dim_type.param)):
        coef = _val_int(scaled.get_coefficient_val(isl.dim_type.param, k))
        if coef:
            var = names.by_name.get(scaled.get_dim_name(isl.dim_type.param, k) or "")
            if var is None:
                return None
            total = Add(total, Mul(var, IntImm(dtype, coef)))
    for k in range(scaled.dim(isl.dim_type.div)):
        coef = _val_int(scaled.get_coefficient_val(isl.dim_type.div, k))
        if coef:
            div = _floor_to_expr(scaled.get_div(k), names, dtype, an)
            if div is None:
                return None
            total = Add(total, Mul(div, IntImm(dtype, coef)))
    if denom != 1:
        # The aff is integral on its domain here (dim_min/dim_max of integer sets).
        floored = _floor_div(total, denom, an)
        if floored is None:
            return None
        total = floored
    return an.simplify(total)


def _floor_to_expr(div_aff: isl.Aff, names: IslNames, dtype: DType, an: Analyzer) -> Expr | None:
    """`floor(div_aff)`: div_aff = N / D with integer N."""
    denom = _val_int(div_aff.get_denominator_val())
    numerator = aff_to_expr(div_aff.scale_val(isl.Val.int_from_si(div_aff.get_ctx(), denom)),
                            names, dtype, an)
    if numerator is None:
        return None
    return _floor_div(numerator, denom, an)


def _floor_div(numerator: Expr, denom: int, an: Analyzer) -> Expr | None:
    """floor(n / d) in C arithmetic: `n / d` when n >= 0, shifted into range when n >= -k*d."""
    dtype = numerator.dtype
    if denom == 1:
        return numerator
    lo, _ = an.const_bounds(numerator)
    if lo is None:
        return None
    if lo >= 0:
        return Div(numerator, IntImm(dtype, denom))
    shift = -(lo // denom)  # k with n + k*d >= 0
    return Sub(Div(Add(numerator, IntImm(dtype, shift * denom)), IntImm(dtype, denom)),
                 IntImm(dtype, shift))


def pw_aff_to_expr(pw: isl.PwAff, names: IslNames, dtype: DType, an: Analyzer,
                   context: isl.Set | None = None) -> Expr | None:
    """A PwAff with one piece (after `gist` with `context`) as an expression, else None."""
    if context is not None:
        pw = pw.gist_params(context.params()) if context.is_params() else pw.gist(context)
    pw = pw.coalesce()
    pieces = pw.get_pieces()
    if len(pieces) != 1:
        return None
    return aff_to_expr(pieces[0][1], names, dtype, an)
