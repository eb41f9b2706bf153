"""ATen ops to NetBuilder ops: the converters of the `torch.compile` backend.

Each converter takes the `Emitter` (the NetBuilder and the FX node's output types), the node's
arguments with FX nodes replaced by their `Variable`s, and returns the node's value: a Variable,
or a tuple for multi-output ops (`native_layer_norm`: out, mean, rstd). Converters are keyed by the
overload's name (`aten.add.Tensor`), as AOT autograd's graphs call them. An optional `check` per op
says why a particular call cannot be converted (an attribute outside what the converter handles):
such a node stays in eager PyTorch and is reported with the reason.

Shape-changing view ops (`view`, `expand`, `squeeze`, ...) take the target shape from the node's
fake-tensor metadata (`node.meta["val"]`), so `-1` and size inference are torch's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.autodiff.rules_gather import linear_rows, scatter_along_axis
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.base import Dim
from cinn_py.frontend.ops.shapes import numel, shapes_equal
from cinn_py.frontend.program import Variable

Value = Any  # Variable | tuple[Variable | None, ...] | None
Converter = Callable[..., Value]
Check = Callable[..., "str | None"]


@dataclass(frozen=True)
class Emitter:
    """What a converter needs besides its arguments: the builder and the node's output shape/dtype."""

    nb: NetBuilder
    shape: tuple[Dim, ...]
    """Ints and, for symbolic sizes, cinn-py symbolic dims (cinn_py/torch/symbolic.py)."""
    dtype: str

    def to_shape(self, x: Variable, shape: Sequence[Dim] | None = None) -> Variable:
        """`x` reshaped to `shape` (the node's by default); the same Variable when it already has it."""
        target = list(self.shape if shape is None else shape)
        return x if shapes_equal(x.shape, target) else self.nb.reshape(x, target)

    def broadcast(self, x: Any, shape: Sequence[Dim] | None = None) -> Variable:
        """`x` (a Variable or a Python number) broadcast numpy-style to `shape` (the node's by default)."""
        target = list(self.shape if shape is None else shape)
        if not isinstance(x, Variable):
            return self.nb.fill_constant(target, x, dtype=self.dtype)
        if shapes_equal(x.shape, target):
            return x
        lead = len(target) - x.ndim
        return self.nb.broadcast_to(x, target, list(range(lead, len(target))))


@dataclass(frozen=True)
class Rule:
    convert: Converter
    check: Check | None = None


CONVERTERS: dict[str, Rule] = {}


def converts(*names: str, check: Check | None = None) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS[name] = Rule(fn, check)
        return fn
    return register


def axes_of(dims: Any, ndim: int) -> list[int]:
    """Non-negative axes of a dim or dim list (empty or None: every axis, as aten's reductions)."""
    if dims is None:
        return list(range(ndim))
    items = [dims] if isinstance(dims, int) else list(dims)
    if not items:
        return list(range(ndim))
    return sorted(d % ndim if ndim else 0 for d in items)


def static_axis(x: Any, dim: int, op: str) -> str | None:
    """Converters that compute with the size of axis `dim` need it static (a symbolic size there
    keeps the op in eager PyTorch)."""
    fake = getattr(x, "meta", {}).get("val")
    if fake is None or not fake.dim():
        return None
    size = fake.shape[dim % fake.dim()]
    return None if isinstance(size, int) else f"{op} along symbolic dim {size}"


def _static(d: Any) -> int:
    """A dim the op's check made sure is static (`static_axis`)."""
    if not isinstance(d, int):
        raise TypeError(f"expected a static dim, got symbolic {d}")
    return d


def _no_dtype(*args: Any, dtype: Any = None, **_: Any) -> str | None:
    return None if dtype is None else f"reduction with dtype={dtype}"


# -- views and copies --------------------------------------------------------------------------------
@converts("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.squeeze.dim",
          "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default", "aten.flatten.using_ints",
          "aten.view_copy.default", "aten.expand_copy.default")
def _reshape(e: Emitter, x: Variable, *_: Any) -> Value:
    return e.to_shape(x)


@converts("aten.expand.default")
def _expand(e: Emitter, x: Variable, *_: Any) -> Value:
    return e.broadcast(x)


@converts("aten.clone.default", "aten.detach.default", "aten.alias.default", "aten.contiguous.default",
          "aten.lift_fresh_copy.default")
def _identity(e: Emitter, x: Variable, *_: Any, **__: Any) -> Value:
    return x


def _same_device(*args: Any, **kwargs: Any) -> str | None:
    x, device = (args or (None,))[0], kwargs.get("device")
    source = getattr(x, "meta", {}).get("val")
    if device is not None and (source is None or source.device != device):
        return f"_to_copy to device {device}"
    if not _strided(kwargs.get("layout")) or kwargs.get("pin_memory"):
        return "_to_copy to another layout or pinned memory"
    return None


def _strided(layout: Any) -> bool:
    return layout is None or str(layout) == "torch.strided"


@converts("aten._to_copy.default", check=_same_device)
def _to_copy(e: Emitter, x: Variable, **_: Any) -> Value:
    return x if str(x.dtype) == e.dtype else e.nb.cast(x, e.dtype)


@converts("aten.permute.default")
def _permute(e: Emitter, x: Variable, dims: Sequence[int]) -> Value:
    return e.nb.transpose(x, [d % x.ndim for d in dims])


@converts("aten.transpose.int")
def _transpose(e: Emitter, x: Variable, d0: int, d1: int) -> Value:
    perm = list(range(x.ndim))
    a, b = d0 % x.ndim, d1 % x.ndim
    perm[a], perm[b] = perm[b], perm[a]
    return x if a == b else e.nb.transpose(x, perm)


@converts("aten.t.default")
def _t(e: Emitter, x: Variable) -> Value:
    return x if x.ndim < 2 else e.nb.transpose(x, [1, 0])


_TO_THE_END = 2**62
"""aten.slice's end for "to the end" (sys.maxsize in AOT graphs) is above this; no size is."""


def _whole(start: Any, end: Any, step: Any) -> bool:
    """A slice that keeps the whole axis (`x[:, ...]`): an identity, symbolic axis or not."""
    return step == 1 and start in (None, 0) and (end is None or isinstance(end, int) and end >= _TO_THE_END)


def _positive_step(x: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> str | None:
    if step < 1:
        return f"slice step {step}"
    return None if _whole(start, end, step) else static_axis(x, dim, "slice")


def _positive_backward_step(g: Any, sizes: Any, dim: int, *args: Any) -> str | None:
    step = args[2] if len(args) > 2 else 1
    if step < 1:
        return f"slice_backward step {step}"
    if _whole(*(list(args) + [None, None, 1])[:3]):
        return None
    size = sizes[dim % len(sizes)]  # the input's extent (g's is the slice's)
    if not isinstance(size, int):
        return f"slice_backward along symbolic dim {getattr(size, 'meta', {}).get('val', size)}"
    return static_axis(g, dim, "slice_backward")


def _static_select(x: Any, dim: int, index: Any = 0, *_: Any) -> str | None:
    """A non-negative index needs no size (along a symbolic dim: an index_select; torch's guards
    keep the index below the size)."""
    return None if isinstance(index, int) and index >= 0 else static_axis(x, dim, "select")


def _static_select_backward(g: Any, sizes: Sequence[Any], dim: int, index: Any = 0, *_: Any) -> str | None:
    size = sizes[dim % len(sizes)]
    if isinstance(size, int) or isinstance(index, int) and index >= 0:
        return None
    return f"select_backward along symbolic dim {size.meta.get('val', size)}"


def _static_split(x: Any, sizes: Any, dim: int = 0) -> str | None:
    return static_axis(x, dim, "split")


@converts("aten.slice.Tensor", check=_positive_step)
def _slice(e: Emitter, x: Variable, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Value:
    if _whole(start, end, step):
        return x
    axis = dim % x.ndim
    size = _static(x.shape[axis])
    lo, hi = _slice_range(size, start, end)
    if (lo, hi, step) == (0, size, 1):
        return x
    return e.nb.slice(x, [axis], [lo], [hi], strides=[step])


def _slice_range(size: int, start: Any, end: Any) -> tuple[int, int]:
    """aten.slice's [start, end) clamped to [0, size] (None: the ends, negative: from the end)."""
    lo = 0 if start is None else max(0, min(size, start + size if start < 0 else start))
    hi = size if end is None else max(lo, min(size, end + size if end < 0 else end))
    return lo, hi


@converts("aten.slice_backward.default", check=_positive_backward_step)
def _slice_backward(e: Emitter, g: Variable, sizes: Sequence[int], dim: int, start: int, end: int,
                    step: int) -> Value:
    """The cotangent of `x[start:end:step]` along `dim`: zeros before and after, concatenated
    (a step > 1: `slice_assign` into zeros)."""
    if _whole(start, end, step):
        return g
    axis = dim % g.ndim
    size = _static(e.shape[axis])
    lo, hi = _slice_range(size, start, end)
    if step != 1:
        return e.nb.slice_assign(e.broadcast(0), g, [axis], [lo], [hi], strides=[step])
    before = [e.broadcast(0, [*e.shape[:axis], lo, *e.shape[axis + 1:]])] if lo else []
    rest = size - lo - _static(g.shape[axis])
    after = [e.broadcast(0, [*e.shape[:axis], rest, *e.shape[axis + 1:]])] if rest else []
    return e.nb.concat([*before, g, *after], axis=axis) if before or after else g


@converts("aten.select.int", check=_static_select)
def _select(e: Emitter, x: Variable, dim: int, index: int) -> Value:
    axis = dim % x.ndim
    if not isinstance(x.shape[axis], int):  # index >= 0 (the check): one row, gathered
        return e.to_shape(e.nb.index_select(x, e.nb.fill_constant([1], index, dtype="int64"), axis=axis))
    start = index % _static(x.shape[axis])
    return e.to_shape(e.nb.slice(x, [axis], [start], [start + 1]))


@converts("aten.select_backward.default", check=_static_select_backward)
def _select_backward(e: Emitter, g: Variable, sizes: Sequence[int], dim: int, index: int) -> Value:
    axis = dim % len(sizes)
    row = e.to_shape(g, [*g.shape[:axis], 1, *g.shape[axis:]])
    if not isinstance(e.shape[axis], int):  # index >= 0 (the check): the row added into zeros
        return e.nb.scatter_add(e.broadcast(0), row, e.nb.fill_constant([1], index, dtype="int64"), axis=axis)
    return _slice_backward(e, row, sizes, axis, index % int(sizes[axis]), index % int(sizes[axis]) + 1, 1)


@converts("aten.split_with_sizes.default", "aten.split.Tensor", check=_static_split)
def _split(e: Emitter, x: Variable, sizes: Any, dim: int = 0) -> Value:
    axis, total = dim % x.ndim, _static(x.shape[dim % x.ndim])
    lengths = [min(sizes, total - k) for k in range(0, total, sizes)] if isinstance(sizes, int) else list(sizes)
    starts = [sum(lengths[:k]) for k in range(len(lengths))]
    return tuple(e.nb.slice(x, [axis], [lo], [lo + n]) for lo, n in zip(starts, lengths))


@converts("aten.embedding.default")
def _embedding(e: Emitter, weight: Variable, indices: Variable, *_: Any) -> Value:
    """Rows of `weight` (padding_idx only matters to the backward)."""
    flat = e.to_shape(indices, [numel(indices.shape)])
    return e.to_shape(e.nb.index_select(weight, flat, axis=0))


def _not_scaled_by_freq(*args: Any) -> str | None:
    return "embedding_dense_backward with scale_grad_by_freq" if len(args) > 4 and args[4] else None


@converts("aten.embedding_dense_backward.default", check=_not_scaled_by_freq)
def _embedding_backward(e: Emitter, g: Variable, indices: Variable, num_weights: int, padding_idx: int,
                        scale_grad_by_freq: bool) -> Value:
    """The rows' cotangents summed into a zero table (`scatter_add`); none for `padding_idx`."""
    n = numel(indices.shape)
    flat = e.to_shape(indices, [n])
    rows = e.to_shape(g, [n, g.shape[-1]])
    if padding_idx >= 0:
        keep = e.nb.not_equal(flat, padding_idx)
        rows = e.nb.select(e.broadcast(e.to_shape(keep, [n, 1]), rows.shape), rows, e.broadcast(0, rows.shape))
    return e.nb.scatter_add(e.broadcast(0), rows, flat, axis=0)


# -- gathers and scatters -------------------------------------------------------------------------
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
        if fx.dim() == 0:
            return f"{op} of a 0-d tensor"
        pairs = [(s, i) for d, (s, i) in enumerate(zip(fx.shape, fi.shape)) if d != dim % fx.dim()]
        src = _fake(rest[0]) if op == "scatter_add" and rest else None
        pairs += list(zip(src.shape, fi.shape)) if src is not None else []
        return _static_dims(op, *[v for s, i in pairs if not _same_size(s, i) for v in (s, i)])
    return check


def _narrowed(e: Emitter, x: Variable, shape: Sequence[Dim], keep: int | None = None) -> Variable:
    """x[:shape[0], :shape[1], ...] (all dims but `keep`): the part a narrower index reaches."""
    for d, (have, want) in enumerate(zip(x.shape, shape)):
        if d != keep and not shapes_equal([have], [want]):
            x = e.nb.slice(x, [d], [0], [_static(want)])
    return x


def _int64(e: Emitter, index: Variable) -> Variable:
    return index if str(index.dtype) == "int64" else e.nb.cast(index, "int64")


@converts("aten.gather.default", check=_along_fits("gather"))
def _gather(e: Emitter, x: Variable, dim: int, index: Variable, sparse_grad: bool = False) -> Value:
    """take_along_axis; x cut to the index's extents first (NetBuilder's gather would broadcast a
    size-1 index dim where torch reads only the first row)."""
    axis = dim % x.ndim
    return e.nb.gather(_narrowed(e, x, index.shape, keep=axis), index, axis=axis)


@converts("aten.scatter_add.default", check=_along_fits("scatter_add"))
def _scatter_add_along(e: Emitter, x: Variable, dim: int, index: Variable, src: Variable) -> Value:
    """x plus src[.., k, ..] summed at index[.., k, ..] (gather's backward): the masked sum of the
    gather rule over the index's extents, zero-padded to x's."""
    axis = dim % x.ndim
    added = scatter_along_axis(e.nb, _narrowed(e, src, index.shape), _int64(e, index), axis, x.shape[axis])
    pads = [[0, _static(n) - _static(m)] if d != axis and not shapes_equal([n], [m]) else [0, 0]
            for d, (n, m) in enumerate(zip(x.shape, added.shape))]
    if any(after for _, after in pads):
        added = e.nb.pad(added, pads, 0)
    return e.nb.add(x, added)


def _one_d_index(x: Any, dim: int, index: Any, *_: Any, **__: Any) -> str | None:
    fi = _fake(index)
    return None if fi is None or fi.dim() == 1 else f"index_add with a {fi.dim()}-d index"


@converts("aten.index_select.default")
def _index_select(e: Emitter, x: Variable, dim: int, index: Variable) -> Value:
    return e.to_shape(e.nb.gather(x, e.to_shape(index, [numel(index.shape)]), axis=dim % x.ndim))


@converts("aten.index_add.default", check=_one_d_index)
def _index_add(e: Emitter, x: Variable, dim: int, index: Variable, source: Variable, alpha: Any = 1) -> Value:
    """index_select's backward: `scatter_add` (duplicates accumulate, as in torch)."""
    return e.nb.scatter_add(x, _scaled(e, source, alpha), index, axis=dim % x.ndim)


def _scatter_slice_fits(x: Any, src: Any, dim: int = 0, start: Any = None, end: Any = None,
                        step: int = 1) -> str | None:
    return f"slice_scatter step {step}" if step < 1 else static_axis(x, dim, "slice_scatter")


@converts("aten.slice_scatter.default", check=_scatter_slice_fits)
def _slice_scatter(e: Emitter, x: Variable, src: Variable, dim: int = 0, start: Any = None, end: Any = None,
                   step: int = 1) -> Value:
    axis = dim % x.ndim
    lo, hi = _slice_range(_static(x.shape[axis]), start, end)
    return x if lo >= hi else e.nb.slice_assign(x, src, [axis], [lo], [hi], strides=[step])


@converts("aten.select_scatter.default", check=lambda x, src, dim, index: static_axis(x, dim, "select_scatter"))
def _select_scatter(e: Emitter, x: Variable, src: Variable, dim: int, index: int) -> Value:
    axis = dim % x.ndim
    at = index % _static(x.shape[axis])
    row = e.to_shape(src, [*src.shape[:axis], 1, *src.shape[axis:]])
    return e.nb.slice_assign(x, row, [axis], [at], [at + 1])


def _index_fits(x: Any, indices: Sequence[Any], *rest: Any, **_: Any) -> str | None:
    """aten.index / index_put: one index tensor at any dim, or several of one shape on the leading
    dims (x[i, j]); integer indices on static dims (negative ones wrap)."""
    fx = _fake(x)
    given = [(k, _fake(t)) for k, t in enumerate(indices) if t is not None]
    if fx is None or any(f is None for _, f in given):
        return None
    if any(f.dtype.is_floating_point or str(f.dtype) == "torch.bool" for _, f in given):
        return "indexing with a bool mask"
    shapes = {tuple(map(str, f.shape)) for _, f in given}
    if len(given) > 1 and ([k for k, _ in given] != list(range(len(given))) or len(shapes) > 1):
        dims = [k for k, _ in given]
        return f"indexing with tensors at dims {dims} (one index tensor, or several of one shape on the leading dims)"
    return _static_dims("indexing", *[fx.shape[k] for k, _ in given])


def _wrapped(e: Emitter, index: Variable, size: Any) -> Variable:
    """An int64 index with torch's negative indices taken from the end."""
    index = _int64(e, index)
    return e.nb.select(e.nb.less_than(index, 0), e.nb.add(index, _static(size)), index)


@converts("aten.index.Tensor", check=_index_fits)
def _index(e: Emitter, x: Variable, indices: Sequence[Variable | None]) -> Value:
    given = [(k, t) for k, t in enumerate(indices) if t is not None]
    if len(given) == 1:
        k, index = given[0]
        flat = e.to_shape(_wrapped(e, index, x.shape[k]), [numel(index.shape)])
        return e.to_shape(e.nb.gather(x, flat, axis=k))
    return e.to_shape(e.nb.gather_nd(x, _coordinates(e, x, given)))


def _coordinates(e: Emitter, x: Variable, given: Sequence[tuple[int, Variable]]) -> Variable:
    """The leading dims' index tensors stacked on a new last dim (gather_nd's index)."""
    cols = [e.to_shape(_wrapped(e, t, x.shape[k]), [*t.shape, 1]) for k, t in given]
    return e.nb.concat(cols, axis=cols[0].ndim - 1)


@converts("aten.index_put.default", check=_index_fits)
def _index_put(e: Emitter, x: Variable, indices: Sequence[Variable | None], values: Variable,
               accumulate: bool = False) -> Value:
    """x[indices] = values (`scatter_assign`: of duplicates the last write wins, which torch leaves
    unspecified) or += values with `accumulate` (x[i]'s backward: `scatter_add`)."""
    given = [(k, t) for k, t in enumerate(indices) if t is not None]
    scatter = e.nb.scatter_add if accumulate else e.nb.scatter_assign
    if len(given) == 1:
        k, index = given[0]
        rows = numel(index.shape)
        slots = [*x.shape[:k], *index.shape, *x.shape[k + 1:]]
        flat_values = e.to_shape(e.broadcast(_cast(e, values, x), slots), [*x.shape[:k], rows, *x.shape[k + 1:]])
        return scatter(x, flat_values, e.to_shape(_wrapped(e, index, x.shape[k]), [rows]), axis=k)
    depth, batch = len(given), given[0][1].shape
    rows, rest = numel(batch), list(x.shape[depth:])
    flat = linear_rows(e.nb, _coordinates(e, x, given), list(x.shape[:depth]))
    table = e.to_shape(x, [numel(x.shape[:depth]), *rest])
    flat_values = e.to_shape(e.broadcast(_cast(e, values, x), [*batch, *rest]), [rows, *rest])
    return e.to_shape(scatter(table, flat_values, e.to_shape(flat, [rows]), axis=0))


def _cast(e: Emitter, v: Variable, like: Variable) -> Variable:
    return v if v.dtype == like.dtype else e.nb.cast(v, str(like.dtype))


@converts("aten.copy.default")
def _copy(e: Emitter, x: Variable, src: Any, non_blocking: bool = False) -> Value:
    """The functional copy_: src (broadcast, cast) in x's shape and dtype."""
    if isinstance(src, Variable) and str(src.dtype) != e.dtype:
        src = e.nb.cast(src, e.dtype)
    return e.broadcast(src)


@converts("aten.flip.default")
def _flip(e: Emitter, x: Variable, dims: Sequence[int]) -> Value:
    return e.nb.reverse(x, axes_of(dims, x.ndim)) if dims else x


@converts("aten.cumsum.default", check=_no_dtype)
def _cumsum(e: Emitter, x: Variable, dim: int, **_: Any) -> Value:
    x = x if str(x.dtype) == e.dtype else e.nb.cast(x, e.dtype)
    return e.nb.cumsum(x, axis=dim % x.ndim)


@converts("aten.cat.default")
def _cat(e: Emitter, xs: Sequence[Variable], dim: int = 0) -> Value:
    return e.nb.concat(list(xs), axis=dim % xs[0].ndim)


# -- elementwise ---------------------------------------------------------------------------------------
def _scaled(e: Emitter, y: Any, alpha: Any) -> Any:
    if alpha == 1:
        return y
    return y * alpha if not isinstance(y, Variable) else e.nb.scale(y, float(alpha))


_COMPARISONS = frozenset({"greater_than", "greater_equal", "less_than", "less_equal", "equal", "not_equal"})


def _promoted(e: Emitter, method: str, a: Variable, b: Any) -> tuple[Variable, Any]:
    """Operands cast to torch's promoted dtype (the node's, or for comparisons the wider operand's)."""
    if not isinstance(b, Variable):
        return (a, b) if method in _COMPARISONS or str(a.dtype) == e.dtype else (e.nb.cast(a, e.dtype), b)
    to = str(np.promote_types(str(a.dtype), str(b.dtype))) if method in _COMPARISONS else e.dtype
    return tuple(v if str(v.dtype) == to else e.nb.cast(v, to) for v in (a, b))  # type: ignore[return-value]


def _binary(method: str) -> Converter:
    def convert(e: Emitter, a: Any, b: Any) -> Value:
        if not isinstance(a, Variable):
            a = e.broadcast(a, b.shape)
        return getattr(e.nb, method)(*_promoted(e, method, a, b))
    return convert


@converts("aten.add.Tensor", "aten.add.Scalar")
def _add(e: Emitter, a: Any, b: Any, alpha: Any = 1) -> Value:
    return _binary("add")(e, a, _scaled(e, b, alpha))


@converts("aten.sub.Tensor", "aten.sub.Scalar")
def _sub(e: Emitter, a: Any, b: Any, alpha: Any = 1) -> Value:
    return _binary("subtract")(e, a, _scaled(e, b, alpha))


@converts("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(e: Emitter, a: Any, b: Any, alpha: Any = 1) -> Value:
    return _binary("subtract")(e, b, _scaled(e, a, alpha))


def _true_division(*args: Any, rounding_mode: Any = None) -> str | None:
    return None if rounding_mode is None else f"div rounding_mode={rounding_mode!r}"


for _name, _method in (("mul", "multiply"), ("logical_and", "logical_and"), ("logical_or", "logical_or"),
                       ("logical_xor", "logical_xor"), ("maximum", "maximum"), ("minimum", "minimum"),
                       ("gt", "greater_than"), ("ge", "greater_equal"), ("lt", "less_than"),
                       ("le", "less_equal"), ("eq", "equal"), ("ne", "not_equal")):
    converts(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar", f"aten.{_name}.default")(_binary(_method))
converts("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", check=_true_division)(
    lambda e, a, b, rounding_mode=None: _binary("divide")(e, a, b))

for _name, _method in (("neg", "negative"), ("exp", "exp"), ("log", "log"), ("tanh", "tanh"),
                       ("sigmoid", "sigmoid"), ("relu", "relu"), ("sqrt", "sqrt"), ("rsqrt", "rsqrt"),
                       ("abs", "abs"), ("erf", "erf"), ("sin", "sin"), ("cos", "cos"),
                       ("reciprocal", "reciprocal"), ("silu", "silu"), ("log1p", "log1p"), ("floor", "floor"),
                       ("ceil", "ceil"), ("logical_not", "logical_not")):
    converts(f"aten.{_name}.default")(lambda e, x, _m=_method: getattr(e.nb, _m)(x))


@converts("aten.pow.Tensor_Scalar")
def _pow(e: Emitter, x: Variable, exponent: Any) -> Value:
    if exponent == 2:
        return e.nb.multiply(x, x)
    return e.nb.pow(x, e.broadcast(exponent, x.shape))


@converts("aten.clamp.default")
def _clamp(e: Emitter, x: Variable, lo: Any = None, hi: Any = None) -> Value:
    y = x if lo is None else e.nb.maximum(x, lo)
    return y if hi is None else e.nb.minimum(y, hi)


converts("aten.clamp_min.default")(lambda e, x, lo: _clamp(e, x, lo))
converts("aten.clamp_max.default")(lambda e, x, hi: _clamp(e, x, None, hi))


@converts("aten.where.self")
def _where(e: Emitter, cond: Variable, a: Any, b: Any) -> Value:
    return e.nb.select(e.broadcast(cond), e.broadcast(a), e.broadcast(b))


@converts("aten.threshold_backward.default")
def _threshold_backward(e: Emitter, g: Variable, x: Variable, threshold: Any) -> Value:
    return e.nb.select(e.nb.greater_than(x, threshold), g, e.broadcast(0))


@converts("aten.sigmoid_backward.default")
def _sigmoid_backward(e: Emitter, g: Variable, y: Variable) -> Value:
    return e.nb.multiply(g, e.nb.multiply(y, e.nb.subtract(e.broadcast(1.0), y)))


@converts("aten.tanh_backward.default")
def _tanh_backward(e: Emitter, g: Variable, y: Variable) -> Value:
    return e.nb.multiply(g, e.nb.subtract(e.broadcast(1.0), e.nb.multiply(y, y)))


def _gelu_mode(*args: Any, approximate: str = "none") -> str | None:
    return None if approximate in ("none", "tanh") else f"gelu approximate={approximate!r}"


@converts("aten.gelu.default", check=_gelu_mode)
def _gelu(e: Emitter, x: Variable, approximate: str = "none") -> Value:
    return e.nb.gelu(x, approximate=approximate == "tanh")


@converts("aten.gelu_backward.default", check=_gelu_mode)
def _gelu_backward(e: Emitter, g: Variable, x: Variable, approximate: str = "none") -> Value:
    nb = e.nb
    if approximate == "tanh":  # d/dx 0.5 x (1 + tanh(k (x + c x^3)))
        k, c = math.sqrt(2 / math.pi), 0.044715
        x2 = nb.multiply(x, x)
        t = nb.tanh(nb.scale(nb.add(x, nb.scale(nb.multiply(x2, x), c)), k))
        dinner = nb.scale(x2, 3 * c * k, k)
        left = nb.scale(t, 0.5, 0.5)
        right = nb.multiply(nb.scale(x, 0.5), nb.multiply(nb.scale(nb.multiply(t, t), -1.0, 1.0), dinner))
        return nb.multiply(g, nb.add(left, right))
    cdf = nb.scale(nb.erf(nb.scale(x, math.sqrt(0.5))), 0.5, 0.5)
    pdf = nb.scale(nb.exp(nb.scale(nb.multiply(x, x), -0.5)), 1 / math.sqrt(2 * math.pi))
    return nb.multiply(g, nb.add(cdf, nb.multiply(x, pdf)))


# -- matmul ------------------------------------------------------------------------------------------------
def _transposed_operand(nb: NetBuilder, a: Variable) -> Variable | None:
    """What `a` is the transpose of when it is a transpose of its last two axes (a weight
    gradient's `t(x)`), else None."""
    producer = next((op for op in reversed(nb.ops) if op.output is a), None)
    if producer is None or producer.type != "transpose" or a.ndim < 2:
        return None
    swap = [*range(a.ndim - 2), a.ndim - 1, a.ndim - 2]
    return producer.inputs[0] if list(producer.attrs["perm"]) == swap else None


@converts("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(e: Emitter, a: Variable, b: Variable) -> Value:
    """A left operand that is a transpose is read transposed by the matmul (`transpose_x`) instead
    of copied first (the x86 tactic reads a transposed A as fast as a plain one; a transposed right
    operand stays a copy: read in place it is 2x slower than the copy and the plain matmul)."""
    source = _transposed_operand(e.nb, a) if a.ndim == b.ndim else None
    if source is not None:
        return e.nb.matmul(source, b, transpose_x=True)
    return e.nb.matmul(a, b)


@converts("aten.addmm.default")
def _addmm(e: Emitter, bias: Variable, a: Variable, b: Variable, beta: Any = 1, alpha: Any = 1) -> Value:
    prod = _scaled(e, e.nb.matmul(a, b), alpha)
    return prod if beta == 0 else e.nb.add(prod, e.broadcast(_scaled(e, bias, beta)))


# -- reductions and normalisations ------------------------------------------------------------------------
def _reduce(method: str) -> Converter:
    def convert(e: Emitter, x: Variable, dims: Any = None, keepdim: bool = False, **_: Any) -> Value:
        if str(x.dtype) != e.dtype:  # torch sums bool and small ints in int64
            x = e.nb.cast(x, e.dtype)
        return getattr(e.nb, method)(x, axes_of(dims, x.ndim), keep_dim=keepdim)
    return convert


converts("aten.sum.dim_IntList", "aten.sum.default", check=_no_dtype)(_reduce("reduce_sum"))
converts("aten.mean.dim", "aten.mean.default", check=_no_dtype)(_reduce("reduce_mean"))
converts("aten.amax.default")(_reduce("reduce_max"))
converts("aten.amin.default")(_reduce("reduce_min"))


def _no_half_to_float(x: Any, dim: int, half_to_float: bool) -> str | None:
    return "softmax half_to_float=True" if half_to_float else None


@converts("aten._softmax.default", check=_no_half_to_float)
def _softmax(e: Emitter, x: Variable, dim: int, half_to_float: bool) -> Value:
    return e.nb.softmax(x, [dim % x.ndim])


@converts("aten._log_softmax.default", check=_no_half_to_float)
def _log_softmax(e: Emitter, x: Variable, dim: int, half_to_float: bool) -> Value:
    nb, axis = e.nb, [dim % x.ndim]
    shifted = nb.subtract(x, nb.reduce_max(x, axis, keep_dim=True))
    return nb.subtract(shifted, nb.log(nb.reduce_sum(nb.exp(shifted), axis, keep_dim=True)))


@converts("aten._log_softmax_backward_data.default")
def _log_softmax_backward(e: Emitter, g: Variable, y: Variable, dim: int, input_dtype: Any) -> Value:
    nb = e.nb
    return nb.subtract(g, nb.multiply(nb.exp(y), nb.reduce_sum(g, [dim % y.ndim], keep_dim=True)))


@converts("aten._softmax_backward_data.default")
def _softmax_backward(e: Emitter, g: Variable, y: Variable, dim: int, input_dtype: Any) -> Value:
    nb = e.nb
    dot = nb.reduce_sum(nb.multiply(g, y), [dim % y.ndim], keep_dim=True)
    return nb.multiply(y, nb.subtract(g, dot))


@converts("aten.native_layer_norm.default")
def _layer_norm(e: Emitter, x: Variable, normalized_shape: Sequence[int], w: Variable | None,
                b: Variable | None, eps: float) -> Value:
    nb = e.nb
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
    nb = e.nb
    axes = list(range(x.ndim - len(normalized_shape), x.ndim))
    lead = list(range(x.ndim - len(normalized_shape)))
    xhat = nb.multiply(nb.subtract(x, mean), rstd)
    gw = g if w is None else nb.multiply(g, w)
    # dx = rstd (gw - mean(gw) - xhat mean(gw xhat)) over the normalised axes
    inner = nb.subtract(nb.subtract(gw, nb.reduce_mean(gw, axes, keep_dim=True)),
                        nb.multiply(xhat, nb.reduce_mean(nb.multiply(gw, xhat), axes, keep_dim=True)))
    dx = nb.multiply(rstd, inner) if mask[0] else None
    dw = nb.reduce_sum(nb.multiply(g, xhat), lead) if mask[1] and w is not None else None
    db = nb.reduce_sum(g, lead) if mask[2] and b is not None else None
    return dx, dw, db


# -- convolution and pooling ------------------------------------------------------------------------------
def _two(values: Any, default: Any = None) -> list[int]:
    """aten's int-or-list window argument as [h, w] (an empty list: `default`, pooling's stride)."""
    items = [values] if isinstance(values, int) else list(values)
    if not items and default is not None:
        return _two(default)
    return items * 2 if len(items) == 1 else items


def _static_plane(node: Any) -> tuple[int, int] | None:
    """The static (H, W) of a 4-d NCHW FX node, or None (another rank, symbolic, or not a node)."""
    shape = getattr(node, "meta", {}).get("val", None)
    shape = None if shape is None else tuple(shape.shape)
    if shape is None or len(shape) != 4 or not all(isinstance(d, int) for d in shape[2:]):
        return None
    return shape[2], shape[3]


def _conv_reason(x: Any, w: Any, bias: Any, stride: Any, padding: Any, dilation: Any, transposed: bool,
                 output_padding: Any, groups: int) -> str | None:
    if transposed or any(output_padding):
        return "transposed convolution"
    if _static_plane(x) is None or len(w.meta["val"].shape) != 4:
        return "convolution other than 2-d with static spatial dims"
    return None


def _conv_args(stride: Any, padding: Any, dilation: Any, groups: int) -> dict[str, Any]:
    return {"strides": _two(stride), "paddings": _two(padding), "dilations": _two(dilation), "groups": groups}


@converts("aten.convolution.default", check=_conv_reason)
def _convolution(e: Emitter, x: Variable, w: Variable, bias: Variable | None, stride: Any, padding: Any,
                 dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Value:
    y = e.nb.conv2d(x, w, **_conv_args(stride, padding, dilation, groups))
    return y if bias is None else e.nb.add(y, e.nb.broadcast_to(bias, list(y.shape), [1]))


def _conv_backward_reason(g: Any, x: Any, w: Any, bias_sizes: Any, stride: Any, padding: Any, dilation: Any,
                          transposed: bool, output_padding: Any, groups: int, mask: Any) -> str | None:
    return _conv_reason(x, w, None, stride, padding, dilation, transposed, output_padding, groups)


@converts("aten.convolution_backward.default", check=_conv_backward_reason)
def _convolution_backward(e: Emitter, g: Variable, x: Variable, w: Variable, bias_sizes: Any, stride: Any,
                          padding: Any, dilation: Any, transposed: bool, output_padding: Any, groups: int,
                          mask: Sequence[bool]) -> Value:
    """(dx, dw, dbias) as the conv2d rule computes them (conv2d_grad_data / _filter), the bias's
    the cotangent summed over batch and plane; None where `mask` asks for none."""
    nb, args = e.nb, _conv_args(stride, padding, dilation, groups)
    dx = nb.conv2d_grad_data(g, w, [int(x.shape[2]), int(x.shape[3])], **args) if mask[0] else None
    dw = nb.conv2d_grad_filter(x, g, [int(w.shape[2]), int(w.shape[3])], **args) if mask[1] else None
    db = nb.reduce_sum(g, [0, 2, 3]) if mask[2] and bias_sizes else None
    return dx, dw, db


def _pool_reason(x: Any, kernel: Any, stride: Any, padding: Any, ceil_mode: bool, divisor: Any = None,
                 inclusive: bool = False) -> str | None:
    """Why torch's pooling differs from pool2d's here: a ceil_mode window starting in the bottom or
    right padding (PyTorch drops it), or an inclusive average whose ceil_mode window runs past the
    padding (PyTorch divides by the clipped window, pool2d by KH * KW), a divisor_override."""
    plane = _static_plane(x)
    if plane is None:
        return "pooling other than 2-d with static spatial dims"
    if divisor is not None:
        return "avg_pool2d with divisor_override"
    for size, k, s, p in zip(plane, _two(kernel), _two(stride, kernel), _two(padding)):
        out = -(-(size + 2 * p - k) // s) + 1 if ceil_mode else (size + 2 * p - k) // s + 1
        if ceil_mode and (out - 1) * s >= size + p:
            return "ceil_mode window starting in the padding (PyTorch drops it, pool2d keeps it)"
        if inclusive and (out - 1) * s + k > size + 2 * p:
            return "avg_pool2d ceil_mode window past the padding with count_include_pad (divisor differs)"
    return None


def _max_pool_reason(x: Any, kernel: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
                     ceil_mode: bool = False, *_: Any) -> str | None:
    if any(d != 1 for d in _two(dilation)):
        return "max_pool2d with dilation"
    return _pool_reason(x, kernel, stride, padding, ceil_mode)


def _pool_args(kind: str, kernel: Any, stride: Any, padding: Any, ceil_mode: bool,
               exclusive: bool = True) -> dict[str, Any]:
    return {"pooling_type": kind, "kernel_size": _two(kernel), "stride": _two(stride, kernel),
            "padding": _two(padding), "ceil_mode": ceil_mode, "exclusive": exclusive}


@converts("aten.max_pool2d_with_indices.default", check=_max_pool_reason)
def _max_pool(e: Emitter, x: Variable, kernel: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
              ceil_mode: bool = False) -> Value:
    """(y, indices): the indices are `pool2d_argmax`'s, PyTorch's (the first maximum of a window)."""
    args = _pool_args("max", kernel, stride, padding, ceil_mode)
    indices = e.nb.pool2d_argmax(x, args["kernel_size"], stride=args["stride"], padding=args["padding"],
                                 ceil_mode=ceil_mode)
    return e.nb.pool2d(x, **args), indices


def _max_pool_backward_reason(g: Any, x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any,
                              ceil_mode: bool, indices: Any) -> str | None:
    return _max_pool_reason(x, kernel, stride, padding, dilation, ceil_mode)


@converts("aten.max_pool2d_with_indices_backward.default", check=_max_pool_backward_reason)
def _max_pool_backward(e: Emitter, g: Variable, x: Variable, kernel: Any, stride: Any, padding: Any,
                       dilation: Any, ceil_mode: bool, indices: Variable) -> Value:
    """pool2d_grad finds each window's first maximum again from x: the positions `indices` holds."""
    return e.nb.pool2d_grad(x, g, **_pool_args("max", kernel, stride, padding, ceil_mode))


def _avg_pool_reason(x: Any, kernel: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
                     count_include_pad: bool = True, divisor_override: Any = None) -> str | None:
    return _pool_reason(x, kernel, stride, padding, ceil_mode, divisor_override, count_include_pad)


@converts("aten.avg_pool2d.default", check=_avg_pool_reason)
def _avg_pool(e: Emitter, x: Variable, kernel: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
              count_include_pad: bool = True, divisor_override: Any = None) -> Value:
    return e.nb.pool2d(x, **_pool_args("avg", kernel, stride, padding, ceil_mode, not count_include_pad))


def _avg_pool_backward_reason(g: Any, x: Any, kernel: Any, stride: Any, padding: Any, ceil_mode: bool,
                              count_include_pad: bool, divisor_override: Any) -> str | None:
    return _avg_pool_reason(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)


@converts("aten.avg_pool2d_backward.default", check=_avg_pool_backward_reason)
def _avg_pool_backward(e: Emitter, g: Variable, x: Variable, kernel: Any, stride: Any, padding: Any,
                       ceil_mode: bool, count_include_pad: bool, divisor_override: Any) -> Value:
    return e.nb.pool2d_grad(x, g, **_pool_args("avg", kernel, stride, padding, ceil_mode, not count_include_pad))


# -- creation -------------------------------------------------------------------------------------------------
def _plain_full(*args: Any, device: Any = None, layout: Any = None, pin_memory: Any = None, **_: Any) -> str | None:
    return None if _strided(layout) and not pin_memory else "full with a sparse layout or pinned memory"


@converts("aten.full.default", "aten.scalar_tensor.default", "aten.new_full.default", "aten.full_like.default",
          check=_plain_full)
def _full(e: Emitter, *args: Any, **_: Any) -> Value:
    value = args[-1] if args else 0
    if isinstance(value, Variable):  # a size used as the fill value: the 0-d input of its value
        return e.broadcast(value if str(value.dtype) == e.dtype else e.nb.cast(value, e.dtype))
    return e.nb.fill_constant(list(e.shape), value, dtype=e.dtype)


@converts("prims.convert_element_type.default")
def _convert_element_type(e: Emitter, x: Variable, dtype: Any) -> Value:
    return x if str(x.dtype) == e.dtype else e.nb.cast(x, e.dtype)


@converts("aten.pow.Tensor_Tensor")
def _pow_tensors(e: Emitter, x: Variable, y: Variable) -> Value:
    x, y = (v if str(v.dtype) == e.dtype else e.nb.cast(v, e.dtype) for v in (x, y))
    return e.nb.pow(e.broadcast(x), e.broadcast(y))


def _constant(value: float) -> Converter:
    return lambda e, *_, **__: e.nb.fill_constant(list(e.shape), value, dtype=e.dtype)


for _name in ("zeros_like", "new_zeros", "zeros"):
    converts(f"aten.{_name}.default", check=_plain_full)(_constant(0))
# uninitialised memory (functionalisation's buffers, overwritten by copy/scatter): zeros are one valid content
converts("aten.new_empty_strided.default", "aten.new_empty.default", "aten.empty_like.default",
         "aten.empty.memory_format", "aten.empty_strided.default", check=_plain_full)(_constant(0))
for _name in ("ones_like", "new_ones", "ones"):
    converts(f"aten.{_name}.default", check=_plain_full)(_constant(1))
