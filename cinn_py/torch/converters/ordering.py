"""Order statistics: median (lower median; NaN propagates), nanmedian (the lower median of the
non-NaN values), kthvalue, aminmax, and bucketize / searchsorted as counts of comparisons."""

from __future__ import annotations

import math
from typing import Any

from cinn_py.frontend.ops.shapes import numel
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, axes_of, axis_of, converts, static_axis, static_dim
from cinn_py.torch.converters.math import as_dtype


def _sorted_pick(e: Emitter, x: Variable, axis: int, k: int, nan_wins: bool) -> tuple[Variable, Variable]:
    """The k-th smallest along `axis` and its index (int64), kept as a size-1 dim; with
    `nan_wins` a NaN along the dim gives NaN (and a NaN's index)."""
    nb = e.nb
    order: Any = nb.argsort(x, axis=axis, is_ascend=True)  # [indices, positions]; NaN last
    index = nb.slice(nb.cast(order[0], "int64"), [axis], [k], [k + 1])
    value = nb.gather(x, index, axis=axis)
    if not nan_wins or not str(x.dtype).startswith(("float", "bfloat")):
        return value, index
    n = static_dim(x.shape[axis])
    last = nb.slice(nb.cast(order[0], "int64"), [axis], [n - 1], [n])
    has_nan = nb.reduce_any(nb.is_nan(x), [axis], keep_dim=True)
    nan = nb.fill_constant(list(value.shape), math.nan, dtype=str(x.dtype))
    return nb.select(has_nan, nan, value), nb.select(has_nan, last, index)


@converts("aten.median.default")
def _median(e: Emitter, x: Variable) -> Value:
    flat = e.to_shape(x, [numel(x.shape)]) if x.ndim != 1 else x
    n = static_dim(flat.shape[0])
    value, _ = _sorted_pick(e, flat, 0, (n - 1) // 2, nan_wins=True)
    return e.to_shape(value)


def _nan_skipping_pick(e: Emitter, x: Variable, axis: int) -> tuple[Variable, Variable]:
    """The lower median of the non-NaN values along `axis` and its index (kept as a size-1 dim):
    NaN sorts last, so it is the sorted position (count - 1) // 2 of the count of non-NaN values
    (an all-NaN row: NaN at the index of some NaN; torch's index there is an artifact of its
    selection algorithm, 2 of 4 NaNs, 5 of 7)."""
    nb = e.nb
    order: Any = nb.argsort(x, axis=axis, is_ascend=True)
    count = nb.reduce_sum(nb.cast(nb.logical_not(nb.is_nan(x)), "int64"), [axis], keep_dim=True)
    shape = list(count.shape)
    below = nb.maximum(nb.subtract(count, nb.fill_constant(shape, 1, dtype="int64")),
                       nb.fill_constant(shape, 0, dtype="int64"))
    position = nb.floor_divide(below, nb.fill_constant(shape, 2, dtype="int64"))
    index = nb.gather(nb.cast(order[0], "int64"), position, axis=axis)
    return nb.gather(x, index, axis=axis), index


@converts("aten.nanmedian.default")
def _nanmedian(e: Emitter, x: Variable) -> Value:
    if not str(x.dtype).startswith(("float", "bfloat")):
        return _median(e, x)
    flat = e.to_shape(x, [numel(x.shape)]) if x.ndim != 1 else x
    value, _ = _nan_skipping_pick(e, flat, 0)
    return e.to_shape(value)


@converts("aten.nanmedian.dim", check=lambda x, dim=0, keepdim=False: static_axis(x, dim, "nanmedian"))
def _nanmedian_dim(e: Emitter, x: Variable, dim: int = 0, keepdim: bool = False) -> Value:
    if not str(x.dtype).startswith(("float", "bfloat")):
        return _median_dim(e, x, dim, keepdim)
    lifted = x if x.ndim else e.to_shape(x, [1])
    axis = axis_of(dim, lifted.ndim)
    value, index = _nan_skipping_pick(e, lifted, axis)
    return _drop(e, value, axis, keepdim, x.ndim), _drop(e, index, axis, keepdim, x.ndim)


def _drop(e: Emitter, v: Variable, axis: int, keepdim: bool, ndim: int) -> Variable:
    if keepdim:
        return v if ndim else e.to_shape(v, [])
    return e.to_shape(v, [d for k, d in enumerate(v.shape) if k != axis] if ndim else [])


@converts("aten.median.dim", check=lambda x, dim, keepdim=False: static_axis(x, dim, "median"))
def _median_dim(e: Emitter, x: Variable, dim: int, keepdim: bool = False) -> Value:
    lifted = x if x.ndim else e.to_shape(x, [1])
    axis = axis_of(dim, lifted.ndim)
    n = static_dim(lifted.shape[axis])
    value, index = _sorted_pick(e, lifted, axis, (n - 1) // 2, nan_wins=True)
    return _drop(e, value, axis, keepdim, x.ndim), _drop(e, index, axis, keepdim, x.ndim)


@converts("aten.kthvalue.default", check=lambda x, k, dim=-1, keepdim=False: static_axis(x, dim, "kthvalue"))
def _kthvalue(e: Emitter, x: Variable, k: int, dim: int = -1, keepdim: bool = False) -> Value:
    lifted = x if x.ndim else e.to_shape(x, [1])
    axis = axis_of(dim, lifted.ndim)
    value, index = _sorted_pick(e, lifted, axis, k - 1, nan_wins=False)
    return _drop(e, value, axis, keepdim, x.ndim), _drop(e, index, axis, keepdim, x.ndim)


@converts("aten.aminmax.default")
def _aminmax(e: Emitter, x: Variable, *, dim: Any = None, keepdim: bool = False) -> Value:
    nb = e.nb
    axes = axes_of(dim, x.ndim)
    if not axes:
        return x, x
    return nb.reduce_min(x, axes, keep_dim=keepdim), nb.reduce_max(x, axes, keep_dim=keepdim)


def _count_below(e: Emitter, values: Variable, boundaries: Variable, right: bool, batched: bool) -> Variable:
    """For each value, how many boundaries are < it (<= with `right`): its insertion point.
    `batched`: boundaries' leading dims match the values' (one sorted row per row)."""
    nb = e.nb
    m = static_dim(boundaries.shape[-1])
    shape = [*values.shape, m]
    lhs = nb.broadcast_to(values, shape, list(range(values.ndim)))
    rhs = nb.broadcast_to(boundaries, shape,
                          [*range(boundaries.ndim - 1), values.ndim] if batched else [values.ndim])
    rhs = as_dtype(e, rhs, str(lhs.dtype))
    below = nb.less_equal(rhs, lhs) if right else nb.less_than(rhs, lhs)
    return nb.reduce_sum(nb.cast(below, "int64"), [values.ndim])


def _static_boundaries(*args: Any, **_: Any) -> str | None:
    for a in args:
        fake = getattr(a, "meta", {}).get("val")
        if fake is not None and any(not isinstance(s, int) for s in fake.shape):
            return "bucketize/searchsorted with symbolic sizes"
    return None


@converts("aten.bucketize.Tensor", check=_static_boundaries)
def _bucketize(e: Emitter, x: Variable, boundaries: Variable, *, out_int32: bool = False, right: bool = False
               ) -> Value:
    if x.ndim == 0:
        return e.to_shape(_count_below(e, e.to_shape(x, [1]), boundaries, right, False))
    return _count_below(e, x, boundaries, right, False)


def _no_sorter(sorted_seq: Any, x: Any, *, sorter: Any = None, **_: Any) -> str | None:
    return "searchsorted with a sorter" if sorter is not None else _static_boundaries(sorted_seq, x)


@converts("aten.searchsorted.Tensor", check=_no_sorter)
def _searchsorted(e: Emitter, sorted_seq: Variable, x: Variable, *, out_int32: bool = False,
                  right: bool = False,
                  side: Any = None, sorter: Any = None) -> Value:
    right = right or side == "right"
    lifted = x if x.ndim else e.to_shape(x, [1])
    return e.to_shape(_count_below(e, lifted, sorted_seq, right, sorted_seq.ndim > 1))
