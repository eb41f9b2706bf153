"""Activations and their backward ops: hardtanh (relu6), hardswish, hardsigmoid, silu, mish, elu,
leaky_relu, softplus. Each backward follows aten's derivative formula, including which side of a
kink gets the gradient (hardtanh's is zero at both bounds, leaky_relu's slope at 0)."""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, converts
from cinn_py.torch.converters.elementwise import nan_kept


def _zeros(e: Emitter, like: Variable) -> Variable:
    return e.nb.fill_constant(list(like.shape), 0, dtype=str(like.dtype))


def _where(e: Emitter, cond: Variable, a: Variable, b: Variable) -> Variable:
    return e.nb.select(cond, a, b)


@converts("aten.hardtanh.default")
def _hardtanh(e: Emitter, x: Variable, lo: Any = -1.0, hi: Any = 1.0) -> Value:
    return nan_kept(e, x, e.nb.minimum(e.nb.maximum(x, lo), hi))  # hardtanh(NaN) is NaN in torch


@converts("aten.hardtanh_backward.default")
def _hardtanh_backward(e: Emitter, g: Variable, x: Variable, lo: Any, hi: Any) -> Value:
    """g where lo < x < hi, zero at and beyond the bounds (aten's convention)."""
    inside = e.nb.logical_and(e.nb.greater_than(x, lo), e.nb.less_than(x, hi))
    return _where(e, inside, g, _zeros(e, g))


@converts("aten.hardsigmoid.default")
def _hardsigmoid(e: Emitter, x: Variable) -> Value:
    return e.nb.scale(e.nb.minimum(e.nb.maximum(e.nb.scale(x, 1.0, 3.0), 0.0), 6.0), 1.0 / 6.0)


@converts("aten.hardsigmoid_backward.default")
def _hardsigmoid_backward(e: Emitter, g: Variable, x: Variable) -> Value:
    inside = e.nb.logical_and(e.nb.greater_than(x, -3.0), e.nb.less_than(x, 3.0))
    return _where(e, inside, e.nb.scale(g, 1.0 / 6.0), _zeros(e, g))


@converts("aten.hardswish.default")
def _hardswish(e: Emitter, x: Variable) -> Value:
    return e.nb.multiply(x, _hardsigmoid(e, x))


@converts("aten.hardswish_backward.default")
def _hardswish_backward(e: Emitter, g: Variable, x: Variable) -> Value:
    """0 below -3, g (x / 3 + 1/2) up to 3 (inclusive), g above."""
    nb = e.nb
    middle = nb.multiply(g, nb.scale(x, 1.0 / 3.0, 0.5))
    upper = _where(e, nb.less_equal(x, 3.0), middle, g)
    return _where(e, nb.less_than(x, -3.0), _zeros(e, g), upper)


@converts("aten.silu_backward.default")
def _silu_backward(e: Emitter, g: Variable, x: Variable) -> Value:
    """g s (1 + x (1 - s)), s = sigmoid(x)."""
    nb = e.nb
    s = nb.sigmoid(x)
    return nb.multiply(g, nb.multiply(s, nb.add(nb.fill_constant(list(x.shape), 1.0, dtype=str(x.dtype)),
                                                 nb.multiply(x, nb.scale(s, -1.0, 1.0)))))


def _softplus_raw(e: Emitter, x: Variable, beta: float, threshold: float) -> Variable:
    """log1p(exp(beta x)) / beta, x itself where beta x > threshold (exp would overflow)."""
    nb = e.nb
    bx = nb.scale(x, float(beta))
    soft = nb.scale(nb.log1p(nb.exp(nb.minimum(bx, float(threshold)))), 1.0 / float(beta))
    return _where(e, nb.greater_than(bx, float(threshold)), x, soft)


@converts("aten.softplus.default")
def _softplus(e: Emitter, x: Variable, beta: Any = 1.0, threshold: Any = 20.0) -> Value:
    return _softplus_raw(e, x, beta, threshold)


@converts("aten.softplus_backward.default")
def _softplus_backward(e: Emitter, g: Variable, x: Variable, beta: Any, threshold: Any) -> Value:
    nb = e.nb
    bx = nb.scale(x, float(beta))
    s = nb.sigmoid(bx)  # exp(bx) / (exp(bx) + 1)
    return _where(e, nb.greater_than(bx, float(threshold)), g, nb.multiply(g, s))


@converts("aten.mish.default")
def _mish(e: Emitter, x: Variable) -> Value:
    return e.nb.multiply(x, e.nb.tanh(_softplus_raw(e, x, 1.0, 20.0)))


@converts("aten.mish_backward.default")
def _mish_backward(e: Emitter, g: Variable, x: Variable) -> Value:
    """g (t + x s (1 - t^2)), t = tanh(softplus(x)), s = sigmoid(x)."""
    nb = e.nb
    t = nb.tanh(_softplus_raw(e, x, 1.0, 20.0))
    s = nb.sigmoid(x)
    return nb.multiply(g, nb.add(t, nb.multiply(nb.multiply(x, s), nb.scale(nb.multiply(t, t), -1.0, 1.0))))


@converts("aten.elu.default")
def _elu(e: Emitter, x: Variable, alpha: Any = 1.0, scale: Any = 1.0, input_scale: Any = 1.0) -> Value:
    nb = e.nb
    negative = nb.scale(nb.scale(nb.exp(nb.scale(x, float(input_scale))), 1.0, -1.0),
                        float(alpha) * float(scale))
    return _where(e, nb.greater_than(x, 0.0), nb.scale(x, float(scale)), negative)


@converts("aten.elu_backward.default")
def _elu_backward(e: Emitter, g: Variable, alpha: Any, scale: Any, input_scale: Any, is_result: bool,
                  x_or_y: Variable) -> Value:
    """From the result y (is_result): g input_scale (y + alpha scale) where y <= 0; from x:
    g input_scale alpha scale exp(x input_scale) where x <= 0; g scale elsewhere."""
    nb = e.nb
    a, s, k = float(alpha), float(scale), float(input_scale)
    if is_result:
        negative = nb.multiply(g, nb.scale(x_or_y, k, k * a * s))
    else:
        negative = nb.multiply(g, nb.scale(nb.exp(nb.scale(x_or_y, k)), k * a * s))
    return _where(e, nb.greater_than(x_or_y, 0.0), nb.scale(g, s), negative)


@converts("aten.leaky_relu.default")
def _leaky_relu(e: Emitter, x: Variable, slope: Any = 0.01) -> Value:
    return _where(e, e.nb.greater_than(x, 0.0), x, e.nb.scale(x, float(slope)))


@converts("aten.leaky_relu_backward.default")
def _leaky_relu_backward(e: Emitter, g: Variable, x: Variable, slope: Any, self_is_result: bool) -> Value:
    return _where(e, e.nb.greater_than(x, 0.0), g, e.nb.scale(g, float(slope)))


@converts("aten.celu.default")
def _celu(e: Emitter, x: Variable, alpha: Any = 1.0) -> Value:
    """elu with input_scale 1 / alpha (aten's own definition)."""
    return _elu(e, x, alpha, 1.0, 1.0 / float(alpha))
