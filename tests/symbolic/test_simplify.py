"""The rule-based simplifier: named rules, canonical order, and random equivalence (C semantics)."""

from __future__ import annotations

import itertools
import random

import pytest
from cinn_py.symbolic.integer import eval_int as evaluate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.symbolic import simplify
from cinn_py.symbolic.rules import RULES

i, j, k = ir.Var("i"), ir.Var("j"), ir.Var("k")
fused = ir.Var("i_j_fused")
RANGES = {i: (0, 16), j: (0, 8), k: (0, 4), fused: (0, 512)}


def c32(v: int) -> ir.Expr:
    return ir.const(v)


def text(e: ir.Expr, ranges=RANGES) -> str:
    return str(simplify(e, ranges))


@pytest.mark.parametrize(("expr", "expected"), [
    ((i * 8 + j) + 0, "((i * 8) + j)"),
    (j + i * 8, "((i * 8) + j)"),
    ((i * 8 + j) / 8, "i"),
    ((i * 8 + j) % 8, "j"),
    ((fused / 32) * 32 + fused % 32, "i_j_fused"),
    (((fused / 32) / 4) * 128 + ((fused / 32) % 4) * 32 + fused % 32, "i_j_fused"),
    ((fused / 4) / 8, "(i_j_fused / 32)"),
    ((fused % 32) % 32, "(i_j_fused % 32)"),
    ((fused % 64) % 32, "(i_j_fused % 32)"),
    (fused % 1, "0"),
    (fused / 1, "i_j_fused"),
    (i - i, "0"),
    (i * 0 + j * 1, "j"),
    (ir.Min(i, i), "i"),
    (ir.Max(j + 1, j), "(j + 1)"),
    (ir.Min(j, c32(8)), "j"),
    (i < 16, "true"),
    (i < 15, "(i < 15)"),
    (i >= 0, "true"),
    (ir.eq(i * 2, i + i), "true"),
    (ir.ne(j, c32(9)), "true"),
    ((i * 4 + k) / 32, "(i / 8)"),
    ((i * 4 + k) % 32, "(((i % 8) * 4) + k)"),
    ((fused % 128) / 32, "((i_j_fused / 32) % 4)"),
    (5 - i, "(5 - i)"),
    (-i + 5, "(5 - i)"),
    (j - i * 2, "(j - (i * 2))"),
    (ir.Minus(i), "-(i)"),
    ((i + 1) * (j + 2), "((((i * j) + (i * 2)) + j) + 2)"),
    (c32(7) / c32(-2), "-3"),
    (c32(-7) % c32(2), "-1"),
    (c32(-7) / c32(2), "-3"),
    (ir.Select(i < 16, j, k), "j"),
    (ir.Select(i < 3, j, j), "j"),
    (ir.And(i < 16, j < 5), "(j < 5)"),
    (ir.Or(i < 3, j < 8), "true"),
    (ir.Not(i < 3), "(i >= 3)"),
    (ir.Not(ir.Not(i < 3)), "(i < 3)"),
    (ir.Cast(dt.int32, i), "i"),
])
def test_rules(expr: ir.Expr, expected: str) -> None:
    assert text(expr) == expected


def test_negative_values_block_unsafe_rules() -> None:
    n = ir.Var("n")
    ranges = {n: (-8, 16), j: (0, 8)}
    # (n*8 + j) / 8 != n for negative n (C truncation): must not be rewritten.
    assert text((n * 8 + j) / 8, ranges) == "(((n * 8) + j) / 8)"
    assert text((n * 8 + j) % 8, ranges) == "(((n * 8) + j) % 8)"
    # Exact division is fine for any sign.
    assert text((n * 8 + 16) / 8, ranges) == "(n + 2)"
    # Unknown variables: nothing range-dependent fires.
    u = ir.Var("u")
    assert text((u * 8 + j) / 8, {j: (0, 8)}) == "(((u * 8) + j) / 8)"


def test_int64_keeps_dtype() -> None:
    s0 = ir.Var("S0", dt.int64, is_symbolic_constant=True)
    x = ir.Var("x", dt.int64)
    out = simplify((x * 4 + 0) / 4 + s0 - s0, {x: (0, s0)})
    assert str(out) == "x"
    out = simplify(x * 4 + 3 + 1, {x: (0, s0)})
    assert str(out) == "((x * 4ll) + 4ll)"
    assert all(n.dtype == dt.int64 for n in ir.walk(out))


def test_symbolic_divisor() -> None:
    s1 = ir.Var("S1", dt.int64, is_symbolic_constant=True)
    s2 = ir.Var("S2", dt.int64, is_symbolic_constant=True)
    a, b = ir.Var("a", dt.int64), ir.Var("b", dt.int64)
    ranges = {a: (0, s2), b: (0, s1)}
    assert str(simplify((a * s1 + b) / s1, ranges)) == "a"
    assert str(simplify((a * s1 + b) % s1, ranges)) == "b"
    assert str(simplify((a * s1) / s1, {})) == "a"
    assert str(simplify(b < s1, ranges)) == "true"
    assert str(simplify(a * s1 + b, ranges)) == "((a * S1) + b)"


def test_every_rule_has_a_comment_and_unique_name() -> None:
    import inspect

    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    for rule in RULES:
        source = inspect.getsource(rule.apply)
        assert "\n    # " in source, f"rule {rule.name} lacks its one-line identity comment"


# ---------------------------------------------------------------------------------------------
# Random equivalence
# ---------------------------------------------------------------------------------------------
VARS = {"i": (0, 16), "j": (0, 8), "k": (0, 4), "n": (-6, 12)}
_vars = [ir.Var(name) for name in VARS]


def _exprs(depth: int) -> st.SearchStrategy[ir.Expr]:
    leaves = st.one_of(st.sampled_from(_vars), st.integers(-9, 40).map(c32))
    if depth == 0:
        return leaves
    sub = _exprs(depth - 1)
    const_divisor = st.sampled_from([1, 2, 3, 4, 8, 16, 32, -4]).map(c32)
    return st.one_of(
        leaves,
        st.tuples(sub, sub).map(lambda t: t[0] + t[1]),
        st.tuples(sub, sub).map(lambda t: t[0] - t[1]),
        st.tuples(sub, st.integers(-3, 33).map(c32)).map(lambda t: t[0] * t[1]),
        st.tuples(sub, sub).map(lambda t: t[0] * t[1]),
        st.tuples(sub, const_divisor).map(lambda t: t[0] / t[1]),
        st.tuples(sub, const_divisor).map(lambda t: t[0] % t[1]),
        st.tuples(sub, sub).map(lambda t: ir.Min(t[0], t[1])),
        st.tuples(sub, sub).map(lambda t: ir.Max(t[0], t[1])),
        st.tuples(sub, sub, sub, sub).map(lambda t: ir.Select(t[0] < t[1], t[2], t[3])),
        st.tuples(sub, sub).map(lambda t: t[0] + ((t[1] / 8) * 8 + t[1] % 8)),
    )


def _assignments(seed: int, count: int = 24) -> list[dict[str, int]]:
    rng = random.Random(seed)
    corners = ([dict(zip(VARS, c)) for c
                in itertools.product(*[(lo, lo + ext - 1) for lo, ext in VARS.values()])])
    rand = [{name: rng.randrange(lo, lo + ext) for name, (lo, ext) in VARS.items()} for _ in range(count)]
    return corners[:8] + rand


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_exprs(3), st.integers(0, 10_000))
def test_random_expressions_keep_their_value(expr: ir.Expr, seed: int) -> None:
    ranges = {v: (c32(VARS[v.name][0]), c32(VARS[v.name][1])) for v in _vars}
    out = simplify(expr, ranges)
    assert simplify(out, ranges) == out, "simplify must reach a fixpoint"
    for env in _assignments(seed):
        try:
            expected = evaluate(expr, env)
        except ZeroDivisionError:
            continue
        assert evaluate(out, env) == expected, f"{expr}  ->  {out}  at {env}"


@settings(max_examples=100, deadline=None)
@given(_exprs(2), _exprs(2), st.sampled_from([ir.LT, ir.LE, ir.GT, ir.GE, ir.EQ, ir.NE]), st.integers(0, 999))
def test_random_comparisons_keep_their_value(a: ir.Expr, b: ir.Expr, cmp: type, seed: int) -> None:
    ranges = {v: VARS[v.name] for v in _vars}
    expr = ir.And(cmp(a, b), ir.Not(ir.LT(a, c32(100))) | (b >= -3))
    out = simplify(expr, ranges)
    for env in _assignments(seed, 12):
        try:
            expected = evaluate(expr, env)
        except ZeroDivisionError:
            continue
        assert evaluate(out, env) == expected, f"{expr}  ->  {out}  at {env}"
