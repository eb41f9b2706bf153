"""Unary and binary math beyond the arithmetic of `elementwise`: trig and hyperbolic functions and
their inverses, exp2/expm1/log2/log10, rounding (torch's half-to-even `round`), sign, frac,
erfc, the float classification ops, nan_to_num, atan2, hypot, fmod/remainder, copysign,
logaddexp, xlogy, lerp, addcmul/addcdiv, division with a rounding mode, fmax/fmin, heaviside,
sinc, ldexp and a few special functions (entr, ndtr, xlog1py). Activations: `nonlinear`.

Each is composed from NetBuilder's elementwise ops in the node's dtype (integer inputs of ops
torch computes in float are cast first: `unary_float`).
"""

from __future__ import annotations

import math
from typing import Any

import torch  # pyright: ignore[reportMissingImports]

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Converter, Emitter, Value, converts


def as_dtype(e: Emitter, x: Any, dtype: str | None = None) -> Any:
    """`x` in `dtype` (the node's by default); a Python number stays a number."""
    to = e.dtype if dtype is None else dtype
    return x if not isinstance(x, Variable) or str(x.dtype) == to else e.nb.cast(x, to)


def full(e: Emitter, value: Any, like: Variable | None = None) -> Variable:
    """`value` broadcast to the node's shape (a Variable: cast to the node's dtype)."""
    return e.broadcast(as_dtype(e, value), None if like is None else list(like.shape))


def _unary(method: str) -> Converter:
    return lambda e, x: getattr(e.nb, method)(as_dtype(e, x))


for _name in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "tan", "log2", "log10",
              "trunc"):
    converts(f"aten.{_name}.default")(_unary(_name))
converts("aten.fix.default")(_unary("trunc"))
converts("aten.isnan.default")(lambda e, x: e.nb.is_nan(x))
converts("aten.isinf.default")(lambda e, x: e.nb.is_inf(x))
converts("aten.isfinite.default")(lambda e, x: e.nb.is_finite(x))
converts("aten.positive.default")(lambda e, x: x)


@converts("aten.sign.default", "aten.sgn.default")
def _sign(e: Emitter, x: Variable) -> Value:
    if str(x.dtype) == "bool":
        return x
    return e.nb.sign(x)


@converts("aten.round.default")
def _round(e: Emitter, x: Variable) -> Value:
    """Half to even (torch, numpy); NetBuilder's round is C's, half away from zero."""
    nb = e.nb
    if not str(x.dtype).startswith(("float", "bfloat")):
        return x
    half_way = nb.equal(nb.abs(nb.subtract(x, nb.trunc(x))), full(e, 0.5))
    return nb.select(half_way, nb.scale(nb.round(nb.scale(x, 0.5)), 2.0), nb.round(x))


@converts("aten.round.decimals")
def _round_decimals(e: Emitter, x: Variable, decimals: int = 0) -> Value:
    if decimals == 0:
        return _round(e, x)
    scale = 10.0 ** decimals
    return e.nb.divide(_round(e, e.nb.scale(x, scale)), full(e, scale))


@converts("aten.frac.default")
def _frac(e: Emitter, x: Variable) -> Value:
    return e.nb.subtract(x, e.nb.trunc(x))


@converts("aten.exp2.default")
def _exp2(e: Emitter, x: Variable) -> Value:
    return e.nb.pow(full(e, 2.0), as_dtype(e, x))


@converts("aten.expm1.default")
def expm1(e: Emitter, x: Variable) -> Value:
    """Kahan's exp(x) - 1 accurate near 0: (u - 1) * x / log(u) for u = exp(x) (u == 1: x;
    u - 1 == -1 or u infinite: u - 1)."""
    nb = e.nb
    x = as_dtype(e, x)
    u = nb.exp(x)
    um1 = nb.subtract(u, full(e, 1.0))
    ratio = nb.divide(nb.multiply(um1, x), nb.log(u))
    exact = nb.logical_or(nb.equal(um1, full(e, -1.0)), nb.is_inf(u))
    return nb.select(nb.equal(u, full(e, 1.0)), x, nb.select(exact, um1, ratio))


@converts("aten.erfc.default")
def _erfc(e: Emitter, x: Variable) -> Value:
    return e.nb.subtract(full(e, 1.0), e.nb.erf(as_dtype(e, x)))


@converts("aten.square.default")
def _square(e: Emitter, x: Variable) -> Value:
    x = as_dtype(e, x)
    return e.nb.logical_and(x, x) if e.dtype == "bool" else e.nb.multiply(x, x)


@converts("aten.deg2rad.default")
def _deg2rad(e: Emitter, x: Variable) -> Value:
    return e.nb.scale(as_dtype(e, x), math.pi / 180)


@converts("aten.rad2deg.default")
def _rad2deg(e: Emitter, x: Variable) -> Value:
    return e.nb.scale(as_dtype(e, x), 180 / math.pi)


@converts("aten.isposinf.default")
def _isposinf(e: Emitter, x: Variable) -> Value:
    return e.nb.logical_and(e.nb.is_inf(x), e.nb.greater_than(x, 0))


@converts("aten.isneginf.default")
def _isneginf(e: Emitter, x: Variable) -> Value:
    return e.nb.logical_and(e.nb.is_inf(x), e.nb.less_than(x, 0))


@converts("aten.nan_to_num.default")
def _nan_to_num(e: Emitter, x: Variable, nan: float | None = 0.0, posinf: float | None = None,
                neginf: float | None = None) -> Value:
    if not str(x.dtype).startswith(("float", "bfloat")):
        return x
    info = torch.finfo(getattr(torch, str(x.dtype)))
    top = float(info.max) if posinf is None else posinf
    bottom = float(info.min) if neginf is None else neginf
    nb = e.nb
    y = nb.select(nb.is_nan(x), full(e, 0.0 if nan is None else nan), x)
    y = nb.select(nb.equal(x, full(e, math.inf)), full(e, top), y)
    return nb.select(nb.equal(x, full(e, -math.inf)), full(e, bottom), y)


def _operands(e: Emitter, a: Any, b: Any) -> tuple[Variable, Variable]:
    """Both operands in the node's dtype and shape."""
    return full(e, a), full(e, b)


@converts("aten.atan2.default")
def _atan2(e: Emitter, a: Any, b: Any) -> Value:
    return e.nb.atan2(*_operands(e, a, b))


@converts("aten.hypot.default")
def _hypot(e: Emitter, a: Any, b: Any) -> Value:
    nb = e.nb
    a, b = _operands(e, a, b)
    return nb.sqrt(nb.add(nb.multiply(a, a), nb.multiply(b, b)))


@converts("aten.fmod.Tensor", "aten.fmod.Scalar")
def _fmod(e: Emitter, a: Any, b: Any) -> Value:
    return e.nb.fmod(*_operands(e, a, b))  # C's fmod: the sign of the dividend


@converts("aten.remainder.Tensor", "aten.remainder.Scalar", "aten.remainder.Scalar_Tensor")
def _remainder(e: Emitter, a: Any, b: Any) -> Value:
    return e.nb.mod(*_operands(e, a, b))  # Python's %: the sign of the divisor


@converts("aten.copysign.Tensor", "aten.copysign.Scalar")
def _copysign(e: Emitter, a: Any, b: Any) -> Value:
    nb = e.nb
    a, b = _operands(e, a, b)
    # the sign bit of b: negative, or -0.0 (1 / -0.0 is -inf)
    negative = nb.logical_or(nb.less_than(b, full(e, 0.0)),
                             nb.less_than(nb.divide(full(e, 1.0), b), full(e, 0.0)))
    return nb.select(negative, nb.negative(nb.abs(a)), nb.abs(a))


@converts("aten.logaddexp.default")
def _logaddexp(e: Emitter, a: Any, b: Any) -> Value:
    """max + log1p(exp(-|a - b|)); equal operands (both infinite too): a + log 2."""
    nb = e.nb
    a, b = _operands(e, a, b)
    top = nb.maximum(a, b)
    tail = nb.log1p(nb.exp(nb.negative(nb.abs(nb.subtract(a, b)))))
    return nb.select(nb.equal(a, b), nb.scale(a, 1.0, math.log(2.0)), nb.add(top, tail))


@converts("aten.logaddexp2.default")
def _logaddexp2(e: Emitter, a: Any, b: Any) -> Value:
    nb = e.nb
    a, b = _operands(e, a, b)
    ln2 = math.log(2.0)
    natural = _logaddexp(e, nb.scale(a, ln2), nb.scale(b, ln2))
    return nb.scale(natural, 1 / ln2)


@converts("aten.xlogy.Tensor", "aten.xlogy.Scalar_Self", "aten.xlogy.Scalar_Other")
def _xlogy(e: Emitter, x: Any, y: Any) -> Value:
    """x * log(y), 0 where x == 0 (unless y is NaN)."""
    nb = e.nb
    x, y = _operands(e, x, y)
    zero = nb.logical_and(nb.equal(x, full(e, 0.0)), nb.logical_not(nb.is_nan(y)))
    return nb.select(zero, full(e, 0.0), nb.multiply(x, nb.log(y)))


@converts("aten.lerp.Scalar", "aten.lerp.Tensor")
def _lerp(e: Emitter, a: Variable, b: Variable, weight: Any) -> Value:
    """torch's two-sided formula: a + w (b - a) for |w| < 0.5, else b - (b - a)(1 - w)."""
    nb = e.nb
    a, b, w = full(e, a), full(e, b), full(e, weight)
    diff = nb.subtract(b, a)
    low = nb.add(a, nb.multiply(w, diff))
    high = nb.subtract(b, nb.multiply(diff, nb.subtract(full(e, 1.0), w)))
    return nb.select(nb.less_than(nb.abs(w), full(e, 0.5)), low, high)


@converts("aten.addcmul.default")
def _addcmul(e: Emitter, x: Any, t1: Any, t2: Any, value: Any = 1) -> Value:
    nb = e.nb
    prod = nb.multiply(full(e, t1), full(e, t2))
    return nb.add(full(e, x), prod if value == 1 else nb.multiply(prod, full(e, value)))


@converts("aten.addcdiv.default")
def _addcdiv(e: Emitter, x: Any, t1: Any, t2: Any, value: Any = 1) -> Value:
    nb = e.nb
    quot = nb.divide(full(e, t1), full(e, t2))
    return nb.add(full(e, x), quot if value == 1 else nb.multiply(quot, full(e, value)))


def _rounding_mode(*args: Any, rounding_mode: Any = None) -> str | None:
    return None if rounding_mode in (None, "trunc", "floor") else f"div rounding_mode={rounding_mode!r}"


@converts("aten.div.Tensor_mode", "aten.div.Scalar_mode", check=_rounding_mode)
def _div_mode(e: Emitter, a: Any, b: Any, rounding_mode: str | None = None) -> Value:
    nb = e.nb
    a, b = _operands(e, a, b)
    if e.dtype.startswith(("float", "bfloat")):
        quot = nb.divide(a, b)
        return (quot if rounding_mode is None else nb.trunc(quot) if rounding_mode == "trunc"
                else nb.floor(quot))
    if rounding_mode == "floor":
        return nb.floor_divide(a, b)
    return nb.divide(a, b)  # integers: C's division truncates


@converts("aten.floor_divide.default", "aten.floor_divide.Scalar")
def _floor_divide(e: Emitter, a: Any, b: Any) -> Value:
    """torch.floor_divide rounds down (since torch 1.13), as div's 'floor' mode."""
    return _div_mode(e, a, b, rounding_mode="floor")


@converts("aten.pow.Scalar")
def _pow_scalar_base(e: Emitter, base: Any, exponent: Variable) -> Value:
    return e.nb.pow(full(e, base), as_dtype(e, exponent))


@converts("aten.sinc.default")
def _sinc(e: Emitter, x: Variable) -> Value:
    """sin(pi x) / (pi x), 1 at 0."""
    nb = e.nb
    x = as_dtype(e, x)
    px = nb.scale(x, math.pi)
    return nb.select(nb.equal(x, full(e, 0.0)), full(e, 1.0), nb.divide(nb.sin(px), px))


def _nan_ignoring(method: str) -> Converter:
    def convert(e: Emitter, a: Any, b: Any) -> Value:
        nb = e.nb
        a, b = _operands(e, a, b)
        picked = getattr(nb, method)(a, b)
        return nb.select(nb.is_nan(a), b, nb.select(nb.is_nan(b), a, picked))
    return convert


converts("aten.fmax.default")(_nan_ignoring("maximum"))
converts("aten.fmin.default")(_nan_ignoring("minimum"))


@converts("aten.heaviside.default")
def _heaviside(e: Emitter, x: Any, values: Any) -> Value:
    nb = e.nb
    x, values = _operands(e, x, values)
    step = nb.select(nb.greater_than(x, full(e, 0.0)), full(e, 1.0), full(e, 0.0))
    return nb.select(nb.equal(x, full(e, 0.0)), values, nb.select(nb.is_nan(x), x, step))


@converts("aten.signbit.default")
def _signbit(e: Emitter, x: Variable) -> Value:
    """x < 0, or -0.0 (1 / -0.0 is -inf), or a NaN with its sign bit (not distinguishable here:
    False)."""
    nb = e.nb
    if not str(x.dtype).startswith(("float", "bfloat")):
        return nb.less_than(x, 0) if not str(x.dtype).startswith(("uint", "bool")) else nb.not_equal(x, x)
    zero = e.nb.fill_constant(list(x.shape), 0.0, dtype=str(x.dtype))
    one = e.nb.fill_constant(list(x.shape), 1.0, dtype=str(x.dtype))
    return nb.logical_or(nb.less_than(x, zero), nb.less_than(nb.divide(one, x), zero))


@converts("aten.xlog1py.default", "aten.special_xlog1py.default")
def _xlog1py(e: Emitter, x: Any, y: Any) -> Value:
    nb = e.nb
    x, y = _operands(e, x, y)
    zero = nb.logical_and(nb.equal(x, full(e, 0.0)), nb.logical_not(nb.is_nan(y)))
    return nb.select(zero, full(e, 0.0), nb.multiply(x, nb.log1p(y)))


@converts("aten.special_entr.default")
def _entr(e: Emitter, x: Variable) -> Value:
    """-x ln x for x > 0, 0 at 0, -inf below (NaN stays NaN)."""
    nb = e.nb
    x = as_dtype(e, x)
    inner = nb.negative(nb.multiply(x, nb.log(x)))
    out = nb.select(nb.equal(x, full(e, 0.0)), full(e, 0.0), inner)
    return nb.select(nb.less_than(x, full(e, 0.0)), full(e, -math.inf), out)


@converts("aten.special_ndtr.default")
def _ndtr(e: Emitter, x: Variable) -> Value:
    """0.5 erfc(-x / sqrt 2)."""
    return e.nb.scale(_erfc(e, e.nb.scale(as_dtype(e, x), -math.sqrt(0.5))), 0.5)


@converts("aten.ldexp.Tensor")
def _ldexp(e: Emitter, x: Any, exponent: Any) -> Value:
    x, exponent = _operands(e, x, exponent)
    return e.nb.multiply(x, e.nb.pow(full(e, 2.0), exponent))


@converts("aten.clamp.Tensor", "aten.clamp_min.Tensor")
def _clamp_tensors(e: Emitter, x: Variable, lo: Any = None, hi: Any = None) -> Value:
    """clamp with tensor (or number) bounds, broadcast to the node's shape."""
    nb = e.nb
    y = full(e, x)
    y = y if lo is None else nb.maximum(y, full(e, lo))
    return y if hi is None else nb.minimum(y, full(e, hi))


converts("aten.clamp_max.Tensor")(lambda e, x, hi: _clamp_tensors(e, x, None, hi))


@converts("aten.float_power.Tensor_Tensor", "aten.float_power.Tensor_Scalar", "aten.float_power.Scalar")
def _float_power(e: Emitter, a: Any, b: Any) -> Value:
    """pow in float64 (the node's dtype)."""
    return e.nb.pow(*_operands(e, a, b))
