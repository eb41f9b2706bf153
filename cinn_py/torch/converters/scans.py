"""Scans along a dim beyond cumsum: cumprod (sign parity and exp of a cumsum of logs; a zero makes
the rest zero through log 0 = -inf), logcumsumexp (shifted by the max along the dim), and
cummax/cummin with indices (a [.., n, n, ..] lower-triangular mask, reduced; NaN propagates
from where it appears, as in torch)."""

from __future__ import annotations

import math
from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, axis_of, converts, static_axis, static_dim, \
    zero_d_as_1d
from cinn_py.torch.converters.math import as_dtype


_WIDE = "float64"


def _ints(e: Emitter, mask: Variable) -> Variable:
    return e.nb.cast(mask, "int32")


@converts("aten.cumprod.default")  # dtype=: the node's, cast to at the end
@zero_d_as_1d
def _cumprod(e: Emitter, x: Variable, dim: int, **_: Any) -> Value:
    nb = e.nb
    x = as_dtype(e, x, _WIDE)  # float64 sums of logs: the product's digits survive exp
    axis = axis_of(dim, x.ndim)
    zero = nb.fill_constant(list(x.shape), 0.0, dtype=_WIDE)
    magnitude = nb.exp(nb.cumsum(nb.log(nb.abs(x)), axis=axis))
    negatives = nb.cumsum(_ints(e, nb.less_than(x, zero)), axis=axis)
    odd = nb.equal(nb.mod(negatives, nb.fill_constant(list(x.shape), 2, dtype="int32")),
                   nb.fill_constant(list(x.shape), 1, dtype="int32"))
    return as_dtype(e, nb.select(odd, nb.negative(magnitude), magnitude))


@converts("aten.logcumsumexp.default")
@zero_d_as_1d
def _logcumsumexp(e: Emitter, x: Variable, dim: int) -> Value:
    nb = e.nb
    x = as_dtype(e, x, _WIDE)  # float64: the prefix sums of terms far below the max keep their digits
    axis = axis_of(dim, x.ndim)
    top = nb.reduce_max(x, [axis], keep_dim=True)
    top = nb.select(nb.is_inf(top), nb.fill_constant(list(top.shape), 0.0, dtype=_WIDE), top)
    top = nb.broadcast_to(top, list(x.shape), list(range(x.ndim)))
    shifted = nb.exp(nb.subtract(x, top))
    return as_dtype(e, nb.add(nb.log(nb.cumsum(shifted, axis=axis)), top))


def _cumulative_extreme(largest: bool) -> Any:
    def convert(e: Emitter, x: Variable, dim: int) -> Value:
        nb = e.nb
        lifted = x if x.ndim else e.to_shape(x, [1])
        axis = axis_of(dim, lifted.ndim)
        n = static_dim(lifted.shape[axis])
        wide = [*lifted.shape[:axis + 1], n, *lifted.shape[axis + 1:]]  # [.., i, j, ..]
        at_j = [a for a in range(len(wide)) if a != axis]
        xj = nb.broadcast_to(lifted, wide, at_j)
        j = nb.broadcast_to(nb.arange(0, n, 1, "int64"), wide, [axis + 1])
        i = nb.broadcast_to(nb.arange(0, n, 1, "int64"), wide, [axis])
        upto = nb.less_equal(j, i)
        dtype = str(lifted.dtype)
        floor = -math.inf if largest else math.inf
        fill = nb.fill_constant(wide, floor if dtype.startswith(("float", "bfloat")) else 0, dtype=dtype)
        reduce = nb.reduce_max if largest else nb.reduce_min
        values = reduce(nb.select(upto, xj, fill), [axis + 1], keep_dim=True)
        none = nb.fill_constant(wide, -1, dtype="int64")
        is_value = nb.equal(xj, nb.broadcast_to(values, wide, list(range(len(wide)))))
        index = nb.reduce_max(nb.select(nb.logical_and(upto, is_value), j, none), [axis + 1])
        values = e.to_shape(values, list(lifted.shape))
        if dtype.startswith(("float", "bfloat")):  # the last NaN so far wins
            nan_j = nb.reduce_max(nb.select(nb.logical_and(upto, nb.is_nan(xj)), j, none), [axis + 1])
            has_nan = nb.greater_equal(nan_j, nb.fill_constant(list(nan_j.shape), 0, dtype="int64"))
            values = nb.select(has_nan, nb.fill_constant(list(values.shape), math.nan, dtype=dtype), values)
            index = nb.select(has_nan, nan_j, index)
        return e.to_shape(values, list(x.shape)), e.to_shape(index, list(x.shape))
    return convert


converts("aten.cummax.default", check=lambda x, dim: static_axis(x, dim, "cummax"))(_cumulative_extreme(True))
converts("aten.cummin.default",
         check=lambda x, dim: static_axis(x, dim, "cummin"))(_cumulative_extreme(False))
