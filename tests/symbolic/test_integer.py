"""`cinn_py.symbolic.integer`: C division/modulo and integer evaluation of symbolic dims."""

from __future__ import annotations

import pytest

from cinn_py import ir
from cinn_py.symbolic.integer import c_div, c_mod, eval_bool, eval_int, int_interval


@pytest.mark.parametrize(("a", "b", "q", "r"), [
    (7, 2, 3, 1), (-7, 2, -3, -1), (7, -2, -3, 1), (-7, -2, 3, -1), (0, 5, 0, 0), (6, 3, 2, 0),
    (-6, 3, -2, 0),
])
def test_c_division_truncates_toward_zero(a: int, b: int, q: int, r: int) -> None:
    assert (c_div(a, b), c_mod(a, b)) == (q, r)
    assert c_div(a, b) * b + c_mod(a, b) == a


def test_zero_divisor_raises() -> None:
    with pytest.raises(ZeroDivisionError, match="7 / 0"):
        c_div(7, 0)
    n = ir.Var("n", ir.int32)
    with pytest.raises(ZeroDivisionError):
        eval_int(ir.Mod(ir.IntImm(ir.int32, 3), n), {"n": 0})


def test_eval_int_shapes_and_predicates() -> None:
    n, m = ir.Var("n", ir.int32), ir.Var("m", ir.int32)
    c = lambda v: ir.IntImm(ir.int32, v)  # noqa: E731
    size = ir.Add(ir.Mul(ir.Div(ir.Sub(n, c(1)), c(4)), c(4)), ir.Mod(ir.Minus(m), c(3)))
    assert eval_int(size, {"n": 10, "m": 5}) == 8 + -2
    assert eval_int(ir.Select(ir.LT(n, m), ir.Min(n, m), ir.Max(n, m)), {"n": 3, "m": 9}) == 3
    assert eval_int(ir.Cast(ir.bool_, n), {"n": 7}) == 1
    assert eval_bool(ir.And(ir.GE(n, c(0)), ir.Not(ir.EQ(m, c(0)))), {"n": 0, "m": 1})
    assert not eval_bool(ir.Or(ir.GT(n, c(0)), ir.NE(m, m)), {"n": 0, "m": 1})


def test_eval_int_rejects_unbound_symbols_and_non_integer_nodes() -> None:
    n = ir.Var("n", ir.int32)
    with pytest.raises(KeyError):
        eval_int(n, {})
    with pytest.raises(ValueError, match="not an integer expression"):
        eval_int(ir.FloatImm(ir.float32, 1.5), {})


def test_int_interval_over_variable_intervals() -> None:
    i, j = ir.Var("i", ir.int32), ir.Var("j", ir.int32)
    c = lambda v: ir.IntImm(ir.int32, v)  # noqa: E731
    env = {"i": (0, 7), "j": (2, 3)}
    box = lambda e: int_interval(e, lambda v: env.get(v.name))  # noqa: E731
    assert box(ir.Add(ir.Mul(i, c(4)), j)) == (2, 31)
    assert box(ir.Sub(j, i)) == (-5, 3) and box(ir.Minus(i)) == (-7, 0)
    assert box(ir.Div(i, c(4))) == (0, 1) and box(ir.Mod(i, c(4))) == (0, 3)
    assert box(ir.Mod(j, c(4))) == (2, 3)  # one period: exact
    assert box(ir.Select(ir.LT(i, j), i, c(9))) == (0, 9)
    assert box(ir.Min(i, j)) == (0, 3) and box(ir.Max(i, j)) == (2, 7)
    assert box(ir.Ramp(i, c(2), 4)) == (0, 13)
    assert box(ir.Div(ir.Sub(j, c(5)), c(2))) is None  # negative dividend: truncation is not floor
    assert box(ir.Div(i, j)) is None and box(ir.Var("n", ir.int32)) is None
