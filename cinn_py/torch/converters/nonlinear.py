"""Activations and their backward ops beyond `activations` (relu/gelu/silu, hard*, elu family,
leaky_relu, softplus, mish): logit, glu, prelu, log_sigmoid, threshold, hardshrink and softshrink."""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, converts
from cinn_py.torch.converters.math import as_dtype, full


@converts("aten.logit.default")
def _logit(e: Emitter, x: Variable, eps: float | None = None) -> Value:
    nb = e.nb
    x = as_dtype(e, x)
    if eps is not None:
        x = nb.minimum(nb.maximum(x, full(e, float(eps))), full(e, 1.0 - float(eps)))
    return nb.log(nb.divide(x, nb.subtract(full(e, 1.0), x)))


@converts("aten.logit_backward.default")
def _logit_backward(e: Emitter, g: Variable, x: Variable, eps: float | None = None) -> Value:
    """g / (x (1 - x)); with eps, 0 outside [eps, 1 - eps] (where the forward clamped)."""
    nb = e.nb
    grad = nb.divide(g, nb.multiply(x, nb.subtract(full(e, 1.0), x)))
    if eps is None:
        return grad
    outside = nb.logical_or(nb.less_than(x, full(e, float(eps))),
                            nb.greater_than(x, full(e, 1.0 - float(eps))))
    return nb.select(outside, full(e, 0.0), grad)


@converts("aten.glu.default")
def _glu(e: Emitter, x: Variable, dim: int = -1) -> Value:
    """a * sigmoid(b) for the two halves a, b of `dim`."""
    nb = e.nb
    axis = dim % x.ndim
    half = int(x.shape[axis]) // 2
    a = nb.slice(x, [axis], [0], [half])
    b = nb.slice(x, [axis], [half], [2 * half])
    return nb.multiply(a, nb.sigmoid(b))


@converts("aten.glu_backward.default")
def _glu_backward(e: Emitter, g: Variable, x: Variable, dim: int = -1) -> Value:
    nb = e.nb
    axis = dim % x.ndim
    half = int(x.shape[axis]) // 2
    a = nb.slice(x, [axis], [0], [half])
    s = nb.sigmoid(nb.slice(x, [axis], [half], [2 * half]))
    ga = nb.multiply(g, s)
    gb = nb.multiply(nb.multiply(ga, a), nb.subtract(e.broadcast(1.0, list(s.shape)), s))
    return nb.concat([ga, gb], axis=axis)


@converts("aten._prelu_kernel.default")
def _prelu(e: Emitter, x: Variable, w: Variable) -> Value:
    nb = e.nb
    return nb.select(nb.greater_than(x, full(e, 0.0)), x, nb.multiply(x, full(e, w)))


@converts("aten.log_sigmoid_forward.default")
def _log_sigmoid_forward(e: Emitter, x: Variable) -> Value:
    """(min(x, 0) - log1p(z), z = exp(-|x|): torch's CPU kernel keeps z as the buffer)."""
    nb = e.nb
    z = nb.exp(nb.negative(nb.abs(x)))
    return nb.subtract(nb.minimum(x, full(e, 0.0)), nb.log1p(z)), z


@converts("aten.log_sigmoid_backward.default")
def _log_sigmoid_backward(e: Emitter, g: Variable, x: Variable, buffer: Variable) -> Value:
    """g (max_deriv - sign z / (1 + z)), z = exp(-|x|): torch's CPU kernel, from x alone."""
    nb = e.nb
    negative = nb.less_than(x, full(e, 0.0))
    z = nb.exp(nb.negative(nb.abs(x)))
    ratio = nb.divide(z, nb.add(z, full(e, 1.0)))
    slope = nb.select(negative, nb.subtract(full(e, 1.0), ratio), ratio)
    return nb.multiply(g, slope)


@converts("aten.threshold.default")
def _threshold(e: Emitter, x: Variable, threshold: Any, value: Any) -> Value:
    return e.nb.select(e.nb.greater_than(x, full(e, threshold)), x, full(e, value))


@converts("aten.hardshrink.default")
def _hardshrink(e: Emitter, x: Variable, lambd: float = 0.5) -> Value:
    nb = e.nb
    return nb.select(nb.greater_than(nb.abs(x), full(e, float(lambd))), x, full(e, 0.0))


@converts("aten.hardshrink_backward.default")
def _hardshrink_backward(e: Emitter, g: Variable, x: Variable, lambd: float) -> Value:
    nb = e.nb
    return nb.select(nb.greater_than(nb.abs(x), full(e, float(lambd))), g, full(e, 0.0))


@converts("aten.softshrink.default")
def _softshrink(e: Emitter, x: Variable, lambd: float = 0.5) -> Value:
    nb, lam = e.nb, float(lambd)
    shrunk = nb.select(nb.greater_than(x, full(e, lam)), nb.scale(x, 1.0, -lam),
                       nb.select(nb.less_than(x, full(e, -lam)), nb.scale(x, 1.0, lam), full(e, 0.0)))
    return nb.select(nb.is_nan(x), x, shrunk)


@converts("aten.softshrink_backward.default")
def _softshrink_backward(e: Emitter, g: Variable, x: Variable, lambd: float) -> Value:
    nb = e.nb
    return nb.select(nb.greater_than(nb.abs(x), full(e, float(lambd))), g, full(e, 0.0))


@converts("aten._prelu_kernel_backward.default")
def _prelu_backward(e: Emitter, g: Variable, x: Variable, w: Variable) -> Value:
    """(g where x > 0 else w g, 0 where x > 0 else x g), both in x's (broadcast) shape: prelu's
    autograd sums the weight's part down to the weight's shape."""
    nb = e.nb
    positive = nb.greater_than(x, full(e, 0.0))
    weight = full(e, w)
    return (nb.select(positive, g, nb.multiply(weight, g)),
            nb.select(positive, full(e, 0.0), nb.multiply(x, g)))
