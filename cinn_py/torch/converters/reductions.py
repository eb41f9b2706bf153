"""Reductions and normalisations: sum/mean/amax..., softmax and log_softmax (and backward), layer norm."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import (
    Converter,
    Emitter,
    Value,
    LOW_PRECISION,
    as_dtype,
    axes_of,
    compute_dtype,
    converts,
    zero_d_as_1d,
)


def _reduce(method: str) -> Converter:
    def convert(e: Emitter, x: Variable, dims: Any = None, keepdim: bool = False, **_: Any) -> Value:
        # torch sums bool and small ints in int64, bf16/fp16 in float32 (cast back by the graph)
        x = as_dtype(e, x, e.dtype if e.dtype not in LOW_PRECISION else "float32")
        return getattr(e.nb, method)(x, axes_of(dims, x.ndim), keep_dim=keepdim)
    return convert


# dtype=: the input is cast to it first, as torch does (the node's dtype is the requested one)
converts("aten.sum.dim_IntList", "aten.sum.default")(_reduce("reduce_sum"))
converts("aten.mean.dim", "aten.mean.default")(_reduce("reduce_mean"))
def _nan_propagating_reduce(method: str) -> Converter:
    """amax/amin: NaN when the reduced elements hold one (torch); reduce_max/min alone follow CINN's
    rule, which drops a NaN unless it comes last. A reduce_any of isnan over the same axes fuses
    into the same kernel."""
    plain = _reduce(method)

    def convert(e: Emitter, x: Variable, dims: Any = None, keepdim: bool = False, **kw: Any) -> Value:
        y = plain(e, x, dims, keepdim, **kw)
        if not x.dtype.is_float:
            return y
        has_nan = e.nb.reduce_any(e.nb.is_nan(x), axes_of(dims, x.ndim), keep_dim=keepdim)
        return e.nb.select(has_nan, e.nb.fill_constant(list(y.shape), float("nan"), dtype=str(y.dtype)), y)
    return convert


converts("aten.amax.default")(_nan_propagating_reduce("reduce_max"))
converts("aten.amin.default")(_nan_propagating_reduce("reduce_min"))


@converts("aten.nansum.default")
def _nansum(e: Emitter, x: Variable, dims: Any = None, keepdim: bool = False, **_: Any) -> Value:
    if str(x.dtype).startswith(("float", "bfloat")):
        x = e.nb.select(e.nb.is_nan(x), e.nb.fill_constant(list(x.shape), 0.0, dtype=str(x.dtype)), x)
    return _reduce("reduce_sum")(e, x, dims, keepdim)


def _no_half_to_float(x: Any, dim: int, half_to_float: bool) -> str | None:
    return "softmax half_to_float=True" if half_to_float else None


@converts("aten._softmax.default", check=_no_half_to_float)
@zero_d_as_1d
def _softmax(e: Emitter, x: Variable, dim: int, half_to_float: bool) -> Value:
    return e.nb.softmax(as_dtype(e, x, compute_dtype(x)), [dim % x.ndim])


@converts("aten._log_softmax.default", check=_no_half_to_float)
@zero_d_as_1d
def _log_softmax(e: Emitter, x: Variable, dim: int, half_to_float: bool) -> Value:
    nb, axis = e.nb, [dim % x.ndim]
    x = as_dtype(e, x, compute_dtype(x))
    shifted = nb.subtract(x, nb.reduce_max(x, axis, keep_dim=True))
    return nb.subtract(shifted, nb.log(nb.reduce_sum(nb.exp(shifted), axis, keep_dim=True)))


@converts("aten._log_softmax_backward_data.default")
@zero_d_as_1d
def _log_softmax_backward(e: Emitter, g: Variable, y: Variable, dim: int, input_dtype: Any) -> Value:
    nb, dtype = e.nb, compute_dtype(g, y)
    g, y = as_dtype(e, g, dtype), as_dtype(e, y, dtype)
    return nb.subtract(g, nb.multiply(nb.exp(y), nb.reduce_sum(g, [dim % y.ndim], keep_dim=True)))


@converts("aten._softmax_backward_data.default")
@zero_d_as_1d
def _softmax_backward(e: Emitter, g: Variable, y: Variable, dim: int, input_dtype: Any) -> Value:
    nb, dtype = e.nb, compute_dtype(g, y)
    g, y = as_dtype(e, g, dtype), as_dtype(e, y, dtype)
    dot = nb.reduce_sum(nb.multiply(g, y), [dim % y.ndim], keep_dim=True)
    return nb.multiply(y, nb.subtract(g, dot))


@converts("aten.native_layer_norm.default")
def _layer_norm(e: Emitter, x: Variable, normalized_shape: Sequence[int], w: Variable | None,
                b: Variable | None, eps: float) -> Value:
    """bf16/fp16 x (autocast) or mixed x/weight dtypes: normalised in float32, as torch's CPU kernel
    (out in x's dtype, mean and rstd float32: the graph casts to torch's dtypes)."""
    nb, dtype = e.nb, compute_dtype(x, w, b)
    x, w, b = as_dtype(e, x, dtype), as_dtype(e, w, dtype), as_dtype(e, b, dtype)
    axes = list(range(x.ndim - len(normalized_shape), x.ndim))
    mean = nb.reduce_mean(x, axes, keep_dim=True)
    centred = nb.subtract(x, mean)
    rstd = nb.rsqrt(nb.scale(nb.reduce_mean(nb.multiply(centred, centred), axes, keep_dim=True), 1.0, eps))
    y = nb.multiply(centred, rstd)
    y = y if w is None else nb.multiply(y, w)
    return (y if b is None else nb.add(y, b)), mean, rstd


@converts("aten.native_layer_norm_backward.default")
def _layer_norm_backward(e: Emitter, g: Variable, x: Variable, normalized_shape: Sequence[int],
                         mean: Variable, rstd: Variable, w: Variable | None, b: Variable | None,
                         mask: Sequence[bool]) -> Value:
    nb, dtype = e.nb, compute_dtype(g, x, w)
    g, x, w, b = as_dtype(e, g, dtype), as_dtype(e, x, dtype), as_dtype(e, w, dtype), as_dtype(e, b, dtype)
    mean, rstd = as_dtype(e, mean, dtype), as_dtype(e, rstd, dtype)
    axes = list(range(x.ndim - len(normalized_shape), x.ndim))
    lead = list(range(x.ndim - len(normalized_shape)))
    xhat = nb.multiply(nb.subtract(x, mean), rstd)
    gw = g if w is None else nb.multiply(g, w)
    # dx = rstd (gw - mean(gw) - xhat mean(gw xhat)) over the normalised axes
    inner = nb.subtract(nb.subtract(gw, nb.reduce_mean(gw, axes, keep_dim=True)),
                        nb.multiply(xhat, nb.reduce_mean(nb.multiply(gw, xhat), axes, keep_dim=True)))
    dx = nb.multiply(rstd, inner) if mask[0] else None
    dw = _sum_over(e, nb.multiply(g, xhat), lead) if mask[1] and w is not None else None
    db = _sum_over(e, g, lead) if mask[2] and b is not None else None
    return dx, dw, db


def _sum_over(e: Emitter, x: Variable, axes: list[int]) -> Variable:
    """x summed over `axes`; none (a norm over every dim): x itself (NetBuilder's empty `dim`
    would sum over all of them)."""
    return e.nb.reduce_sum(x, axes) if axes else x


