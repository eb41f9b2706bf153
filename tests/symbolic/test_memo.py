"""The process-wide memo of `simplify(expr)`: hits only on the same expression *and* the same
Var metadata (bounds, flags), which Var equality ignores."""

from __future__ import annotations

from cinn_py import ir
from cinn_py.symbolic import memo, simplify


def test_repeated_simplify_is_served_from_the_memo() -> None:
    i = ir.Var("i_memo_a")
    first = simplify((i * 4 + 3) // 4)
    assert simplify((i * 4 + 3) // 4) is first


def test_var_bounds_are_part_of_the_key() -> None:
    # equal as Vars (name and dtype), different as facts: `j < 4` makes `j / 4` zero
    bounded = ir.Var("j_memo", lower_bound=ir.const(0), upper_bound=ir.const(4))
    free = ir.Var("j_memo")
    assert bounded == free
    assert str(simplify(bounded // 4)) == "0"
    assert str(simplify(free // 4)) == "(j_memo / 4)"
    assert str(simplify(bounded // 4)) == "0"


def test_symbolic_dims_differ_from_plain_vars() -> None:
    dim = ir.Var("S_memo", ir.int64, is_symbolic_constant=True)
    plain = ir.Var("S_memo", ir.int64)
    assert memo.memo_key(dim + 1) != memo.memo_key(plain + 1)


def test_float_constants_are_not_memoised() -> None:
    x = ir.Var("x_memo", ir.float32)
    assert memo.memo_key(x * ir.FloatImm(ir.float32, -0.0)) is None
    assert memo.memo_key(ir.Var("k_memo") + 1) is not None
