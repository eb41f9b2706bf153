"""prove_* / const_bounds / symbolic_bounds / sympy bridge."""

from __future__ import annotations

import sympy

from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.symbolic import (
    Analyzer, const_bounds, from_sympy, prove_eq, prove_ge, prove_gt, prove_le, prove_lt, simplify,
    symbolic_bounds, to_sympy,
)

S0 = ir.Var("S0", dt.int64, is_symbolic_constant=True)
S1 = ir.Var("S1", dt.int64, is_symbolic_constant=True)
S2 = ir.Var("S2", dt.int64, is_symbolic_constant=True, lower_bound=ir.const(4, dt.int64))
a, b = ir.Var("a", dt.int64), ir.Var("b", dt.int64)
i, j = ir.Var("i"), ir.Var("j")


def c64(v: int) -> ir.Expr:
    return ir.const(v, dt.int64)


def test_prove_eq_canonical_and_ranges() -> None:
    assert prove_eq(i * 8 + j, j + i * 8)
    assert prove_eq((i * 8 + j) / 8, i, {i: (0, 4), j: (0, 8)})
    assert not prove_eq((i * 8 + j) / 8, i, {j: (0, 9)})  # j may reach 8
    assert not prove_eq(i, j)
    assert prove_eq(S0 * S1, S1 * S0)
    # Products of split factors equal to the extent.
    assert prove_eq((S0 / 4) * 4 + S0 % 4, S0)


def test_prove_ceil_div_covers_extent() -> None:
    rounded = ((S1 * S2 + 1023) / 1024) * 1024
    assert prove_ge(rounded, S1 * S2)
    assert prove_le(rounded, S1 * S2 + 1023)
    assert not prove_le(rounded, S1 * S2)


def test_prove_with_symbolic_ranges() -> None:
    ranges = {a: (c64(0), S0), b: (c64(0), c64(4))}
    assert prove_lt(a * 4 + b, S0 * 4, ranges)
    assert prove_le(a, S0 - 1, ranges)
    assert not prove_lt(a, S0 - 1, ranges)
    assert prove_gt(S0 * S1, c64(0))
    assert prove_ge(S0 * S1, S0)           # (1+x)(1+y) - (1+x) = y + xy >= 0
    assert prove_ge(S2, c64(4)) and not prove_ge(S2, c64(5))
    assert not prove_ge(a, c64(0))          # a has no range here


def test_prove_is_sound_on_unknowns() -> None:
    x = ir.Var("x")
    assert not prove_ge(x, ir.const(0))
    assert not prove_ge(x / 4 * 4, x)
    assert prove_le(x / 4 * 4, x, {x: (0, 100)})
    assert not prove_le(x / 4 * 4, x, {x: (-100, 200)})  # truncation rounds negatives up


def test_const_bounds() -> None:
    ranges = {i: (0, 16), j: (0, 8)}
    assert const_bounds(i * 8 + j, ranges) == (0, 127)
    assert const_bounds((i * 8 + j) % 16, ranges) == (0, 15)
    assert const_bounds((i * 8 + j) / 32, ranges) == (0, 3)
    assert const_bounds(ir.Min(i, j) - 3, ranges) == (-3, 4)
    assert const_bounds(ir.Max(i, j + 20), ranges) == (20, 27)
    assert const_bounds(j - i, ranges) == (-15, 7)
    assert const_bounds(i, {}) is None
    assert const_bounds(a, {a: (c64(2), S0)}) is None  # grows with S0
    assert Analyzer({a: (c64(2), S0)}).const_bounds(a) == (2, None)
    assert const_bounds(ir.Select(i < 4, j, i + 100), ranges) == (0, 115)


def test_symbolic_bounds() -> None:
    ranges = {a: (c64(0), S0), b: (c64(0), c64(4))}
    lo, hi = symbolic_bounds(a * 4 + b, ranges)
    assert str(lo) == "0ll" and str(hi) == "((S0 * 4ll) - 1ll)"
    # Nested ranges: b in [a, a + 4) with a in [0, S0).
    lo, hi = symbolic_bounds(b, {a: (c64(0), S0), b: (a, c64(4))})
    assert str(lo) == "0ll" and str(hi) == "(S0 + 2ll)"


def test_analyzer_reuse_and_bind() -> None:
    an = Analyzer()
    assert str(an.simplify(i < 32)) == "(i < 32)"
    an.bind(i, 0, 32)
    assert str(an.simplify(i < 32)) == "true"
    assert an.prove_lt(i, ir.const(32))


def test_sympy_round_trip() -> None:
    expr = (S0 * S1 + 3) / 4 + S0 % 8
    s = to_sympy(expr)
    assert s.has(sympy.floor) and s.has(sympy.Mod)
    back = from_sympy(s, dt.int64, {"S0": S0, "S1": S1})
    assert prove_eq(back, expr)
    # Unknown sign: C semantics cannot be mapped to floor; sympy sees an opaque function.
    x = ir.Var("x", dt.int64)
    assert "cdiv" in str(to_sympy(x / 4))
    assert str(simplify(from_sympy(sympy.ceiling(sympy.Symbol("S0") / 4), dt.int64, {"S0": S0}))) == \
        "((S0 + 3ll) / 4ll)"


def test_min_max_algebra() -> None:
    assert prove_eq(ir.Max(S0, S1) + ir.Min(S0, S1), S0 + S1)
    assert prove_eq(ir.Min(S0, S1) * 2, ir.Min(S0 * 2, S1 * 2))
    assert prove_eq(ir.Max(S0 + 1, S1 + 1), ir.Max(S0, S1) + 1)


def test_sympy_fallback_in_prove_eq() -> None:
    # Division by a polynomial divisor: beyond the rules, sympy's floor algebra proves it.
    assert not Analyzer().prove_eq((S0 * S0 + S0) / (S0 + 1), S0)
    assert prove_eq((S0 * S0 + S0) / (S0 + 1), S0)
