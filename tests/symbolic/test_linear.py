"""`cinn_py.symbolic.linear.is_injective`: the mixed-radix test behind the syntactic
same-iteration check of compute_at / simple_compute_at / reverse_compute_at."""

from __future__ import annotations

import pytest

from cinn_py import ir
from cinn_py.ir import Block, For, Var
from cinn_py.ir import dtype as dt
from cinn_py.symbolic.linear import (
    affine_coefficients, determines, is_injective, linear_form, mixed_radix, recover_div_mod, var_ranges,
)

I32 = dt.int32
N = Var("N", I32, lower_bound=ir.const(1, I32), is_symbolic_constant=True)


def loop(name: str, extent: int | ir.Expr) -> For:
    ext = ir.const(extent, I32) if isinstance(extent, int) else extent
    return For(Var(name, I32), ir.const(0, I32), ext, Block(()))


@pytest.mark.parametrize(("index", "extents", "expected"), [
    (lambda v: (v["i"] * 8 + v["j"],), {"i": 4, "j": 8}, True),
    (lambda v: (v["i"] * 7 + v["j"],), {"i": 4, "j": 8}, False),
    # Equal coefficients: fine when one of the loops has a single iteration (a split by 1) ...
    (lambda v: (v["i"] + v["i_0"],), {"i": 5, "i_0": 1}, True),
    (lambda v: (v["i_0"] + v["i"],), {"i": 1, "i_0": 5}, True),
    # ... and a collision otherwise, whichever var sorts first.
    (lambda v: (v["i"] + v["i_0"],), {"i": 5, "i_0": 2}, False),
    (lambda v: (v["b"] + v["a"],), {"a": 3, "b": 3}, False),
    # A symbolic extent is allowed only on the largest coefficient.
    (lambda v: (v["i"] * 8 + v["j"],), {"i": N, "j": 8}, True),
    (lambda v: (v["i"] + v["j"],), {"i": N, "j": N}, False),
    (lambda v: (v["i"] + v["i_0"],), {"i": N, "i_0": 1}, True),
])
def test_is_injective(index, extents, expected) -> None:  # type: ignore[no-untyped-def]
    loops = [loop(name, ext) for name, ext in extents.items()]
    env = {lp.loop_var.name: lp.loop_var for lp in loops}
    assert is_injective(index(env), var_ranges(loops)) is expected


def test_linear_form_atoms_and_non_linear_uses() -> None:
    i, j = Var("i", I32), Var("j", I32)
    c = lambda v: ir.const(v, I32)  # noqa: E731
    e = i * c(8) + j - c(3) * j + ir.Div(i, c(4)) + N
    assert linear_form(e, {i, j}, linear_in={j}) == {i: 8, j: -2, ir.Div(i, c(4)): 1}
    assert linear_form(e, {i, j}) is None  # i / 4 is not linear in i
    assert linear_form(i * j, {i, j}) is None
    assert linear_form(N * c(2), {i}) == {}


def test_mixed_radix() -> None:
    assert mixed_radix([(1, 8), (8, 4)]) and mixed_radix([(8, None), (1, 8)])
    assert not mixed_radix([(1, 9), (8, 4)]) and not mixed_radix([(1, None), (8, 4)])
    assert mixed_radix([(3, 1), (1, 5)])  # a one-iteration term is a constant


def test_recover_div_mod_with_a_product_divisor() -> None:
    f = Var("f", I32)
    s0 = Var("S0", I32, lower_bound=ir.const(1, I32), is_symbolic_constant=True)
    s1 = Var("S1", I32, lower_bound=ir.const(1, I32), is_symbolic_constant=True)
    comps = [ir.Div(f, s0 * s1), ir.Mod(ir.Div(f, s1), s0), ir.Mod(f, s1)]
    assert recover_div_mod(comps) == [f]
    assert recover_div_mod([ir.Div(f, s1), ir.Mod(f, s0)]) == [ir.Div(f, s1), ir.Mod(f, s0)]


def test_determines_most_significant_or_lowest_digit() -> None:
    o, k = loop("o", 4), loop("k", 8)
    ranges = var_ranges([o, k])
    ov, kv = o.loop_var, k.loop_var
    c = lambda v: ir.const(v, I32)  # noqa: E731
    assert determines((ov * c(8) + kv,), ov, ranges)          # o is the high digit
    assert determines((kv * c(4) + ov,), ov, ranges)          # o fits under k's stride
    assert not determines((ov * c(4) + kv,), ov, ranges)      # overlapping digits
    assert not determines((kv,), ov, ranges)                  # o does not occur
    assert determines((ir.Div(ov * c(8) + kv, c(2)), ir.Mod(ov * c(8) + kv, c(2))), ov, ranges)


def _coefficient_values(coefs: dict[str, ir.Expr] | None, env: dict[str, int]) -> dict[str, int] | None:
    from cinn_py.symbolic.integer import eval_int

    return None if coefs is None else {name: eval_int(c, env) for name, c in coefs.items()}


def test_affine_coefficients_are_loop_invariant_expressions() -> None:
    i, j, k = Var("i", I32), Var("j", I32), Var("k", dt.int64)
    loops = {"i", "j", "k"}
    # Symbolic coefficients (a row-major index over a symbolic row length), subtraction, negation,
    # and an int32 -> int64 cast of a loop var.
    index = (i * N + j) * ir.const(2, I32) - ir.Minus(j) + N
    coefs = affine_coefficients(index, loops)
    assert coefs is not None and set(coefs) == {"i", "j"}
    assert all(c.dtype == dt.int64 for c in coefs.values())
    assert _coefficient_values(coefs, {"N": 5}) == {"i": 10, "j": 3}
    assert (_coefficient_values(affine_coefficients(k + ir.Cast(dt.int64, i * 4), loops), {})
            == {"k": 1, "i": 4})
    assert affine_coefficients(N * N + 3, loops) == {}


def test_affine_coefficients_count_a_ramp_lane_as_a_variable() -> None:
    i = Var("i", I32)
    vec = ir.Ramp(i * 8, ir.const(2, I32), 4) + ir.Broadcast(N, 4)
    assert _coefficient_values(affine_coefficients(vec, {"i"}, lane="lane"), {}) == {"i": 8, "lane": 2}
    assert affine_coefficients(vec, {"i"}) is None  # no lane key: a vector index is not affine
    assert affine_coefficients(ir.Ramp(i, i, 4), {"i"}, lane="lane") is None  # stride varies


@pytest.mark.parametrize("index", [
    lambda i, j: i * j,                      # product of two loop vars
    lambda i, j: i / ir.const(4, I32) + j,   # a division
    lambda i, j: ir.Min(i, j),
])
def test_affine_coefficients_refuse_non_affine_uses(index) -> None:  # type: ignore[no-untyped-def]
    i, j = Var("i", I32), Var("j", I32)
    assert affine_coefficients(index(i, j), {"i", "j"}) is None
