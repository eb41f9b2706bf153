"""Constant interval arithmetic on integer IR expressions: the inclusive `[lo, hi]` an index
takes given each variable's interval.

It lives in the IR package because the IR text parser needs it (to infer buffer shapes and reject
negative indices) and `cinn_py.symbolic` builds on the IR; `cinn_py.symbolic.integer` re-exports
it next to the exact evaluation of the same expressions (`eval_int`).
"""

from __future__ import annotations

from collections.abc import Callable

from cinn_py.ir.expr import (Add, BinaryOp, Cast, Div, Expr, IntImm, Max, Min, Minus, Mod, Mul, Select, Sub,
                             UIntImm, Var)
from cinn_py.ir.expr_access import Ramp

IntInterval = tuple[int, int]
"""Inclusive [lo, hi]."""


def int_interval(expr: Expr, var_interval: Callable[[Var], IntInterval | None]) -> IntInterval | None:
    """Constant inclusive `[lo, hi]` of an integer index expression, given the interval of each
    variable (`var_interval` returns None when unknown); None when not computable. Division and
    remainder need a non-negative dividend and a constant positive divisor (C truncation is then
    floor division)."""
    if isinstance(expr, (IntImm, UIntImm)):
        return (int(expr.value), int(expr.value))
    if isinstance(expr, Var):
        return var_interval(expr)
    if isinstance(expr, Cast):
        return int_interval(expr.v, var_interval) if expr.dtype.is_int or expr.dtype.is_uint else None
    if isinstance(expr, Minus):
        v = int_interval(expr.v, var_interval)
        return None if v is None else (-v[1], -v[0])
    if isinstance(expr, Select):
        t, f = int_interval(expr.true_value, var_interval), int_interval(expr.false_value, var_interval)
        return None if t is None or f is None else (min(t[0], f[0]), max(t[1], f[1]))
    if isinstance(expr, Ramp) and isinstance(expr.stride, (IntImm, UIntImm)):
        base = int_interval(expr.base, var_interval)
        span = int(expr.stride.value) * (expr.lanes - 1)
        return None if base is None else (base[0] + min(0, span), base[1] + max(0, span))
    if isinstance(expr, (Add, Sub, Mul, Div, Mod, Min, Max)):
        a, b = int_interval(expr.a, var_interval), int_interval(expr.b, var_interval)
        return None if a is None or b is None else _combine(type(expr), a, b)
    return None


def _combine(op: type[BinaryOp], a: IntInterval, b: IntInterval) -> IntInterval | None:
    if op is Add:
        return (a[0] + b[0], a[1] + b[1])
    if op is Sub:
        return (a[0] - b[1], a[1] - b[0])
    if op is Mul:
        corners = [x * y for x in a for y in b]
        return (min(corners), max(corners))
    if op is Min:
        return (min(a[0], b[0]), min(a[1], b[1]))
    if op is Max:
        return (max(a[0], b[0]), max(a[1], b[1]))
    c = b[0]
    if b[1] != c or c <= 0 or a[0] < 0:
        return None
    if op is Div:
        return (a[0] // c, a[1] // c)
    return (a[0] % c, a[1] % c) if a[0] // c == a[1] // c else (0, min(a[1], c - 1))


__all__ = ["IntInterval", "int_interval"]
