"""`Analyzer`: variable ranges + the rule-driven simplifier + bounds and proofs (TVM's
`arith::Analyzer`, CINN's `AutoSimplify` with `var_intervals`).

One Analyzer holds a map `Var -> (min, extent)` (the same convention as `For`: `{i: (0, 32)}`
means `0 <= i < 32`; the min and extent may be expressions of symbolic dims and outer vars) and
memoises simplification results and bounds. The module-level functions in `cinn_py.symbolic`
build a throw-away Analyzer per call; passes and schedule primitives that simplify many
expressions under the same loops should build one and reuse it.

Vars not in the map still carry knowledge: a symbolic dim (`is_symbolic_constant`) is at least
its `lower_bound` (1 when unset); other Vars use their `lower_bound`/`upper_bound` metadata.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from cinn_py.ir import Expr, FloatImm, IntImm, StringImm, UIntImm, Var, as_expr, child_fields
from cinn_py.symbolic.bounds import BoundsEngine
from cinn_py.symbolic.poly import Poly, is_index_dtype, to_poly

VarRanges = Mapping[Var, tuple[Expr | int, Expr | int]]
MAX_REWRITE_DEPTH = 64
"""Nested rewrites per node before the driver stops (a safety net: rules are terminating)."""


class Analyzer:
    """Ranges, simplifier and prover for index expressions under one set of loops."""

    def __init__(self, var_ranges: VarRanges | None = None) -> None:
        self.ranges: dict[Var, tuple[Expr, Expr]] = {}
        self._intervals: dict[Var, tuple[Poly | None, Poly | None] | None] = {}
        self._memo: dict[Expr, Expr] = {}
        self._depth = 0
        self.bounds = BoundsEngine(self)
        for var, rng in (var_ranges or {}).items():
            self.bind(var, rng[0], rng[1])

    # -- ranges ------------------------------------------------------------------------------------
    def bind(self, var: Var, min_value: Expr | int, extent: Expr | int) -> None:
        """Record `min_value <= var < min_value + extent` (clears memoised results)."""
        if not isinstance(var, Var):
            raise TypeError(f"Analyzer.bind: expected a Var, got {type(var).__name__}")
        lo = as_expr(min_value, var.dtype)
        ext = as_expr(extent, var.dtype)
        self.ranges[var] = (lo, ext)
        self._reset_caches()

    @contextlib.contextmanager
    def scope(self, var: Var, min_value: Expr | int, extent: Expr | int) -> Iterator[None]:
        """Bind `var` for the duration of a `with` block (nested loops), then restore."""
        previous = self.ranges.get(var)
        self.bind(var, min_value, extent)
        try:
            yield
        finally:
            if previous is None:
                del self.ranges[var]
            else:
                self.ranges[var] = previous
            self._reset_caches()

    def _reset_caches(self) -> None:
        self._intervals.clear()
        self._memo.clear()
        self.bounds = BoundsEngine(self)

    def var_interval(self, var: Var) -> tuple[Poly | None, Poly | None] | None:
        """Inclusive (lo, hi) polynomials of a ranged var, or None for a free var."""
        if var in self._intervals:
            return self._intervals[var]
        self._intervals[var] = None  # cycle guard (a range mentioning its own var)
        result = self._compute_interval(var)
        self._intervals[var] = result
        return result

    def _compute_interval(self, var: Var) -> tuple[Poly | None, Poly | None] | None:
        if var in self.ranges:
            lo, extent = self.ranges[var]
            if not (is_index_dtype(lo.dtype) and is_index_dtype(extent.dtype)):
                return None
            lo_p = to_poly(self.simplify(lo))
            return lo_p, lo_p + to_poly(self.simplify(extent)) - Poly.const(1)
        if var.is_symbolic_constant:
            return None
        lo_b = var.lower_bound
        hi_b = var.upper_bound
        if lo_b is None and hi_b is None:
            return None
        lo_p = to_poly(self.simplify(lo_b)) if lo_b is not None and is_index_dtype(lo_b.dtype) else None
        hi_p = (to_poly(self.simplify(hi_b)) - Poly.const(1)
                if hi_b is not None and is_index_dtype(hi_b.dtype) else None)
        return lo_p, hi_p

    # -- simplification ---------------------------------------------------------------------------
    def simplify(self, expr: Expr) -> Expr:
        """Apply every rule of `cinn_py.symbolic.rules` bottom-up, to a fixpoint."""
        if not isinstance(expr, Expr):
            raise TypeError(f"simplify: expected an ir.Expr, got {type(expr).__name__}")
        hit = self._memo.get(expr)
        if hit is not None:
            return hit
        if self._depth > MAX_REWRITE_DEPTH:
            return expr
        self._depth += 1
        try:
            result = self._rewrite(self._map_children(expr))
        finally:
            self._depth -= 1
        self._memo[expr] = result
        self._memo[result] = result
        return result

    def _map_children(self, expr: Expr) -> Expr:
        if isinstance(expr, (Var, IntImm, UIntImm, FloatImm, StringImm)):
            return expr
        changes: dict[str, Any] = {}
        for name, value in child_fields(expr):
            new = self._simplify_value(value)
            if new is not value:
                changes[name] = new
        return dataclasses.replace(expr, **changes) if changes else expr

    def _simplify_value(self, value: Any) -> Any:
        if isinstance(value, Expr):
            return self.simplify(value)
        if isinstance(value, tuple):
            items = tuple(self._simplify_value(v) for v in value)
            return value if all(a is b for a, b in zip(items, value)) else items
        return value

    def _rewrite(self, expr: Expr) -> Expr:
        from cinn_py.symbolic.rules import rules_for  # noqa: PLC0415  (rules import this module)

        for rule in rules_for(type(expr)):
            new = rule.apply(expr, self)
            if new is not None and new != expr:
                return self.simplify(new)
        return expr

    # -- bounds and proofs ------------------------------------------------------------------------
    def const_bounds(self, expr: Expr) -> tuple[int | None, int | None]:
        """Inclusive constant (lo, hi) of an index expression; either side None if unknown."""
        if not is_index_dtype(expr.dtype):
            return None, None
        p = to_poly(self.simplify(expr))
        return self.bounds.const_lower(p), self.bounds.const_upper(p)

    def prove_nonneg_poly(self, p: Poly) -> bool:
        return self.bounds.prove_nonneg(p)

    def prove_nonneg(self, expr: Expr) -> bool:
        """True when `expr >= 0` is proven (index dtypes only)."""
        if not is_index_dtype(expr.dtype):
            return False
        return self.bounds.prove_nonneg(to_poly(self.simplify(expr)))

    def prove_le(self, a: Expr, b: Expr) -> bool:
        """True when `a <= b` is proven."""
        return self._prove_diff_nonneg(b, a, 0)

    def prove_lt(self, a: Expr, b: Expr) -> bool:
        """True when `a < b` is proven."""
        return self._prove_diff_nonneg(b, a, 1)

    def prove_eq(self, a: Expr, b: Expr) -> bool:
        """True when `a == b` is proven by canonical forms or two-sided bounds."""
        if a == b:
            return True
        if not (is_index_dtype(a.dtype) and is_index_dtype(b.dtype)):
            return self.simplify(a) == self.simplify(b)
        diff = to_poly(self.simplify(a)) - to_poly(self.simplify(b))
        if diff.is_const():
            return diff.constant == 0
        return self.bounds.prove_nonneg(diff) and self.bounds.prove_nonneg(-diff)

    def _prove_diff_nonneg(self, big: Expr, small: Expr, margin: int) -> bool:
        if not (is_index_dtype(big.dtype) and is_index_dtype(small.dtype)):
            return False
        diff = to_poly(self.simplify(big)) - to_poly(self.simplify(small)) - Poly.const(margin)
        return self.bounds.prove_nonneg(diff)

    def poly(self, expr: Expr) -> Poly:
        """The polynomial of the simplified expression."""
        return to_poly(self.simplify(expr))
