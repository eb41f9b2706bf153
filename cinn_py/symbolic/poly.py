"""Polynomial normal form of signed-integer index expressions.

A `Poly` is a sum of monomials with integer coefficients: `{(i,): 8, (j,): 1, (): 3}` is
`((i * 8) + j) + 3`. A monomial is a sorted tuple of *atoms*: any expression that is not `+ - *`
(Vars, `x / c`, `x % c`, `cinn_min`, loads, casts, ...). Converting to a Poly expands products
(up to `MAX_EXPANDED_TERMS`), so `(i * 8 + j) - (j + i * 8)` is the zero polynomial.

Canonical print order (`to_expr`): terms with positive coefficients first, then the subtracted
ones, then the constant; inside each group, higher-degree monomials first (`(i * S1) + j`), then
larger coefficients (`((i * 8) + j)`, row-major indices read naturally), then the atoms' printed
text. A coefficient follows its monomial: `(i * 8)` (TVM's order; CINN prints `(8 * i)` in some
passes — we pick one and keep it everywhere).

Integer overflow is not modelled: index arithmetic is assumed not to wrap, as in CINN and TVM.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache

from cinn_py.ir import Add, DType, Expr, IntImm, Minus, Mul, Sub, Var

Monomial = tuple[Expr, ...]
MAX_EXPANDED_TERMS = 16
"""Products of sums with more terms than this stay atoms (keeps simplification near-linear)."""


@lru_cache(maxsize=65536)
def atom_key(atom: Expr) -> tuple[bool, str]:
    """Sort key of an atom: symbolic dims after everything else (`(i * S1)`), then the printed
    text (deterministic across runs)."""
    return isinstance(atom, Var) and atom.is_symbolic_constant, str(atom)


def _monomial_key(mono: Monomial) -> tuple[tuple[bool, str], ...]:
    return tuple(atom_key(a) for a in mono)


class Poly:
    """An immutable polynomial over atoms with integer coefficients (zero terms dropped)."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: Mapping[Monomial, int] | None = None) -> None:
        self.terms: dict[Monomial, int] = {m: c for m, c in (terms or {}).items() if c != 0}
        self._hash: int | None = None

    # -- construction ---------------------------------------------------------------------------
    @staticmethod
    def const(value: int) -> Poly:
        return Poly({(): value})

    @staticmethod
    def atom(atom: Expr) -> Poly:
        return Poly({(atom,): 1})

    # -- queries --------------------------------------------------------------------------------
    @property
    def constant(self) -> int:
        return self.terms.get((), 0)

    def is_const(self) -> bool:
        return all(m == () for m in self.terms)

    def non_const_terms(self) -> Iterator[tuple[Monomial, int]]:
        return ((m, c) for m, c in self.terms.items() if m)

    def atoms(self) -> set[Expr]:
        return {a for m in self.terms for a in m}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.terms.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"Poly({self.terms})"

    # -- arithmetic -----------------------------------------------------------------------------
    def __add__(self, other: Poly) -> Poly:
        out = dict(self.terms)
        for m, c in other.terms.items():
            out[m] = out.get(m, 0) + c
        return Poly(out)

    def __neg__(self) -> Poly:
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def scale(self, k: int) -> Poly:
        return Poly({m: c * k for m, c in self.terms.items()})

    def __mul__(self, other: Poly) -> Poly:
        out: dict[Monomial, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                mono = tuple(sorted(m1 + m2, key=atom_key))
                out[mono] = out.get(mono, 0) + c1 * c2
        return Poly(out)

    def substitute(self, mapping: Mapping[Expr, Poly]) -> Poly:
        """Replace atoms by polynomials and expand."""
        out = Poly()
        for mono, coef in self.terms.items():
            term = Poly.const(coef)
            for atom in mono:
                term = term * mapping.get(atom, Poly.atom(atom))
            out = out + term
        return out

    # -- back to an expression ------------------------------------------------------------------
    def to_expr(self, dtype: DType) -> Expr:
        """The canonical expression of this polynomial (see the module docstring for the order)."""
        terms = sorted(self.non_const_terms(), key=lambda t: _term_order(t[0], t[1]))
        const = self.constant
        result: Expr | None = None
        positives = [t for t in terms if t[1] > 0]
        if not positives and const > 0 and terms:
            result = IntImm(dtype, const)
            const = 0
        for mono, coef in terms:
            if result is None:
                result = _monomial_expr(mono, coef, dtype)
            elif coef > 0:
                result = Add(result, _monomial_expr(mono, coef, dtype))
            else:
                result = Sub(result, _monomial_expr(mono, -coef, dtype))
        if result is None:
            return IntImm(dtype, const)
        if const > 0:
            return Add(result, IntImm(dtype, const))
        if const < 0:
            return Sub(result, IntImm(dtype, -const))
        return result


def _term_order(mono: Monomial, coef: int) -> tuple[bool, int, int, tuple[tuple[bool, str], ...]]:
    return (coef < 0, -len(mono), -abs(coef), _monomial_key(mono))


def _monomial_expr(mono: Monomial, coef: int, dtype: DType) -> Expr:
    """`((a * b) * 8)`; a lone negative first term prints `(a * -8)` or `-(a)`."""
    result = mono[0]
    for atom in mono[1:]:
        result = Mul(result, atom)
    if coef == -1:
        return Minus(result)
    return result if coef == 1 else Mul(result, IntImm(dtype, coef))


def is_index_dtype(dtype: DType) -> bool:
    """Signed scalar integers: the dtypes the polynomial rules apply to."""
    return dtype.is_int and dtype.lanes == 1


def to_poly(expr: Expr) -> Poly:
    """The polynomial of a signed-integer expression; non-polynomial nodes become atoms."""
    if isinstance(expr, IntImm):
        return Poly.const(expr.value)
    if isinstance(expr, Add):
        return to_poly(expr.a) + to_poly(expr.b)
    if isinstance(expr, Sub):
        return to_poly(expr.a) - to_poly(expr.b)
    if isinstance(expr, Minus):
        return -to_poly(expr.v)
    if isinstance(expr, Mul):
        return _mul_poly(expr)
    return Poly.atom(expr)


def _mul_poly(expr: Mul) -> Poly:
    a, b = to_poly(expr.a), to_poly(expr.b)
    if a.is_const():
        return b.scale(a.constant)
    if b.is_const():
        return a.scale(b.constant)
    if len(a.terms) * len(b.terms) > MAX_EXPANDED_TERMS:
        return Poly.atom(expr)
    return a * b


def poly_expr(terms: Iterable[tuple[Monomial, int]], dtype: DType) -> Expr:
    """Shortcut: the canonical expression of a term list."""
    return Poly(dict(terms)).to_expr(dtype)
