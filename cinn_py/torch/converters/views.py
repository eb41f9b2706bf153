"""Views, copies, slices, selects and splits: ATen ops that re-view or copy their input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.frontend.ops.shapes import numel
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import (
    Emitter,
    Value,
    converts,
    is_strided_layout,
    static_axis,
    static_dim,
)


@converts("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.squeeze.dim",
          "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default", "aten.flatten.using_ints",
          "aten.view_copy.default")
def _reshape(e: Emitter, x: Variable, *_: Any) -> Value:
    return e.to_shape(x)


@converts("aten.expand.default", "aten.expand_copy.default")
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
    if not is_strided_layout(kwargs.get("layout")) or kwargs.get("pin_memory"):
        return "_to_copy to another layout or pinned memory"
    return None




@converts("aten._to_copy.default", check=_same_device)
def _to_copy(e: Emitter, x: Variable, **_: Any) -> Value:
    return x if str(x.dtype) == e.dtype else e.nb.cast(x, e.dtype)


@converts("aten.permute.default")
def _permute(e: Emitter, x: Variable, dims: Sequence[int]) -> Value:
    if x.ndim < 2:
        return x
    return e.nb.transpose(x, [d % x.ndim for d in dims])


@converts("aten.transpose.int")
def _transpose(e: Emitter, x: Variable, d0: int, d1: int) -> Value:
    if x.ndim < 2:
        return x
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
    size = static_dim(x.shape[axis])
    lo, hi = slice_range(size, start, end)
    if (lo, hi, step) == (0, size, 1):
        return x
    return e.nb.slice(x, [axis], [lo], [hi], strides=[step])


def slice_range(size: int, start: Any, end: Any) -> tuple[int, int]:
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
    size = static_dim(e.shape[axis])
    lo, hi = slice_range(size, start, end)
    if step != 1:
        return e.nb.slice_assign(e.broadcast(0), g, [axis], [lo], [hi], strides=[step])
    before = [e.broadcast(0, [*e.shape[:axis], lo, *e.shape[axis + 1:]])] if lo else []
    rest = size - lo - static_dim(g.shape[axis])
    after = [e.broadcast(0, [*e.shape[:axis], rest, *e.shape[axis + 1:]])] if rest else []
    return e.nb.concat([*before, g, *after], axis=axis) if before or after else g


@converts("aten.select.int", check=_static_select)
def _select(e: Emitter, x: Variable, dim: int, index: int) -> Value:
    axis = dim % x.ndim
    if not isinstance(x.shape[axis], int):  # index >= 0 (the check): one row, gathered
        return e.to_shape(e.nb.index_select(x, e.nb.fill_constant([1], index, dtype="int64"), axis=axis))
    start = index % static_dim(x.shape[axis])
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
    axis, total = dim % x.ndim, static_dim(x.shape[dim % x.ndim])
    lengths = ([min(sizes, total - k) for k in range(0, total, sizes)] if isinstance(sizes, int)
               else list(sizes))
    starts = [sum(lengths[:k]) for k in range(len(lengths))]
    return tuple(e.nb.slice(x, [axis], [lo], [lo + n]) for lo, n in zip(starts, lengths))


@converts("aten.embedding.default")
def _embedding(e: Emitter, weight: Variable, indices: Variable, *_: Any) -> Value:
    """Rows of `weight` (padding_idx only matters to the backward)."""
    flat = e.to_shape(indices, [numel(indices.shape)])
    return e.to_shape(e.nb.index_select(weight, flat, axis=0))


@converts("aten.embedding_dense_backward.default")
def _embedding_backward(e: Emitter, g: Variable, indices: Variable, num_weights: int, padding_idx: int,
                        scale_grad_by_freq: bool) -> Value:
    """The rows' cotangents summed into a zero table (`scatter_add`); none for `padding_idx`; with
    `scale_grad_by_freq` each row's cotangent divided by how often its index occurs."""
    n = numel(indices.shape)
    flat = e.to_shape(indices, [n])
    rows = e.to_shape(g, [n, g.shape[-1]])
    if scale_grad_by_freq:
        ones = e.nb.fill_constant([n], 1.0, dtype=str(g.dtype))
        counts = e.nb.scatter_add(e.nb.fill_constant([num_weights], 0.0, dtype=str(g.dtype)), ones,
                                  flat, axis=0)
        per_row = e.nb.reciprocal(e.nb.gather(counts, flat, axis=0))
        rows = e.nb.multiply(rows, e.nb.broadcast_to(per_row, list(rows.shape), [0]))
    if padding_idx >= 0:
        keep = e.nb.not_equal(flat, padding_idx)
        rows = e.nb.select(e.broadcast(e.to_shape(keep, [n, 1]), rows.shape), rows,
                           e.broadcast(0, rows.shape))
    return e.nb.scatter_add(e.broadcast(0), rows, flat, axis=0)
