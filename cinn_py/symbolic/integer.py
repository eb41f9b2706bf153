"""Exact integer arithmetic on IR expressions with C semantics: the one place that divides.

`c_div` / `c_mod` are C's `/` and `%` on Python ints (truncation toward zero; the remainder has
the sign of the dividend). `eval_int` evaluates an integer expression of symbolic dims (shapes,
launch dims, bucket predicates, buffer sizes) for concrete symbol values, and `eval_bool` a
predicate. Used by the runtime argument validator, the CUDA launcher, the interpreter, the
simplifier's constant folding and the frontend's shape checks.

`int_interval` (defined in `cinn_py.ir.intervals`, which the IR parser needs; re-exported here) is
the same evaluation over constant intervals: the inclusive `[lo, hi]` of an index given each
variable's interval (the GPU buffer passes size shared/local buffers with it, the IR parser
infers buffer shapes). Symbolic bounds are the `Analyzer`'s (`const_bounds`,
`symbolic_bounds`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cinn_py.ir import (
    EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, Cast, Div, Expr, IntImm, IntInterval, Max, Min, Minus, Mod,
    Mul, Not, Or, Select, Sub, UIntImm, Var, int_interval, is_const_int,
)

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


__all__ = ["IntInterval", "as_int", "c_div", "c_mod", "eval_bool", "eval_int", "int_interval"]
