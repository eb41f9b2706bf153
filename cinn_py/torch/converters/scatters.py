"""Scatters with a reduction or a copy along a dim: scatter_reduce (sum, prod, mean, amax, amin),
index_reduce and index_copy. A [.., n, K, ..] mask says which of the K source elements land on
each of the n places along the dim; each reduction reduces over K."""

from __future__ import annotations

import math
from typing import Any

from cinn_py.autodiff.rules_gather import iota
from cinn_py.frontend.ops.shapes import numel, shapes_equal
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, axis_of, converts, static_dim, zero_d_as_1d

_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -math.inf, "amin": math.inf}


def _fake(node: Any) -> Any:
    return getattr(node, "meta", {}).get("val")


def _float_static(x: Any, dim: int, index: Any, *rest: Any, **_: Any) -> str | None:
    fx, fi = _fake(x), _fake(index)
    if fx is None or fi is None:
        return None
    if not fx.dtype.is_floating_point:
        return f"scatter reduction of {fx.dtype} (floats only)"
    if any(not isinstance(s, int) for s in (*fx.shape, *fi.shape)):
        return "scatter reduction with symbolic sizes"
    return None


def _scatter_reduce(e: Emitter, x: Variable, axis: int, index: Variable, src: Variable, reduce: str,
                    include_self: bool) -> Variable:
    nb = e.nb
    n = static_dim(x.shape[axis])
    idx = index if str(index.dtype) == "int64" else nb.cast(index, "int64")
    src = src if str(src.dtype) == e.dtype else nb.cast(src, e.dtype)
    src = _cut(e, src, index.shape, None)
    base = _cut(e, x, index.shape, axis)
    wide = [*idx.shape[:axis], n, *idx.shape[axis:]]
    beside = [a for a in range(len(wide)) if a != axis]
    hit = nb.equal(nb.broadcast_to(idx, wide, beside), nb.broadcast_to(iota(nb, n), wide, [axis]))
    spread = nb.select(hit, nb.broadcast_to(src, wide, beside),
                       nb.fill_constant(wide, _IDENTITY[reduce], dtype=e.dtype))
    hits = nb.reduce_sum(nb.cast(hit, e.dtype), [axis + 1])
    if reduce in ("sum", "mean"):
        agg = nb.reduce_sum(spread, [axis + 1])
    elif reduce == "prod":
        agg = nb.reduce_prod(spread, [axis + 1])
    else:
        agg = (nb.reduce_max if reduce == "amax" else nb.reduce_min)(spread, [axis + 1])
    combined = _combine(e, base, agg, hits, reduce, include_self)
    landed = nb.greater_than(hits, nb.fill_constant(list(hits.shape), 0.0, dtype=e.dtype))
    pads = [[0, static_dim(a) - static_dim(b)] for a, b in zip(x.shape, hits.shape)]
    if any(after for _, after in pads):
        combined, landed = nb.pad(combined, pads, 0.0), nb.pad(nb.cast(landed, "int32"), pads, 0)
        landed = nb.not_equal(landed, nb.fill_constant(list(landed.shape), 0, dtype="int32"))
    return nb.select(landed, combined, x)


def _cut(e: Emitter, x: Variable, shape: Any, keep: int | None) -> Variable:
    for d, (have, want) in enumerate(zip(x.shape, shape)):
        if d != keep and not shapes_equal([have], [want]):
            x = e.nb.slice(x, [d], [0], [static_dim(want)])
    return x


def _combine(e: Emitter, base: Variable, agg: Variable, hits: Variable, reduce: str,
             include_self: bool) -> Variable:
    nb = e.nb
    if reduce == "sum":
        return nb.add(base, agg) if include_self else agg
    if reduce == "prod":
        return nb.multiply(base, agg) if include_self else agg
    if reduce == "amax":
        return nb.maximum(base, agg) if include_self else agg
    if reduce == "amin":
        return nb.minimum(base, agg) if include_self else agg
    if include_self:  # mean
        return nb.divide(nb.add(base, agg), nb.scale(hits, 1.0, 1.0))
    return nb.divide(agg, hits)


def _known_reduce(x: Any, dim: int, index: Any, src: Any, reduce: str, *rest: Any, **kw: Any) -> str | None:
    if reduce not in _IDENTITY:
        return f"scatter_reduce reduce={reduce!r}"
    return _float_static(x, dim, index)


@converts("aten.scatter_reduce.two", check=_known_reduce)
@zero_d_as_1d
def _scatter_reduce_two(e: Emitter, x: Variable, dim: int, index: Variable, src: Variable, reduce: str,
                        include_self: bool = True) -> Value:
    return _scatter_reduce(e, x, axis_of(dim, x.ndim), index, src, reduce, include_self)


def _along(e: Emitter, index: Variable, source: Variable, axis: int) -> Variable:
    """A 1-d index along `axis` as a take_along_axis index of source's shape."""
    shape = [1] * source.ndim
    shape[axis] = index.shape[0]
    return e.nb.broadcast_to(e.to_shape(index, shape), list(source.shape), list(range(source.ndim)))


def _index_reduce_check(x: Any, dim: int, index: Any, source: Any, reduce: str, *_: Any,
                        **__: Any) -> str | None:
    if reduce not in ("prod", "mean", "amax", "amin"):
        return f"index_reduce reduce={reduce!r}"
    fi = _fake(index)
    if fi is not None and fi.dim() > 1:
        return f"index_reduce with a {fi.dim()}-d index"
    return _float_static(x, dim, index)


@converts("aten.index_reduce.default", check=_index_reduce_check)
@zero_d_as_1d
def _index_reduce(e: Emitter, x: Variable, dim: int, index: Variable, source: Variable, reduce: str,
                  include_self: bool = True) -> Value:
    axis = axis_of(dim, x.ndim)
    return _scatter_reduce(e, x, axis, _along(e, index, source, axis), source, reduce, include_self)


@converts("aten.index_copy.default", check=lambda x, dim, index, *_: None if (_fake(index) is None or
          _fake(index).dim() <= 1) else "index_copy with a multi-dim index")
@zero_d_as_1d
def _index_copy(e: Emitter, x: Variable, dim: int, index: Variable, source: Variable) -> Value:
    source = source if str(source.dtype) == e.dtype else e.nb.cast(source, e.dtype)
    return e.nb.scatter_assign(x, source, index, axis=axis_of(dim, x.ndim))


def _static_all(*args: Any, **_: Any) -> str | None:
    for a in args:
        fake = _fake(a)
        if fake is not None and any(not isinstance(s, int) for s in fake.shape):
            return "take/put/masked_scatter with symbolic sizes"
    return None


def _wrapped_flat(e: Emitter, index: Variable, n: int) -> Variable:
    nb = e.nb
    flat = e.to_shape(index, [static_dim(numel(index.shape))]) if index.ndim != 1 else index
    flat = flat if str(flat.dtype) == "int64" else nb.cast(flat, "int64")
    return nb.select(nb.less_than(flat, nb.fill_constant(list(flat.shape), 0, dtype="int64")),
                     nb.add(flat, nb.fill_constant(list(flat.shape), n, dtype="int64")), flat)


@converts("aten.take.default", check=_static_all)
def _take(e: Emitter, x: Variable, index: Variable) -> Value:
    """x flattened, gathered at index (negative from the end)."""
    n = static_dim(numel(x.shape))
    flat = e.to_shape(x, [n]) if x.ndim != 1 else x
    return e.to_shape(e.nb.gather(flat, _wrapped_flat(e, index, n), axis=0))


@converts("aten.put.default", check=_static_all)
def _put(e: Emitter, x: Variable, index: Variable, source: Variable, accumulate: bool = False) -> Value:
    n = static_dim(numel(x.shape))
    flat = e.to_shape(x, [n]) if x.ndim != 1 else x
    values = e.to_shape(source, [static_dim(numel(source.shape))]) if source.ndim != 1 else source
    scatter = e.nb.scatter_add if accumulate else e.nb.scatter_assign
    return e.to_shape(scatter(flat, values, _wrapped_flat(e, index, n), axis=0))


@converts("aten.masked_scatter.default", check=_static_all)
def _masked_scatter(e: Emitter, x: Variable, mask: Variable, source: Variable) -> Value:
    """Where the mask (broadcast) is set, source's elements in order: the k-th set place takes
    source's flat element k (k from an exclusive cumsum of the mask)."""
    nb = e.nb
    n = static_dim(numel(e.shape))
    flat_mask = e.to_shape(e.broadcast(mask), [n])
    order = nb.subtract(nb.cumsum(nb.cast(flat_mask, "int64"), axis=0),
                        nb.fill_constant([n], 1, dtype="int64"))
    m = static_dim(numel(source.shape))
    src = e.to_shape(source, [m]) if source.ndim != 1 else source
    safe = nb.minimum(nb.maximum(order, nb.fill_constant([n], 0, dtype="int64")),
                      nb.fill_constant([n], max(m - 1, 0),
                                                                                                  dtype="int64"))
    picked = nb.gather(src, safe, axis=0) if m else nb.fill_constant([n], 0, dtype=e.dtype)
    flat_x = e.to_shape(e.broadcast(x), [n])
    return e.to_shape(nb.select(flat_mask, picked, flat_x))


@converts("aten.masked_scatter_backward.default", check=lambda g, mask, sizes: _static_all(g, mask) or (
    None if all(isinstance(s, int) for s in sizes) else "masked_scatter_backward to symbolic sizes"))
def _masked_scatter_backward(e: Emitter, g: Variable, mask: Variable, sizes: Any) -> Value:
    """The source's cotangent: g at the mask's set places, in order, zeros after (the k-th set
    place adds into element k; unset places into a spare slot past the end)."""
    nb = e.nb
    shape = [static_dim(s) for s in g.shape]
    n, m = static_dim(numel(shape)), static_dim(numel(e.shape))
    flat_mask = e.to_shape(nb.broadcast_to(mask, shape, list(range(len(shape) - mask.ndim, len(shape))))
                           if list(mask.shape) != shape else mask, [n])
    order = nb.subtract(nb.cumsum(nb.cast(flat_mask, "int64"), axis=0),
                        nb.fill_constant([n], 1, dtype="int64"))
    slot = nb.select(flat_mask, order, nb.fill_constant([n], m, dtype="int64"))
    table = nb.fill_constant([m + 1], 0, dtype=e.dtype)
    summed = nb.scatter_add(table, e.to_shape(g, [n]), slot, axis=0)
    return e.to_shape(nb.slice(summed, [0], [0], [m]))
