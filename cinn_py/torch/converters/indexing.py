"""Gathers and scatters: embedding, gather/scatter_add, index_select/add/put, index.Tensor, slice/select
scatter, copy, flip, cumsum and cat."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.autodiff.rules_gather import iota, linear_rows, scatter_along_axis
from cinn_py.frontend.ops.base import Dim
from cinn_py.frontend.ops.shapes import numel, shapes_equal
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import (
    Check,
    Emitter,
    Value,
    axes_of,
    converts,
    scaled,
    zero_d_as_1d,
    static_axis,
    static_dim,
)
from cinn_py.torch.converters.views import slice_range


# The backward graphs of torch.gather (scatter_add), index_select (index_add), x[i] (index_put with
# accumulate) and slice/select assignment (slice_scatter, select_scatter) meet the forward ops'
# transposes here; each maps onto NetBuilder's gathers and scatters (ops/indexing.py) or onto the
# gradient rules' helpers (autodiff/rules_gather.py).
def _fake(node: Any) -> Any:
    return getattr(node, "meta", {}).get("val")


def _static_dims(op: str, *sizes: Any) -> str | None:
    bad = [s for s in sizes if not isinstance(s, int)]
    return f"{op} with the symbolic extent {bad[0]} where it narrows or indexes" if bad else None


def _same_size(a: Any, b: Any) -> bool:
    return str(a) == str(b)  # ints, or torch's symbolic sizes by their expression


def _along_fits(op: str) -> Check:
    """gather/scatter_add: the index may be narrower than x (but along `dim`) and than src; the
    dims where it is are static."""
    def check(x: Any, dim: int, index: Any, *rest: Any, **_: Any) -> str | None:
        fx, fi = _fake(x), _fake(index)
        if fx is None or fi is None:
            return None
        if fx.dim() == 0 or fi.dim() == 0:
            return None  # one element (zero_d_as_1d)
        pairs = [(s, i) for d, (s, i) in enumerate(zip(fx.shape, fi.shape)) if d != dim % fx.dim()]
        src = _fake(rest[0]) if op == "scatter_add" and rest else None
        pairs += list(zip(src.shape, fi.shape)) if src is not None else []
        return _static_dims(op, *[v for s, i in pairs if not _same_size(s, i) for v in (s, i)])
    return check


def _narrowed(e: Emitter, x: Variable, shape: Sequence[Dim], keep: int | None = None) -> Variable:
    """x[:shape[0], :shape[1], ...] (all dims but `keep`): the part a narrower index reaches."""
    for d, (have, want) in enumerate(zip(x.shape, shape)):
        if d != keep and not shapes_equal([have], [want]):
            x = e.nb.slice(x, [d], [0], [static_dim(want)])
    return x


def _int64(e: Emitter, index: Variable) -> Variable:
    return index if str(index.dtype) == "int64" else e.nb.cast(index, "int64")


@converts("aten.gather.default", check=_along_fits("gather"))
@zero_d_as_1d
def _gather(e: Emitter, x: Variable, dim: int, index: Variable, sparse_grad: bool = False) -> Value:
    """take_along_axis; x cut to the index's extents first (NetBuilder's gather would broadcast a
    size-1 index dim where torch reads only the first row)."""
    axis = dim % x.ndim
    return e.nb.gather(_narrowed(e, x, index.shape, keep=axis), index, axis=axis)


@converts("aten.scatter_add.default", check=_along_fits("scatter_add"))
@zero_d_as_1d
def _scatter_add_along(e: Emitter, x: Variable, dim: int, index: Variable, src: Variable) -> Value:
    """x plus src[.., k, ..] summed at index[.., k, ..] (gather's backward): the masked sum of the
    gather rule over the index's extents, zero-padded to x's."""
    axis = dim % x.ndim
    added = scatter_along_axis(e.nb, _narrowed(e, src, index.shape), _int64(e, index), axis, x.shape[axis])
    pads = [[0, static_dim(n) - static_dim(m)] if d != axis and not shapes_equal([n], [m]) else [0, 0]
            for d, (n, m) in enumerate(zip(x.shape, added.shape))]
    if any(after for _, after in pads):
        added = e.nb.pad(added, pads, 0)
    return e.nb.add(x, added)


@converts("aten.scatter.src", "aten.scatter.value", check=_along_fits("scatter"))
@zero_d_as_1d
def _scatter(e: Emitter, x: Variable, dim: int, index: Variable, src: Any) -> Value:
    """x with src[.., k, ..] written at index[.., k, ..] along `dim`; of several k writing one
    place the last wins (torch's CPU kernel writes in order). The last k per place is the max of
    k over a [.., n, K, ..] mask; src is gathered there."""
    nb, axis = e.nb, dim % x.ndim
    n, count = x.shape[axis], index.shape[axis]
    idx = _int64(e, index)
    values = (_narrowed(e, _cast(e, src, x), index.shape) if isinstance(src, Variable)
              else nb.fill_constant(list(index.shape), src, dtype=str(x.dtype)))
    wide = [*idx.shape[:axis], n, *idx.shape[axis:]]
    beside = [a for a in range(len(wide)) if a != axis]
    hit = nb.equal(nb.broadcast_to(idx, wide, beside), nb.broadcast_to(iota(nb, n), wide, [axis]))
    ks = nb.broadcast_to(iota(nb, count), wide, [axis + 1])
    last = nb.reduce_max(nb.select(hit, ks, nb.fill_constant(wide, -1, dtype="int64")), [axis + 1])
    picked = nb.gather(values,
                       nb.maximum(last, nb.fill_constant(list(last.shape), 0, dtype="int64")), axis=axis)
    pads = [[0, static_dim(a) - static_dim(b)] if d != axis and not shapes_equal([a], [b]) else [0, 0]
            for d, (a, b) in enumerate(zip(x.shape, last.shape))]
    if any(after for _, after in pads):
        picked, last = nb.pad(picked, pads, 0), nb.pad(last, pads, -1)
    return nb.select(nb.greater_equal(last, nb.fill_constant(list(last.shape), 0, dtype="int64")), picked, x)


def _one_d_index(x: Any, dim: int, index: Any, *_: Any, **__: Any) -> str | None:
    fi = _fake(index)
    return None if fi is None or fi.dim() <= 1 else f"index_add with a {fi.dim()}-d index"


@converts("aten.index_select.default")
@zero_d_as_1d
def _index_select(e: Emitter, x: Variable, dim: int, index: Variable) -> Value:
    return e.to_shape(e.nb.gather(x, e.to_shape(index, [numel(index.shape)]), axis=dim % x.ndim))


@converts("aten.index_add.default", check=_one_d_index)
@zero_d_as_1d
def _index_add(e: Emitter, x: Variable, dim: int, index: Variable, source: Variable, alpha: Any = 1) -> Value:
    """index_select's backward: `scatter_add` (duplicates accumulate, as in torch)."""
    return e.nb.scatter_add(x, scaled(e, source, alpha), index, axis=dim % x.ndim)


def _scatter_slice_fits(x: Any, src: Any, dim: int = 0, start: Any = None, end: Any = None,
                        step: int = 1) -> str | None:
    return f"slice_scatter step {step}" if step < 1 else static_axis(x, dim, "slice_scatter")


@converts("aten.slice_scatter.default", check=_scatter_slice_fits)
def _slice_scatter(e: Emitter, x: Variable, src: Variable, dim: int = 0, start: Any = None, end: Any = None,
                   step: int = 1) -> Value:
    axis = dim % x.ndim
    lo, hi = slice_range(static_dim(x.shape[axis]), start, end)
    return x if lo >= hi else e.nb.slice_assign(x, src, [axis], [lo], [hi], strides=[step])


@converts("aten.select_scatter.default",
          check=lambda x, src, dim, index: static_axis(x, dim, "select_scatter"))
def _select_scatter(e: Emitter, x: Variable, src: Variable, dim: int, index: int) -> Value:
    axis = dim % x.ndim
    at = index % static_dim(x.shape[axis])
    row = e.to_shape(src, [*src.shape[:axis], 1, *src.shape[axis:]])
    return e.nb.slice_assign(x, row, [axis], [at], [at + 1])


def _wrapped(e: Emitter, index: Variable, size: Any) -> Variable:
    """An int64 index with torch's negative indices taken from the end."""
    index = _int64(e, index)
    return e.nb.select(e.nb.less_than(index, 0), e.nb.add(index, static_dim(size)), index)


def _index_fits(x: Any, indices: Sequence[Any], *_: Any, **__: Any) -> str | None:
    """aten.index / index_put: integer index tensors at any dims (several broadcast together, static
    shapes), on static dims; a bool mask has a data-dependent shape."""
    fx = _fake(x)
    given = [(k, _fake(t)) for k, t in enumerate(indices) if t is not None]
    if fx is None or any(f is None for _, f in given):
        return None
    if any(f.dtype.is_floating_point or str(f.dtype) == "torch.bool" for _, f in given):
        return "indexing with a bool mask"
    if len(given) > 1 and any(not isinstance(d, int) for _, f in given for d in f.shape):
        return "indexing with several index tensors of symbolic shapes"
    return _static_dims("indexing", *[fx.shape[k] for k, _ in given])


@converts("aten.index.Tensor", check=_index_fits)
def _index(e: Emitter, x: Variable, indices: Sequence[Variable | None]) -> Value:
    """torch's advanced indexing: the index tensors broadcast to B; the result is B in place of
    the indexed dims when they are adjacent, else B first, then the other dims."""
    given = [(k, t) for k, t in enumerate(indices) if t is not None]
    if len(given) == 1:
        k, index = given[0]
        flat = e.to_shape(_wrapped(e, index, x.shape[k]), [numel(index.shape)])
        return e.to_shape(e.nb.gather(x, flat, axis=k))
    dims = [k for k, _ in given]
    batch = [int(d) for d in np.broadcast_shapes(*[tuple(int(d) for d in t.shape) for _, t in given])]
    given = [(k, e.broadcast(t, batch)) for k, t in given]
    rest = [d for d in range(x.ndim) if d not in dims]
    if dims != list(range(len(dims))):
        x = e.nb.transpose(x, dims + rest)
        given = [(j, t) for j, (_, t) in enumerate(given)]
    out = e.nb.gather_nd(x, _coordinates(e, x, given))
    first = dims[0]
    if dims == list(range(first, first + len(dims))) and first > 0:  # adjacent: B where they were
        nbat = len(batch)
        perm = ([nbat + i for i in range(first)] + list(range(nbat))
                + [nbat + i for i in range(first, len(rest))])
        out = e.nb.transpose(out, perm)
    return e.to_shape(out)


def _coordinates(e: Emitter, x: Variable, given: Sequence[tuple[int, Variable]]) -> Variable:
    """The leading dims' index tensors stacked on a new last dim (gather_nd's index)."""
    cols = [e.to_shape(_wrapped(e, t, x.shape[k]), [*t.shape, 1]) for k, t in given]
    return e.nb.concat(cols, axis=cols[0].ndim - 1)


@converts("aten.index_put.default", check=_index_fits)
def _index_put(e: Emitter, x: Variable, indices: Sequence[Variable | None], values: Variable,
               accumulate: bool = False) -> Value:
    """x[indices] = values (`scatter_assign`: of duplicates the last write wins, which torch leaves
    unspecified) or += values with `accumulate` (x[i]'s backward: `scatter_add`). Several index
    tensors: broadcast together, the indexed dims moved first (and values from aten.index's
    layout to [B, rest]), scattered into x's rows, moved back."""
    given = [(k, t) for k, t in enumerate(indices) if t is not None]
    scatter = e.nb.scatter_add if accumulate else e.nb.scatter_assign
    values = _cast(e, values, x)
    if len(given) == 1:
        k, index = given[0]
        rows = numel(index.shape)
        slots = [*x.shape[:k], *index.shape, *x.shape[k + 1:]]
        flat_values = e.to_shape(e.broadcast(values, slots), [*x.shape[:k], rows, *x.shape[k + 1:]])
        return scatter(x, flat_values, e.to_shape(_wrapped(e, index, x.shape[k]), [rows]), axis=k)
    dims = [k for k, _ in given]
    batch = [int(d) for d in np.broadcast_shapes(*[tuple(int(d) for d in t.shape) for _, t in given])]
    rest = [d for d in range(x.ndim) if d not in dims]
    rest_shape = [x.shape[d] for d in rest]
    first, nbat = dims[0], len(batch)
    if dims == list(range(first, first + len(dims))) and first > 0:  # values in aten.index's layout
        laid = e.broadcast(values, [*rest_shape[:first], *batch, *rest_shape[first:]])
        order = [*range(first, first + nbat), *range(first), *range(first + nbat, nbat + len(rest))]
        batch_first = e.nb.transpose(laid, order)
    else:
        batch_first = e.broadcast(values, [*batch, *rest_shape])
    perm = dims + rest
    moved = x if perm == list(range(x.ndim)) else e.nb.transpose(x, perm)
    coords = _coordinates(e, moved, [(j, e.broadcast(t, batch)) for j, (_, t) in enumerate(given)])
    depth, rows = len(dims), numel(batch)
    flat = linear_rows(e.nb, coords, list(moved.shape[:depth]))
    table = e.to_shape(moved, [numel(moved.shape[:depth]), *rest_shape])
    flat_values = e.to_shape(batch_first, [rows, *rest_shape])
    out = e.to_shape(scatter(table, flat_values, e.to_shape(flat, [rows]), axis=0), list(moved.shape))
    return out if perm == list(range(x.ndim)) else e.nb.transpose(out, [perm.index(d) for d in range(x.ndim)])


def _clamped(e: Emitter, x: Variable, indices: Sequence[Variable | None], low_wraps: bool
             ) -> list[Variable | None]:
    """The index tensors clamped into x's dims: [0, size - 1], or [-size, size - 1] when negative
    indices wrap (the masked index ops' lanes the mask drops may hold anything)."""
    out: list[Variable | None] = []
    for k, index in enumerate(indices):
        if index is None:
            out.append(None)
            continue
        size = static_dim(x.shape[k])
        out.append(e.nb.clip(_int64(e, index), -size if low_wraps else 0, size - 1))
    return out


@converts("aten._unsafe_masked_index.default", check=lambda x, mask, indices, fill: _index_fits(x, indices))
def _masked_index(e: Emitter, x: Variable, mask: Variable, indices: Sequence[Variable | None], fill: Any
                  ) -> Value:
    """x[indices] where `mask`, else `fill` (the indices clamped first: a dropped lane may be out
    of range); what the upsampling decompositions gather with at the borders."""
    nb = e.nb
    filler = nb.fill_constant(list(e.shape), fill, dtype=e.dtype)
    if numel(x.shape) == 0:
        return filler
    picked = _index(e, x, _clamped(e, x, indices, low_wraps=False))
    return nb.select(e.broadcast(mask), picked, filler)


@converts("aten._unsafe_masked_index_put_accumulate.default",
          check=lambda x, mask, indices, values: _index_fits(x, indices))
def _masked_index_put_accumulate(e: Emitter, x: Variable, mask: Variable, indices: Sequence[Variable | None],
                                 values: Variable) -> Value:
    """x[indices] += values where `mask` (_unsafe_masked_index's backward)."""
    nb = e.nb
    if numel(x.shape) == 0:
        return x
    kept = nb.select(e.broadcast(mask, list(values.shape)), values,
                     nb.fill_constant(list(values.shape), 0, dtype=str(values.dtype)))
    return _index_put(e, x, _clamped(e, x, indices, low_wraps=True), kept, accumulate=True)


def _cast(e: Emitter, v: Variable, like: Variable) -> Variable:
    return v if v.dtype == like.dtype else e.nb.cast(v, str(like.dtype))


@converts("aten.copy.default")
def _copy(e: Emitter, x: Variable, src: Any, non_blocking: bool = False) -> Value:
    """The functional copy_: src (broadcast, cast) in x's shape and dtype."""
    if isinstance(src, Variable) and str(src.dtype) != e.dtype:
        src = e.nb.cast(src, e.dtype)
    return e.broadcast(src)


@converts("aten.flip.default")
@zero_d_as_1d
def _flip(e: Emitter, x: Variable, dims: Sequence[int]) -> Value:
    return e.nb.reverse(x, axes_of(dims, x.ndim)) if dims else x


@converts("aten.cumsum.default")
@zero_d_as_1d
def _cumsum(e: Emitter, x: Variable, dim: int, **_: Any) -> Value:
    """dtype= (or torch's int64 for bool/int inputs) is the node's: the input is cast to it first."""
    x = x if str(x.dtype) == e.dtype else e.nb.cast(x, e.dtype)
    return e.nb.cumsum(x, axis=dim % x.ndim)


@converts("aten.cat.default")
def _cat(e: Emitter, xs: Sequence[Variable], dim: int = 0) -> Value:
    """torch.cat skips 1-d empty operands of any other rank (legacy behaviour a KV cache that
    starts as `torch.tensor([])` relies on)."""
    kept = [x for x in xs if not (x.ndim == 1 and shapes_equal(x.shape, [0]) and len(e.shape) != 1)]
    if len(kept) == 1:
        return kept[0]
    return e.nb.concat(kept, axis=dim % kept[0].ndim)


