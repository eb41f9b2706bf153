"""Bounds of index polynomials: symbolic interval arithmetic plus a positivity test.

`BoundsEngine` answers "what is a lower (upper) bound of this polynomial?" by replacing every
*ranged* variable (a loop var or iter var with a known `(min, extent)`) by the end of its range
that bounds the term, recursively through `/`, `%`, `cinn_min`, `cinn_max` and `select`. What
remains is a polynomial over *free* atoms (symbolic dims such as `S0`, unranged vars), which
`const_lower`/`const_upper` finish by writing each free atom as `L + t` with `t >= 0` (`L` its
lower bound: a symbolic dim's `lower_bound`, 1 by default) and reading the signs of the
expanded coefficients. This proves e.g. `S0 * S1 - S0 >= 0` (`(1+a)(1+b) - (1+a) = b + ab`).

Ranges are **(min, extent)** pairs, as `For` and `BufferRange` store them: `{i: (0, 32)}` means
`0 <= i < 32`. Bounds returned by this module are inclusive.

Soundness: every bound returned is valid for all values of the variables within their ranges
(C truncating division and remainder, no overflow); `None` means "unknown".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from cinn_py.ir import Cast, DType, Div, Expr, IntImm, Max, Min, Mod, Select, Var
from cinn_py.symbolic.poly import Poly, to_poly

if TYPE_CHECKING:
    from cinn_py.symbolic.analyzer import Analyzer

MAX_DEPTH = 8
"""Recursion limit of bound propagation (nested ranges, div of div ...)."""

Interval = tuple[Poly, Poly]


def symbolic_lower_default(var: Var) -> int | None:
    """Constant lower bound a free var carries: symbolic dims are positive unless told otherwise."""
    lb = var.lower_bound
    if isinstance(lb, IntImm):
        return lb.value
    if var.is_symbolic_constant:
        return 1
    return None


class BoundsEngine:
    """Interval reasoning for one `Analyzer` (shares its ranges and simplifier)."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer
        self._const_lower_memo: dict[Poly, int | None] = {}
        self._const_upper_memo: dict[Poly, int | None] = {}

    # -- symbolic bounds -------------------------------------------------------------------------
    def bound(self, p: Poly, upper: bool, depth: int = MAX_DEPTH) -> Poly | None:
        """An upper (or lower) bound of `p` with ranged vars eliminated, or None."""
        out = Poly.const(p.constant)
        for mono, coef in p.non_const_terms():
            b = self._bound_mono(mono, upper == (coef > 0), depth)
            if b is None:
                return None
            out = out + b.scale(coef)
        return out

    def _bound_mono(self, mono: tuple[Expr, ...], upper: bool, depth: int) -> Poly | None:
        if len(mono) == 1:
            return self._bound_atom(mono[0], upper, depth)
        # A product is monotone in each factor only when every factor is nonnegative.
        if not all(_at_least(self.const_lower(Poly.atom(a), depth - 1), 0) for a in mono):
            return None
        result = Poly.const(1)
        for atom in mono:
            b = self._bound_atom(atom, upper, depth)
            if b is None:
                return None
            result = result * b
        return result

    def _bound_atom(self, atom: Expr, upper: bool, depth: int) -> Poly | None:
        if depth <= 0:
            return Poly.atom(atom) if isinstance(atom, Var) else None
        handler = _ATOM_BOUNDS.get(type(atom))
        if handler is not None:
            return handler(self, atom, upper, depth - 1)
        return _dtype_bound(atom, upper)

    def interval(self, p: Poly, depth: int = MAX_DEPTH) -> tuple[Poly | None, Poly | None]:
        return self.bound(p, False, depth), self.bound(p, True, depth)

    # -- constant bounds -------------------------------------------------------------------------
    def const_lower(self, p: Poly, depth: int = MAX_DEPTH) -> int | None:
        """The greatest constant lower bound this engine can prove, or None."""
        if p.is_const():
            return p.constant
        if p in self._const_lower_memo:
            return self._const_lower_memo[p]
        self._const_lower_memo[p] = None  # cycle guard
        lo = self.bound(p, False, depth)
        result = None if lo is None else self._extreme_over_free(lo, False, depth)
        self._const_lower_memo[p] = result
        return result

    def const_upper(self, p: Poly, depth: int = MAX_DEPTH) -> int | None:
        """The least constant upper bound this engine can prove, or None."""
        if p.is_const():
            return p.constant
        if p in self._const_upper_memo:
            return self._const_upper_memo[p]
        self._const_upper_memo[p] = None
        hi = self.bound(p, True, depth)
        result = None if hi is None else self._extreme_over_free(hi, True, depth)
        self._const_upper_memo[p] = result
        return result

    def _extreme_over_free(self, p: Poly, upper: bool, depth: int) -> int | None:
        """Min (max) of a polynomial over free atoms, writing each atom as `L + t`, `t >= 0`."""
        if p.is_const():
            return p.constant
        shift: dict[Expr, Poly] = {}
        for atom in p.atoms():
            low = self._free_atom_lower(atom, depth)
            if low is None:
                return None
            shift[atom] = Poly.const(low) + Poly.atom(atom)
        shifted = p.substitute(shift)
        coefs = [c for _, c in shifted.non_const_terms()]
        if upper and all(c <= 0 for c in coefs):
            return shifted.constant
        if not upper and all(c >= 0 for c in coefs):
            return shifted.constant
        return None

    def _free_atom_lower(self, atom: Expr, depth: int) -> int | None:
        if isinstance(atom, Var):
            rng = self.an.var_interval(atom)
            if rng is not None and rng[0] is not None and rng[0].is_const():
                return rng[0].constant
            return symbolic_lower_default(atom)
        if depth <= 0:
            return None
        lo = self._bound_atom(atom, False, depth - 1)
        if lo is None or lo == Poly.atom(atom):
            return None
        return self.const_lower(lo, depth - 1)

    # -- proofs ----------------------------------------------------------------------------------
    def prove_nonneg(self, p: Poly) -> bool:
        """True if `p >= 0` is proven for every value in range (False: not proven)."""
        if p.is_const():
            return p.constant >= 0
        lo = self.const_lower(p)
        if lo is not None and lo >= 0:
            return True
        relaxed = self._relax_div_mod(p)
        if relaxed is not None and relaxed != p:
            lo = self.const_lower(relaxed)
            return lo is not None and lo >= 0
        return False

    def _relax_div_mod(self, p: Poly) -> Poly | None:
        """A lower bound of `p` keeping the dividend symbolic: `c * (x / c) >= x - (c - 1)`.

        Interval bounds lose the link between `x / c` and `x`; this relaxation keeps it, so
        `((S0 + 1023) / 1024) * 1024 >= S0` is proven. Needs `x >= 0`. `x % c` is first written
        `x - c * (x / c)` (exact in C semantics).
        """
        mods = ([(a, c) for a in p.atoms() if isinstance(a, Mod) and (c := _pos_const_divisor(a, Mod))
                 is not None])
        expanded = p.substitute({a: to_poly(a.a) - Poly.atom(Div(a.a, a.b)).scale(c) for a, c in mods})
        out = Poly.const(expanded.constant)
        for mono, coef in expanded.non_const_terms():
            atom = mono[0] if len(mono) == 1 else None
            c = None if atom is None else _pos_const_divisor(atom, Div)
            if not isinstance(atom, Div) or c is None or coef % c != 0:
                out = out + Poly({mono: coef})
                continue
            x = to_poly(atom.a)
            lo_x = self.const_lower(x)
            if lo_x is None or lo_x < 0:
                return None
            m = coef // c
            # m > 0: m*c*(x/c) >= m*(x - c + 1); m < 0: m*c*(x/c) >= m*x.
            out = out + ((x - Poly.const(c - 1)).scale(m) if m > 0 else x.scale(m))
        return out


def _at_least(value: int | None, bound: int) -> bool:
    return value is not None and value >= bound


def _pos_const_divisor(e: Expr, kind: type[Div] | type[Mod]) -> int | None:
    """`c` when `e` is `x / c` (kind Div) or `x % c` (kind Mod) with a constant `c > 0`."""
    if isinstance(e, kind) and isinstance(e.b, IntImm) and e.b.value > 0:
        return e.b.value
    return None


def _dtype_bound(atom: Expr, upper: bool) -> Poly | None:
    """Any value of a narrow signed integer type lies in its type range."""
    dtype = atom.dtype
    if dtype.is_int and dtype.bits < 64:
        half = 1 << (dtype.bits - 1)
        return Poly.const(half - 1 if upper else -half)
    if dtype.is_bool:
        return Poly.const(1 if upper else 0)
    return None


def _bound_var(eng: BoundsEngine, var: Var, upper: bool, depth: int) -> Poly | None:
    rng = eng.an.var_interval(var)
    if rng is None:
        # A free var (symbolic dim, unranged var) bounds itself; const_* finishes the job.
        return Poly.atom(var)
    end = rng[1] if upper else rng[0]
    if end is None:
        return Poly.atom(var)
    return eng.bound(end, upper, depth)


def _bound_div(eng: BoundsEngine, node: Div, upper: bool, depth: int) -> Poly | None:
    divisor = to_poly(node.b)
    if divisor.is_const() and divisor.constant > 0:
        # Truncating division by a positive constant is monotone nondecreasing.
        b = eng.bound(to_poly(node.a), upper, depth)
        if b is None:
            return None
        return to_poly(eng.an.simplify(Div(b.to_expr(node.dtype), node.b)))
    if (_at_least(eng.const_lower(divisor, depth), 1)
        and _at_least(eng.const_lower(to_poly(node.a), depth), 0)):
        # 0 <= x / d <= x for d >= 1.
        return eng.bound(to_poly(node.a), True, depth) if upper else Poly.const(0)
    return _dtype_bound(node, upper)


def _bound_mod(eng: BoundsEngine, node: Mod, upper: bool, depth: int) -> Poly | None:
    x = to_poly(node.a)
    divisor = to_poly(node.b)
    x_lo = eng.const_lower(x, depth)
    if divisor.is_const() and divisor.constant != 0:
        c = abs(divisor.constant)
        x_hi = eng.const_upper(x, depth)
        if x_lo is not None and x_lo >= 0:
            if x_hi is not None and x_hi < c:
                return Poly.const(x_hi if upper else x_lo)
            return Poly.const(c - 1 if upper else 0)
        if x_hi is not None and x_hi <= 0:
            return Poly.const(0 if upper else -(c - 1))
        return Poly.const(c - 1 if upper else -(c - 1))
    if _at_least(eng.const_lower(divisor, depth), 1) and _at_least(x_lo, 0):
        # 0 <= x % d <= d - 1 for x >= 0, d >= 1.
        if not upper:
            return Poly.const(0)
        d_hi = eng.bound(divisor, True, depth)
        return None if d_hi is None else d_hi - Poly.const(1)
    return _dtype_bound(node, upper)


def _pick(eng: BoundsEngine, a: Poly | None, b: Poly | None, take_min: bool, dtype: DType,
          exact: bool) -> Poly | None:
    """min/max of two bounds; `exact=False` allows returning either one (both are valid)."""
    if a is None or b is None:
        return None if exact else (a if b is None else b)
    diff = a - b
    if diff.is_const():
        return a if (diff.constant <= 0) == take_min else b
    if not exact:
        return a if a.is_const() or not b.is_const() else b
    cls = Min if take_min else Max
    return to_poly(eng.an.simplify(cls(a.to_expr(dtype), b.to_expr(dtype))))


def _bound_min(eng: BoundsEngine, node: Min, upper: bool, depth: int) -> Poly | None:
    a = eng.bound(to_poly(node.a), upper, depth)
    b = eng.bound(to_poly(node.b), upper, depth)
    # An upper bound of min(a, b) is an upper bound of either; a lower bound needs both.
    return _pick(eng, a, b, True, node.dtype, exact=not upper)


def _bound_max(eng: BoundsEngine, node: Max, upper: bool, depth: int) -> Poly | None:
    a = eng.bound(to_poly(node.a), upper, depth)
    b = eng.bound(to_poly(node.b), upper, depth)
    return _pick(eng, a, b, False, node.dtype, exact=upper)


def _bound_select(eng: BoundsEngine, node: Select, upper: bool, depth: int) -> Poly | None:
    a = eng.bound(to_poly(node.true_value), upper, depth)
    b = eng.bound(to_poly(node.false_value), upper, depth)
    return _pick(eng, a, b, not upper, node.dtype, exact=True)


def _bound_cast(eng: BoundsEngine, node: Cast, upper: bool, depth: int) -> Poly | None:
    inner = node.v
    if inner.dtype.is_int and node.dtype.is_int and node.dtype.bits >= inner.dtype.bits:
        # Widening keeps the value; the bound is re-typed by keeping only its constant.
        value = (eng.const_upper if upper else eng.const_lower)(to_poly(inner), depth)
        if value is not None:
            return Poly.const(value)
    return _dtype_bound(node, upper)


_ATOM_BOUNDS: Mapping[type, Callable[..., Poly | None]] = {
    Var: _bound_var, Div: _bound_div, Mod: _bound_mod, Min: _bound_min,
    Max: _bound_max, Select: _bound_select, Cast: _bound_cast,
}
