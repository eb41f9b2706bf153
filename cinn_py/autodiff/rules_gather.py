"""Gradient rules of the data-indexed ops (`ops/indexing.py`, `ops/scatter.py`): a gather's
gradient is a scatter of the cotangent and a scatter's a gather of it.

- `gather` with a 1-d index (index_select): scatter_add of the cotangent slices into zeros
  (a repeated index accumulates). With an index of x's rank (take_along_axis) the scatter is
  per element: dx[.., j, ..] sums dout[.., k, ..] over the k whose index is j, a masked sum
  over a [.., N, K, ..] comparison of the index with the positions 0..N-1 (`select`, so an
  inf or NaN elsewhere in dout stays where it was).
- `gather_nd`: the index rows are linearised over x's leading dims and the cotangent rows are
  scatter_added into x flattened to [prod(leading), rest...].
- `lookup_table`: scatter_add of the cotangent rows to the table rows; rows read through
  `padding_idx` get no gradient (their output was a constant zero), as PyTorch's embedding.
- `scatter_add`: dx = dout; d updates = dout gathered at the index, zero for an index outside
  x's dim (the forward dropped that update).
- `scatter_assign`: the forward's rule is "the last write wins" (the largest k with index[k] == i).
  The gradient follows it by construction: `scatter_assign` of the writers' positions 0..K-1
  into a vector of -1 gives each position's winning writer; dx is dout where no writer won,
  and d updates[k] is dout at index[k] for the winner only (zero for an overwritten or an
  out-of-range update: neither reached the output).

Indices are cast to int64 before arithmetic on them; out-of-range positions are clamped before
a gather and masked after it, so no backward read goes outside its tensor.
"""

from __future__ import annotations

from typing import Any

from cinn_py.autodiff.core import GradContext, define_grad
from cinn_py.autodiff.rules_elementwise import zeros_like
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.shapes import add_dims, numel, shapes_equal
from cinn_py.frontend.program import Variable
from cinn_py.ir import int64


def as_int64(nb: NetBuilder, index: Variable) -> Variable:
    return index if index.dtype == int64 else nb.cast(index, "int64")


def iota(nb: NetBuilder, n: Any) -> Variable:
    """0, 1, ..., n - 1 as int64 [n]; a symbolic n through an exclusive cumsum of ones."""
    if isinstance(n, int):
        return nb.arange(0, n, 1, "int64")
    return nb.cumsum(nb.fill_constant([n], 1, dtype="int64"), 0, exclusive=True)


def dim_value(nb: NetBuilder, d: Any, shape: list[Any]) -> Variable | int:
    """The value of the dim `d` as an operand of an int64 tensor of `shape`: the int itself, or
    (an expression of symbolic dims) the element count of a [d] tensor of ones, broadcast."""
    if isinstance(d, int):
        return d
    count = nb.reduce_sum(nb.fill_constant([d], 1, dtype="int64"), [0], keep_dim=True)
    return nb.broadcast_to(count, shape, [len(shape) - 1])


def clamp_index(nb: NetBuilder, index: Variable, n: Any) -> tuple[Variable, Variable]:
    """(index clamped into [0, n - 1], whether it was inside) for an int64 index into a dim of n."""
    top = dim_value(nb, add_dims(n, -1), list(index.shape))
    inside = nb.logical_and(nb.greater_equal(index, 0), nb.less_equal(index, top))
    return nb.minimum(nb.maximum(index, 0), top), inside


def reshaped(nb: NetBuilder, v: Variable, shape: list[Any]) -> Variable:
    """`v` in `shape` (itself when it has that shape already)."""
    return v if shapes_equal(v.shape, shape) else nb.reshape(v, shape)


def along(nb: NetBuilder, v: Variable, like: Variable, axis: int) -> Variable:
    """A 1-d `v` broadcast to `like`'s shape along `axis`."""
    return nb.broadcast_to(v, list(like.shape), [axis])


# -- gather --------------------------------------------------------------------------------------------------
@define_grad("gather")
def _gather(c: GradContext) -> list[Variable | None]:
    nb, (x, index), axis = c.nb, c.inputs, c.attrs["axis"]
    if index.ndim == 1:
        return [nb.scatter_add(zeros_like(nb, x), c.dout, index, axis), None]
    return [scatter_along_axis(nb, c.dout, as_int64(nb, index), axis, x.shape[axis]), None]


def scatter_along_axis(nb: NetBuilder, values: Variable, index: Variable, axis: int, n: Any) -> Variable:
    """The transpose of take_along_axis: out[.., j, ..] (j < n) sums values[.., k, ..] over the k
    whose int64 index[.., k, ..] is j (the index's size-1 dims broadcast), through a [.., n, K, ..]
    mask summed over K; values' shape with `axis` sized n."""
    wide = list(values.shape[:axis]) + [n] + list(values.shape[axis:])
    beside = [a for a in range(len(wide)) if a != axis]  # values' (and the index's) dims in `wide`
    picks = nb.broadcast_to(index, wide, beside)
    hit = nb.equal(picks, nb.broadcast_to(iota(nb, n), wide, [axis]))
    spread = nb.broadcast_to(values, wide, beside)
    return nb.reduce_sum(nb.select(hit, spread, zeros_like(nb, spread)), [axis + 1])


# -- gather_nd -----------------------------------------------------------------------------------------------
@define_grad("gather_nd")
def _gather_nd(c: GradContext) -> list[Variable | None]:
    nb, (x, index) = c.nb, c.inputs
    depth = index.shape[-1]
    rows = numel(index.shape[:-1])
    rest = list(x.shape[depth:])
    flat = linear_rows(nb, as_int64(nb, index), list(x.shape[:depth]))
    table = nb.fill_constant([numel(x.shape[:depth])] + rest, 0.0, dtype=x.dtype)
    dflat = nb.scatter_add(table, reshaped(nb, c.dout, [rows] + rest), reshaped(nb, flat, [rows]), 0)
    return [reshaped(nb, dflat, list(x.shape)), None]


def linear_rows(nb: NetBuilder, index: Variable, dims: list[Any]) -> Variable:
    """sum over m of index[..., m] * prod(dims[m + 1:]) (row-major), shape index.shape[:-1] + [1]."""
    last = index.ndim - 1
    total: Variable | None = None
    for m in range(len(dims)):
        col = nb.slice(index, [last], [m], [m + 1])
        stride = numel(dims[m + 1:])
        if not (isinstance(stride, int) and stride == 1):
            col = nb.multiply(col, dim_value(nb, stride, list(col.shape)))
        total = col if total is None else nb.add(total, col)
    assert total is not None  # gather_nd's infer: 1 <= depth
    return total


# -- lookup_table --------------------------------------------------------------------------------------------
@define_grad("lookup_table")
def _lookup_table(c: GradContext) -> list[Variable | None]:
    nb, (table, ids) = c.nb, c.inputs
    rows = numel(ids.shape[:-1])
    width = table.shape[1]
    flat_ids = as_int64(nb, reshaped(nb, ids, [rows]))
    g = reshaped(nb, c.dout, [rows, width])
    pad = c.attrs["padding_idx"]
    if pad != -1:  # a padding row's output was the constant 0: no gradient to that table row
        g = nb.select(along(nb, nb.not_equal(flat_ids, pad), g, 0), g, zeros_like(nb, g))
    return [nb.scatter_add(zeros_like(nb, table), g, flat_ids, 0), None]


# -- scatter_add / scatter_assign ----------------------------------------------------------------------------
@define_grad("scatter_add")
def _scatter_add(c: GradContext) -> list[Variable | None]:
    nb, (x, _, index), axis = c.nb, c.inputs, c.attrs["axis"]
    position, inside = clamp_index(nb, as_int64(nb, index), x.shape[axis])
    picked = nb.gather(c.dout, position, axis)
    return [c.dout, nb.select(along(nb, inside, picked, axis), picked, zeros_like(nb, picked)), None]


@define_grad("scatter_assign")
def _scatter_assign(c: GradContext) -> list[Variable | None]:
    nb, (x, _, index), axis = c.nb, c.inputs, c.attrs["axis"]
    n, writers = x.shape[axis], iota(nb, index.shape[0])
    idx = as_int64(nb, index)
    # each position's winning writer (-1: none), by the forward op itself: consistent by construction
    winner = nb.scatter_assign(nb.fill_constant([n], -1, dtype="int64"), writers, idx, 0)
    kept = nb.less_than(winner, 0)
    dx = nb.select(along(nb, kept, c.dout, axis), c.dout, zeros_like(nb, c.dout))
    position, _ = clamp_index(nb, idx, n)
    won = nb.equal(nb.gather(winner, position, 0), writers)  # false out of range: k wrote nowhere
    picked = nb.gather(c.dout, position, axis)
    return [dx, nb.select(along(nb, won, picked, axis), picked, zeros_like(nb, picked)), None]
