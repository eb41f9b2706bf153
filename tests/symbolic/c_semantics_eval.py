"""Test helper: a tiny C-semantics evaluator of scalar index expressions, independent of the simplifier."""

from __future__ import annotations

from collections.abc import Mapping

from cinn_py import ir


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_mod(a: int, b: int) -> int:
    return a - b * c_div(a, b)


_BIN = {
    ir.Add: lambda a, b: a + b, ir.Sub: lambda a, b: a - b, ir.Mul: lambda a, b: a * b,
    ir.Div: c_div, ir.Mod: c_mod, ir.Min: min, ir.Max: max,
    ir.EQ: lambda a, b: a == b, ir.NE: lambda a, b: a != b, ir.LT: lambda a, b: a < b,
    ir.LE: lambda a, b: a <= b, ir.GT: lambda a, b: a > b, ir.GE: lambda a, b: a >= b,
    ir.And: lambda a, b: bool(a) and bool(b), ir.Or: lambda a, b: bool(a) or bool(b),
}


def evaluate(e: ir.Expr, env: Mapping[str, int]) -> int | bool:
    """Value of `e` with Vars looked up by name; raises ZeroDivisionError like C would trap."""
    if isinstance(e, (ir.IntImm, ir.UIntImm)):
        return bool(e.value) if e.dtype.is_bool else e.value
    if isinstance(e, ir.Var):
        return env[e.name]
    if isinstance(e, ir.Minus):
        return -evaluate(e.v, env)
    if isinstance(e, ir.Not):
        return not evaluate(e.v, env)
    if isinstance(e, ir.Select):
        return evaluate(e.true_value, env) if evaluate(e.condition, env) else evaluate(e.false_value, env)
    if isinstance(e, ir.Cast):
        value = evaluate(e.v, env)
        return bool(value) if e.dtype.is_bool else int(value)
    return _BIN[type(e)](evaluate(e.a, env), evaluate(e.b, env))
