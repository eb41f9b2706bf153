"""Exact integer arithmetic on IR expressions with C semantics: the one place that divides.

`c_div` / `c_mod` are C's `/` and `%` on Python ints (truncation toward zero; the remainder has
the sign of the dividend). `eval_int` evaluates an integer expression of symbolic dims (shapes,
launch dims, bucket predicates, buffer sizes) for concrete symbol values, and `eval_bool` a
predicate. Used by the runtime argument validator, the CUDA launcher, the interpreter, the
simplifier's constant folding and the frontend's shape checks.

`int_interval` is the same evaluation over constant intervals: the inclusive `[lo, hi]` of an
index given each variable's interval (the GPU buffer passes size shared/local buffers with it,
the IR parser infers buffer shapes). Symbolic bounds are the `Analyzer`'s (`const_bounds`,
`symbolic_bounds`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cinn_py.ir import (
    EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, Cast, Div, Expr, IntImm, Max, Min, Minus, Mod, Mul, Not, Or,
    Ramp, Select, Sub, UIntImm, Var, is_const_int,
)

IntInterval = tuple[int, int]
"""Inclusive [lo, hi]."""


def as_int(e: Expr | int) -> int | None:
    """The Python int of an integer immediate (or of an int), else None."""
    if isinstance(e, int):
        return e
    return int(e.value) if is_const_int(e) else None


def c_div(a: int, b: int) -> int:
    """C `a / b`: truncates toward zero (ZeroDivisionError for `b == 0`)."""
    if b == 0:
        raise ZeroDivisionError(f"integer division by zero ({a} / 0)")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_mod(a: int, b: int) -> int:
    """C `a % b`: `a - b * (a / b)`, with the sign of `a` (ZeroDivisionError for `b == 0`)."""
    return a - b * c_div(a, b)


_BINARY: dict[type[BinaryOp], Callable[[int, int], int]] = {
    Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b, Div: c_div, Mod: c_mod,
    Min: min, Max: max,
    EQ: lambda a, b: int(a == b), NE: lambda a, b: int(a != b), LT: lambda a, b: int(a < b),
    LE: lambda a, b: int(a <= b), GT: lambda a, b: int(a > b), GE: lambda a, b: int(a >= b),
    And: lambda a, b: int(bool(a) and bool(b)), Or: lambda a, b: int(bool(a) or bool(b)),
}


def eval_int(expr: Expr, env: Mapping[str, int]) -> int:
    """The value of an integer (or bool, as 0/1) expression of symbolic dims named in `env`.

    Raises KeyError for a symbol `env` lacks, ZeroDivisionError for a zero divisor, and
    ValueError for a node that is not integer arithmetic (a load, a call, a float)."""
    if isinstance(expr, (IntImm, UIntImm)):
        return int(expr.value)
    if isinstance(expr, Var):
        return int(env[expr.name])
    if isinstance(expr, Cast):  # to bool normalises to 0/1; integer casts of shapes never wrap here
        value = eval_int(expr.v, env)
        return int(bool(value)) if expr.dtype.is_bool else value
    if isinstance(expr, Minus):
        return -eval_int(expr.v, env)
    if isinstance(expr, Not):
        return int(not eval_int(expr.v, env))
    if isinstance(expr, Select):
        branch = expr.true_value if eval_int(expr.condition, env) else expr.false_value
        return eval_int(branch, env)
    if isinstance(expr, BinaryOp):
        op = _BINARY.get(type(expr))
        if op is not None:
            return op(eval_int(expr.a, env), eval_int(expr.b, env))
    raise ValueError(f"{expr} ({type(expr).__name__}) is not an integer expression of symbolic dims")


def eval_bool(expr: Expr, env: Mapping[str, int]) -> bool:
    """The truth of a predicate over symbolic dims (bucket predicates, guards)."""
    return bool(eval_int(expr, env))


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


__all__ = ["IntInterval", "as_int", "c_div", "c_mod", "eval_bool", "eval_int", "int_interval"]
