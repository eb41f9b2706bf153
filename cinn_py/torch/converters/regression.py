"""Regression losses (nll_loss: `losses`) and their backward ops: mse, huber, smooth_l1, soft_margin,
binary cross entropy (on probabilities, and on logits: its backward is traced to ATen ops) (torch's
`reduction`: 0 none, 1 mean, 2 sum)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cinn_py.frontend.ops.shapes import numel
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, converts, static_dim
from cinn_py.torch.converters.math import full

NONE, MEAN, SUM = 0, 1, 2


def _reduced(e: Emitter, loss: Variable, reduction: int) -> Variable:
    if reduction == NONE:
        return loss
    if loss.ndim == 0:
        return loss
    total = e.nb.reduce_sum(loss, list(range(loss.ndim)))
    if reduction == SUM:
        return total
    return e.nb.scale(total, 1.0 / numel([static_dim(d) for d in loss.shape])) if numel(loss.shape) else \
        e.nb.scale(total, float("nan"))


def _static_mean(x: Any, *args: Any, **kwargs: Any) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None or all(isinstance(s, int) for s in fake.shape):
        return None
    return f"loss mean over symbolic shape {fake.shape}"


def _grad_scale(e: Emitter, g: Variable, x: Variable, reduction: int) -> Variable:
    """The cotangent of each element: g itself (none), or g broadcast, / N for the mean."""
    grad = e.broadcast(g, list(x.shape))
    if reduction == MEAN and x.ndim:
        count = numel([static_dim(d) for d in x.shape])
        return e.nb.scale(grad, 1.0 / count) if count else grad
    return grad


def _loss(pointwise: Callable[[Emitter, Variable, Any], Variable]) -> Callable[..., Value]:
    def convert(e: Emitter, x: Variable, y: Variable, reduction: int = MEAN, param: Any = None,
                **kw: Any) -> Value:
        param = next(iter(kw.values()), param)  # delta= / beta=
        inner = Emitter(e.nb, tuple(x.shape) if x.ndim >= y.ndim else tuple(y.shape), e.dtype)
        d = e.nb.subtract(full(inner, x), full(inner, y))
        return _reduced(e, pointwise(inner, d, param), reduction)
    return convert


def _grad(derivative: Callable[[Emitter, Variable, Any], Variable]) -> Callable[..., Value]:
    def convert(e: Emitter, g: Variable, x: Variable, y: Variable, reduction: int = MEAN, param: Any = None,
                **kw: Any) -> Value:
        param = next(iter(kw.values()), param)
        d = e.nb.subtract(full(e, x), full(e, y))
        return e.nb.multiply(_grad_scale(e, g, d, reduction), derivative(e, d, param))
    return convert


def _mse(e: Emitter, d: Variable, _: Any) -> Variable:
    return e.nb.multiply(d, d)


def _huber(e: Emitter, d: Variable, delta: Any) -> Variable:
    nb, delta = e.nb, float(1.0 if delta is None else delta)
    a = nb.abs(d)
    return nb.select(nb.less_than(a, full(e, delta)), nb.scale(nb.multiply(d, d), 0.5),
                     nb.scale(nb.scale(a, 1.0, -0.5 * delta), delta))


def _smooth_l1(e: Emitter, d: Variable, beta: Any) -> Variable:
    nb, beta = e.nb, float(1.0 if beta is None else beta)
    a = nb.abs(d)
    if beta == 0:
        return a
    return nb.select(nb.less_than(a, full(e, beta)), nb.scale(nb.multiply(d, d), 0.5 / beta),
                     nb.scale(a, 1.0, -0.5 * beta))


converts("aten.mse_loss.default", check=_static_mean)(_loss(_mse))
converts("aten.huber_loss.default", check=_static_mean)(_loss(_huber))
converts("aten.smooth_l1_loss.default", check=_static_mean)(_loss(_smooth_l1))


def _mse_slope(e: Emitter, d: Variable, _: Any) -> Variable:
    return e.nb.scale(d, 2.0)


def _huber_slope(e: Emitter, d: Variable, delta: Any) -> Variable:
    delta = float(1.0 if delta is None else delta)
    return e.nb.clip(d, -delta, delta)


def _smooth_l1_slope(e: Emitter, d: Variable, beta: Any) -> Variable:
    nb, beta = e.nb, float(1.0 if beta is None else beta)
    sign = nb.sign(d)
    if beta == 0:
        return sign
    return nb.select(nb.less_than(nb.abs(d), full(e, beta)), nb.scale(d, 1.0 / beta), sign)


converts("aten.mse_loss_backward.default", check=lambda g, x, *a: _static_mean(x))(_grad(_mse_slope))
converts("aten.huber_loss_backward.default", check=lambda g, x, *a: _static_mean(x))(_grad(_huber_slope))
converts("aten.smooth_l1_loss_backward.default",
         check=lambda g, x, *a: _static_mean(x))(_grad(_smooth_l1_slope))


@converts("aten.soft_margin_loss.default", check=_static_mean)
def _soft_margin(e: Emitter, x: Variable, y: Variable, reduction: int = MEAN) -> Value:
    nb = e.nb
    inner = Emitter(nb, tuple(x.shape), e.dtype)
    return _reduced(e, nb.log1p(nb.exp(nb.negative(nb.multiply(full(inner, x), full(inner, y))))), reduction)


@converts("aten.soft_margin_loss_backward.default", check=lambda g, x, *a: _static_mean(x))
def _soft_margin_backward(e: Emitter, g: Variable, x: Variable, y: Variable, reduction: int = MEAN) -> Value:
    nb = e.nb
    y = full(e, y)
    z = nb.exp(nb.negative(nb.multiply(full(e, x), y)))
    slope = nb.negative(nb.divide(nb.multiply(y, z), nb.add(z, full(e, 1.0))))
    return nb.multiply(_grad_scale(e, g, x, reduction), slope)


def _bce_weight(e: Emitter, loss: Variable, weight: Variable | None) -> Variable:
    return loss if weight is None else e.nb.multiply(loss, full(e, weight))


@converts("aten.binary_cross_entropy.default", check=_static_mean)
def _binary_cross_entropy(e: Emitter, x: Variable, y: Variable, weight: Variable | None = None,
                          reduction: int = MEAN) -> Value:
    """-w (y log x + (1 - y) log(1 - x)), each log clamped at -100 (as torch)."""
    nb = e.nb
    inner = Emitter(nb, tuple(x.shape), e.dtype)
    floor = full(inner, -100.0)
    log_x = nb.maximum(nb.log(x), floor)
    log_1mx = nb.maximum(nb.log(nb.subtract(full(inner, 1.0), x)), floor)
    y = full(inner, y)
    loss = nb.negative(nb.add(nb.multiply(y, log_x), nb.multiply(nb.subtract(full(inner, 1.0), y), log_1mx)))
    return _reduced(e, _bce_weight(inner, loss, weight), reduction)


@converts("aten.binary_cross_entropy_backward.default", check=lambda g, x, *a, **k: _static_mean(x))
def _binary_cross_entropy_backward(e: Emitter, g: Variable, x: Variable, y: Variable,
                                   weight: Variable | None = None,
                                   reduction: int = MEAN) -> Value:
    """g w (x - y) / max(x (1 - x), 1e-12)."""
    nb = e.nb
    x, y = full(e, x), full(e, y)
    denom = nb.maximum(nb.multiply(x, nb.subtract(full(e, 1.0), x)), full(e, 1e-12))
    slope = _bce_weight(e, nb.divide(nb.subtract(x, y), denom), weight)
    return nb.multiply(_grad_scale(e, g, x, reduction), slope)


@converts("aten.binary_cross_entropy_with_logits.default", check=_static_mean)
def _bce_with_logits(e: Emitter, x: Variable, y: Variable, weight: Variable | None = None,
                     pos_weight: Variable | None = None, reduction: int = MEAN) -> Value:
    """(1 - y) x + lw log(1 + exp(-x)), lw = 1 + (pos_weight - 1) y, the log-sum-exp taken stably
    as torch: m + log(exp(-m) + exp(-x - m)), m = max(-x, 0); times `weight`."""
    nb = e.nb
    inner = Emitter(nb, tuple(x.shape), e.dtype)  # (torch requires the target's size to be the input's)
    x, y = full(inner, x), full(inner, y)
    m = nb.maximum(nb.negative(x), full(inner, 0.0))
    softplus = nb.add(m, nb.log(nb.add(nb.exp(nb.negative(m)), nb.exp(nb.subtract(nb.negative(x), m)))))
    if pos_weight is not None:
        scaled_y = nb.multiply(nb.subtract(full(inner, pos_weight), full(inner, 1.0)), y)
        log_weight = nb.add(scaled_y, full(inner, 1.0))
        softplus = nb.multiply(log_weight, softplus)
    loss = nb.add(nb.multiply(nb.subtract(full(inner, 1.0), y), x), softplus)
    return _reduced(e, _bce_weight(inner, loss, weight), reduction)
