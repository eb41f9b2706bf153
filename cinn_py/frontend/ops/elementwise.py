"""Elementwise ops (kElementWise) that are one expression of their operands: arithmetic,
division and modulo with CINN's semantics, logic and comparisons, unary math functions and
intrinsics, bitwise ops. Ops with attributes or several operands (cast, select, scale, clip,
sum, fill_constant, ...) are `elementwise_attr`; the framework that registers them all is
`elementwise_base` (its helpers are re-exported here, their import path before the split).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.math_ops import call_intrinsic
from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.base import Attrs, OpDef, TensorType
from cinn_py.frontend.ops.elementwise_base import ANY, FLOAT, INTEGER, NUMERIC, ExprFn, NpFn, _elementwise
from cinn_py.frontend.ops.elementwise_base import (  # noqa: F401 - re-exported (import path)
    binary_operands, broadcast_pair, check_same_dtypes, check_same_shapes, fill_attrs, scalar_of,
)
from cinn_py.frontend.ops.signature import Signature, tensor
from cinn_py.frontend.ops.reference import cinn_maximum, cinn_minimum, int_division
from cinn_py.interp import math_fns
from cinn_py.ir import And, DType, EQ, Expr, GE, GT, INTRINSICS, LE, LT, Minus, Mod, NE, Not, Or, bool_, const
from cinn_py.ir import float64


def _c_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Division with C semantics: true division for floats, truncation toward zero for ints."""
    if a.dtype.kind == "f":
        return a / b
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe)
    return np.where((a < 0) != (safe < 0), -q, q)


# -- binary arithmetic -------------------------------------------------------------------------------
_elementwise("add", 2, NUMERIC, lambda at, a, b: a + b, lambda at, a, b: a + b)
_elementwise("subtract", 2, NUMERIC, lambda at, a, b: a - b, lambda at, a, b: a - b)
# multiply on bool is the logical and (Paddle and CINN accept it: CINN's test_multiply_op.py)
_elementwise("multiply", 2, ANY, lambda at, a, b: And(a, b) if a.dtype.is_bool else a * b,
             lambda at, a, b: a * b, dtypes=(*testing.NUMERIC, "bool"))
_elementwise("divide", 2, NUMERIC, lambda at, a, b: a / b, lambda at, a, b: int_division(_c_divide, a, b),
             y_low=0.5, y_high=3.0)
_elementwise("maximum", 2, NUMERIC, lambda at, a, b: cdsl.maximum(a, b), lambda at, a, b: cinn_maximum(a, b),
             methods=("max", "maximum"))
_elementwise("minimum", 2, NUMERIC, lambda at, a, b: cdsl.minimum(a, b), lambda at, a, b: cinn_minimum(a, b),
             methods=("min", "minimum"))
def _pow_expr(at: Attrs, a: Expr, b: Expr) -> Expr:
    """Floats: C's pow. Integers: CINN's rule (its host runtime, `cinn_host_pow_int32`): the power
    computed in double and converted back (so a negative exponent gives 0 unless |x| is 1), and
    -1 for 0 to a negative power (whose double result, inf, has no integer value)."""
    if a.dtype.is_float:
        return cdsl.pow(a, b)
    power = cdsl.cast(cdsl.pow(cdsl.cast(a, float64), cdsl.cast(b, float64)), a.dtype)
    zero = const(0, a.dtype)
    return cdsl.select(And(EQ(a, zero), LT(b, zero)), const(-1, a.dtype), power)


def _pow_np(at: Attrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.power(a, b)
    power = np.power(a.astype(np.float64), b.astype(np.float64))
    undefined = (a == 0) & (b < 0)
    return np.where(undefined, -1, np.trunc(np.where(undefined, 0.0, power))).astype(a.dtype)


# the op harness's default cases (x in [0.25, 2]) stay on the float dtypes; CINN's integer cases
# (tools/cinn_cases, test_pow_op.py) check the integer rule
_elementwise("pow", 2, NUMERIC, _pow_expr, _pow_np, low=0.25, high=2.0, dtypes=testing.FLOATS)
_elementwise("atan2", 2, FLOAT, lambda at, a, b: cdsl.atan2(a, b), lambda at, a, b: np.arctan2(a, b))


def _c_rem(a: Expr, b: Expr) -> Expr:
    """C remainder (sign of the dividend): `%` on integers, `fmod` on floats."""
    return cdsl.fmod(a, b) if a.dtype.is_float else Mod(a, b)


def _floor_mod(a: Expr, b: Expr) -> Expr:
    """Python/numpy `%` (sign of the divisor): the C remainder, plus b when the signs differ."""
    r = _c_rem(a, b)
    zero = const(0, a.dtype)
    return cdsl.select(And(NE(r, zero), NE(LT(r, zero), LT(b, zero))), r + b, r)


def _floor_divide(a: Expr, b: Expr) -> Expr:
    if a.dtype.is_float:
        return cdsl.floor(a / b)
    zero = const(0, a.dtype)
    q = a / b  # truncates toward zero
    inexact_negative = And(NE(Mod(a, b), zero), NE(LT(a, zero), LT(b, zero)))
    return cdsl.select(inexact_negative, q - const(1, a.dtype), q)


# CINN: `mod` and `remainder` are both the floor modulo (Python's %, sign of the divisor: CINN's
# lang::Remainder and lang::Mod both call its `mod` extern, and Paddle's remainder is Python's);
# `fmod` (cinn-py's, for torch.fmod) is the truncated remainder (C's % / fmod, sign of the
# dividend); floor_divide rounds the quotient down.
_elementwise("floor_divide", 2, NUMERIC, lambda at, a, b: _floor_divide(a, b),
             lambda at, a, b: int_division(np.floor_divide, a, b),
             low=-6.0, high=6.0, y_low=-3.0, y_high=3.0, y_avoid_zero=True, rtol=1e-3)
_elementwise("mod", 2, NUMERIC, lambda at, a, b: _floor_mod(a, b),
             lambda at, a, b: int_division(np.mod, a, b),
             low=-6.0, high=6.0, y_low=-3.0, y_high=3.0, y_avoid_zero=True)
_elementwise("remainder", 2, NUMERIC, lambda at, a, b: _floor_mod(a, b),
             lambda at, a, b: int_division(np.mod, a, b),
             low=-6.0, high=6.0, y_low=-3.0, y_high=3.0, y_avoid_zero=True)
_elementwise("fmod", 2, NUMERIC, lambda at, a, b: _c_rem(a, b),
             lambda at, a, b: int_division(np.fmod, a, b),
             low=-6.0, high=6.0, y_low=-3.0, y_high=3.0, y_avoid_zero=True)

# -- logic and comparisons -> bool ------------------------------------------------------------------
def truth(a: Expr) -> Expr:
    """`a` as bool (nonzero is true), as CINN's logical ops cast their operands."""
    return a if a.dtype.is_bool else NE(a, const(0, a.dtype))


_elementwise("logical_and", 2, ANY, lambda at, a, b: And(truth(a), truth(b)),
             lambda at, a, b: np.logical_and(a, b),
             lambda t, at: bool_)
_elementwise("logical_or", 2, ANY, lambda at, a, b: Or(truth(a), truth(b)),
             lambda at, a, b: np.logical_or(a, b),
             lambda t, at: bool_)
_elementwise("logical_xor", 2, ANY, lambda at, a, b: NE(truth(a), truth(b)),
             lambda at, a, b: np.logical_xor(a, b),
             lambda t, at: bool_)
_elementwise("logical_not", 1, ANY, lambda at, a: Not(truth(a)), lambda at, a: np.logical_not(a),
             lambda t, at: bool_)


def _bool_result(t: TensorType, attrs: Attrs) -> DType:
    return bool_


for _name, _node, _np in (
    ("equal", EQ, np.equal), ("not_equal", NE, np.not_equal), ("less_than", LT, np.less),
    ("less_equal", LE, np.less_equal), ("greater_than", GT, np.greater),
    ("greater_equal", GE, np.greater_equal),
):
    _elementwise(_name, 2, ANY, (lambda node: lambda at, a, b: node(a, b))(_node),
                 (lambda f: lambda at, a, b: f(a, b))(_np), _bool_result)

# -- unary ----------------------------------------------------------------------------------------------
_elementwise("negative", 1, NUMERIC, lambda at, a: Minus(a), lambda at, a: -a)
_elementwise("abs", 1, NUMERIC, lambda at, a: cdsl.abs(a), lambda at, a: np.abs(a))
_elementwise("relu", 1, NUMERIC, lambda at, a: cdsl.maximum(a, const(0, a.dtype)),
             lambda at, a: cinn_maximum(a, np.zeros((), a.dtype)))
_elementwise("exp", 1, FLOAT, lambda at, a: cdsl.exp(a), lambda at, a: np.exp(a))
_elementwise("log", 1, FLOAT, lambda at, a: cdsl.log(a), lambda at, a: np.log(a), low=0.1, high=3.0)
_elementwise("sqrt", 1, FLOAT, lambda at, a: cdsl.sqrt(a), lambda at, a: np.sqrt(a), low=0.0, high=3.0)
_elementwise("rsqrt", 1, FLOAT, lambda at, a: cdsl.rsqrt(a),
             lambda at, a: (np.ones((), a.dtype) / np.sqrt(a)), low=0.1, high=3.0)
_elementwise("tanh", 1, FLOAT, lambda at, a: cdsl.tanh(a), lambda at, a: np.tanh(a))
_elementwise("erf", 1, FLOAT, lambda at, a: cdsl.erf(a), lambda at, a: math_fns.erf(a))
_elementwise("sigmoid", 1, FLOAT, lambda at, a: cdsl.sigmoid(a),
             lambda at, a: np.ones((), a.dtype) / (np.ones((), a.dtype) + np.exp(-a)))
_elementwise("silu", 1, FLOAT, lambda at, a: a * cdsl.sigmoid(a),
             lambda at, a: a / (np.ones((), a.dtype) + np.exp(-a)),
             signature=Signature((tensor("x"),),
                                 doc="`x * sigmoid(x)` (swish); `x * sigmoid(x)` is rewritten to it."),
             low=-6.0, high=6.0)


def _intrinsic(name: str, low: float = -2.0, high: float = 2.0, kind: str = FLOAT, **kw: Any) -> OpDef:
    """A unary op that is one math intrinsic of the IR (its numpy reference is the intrinsic's)."""
    fn = getattr(cdsl, name)
    ref = INTRINSICS[name].reference
    return _elementwise(kw.pop("op", name), 1, kind, lambda at, a: fn(a), lambda at, a: ref(a),
                        low=low, high=high,
                        **kw)


for _name in ("sin", "cos", "tan", "sinh", "cosh", "atan", "asinh", "cbrt"):
    _intrinsic(_name)
for _name in ("log2", "log10"):
    _intrinsic(_name, 0.1, 3.0)
_intrinsic("log1p", -0.5, 3.0)
_intrinsic("asin", -0.95, 0.95)
_intrinsic("acos", -0.95, 0.95)
_intrinsic("atanh", -0.9, 0.9)
_intrinsic("acosh", 1.0, 4.0)
for _name in ("floor", "ceil", "round", "trunc"):   # the identity on integers (CINN too)
    _intrinsic(_name, -4.0, 4.0, kind=NUMERIC)
for _name, _op in (("isnan", "is_nan"), ("isinf", "is_inf"), ("isfinite", "is_finite")):
    _intrinsic(_name, kind=NUMERIC, op=_op, result=lambda t, at: bool_, specials=True)


# -- bitwise (integers; C semantics: >> is arithmetic on signed, logical on unsigned dtypes) -----------
def _bits(name: str) -> ExprFn:
    return lambda at, *xs: call_intrinsic(name, *xs)


def _bits_np(name: str) -> NpFn:
    ref = INTRINSICS[name].reference
    return lambda at, *xs: ref(*xs)


# on bool operands (CINN and Paddle accept them) the bitwise ops are the logical ones
_BOOL_BITS: dict[str, Callable[..., Expr]] = {"bitwise_and": And, "bitwise_or": Or, "bitwise_xor": NE,
                                              "bitwise_not": Not}


def _bits_or_logical(name: str) -> ExprFn:
    on_ints = _bits(name)
    return lambda at, *xs: _BOOL_BITS[name](*xs) if xs[0].dtype.is_bool else on_ints(at, *xs)


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _elementwise(_name, 2, "integer or bool", _bits_or_logical(_name), _bits_np(_name), low=-100.0,
                 high=100.0, dtypes=("int32", "int64", "int8", "uint8", "bool"))
for _name in ("left_shift", "right_shift"):   # shift counts in [0, 7): defined for every dtype
    _elementwise(_name, 2, INTEGER, _bits(_name), _bits_np(_name), low=-100.0, high=100.0,
                 y_low=0.0, y_high=6.0)
_elementwise("bitwise_not", 1, "integer or bool", _bits_or_logical("bitwise_not"), _bits_np("bitwise_not"),
             low=-100.0, high=100.0, dtypes=("int32", "int64", "int8", "uint8", "bool"))
for _name in ("clz", "popc"):   # CUDA's __clz/__popc: 32- and 64-bit integers (as CINN)
    _elementwise(_name, 1, INTEGER, _bits(_name), _bits_np(_name), low=-1000.0, high=1000.0,
                 dtypes=("int32", "int64"))
