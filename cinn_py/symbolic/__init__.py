"""Symbolic index arithmetic: the rule-based simplifier, proofs and bounds (CINN `AutoSimplify`,
`ProveEQ`; TVM `arith::Analyzer`).

    simplify(expr, var_ranges=None) -> Expr
    prove_eq / prove_le / prove_lt / prove_ge / prove_gt(a, b, var_ranges=None) -> bool
    const_bounds(expr, var_ranges=None) -> (lo, hi) | None        inclusive ints
    symbolic_bounds(expr, var_ranges=None) -> (lo | None, hi | None)  inclusive Exprs over free vars
    to_sympy(expr) / from_sympy(value, dtype)

**Ranges** are `{var: (min, extent)}`, the convention of `For` and `BufferRange`: `{i: (0, 32)}`
means `0 <= i < 32`; min and extent may be expressions (of symbolic dims and of other ranged
vars). Symbolic dims (`is_symbolic_constant`) are at least their `lower_bound` (1 if unset).
`analyzer.Analyzer` keeps ranges and memoised results across many calls.

**Soundness**: `prove_*` returning True means proven for every value in range (C truncating
division/remainder, no overflow); False means "not proven", never "disproven". Every rewrite of
`simplify` preserves the value for every assignment within the ranges.

**Canonical form** of sums (`poly.py`): positive terms first, higher-degree monomials first,
then larger coefficients, then by printed name; coefficients after their monomial, the constant
last: `((i * 8) + j)`, `((i * S1) + j)`, `(((i * 64) + (j * 8)) + 3)`, `(i - j)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cinn_py.ir import Expr, dtype_of, int64
from cinn_py.symbolic.analyzer import Analyzer, VarRanges
from cinn_py.symbolic.memo import memoised
from cinn_py.symbolic.poly import Poly, is_index_dtype, to_poly

__all__ = [
    "Analyzer", "Poly", "VarRanges", "const_bounds", "from_sympy", "prove_eq", "prove_ge", "prove_gt",
    "prove_le", "prove_lt", "simplify", "symbolic_bounds", "to_poly", "to_sympy",
]


def simplify(expr: Expr, var_ranges: VarRanges | None = None) -> Expr:
    """Simplify an expression (index arithmetic, comparisons, logic, select) given var ranges."""
    if not var_ranges and isinstance(expr, Expr):
        return memoised(expr, lambda e: Analyzer(None).simplify(e))
    return Analyzer(var_ranges).simplify(expr)


def prove_eq(a: Expr, b: Expr, var_ranges: VarRanges | None = None) -> bool:
    """True when `a == b` is proven for all values in range; sympy is the slow fallback."""
    an = Analyzer(var_ranges)
    if an.prove_eq(a, b):
        return True
    if not (is_index_dtype(a.dtype) and is_index_dtype(b.dtype)):
        return False
    from cinn_py.symbolic.sympy_bridge import sympy_prove_eq  # noqa: PLC0415  (sympy is slow to import)

    return sympy_prove_eq(an.simplify(a), an.simplify(b), an)


def prove_le(a: Expr, b: Expr, var_ranges: VarRanges | None = None) -> bool:
    """True when `a <= b` is proven."""
    return Analyzer(var_ranges).prove_le(a, b)


def prove_lt(a: Expr, b: Expr, var_ranges: VarRanges | None = None) -> bool:
    """True when `a < b` is proven."""
    return Analyzer(var_ranges).prove_lt(a, b)


def prove_ge(a: Expr, b: Expr, var_ranges: VarRanges | None = None) -> bool:
    """True when `a >= b` is proven."""
    return Analyzer(var_ranges).prove_le(b, a)


def prove_gt(a: Expr, b: Expr, var_ranges: VarRanges | None = None) -> bool:
    """True when `a > b` is proven."""
    return Analyzer(var_ranges).prove_lt(b, a)


def const_bounds(expr: Expr, var_ranges: VarRanges | None = None) -> tuple[int, int] | None:
    """Inclusive constant bounds `(lo, hi)` of an index expression, or None when either side is
    unbounded or unknown (e.g. anything growing with a symbolic dim)."""
    lo, hi = Analyzer(var_ranges).const_bounds(expr)
    if lo is None or hi is None:
        return None
    return lo, hi


def symbolic_bounds(expr: Expr, var_ranges: VarRanges | None = None
                    ) -> tuple[Expr | None, Expr | None]:
    """Inclusive bounds of `expr` with every ranged var eliminated (expressions of the free vars,
    e.g. symbolic dims): `i * 4 + j` with `i: (0, S0)`, `j: (0, 4)` gives `(0, (S0 * 4) - 1)`."""
    if not is_index_dtype(expr.dtype):
        return None, None
    an = Analyzer(var_ranges)
    lo, hi = an.bounds.interval(an.poly(expr))
    return (None if lo is None else an.simplify(lo.to_expr(expr.dtype)),
            None if hi is None else an.simplify(hi.to_expr(expr.dtype)))


def to_sympy(expr: Expr, var_ranges: VarRanges | None = None) -> Any:
    """The sympy form of an index expression (see `sympy_bridge`)."""
    from cinn_py.symbolic.sympy_bridge import SympyBridge  # noqa: PLC0415

    return SympyBridge(Analyzer(var_ranges)).to_sympy(expr)


def from_sympy(value: Any, dtype: Any = None, variables: Mapping[str, Expr] | None = None) -> Expr:
    """The index expression of a sympy expression (int64 unless `dtype`); `variables` maps symbol
    names to the Vars to use (symbolic dims keep their bounds that way)."""
    from cinn_py.symbolic.sympy_bridge import SympyBridge  # noqa: PLC0415

    bridge = SympyBridge()
    bridge.vars.update(variables or {})
    return bridge.from_sympy(value, dtype_of(dtype) if dtype is not None else int64)
