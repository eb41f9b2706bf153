"""Gradient rules of the elementwise ops (`cinn_py/frontend/ops/elementwise.py`).

Rules read the forward output `y` where that is cheaper than recomputing from `x` (exp, tanh,
sigmoid, sqrt, rsqrt, reciprocal), as CINN's and Paddle's `*_grad` kernels do. Piecewise ops
(relu, relu6, leaky_relu, clip, abs, maximum, minimum) take the subgradient of their `select`
form; at a tie, maximum/minimum give the cotangent to x (as `select(x >= y, ...)`); mod and
remainder (x - y * q, q a rounded quotient) treat q as a constant, as PyTorch does.
Rounding, sign and comparison ops pass no gradient (zero almost everywhere), nor do the
logical and bitwise ops (bool or integer values): `define_no_grad` declares them.
"""

from __future__ import annotations

import math

from cinn_py.autodiff.core import GradContext, define_grad, define_no_grad
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.program import Variable


def zeros_like(nb: NetBuilder, v: Variable) -> Variable:
    return nb.fill_constant(list(v.shape), 0.0, dtype=v.dtype)


def masked(nb: NetBuilder, cond: Variable, g: Variable) -> Variable:
    """g where cond holds, else 0 (CINN's relu_grad is this select)."""
    return nb.select(cond, g, zeros_like(nb, g))


@define_grad("add")
def _add(c: GradContext) -> list[Variable | None]:
    return [c.dout, c.dout]


@define_grad("subtract")
def _subtract(c: GradContext) -> list[Variable | None]:
    return [c.dout, c.nb.negative(c.dout)]


@define_grad("multiply")
def _multiply(c: GradContext) -> list[Variable | None]:
    x, y = c.inputs
    return [c.nb.multiply(c.dout, y), c.nb.multiply(c.dout, x)]


@define_grad("divide")
def _divide(c: GradContext) -> list[Variable | None]:
    nb, (_, y) = c.nb, c.inputs
    dx = nb.divide(c.dout, y)
    return [dx, nb.negative(nb.multiply(dx, c.out))]


@define_grad("maximum", "minimum")
def _max_min(c: GradContext) -> list[Variable | None]:
    nb, (x, y) = c.nb, c.inputs
    pick_x = nb.greater_equal(x, y) if c.op.type == "maximum" else nb.less_equal(x, y)
    return [masked(nb, pick_x, c.dout), masked(nb, nb.logical_not(pick_x), c.dout)]


@define_grad("pow")
def _pow(c: GradContext) -> list[Variable | None]:
    nb, (x, y) = c.nb, c.inputs
    dx = nb.multiply(c.dout, nb.multiply(y, nb.pow(x, nb.scale(y, 1.0, -1.0))))
    dy = nb.multiply(c.dout, nb.multiply(c.out, nb.log(x)))
    return [dx, dy]


@define_grad("atan2")
def _atan2(c: GradContext) -> list[Variable | None]:
    nb, (y, x) = c.nb, c.inputs
    r2 = nb.add(nb.multiply(x, x), nb.multiply(y, y))
    return [nb.divide(nb.multiply(c.dout, x), r2), nb.negative(nb.divide(nb.multiply(c.dout, y), r2))]


@define_grad("negative")
def _negative(c: GradContext) -> list[Variable | None]:
    return [c.nb.negative(c.dout)]


@define_grad("identity")
def _identity(c: GradContext) -> list[Variable | None]:
    return [c.dout]


@define_grad("scale", "dropout_infer")
def _scale(c: GradContext) -> list[Variable | None]:
    return [c.nb.scale(c.dout, c.attrs["scale"])]


@define_grad("cast")
def _cast(c: GradContext) -> list[Variable | None]:
    (x,) = c.inputs
    return [c.nb.cast(c.dout, x.dtype) if x.dtype.is_float and c.out.dtype.is_float else None]


@define_grad("exp")
def _exp(c: GradContext) -> list[Variable | None]:
    return [c.nb.multiply(c.dout, c.out)]


@define_grad("log")
def _log(c: GradContext) -> list[Variable | None]:
    return [c.nb.divide(c.dout, c.inputs[0])]


@define_grad("log2", "log10")
def _log_base(c: GradContext) -> list[Variable | None]:
    base = 2.0 if c.op.type == "log2" else 10.0
    return [c.nb.scale(c.nb.divide(c.dout, c.inputs[0]), 1.0 / math.log(base))]


@define_grad("log1p")
def _log1p(c: GradContext) -> list[Variable | None]:
    return [c.nb.divide(c.dout, c.nb.scale(c.inputs[0], 1.0, 1.0))]


@define_grad("sqrt")
def _sqrt(c: GradContext) -> list[Variable | None]:
    return [c.nb.scale(c.nb.divide(c.dout, c.out), 0.5)]


@define_grad("rsqrt")
def _rsqrt(c: GradContext) -> list[Variable | None]:
    nb, y = c.nb, c.out
    return [nb.scale(nb.multiply(c.dout, nb.multiply(y, nb.multiply(y, y))), -0.5)]


@define_grad("cbrt")
def _cbrt(c: GradContext) -> list[Variable | None]:
    nb, y = c.nb, c.out
    return [nb.divide(c.dout, nb.scale(nb.multiply(y, y), 3.0))]


@define_grad("reciprocal")
def _reciprocal(c: GradContext) -> list[Variable | None]:
    nb, y = c.nb, c.out
    return [nb.negative(nb.multiply(c.dout, nb.multiply(y, y)))]


@define_grad("tanh")
def _tanh(c: GradContext) -> list[Variable | None]:
    nb, y = c.nb, c.out
    return [nb.multiply(c.dout, nb.scale(nb.multiply(y, y), -1.0, 1.0))]


@define_grad("sigmoid")
def _sigmoid(c: GradContext) -> list[Variable | None]:
    nb, y = c.nb, c.out
    return [nb.multiply(c.dout, nb.multiply(y, nb.scale(y, -1.0, 1.0)))]


@define_grad("silu")
def _silu(c: GradContext) -> list[Variable | None]:
    # d/dx x*s(x) = s * (1 + x * (1 - s)), s = sigmoid(x)
    nb, x = c.nb, c.inputs[0]
    s = nb.sigmoid(x)
    return [nb.multiply(c.dout, nb.multiply(s, nb.scale(nb.multiply(x, nb.scale(s, -1.0, 1.0)), 1.0, 1.0)))]


@define_grad("sin")
def _sin(c: GradContext) -> list[Variable | None]:
    return [c.nb.multiply(c.dout, c.nb.cos(c.inputs[0]))]


@define_grad("cos")
def _cos(c: GradContext) -> list[Variable | None]:
    return [c.nb.negative(c.nb.multiply(c.dout, c.nb.sin(c.inputs[0])))]


@define_grad("tan")
def _tan(c: GradContext) -> list[Variable | None]:
    nb, y = c.nb, c.out
    return [nb.multiply(c.dout, nb.scale(nb.multiply(y, y), 1.0, 1.0))]


@define_grad("sinh")
def _sinh(c: GradContext) -> list[Variable | None]:
    return [c.nb.multiply(c.dout, c.nb.cosh(c.inputs[0]))]


@define_grad("cosh")
def _cosh(c: GradContext) -> list[Variable | None]:
    return [c.nb.multiply(c.dout, c.nb.sinh(c.inputs[0]))]


def _rsqrt_of(nb: NetBuilder, x: Variable, sign: float, bias: float) -> Variable:
    """1 / sqrt(sign * x^2 + bias)."""
    return nb.rsqrt(nb.scale(nb.multiply(x, x), sign, bias))


@define_grad("asin")
def _asin(c: GradContext) -> list[Variable | None]:
    return [c.nb.multiply(c.dout, _rsqrt_of(c.nb, c.inputs[0], -1.0, 1.0))]


@define_grad("acos")
def _acos(c: GradContext) -> list[Variable | None]:
    return [c.nb.negative(c.nb.multiply(c.dout, _rsqrt_of(c.nb, c.inputs[0], -1.0, 1.0)))]


@define_grad("atan")
def _atan(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    return [nb.divide(c.dout, nb.scale(nb.multiply(x, x), 1.0, 1.0))]


@define_grad("asinh")
def _asinh(c: GradContext) -> list[Variable | None]:
    return [c.nb.multiply(c.dout, _rsqrt_of(c.nb, c.inputs[0], 1.0, 1.0))]


@define_grad("acosh")
def _acosh(c: GradContext) -> list[Variable | None]:
    return [c.nb.multiply(c.dout, _rsqrt_of(c.nb, c.inputs[0], 1.0, -1.0))]


@define_grad("atanh")
def _atanh(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    return [nb.divide(c.dout, nb.scale(nb.multiply(x, x), -1.0, 1.0))]


@define_grad("erf")
def _erf(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    e = nb.exp(nb.scale(nb.multiply(x, x), -1.0))
    return [nb.multiply(c.dout, nb.scale(e, 2.0 / math.sqrt(math.pi)))]


@define_grad("abs")
def _abs(c: GradContext) -> list[Variable | None]:
    return [c.nb.multiply(c.dout, c.nb.sign(c.inputs[0]))]


@define_grad("relu")
def _relu(c: GradContext) -> list[Variable | None]:
    return [masked(c.nb, c.nb.greater_than(c.out, 0.0), c.dout)]


@define_grad("relu6")
def _relu6(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    inside = nb.logical_and(nb.greater_than(x, 0.0), nb.less_than(x, float(c.attrs["threshold"])))
    return [masked(nb, inside, c.dout)]


@define_grad("leaky_relu")
def _leaky_relu(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    return [nb.select(nb.greater_equal(x, 0.0), c.dout, nb.scale(c.dout, c.attrs["alpha"]))]


@define_grad("clip")
def _clip(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    inside = nb.logical_and(nb.greater_equal(x, float(c.attrs["min"])),
                            nb.less_equal(x, float(c.attrs["max"])))
    return [masked(nb, inside, c.dout)]


@define_grad("select")
def _select(c: GradContext) -> list[Variable | None]:
    nb, (cond, _, _) = c.nb, c.inputs
    return [None, masked(nb, cond, c.dout), masked(nb, nb.logical_not(cond), c.dout)]


@define_grad("mod", "remainder", "fmod")
def _mod(c: GradContext) -> list[Variable | None]:
    # x - y * q with q = floor(x / y) (mod, remainder) or trunc(x / y) (fmod), piecewise constant: as torch
    nb, (x, y) = c.nb, c.inputs
    q = nb.divide(x, y)
    q = nb.trunc(q) if c.op.type == "fmod" else nb.floor(q)
    return [c.dout, nb.negative(nb.multiply(c.dout, q))]


define_no_grad("floor", "ceil", "round", "trunc", "sign", "floor_divide",
               why="piecewise constant: the derivative is zero almost everywhere")
define_no_grad("equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal", "is_nan",
               "is_inf", "is_finite", why="a bool result")
define_no_grad("fill_constant", "arange", "uniform_random", "gaussian_random",
               why="a value of its attributes alone (no tensor input to differentiate)")
define_no_grad("logical_and", "logical_or", "logical_xor", "logical_not", why="bool operands and result")
define_no_grad("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "left_shift", "right_shift", "clz",
               "popc", why="integer (or bool) operands and result")
