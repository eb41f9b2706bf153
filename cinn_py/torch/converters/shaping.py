"""Tensor shaping beyond views: the `*_copy` variants of the views (functionalised graphs call
them), narrow_copy, stack, unbind, roll, repeat, tril/triu, arange, linspace/logspace (with number
or 0-d tensor ends) and autograd's zero tensors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.frontend.ops.shapes import numel
from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import (CONVERTERS, Emitter, Value, axis_of, converts, is_strided_layout,
                                           static_axis, static_dim)

# A `*_copy` op computes what its view computes, as a new tensor: the same converter and check.
for _copy, _view in (("transpose_copy.int", "transpose.int"), ("permute_copy.default", "permute.default"),
                     ("unsqueeze_copy.default", "unsqueeze.default"), ("squeeze_copy.dim", "squeeze.dim"),
                     ("squeeze_copy.dims", "squeeze.dims"), ("squeeze_copy.default", "squeeze.default"),
                     ("t_copy.default", "t.default"), ("alias_copy.default", "alias.default"),
                     ("slice_copy.Tensor", "slice.Tensor"), ("select_copy.int", "select.int"),
                     ("split_with_sizes_copy.default", "split_with_sizes.default"),
                     ("split_copy.Tensor", "split.Tensor"),
                     ("unsafe_split.Tensor", "split.Tensor"),
                     ("unsafe_split_with_sizes.default", "split_with_sizes.default"),
                     ("_unsafe_index.Tensor", "index.Tensor"),
                     ("_unsafe_index_put.default", "index_put.default")):
    CONVERTERS[f"aten.{_copy}"] = CONVERTERS[f"aten.{_view}"]


@converts("aten.stack.default")
def _stack(e: Emitter, xs: Sequence[Variable], dim: int = 0) -> Value:
    axis = axis_of(dim, len(e.shape))
    rows = [e.to_shape(x, [*x.shape[:axis], 1, *x.shape[axis:]]) for x in xs]
    return rows[0] if len(rows) == 1 else e.nb.concat(rows, axis=axis)


def _static_along(x: Any, dim: int = 0, *_: Any) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None or not fake.dim():
        return None
    size = fake.shape[dim % fake.dim()]
    return None if isinstance(size, int) else f"unbind along symbolic dim {size}"


@converts("aten.unbind.int", "aten.unbind_copy.int", check=_static_along)
def _unbind(e: Emitter, x: Variable, dim: int = 0) -> Value:
    axis = axis_of(dim, x.ndim)
    shape = [*x.shape[:axis], *x.shape[axis + 1:]]
    return tuple(e.to_shape(e.nb.slice(x, [axis], [k], [k + 1]), shape) for k
                 in range(static_dim(x.shape[axis])))


def _static_rolled(x: Any, shifts: Any, dims: Any = ()) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None:
        return None
    sizes = [fake.shape[d % fake.dim()] for d in (dims or [])] if fake.dim() else []
    bad = [s for s in sizes if not isinstance(s, int)] + ([] if dims
                                                          or all(isinstance(s, int) for s in fake.shape)
                                                         else ["the flattened size"])
    return f"roll along symbolic {bad[0]}" if bad else None


@converts("aten.roll.default", check=_static_rolled)
def _roll(e: Emitter, x: Variable, shifts: Sequence[int], dims: Sequence[int] = ()) -> Value:
    """Each dim's two pieces swapped (concat of slices); no dims: the flattened tensor rolled."""
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    if not dims:
        flat = e.to_shape(x, [numel(x.shape)]) if x.ndim != 1 else x
        return e.to_shape(_roll_axis(e, flat, 0, shifts[0]))
    for shift, dim in zip(shifts, dims):
        x = _roll_axis(e, x, axis_of(dim, x.ndim), shift)
    return x


def _roll_axis(e: Emitter, x: Variable, axis: int, shift: int) -> Variable:
    size = static_dim(x.shape[axis])
    cut = (-shift) % size if size else 0
    if cut == 0:
        return x
    head = e.nb.slice(x, [axis], [cut], [size])
    tail = e.nb.slice(x, [axis], [0], [cut])
    return e.nb.concat([head, tail], axis=axis)


@converts("aten.repeat.default")
def _repeat(e: Emitter, x: Variable, repeats: Sequence[int]) -> Value:
    """numpy.tile with x's shape padded by leading 1s to the repeats' length."""
    lead = len(repeats) - x.ndim
    x = e.to_shape(x, [1] * lead + list(x.shape)) if lead else x
    if all(r == 1 for r in repeats):
        return e.to_shape(x)
    return e.nb.tile(x, [int(r) for r in repeats])


def _triangle(keep_upper: bool) -> Any:
    def convert(e: Emitter, x: Variable, diagonal: int = 0) -> Value:
        """Keep (col - row) >= diagonal (triu) or <= diagonal (tril) over the last two dims."""
        nb = e.nb
        rows, cols = static_dim(x.shape[-2]), static_dim(x.shape[-1])
        r = e.to_shape(nb.arange(0, rows, 1, "int64"), [rows, 1])
        c = e.to_shape(nb.arange(0, cols, 1, "int64"), [1, cols])
        offset = nb.subtract(nb.broadcast_to(c, [rows, cols], [0, 1]),
                             nb.broadcast_to(r, [rows, cols], [0, 1]))
        bound = nb.fill_constant([rows, cols], int(diagonal), dtype="int64")
        keep = nb.greater_equal(offset, bound) if keep_upper else nb.less_equal(offset, bound)
        return nb.select(e.broadcast(keep), x, e.broadcast(False if e.dtype == "bool" else 0))
    return convert


def _static_matrix(x: Any, *_: Any) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None:
        return None
    return None if all(isinstance(s, int) for s in fake.shape[-2:]) else "tril/triu of a symbolic matrix"


converts("aten.triu.default", check=_static_matrix)(_triangle(True))
converts("aten.tril.default", check=_static_matrix)(_triangle(False))


def _plain_arange(*args: Any, layout: Any = None, pin_memory: Any = None, **_: Any) -> str | None:
    if not is_strided_layout(layout) or pin_memory:
        return "arange with a sparse layout or pinned memory"
    bad = [a for a in args if not isinstance(a, (int, float))]
    return f"arange with a non-constant bound {bad[0]}" if bad else None


@converts("aten.arange.default", "aten.arange.start", "aten.arange.start_step", check=_plain_arange)
def _arange(e: Emitter, *args: Any, **_: Any) -> Value:
    """start + k * step for k < the node's length (torch's own count of elements)."""
    start, step = (0, 1) if len(args) == 1 else (args[0], args[2] if len(args) > 2 else 1)
    count = static_dim(e.shape[0])
    k = e.nb.arange(0, count, 1, "int64")
    if e.dtype.startswith(("int", "uint")):
        if step != 1:
            k = e.nb.multiply(k, e.nb.fill_constant([count], int(step), dtype="int64"))
        if start:
            k = e.nb.add(k, e.nb.fill_constant([count], int(start), dtype="int64"))
        return k if e.dtype == "int64" else e.nb.cast(k, e.dtype)
    wide = e.nb.cast(k, "float64")
    return e.nb.cast(e.nb.scale(wide, float(step), float(start)), e.dtype)


@converts("aten.fill.Scalar", "aten.fill.Tensor")
def _fill(e: Emitter, x: Variable, value: Any) -> Value:
    """x's shape and dtype, every element `value` (a 0-d tensor or a number)."""
    if isinstance(value, Variable):
        value = value if str(value.dtype) == e.dtype else e.nb.cast(value, e.dtype)
    return e.broadcast(value)


@converts("aten.rot90.default")
def _rot90(e: Emitter, x: Variable, k: int = 1, dims: Sequence[int] = (0, 1)) -> Value:
    """k quarter turns from dims[0] towards dims[1]: flips and a transpose."""
    a, b = axis_of(dims[0], x.ndim), axis_of(dims[1], x.ndim)
    turns = k % 4
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    if turns == 1:
        return e.nb.transpose(e.nb.reverse(x, [b]), perm)
    if turns == 2:
        return e.nb.reverse(x, [a, b])
    if turns == 3:
        return e.nb.reverse(e.nb.transpose(x, perm), [b])
    return x


def _static_window(x: Any, dim: int, size: int, step: int) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None or not fake.dim():
        return None
    extent = fake.shape[dim % fake.dim()]
    return None if isinstance(extent, int) else f"unfold along symbolic dim {extent}"


@converts("aten.unfold.default", "aten.unfold_copy.default", check=_static_window)
def _unfold(e: Emitter, x: Variable, dim: int, size: int, step: int) -> Value:
    """Windows of `size` every `step` along `dim`: one gather of the windows' positions, the
    window's elements moved to a new last dim."""
    nb = e.nb
    if x.ndim == 0:
        return e.to_shape(x)
    axis = axis_of(dim, x.ndim)
    windows = (static_dim(x.shape[axis]) - size) // step + 1
    if windows <= 0 or size == 0:
        return nb.fill_constant(list(e.shape), 0, dtype=e.dtype)
    starts = nb.broadcast_to(nb.multiply(nb.arange(0, windows, 1, "int64"),
                                         nb.fill_constant([windows], step, dtype="int64")),
                             [windows, size], [0])
    offsets = nb.broadcast_to(nb.arange(0, size, 1, "int64"), [windows, size], [1])
    flat = e.to_shape(nb.add(starts, offsets), [windows * size])
    picked = nb.gather(x, flat, axis=axis)
    split = e.to_shape(picked, [*x.shape[:axis], windows, size, *x.shape[axis + 1:]])
    order = [d for d in range(split.ndim) if d != axis + 1] + [axis + 1]
    return nb.transpose(split, order)


def _plain_factory(*args: Any, layout: Any = None, pin_memory: Any = None, **_: Any) -> str | None:
    if not is_strided_layout(layout) or pin_memory:
        return "a factory with a sparse layout or pinned memory"
    bad = [a for a in args if not isinstance(a, (int, float))]
    return f"a factory with a non-constant argument {bad[0]}" if bad else None


@converts("aten.eye.default", "aten.eye.m", check=_plain_factory)
def _eye(e: Emitter, n: int, m: int | None = None, **_: Any) -> Value:
    nb = e.nb
    rows, cols = static_dim(e.shape[0]), static_dim(e.shape[1])
    r = nb.broadcast_to(nb.arange(0, rows, 1, "int64"), [rows, cols], [0])
    c = nb.broadcast_to(nb.arange(0, cols, 1, "int64"), [rows, cols], [1])
    return nb.cast(nb.equal(r, c), e.dtype)


@converts("aten.linspace.default", check=_plain_factory)
def _linspace(e: Emitter, start: float, end: float, steps: int, **_: Any) -> Value:
    """start + k * step, the second half from the end (end - (steps - 1 - k) * step), as torch."""
    nb = e.nb
    if steps <= 1:
        return nb.fill_constant(list(e.shape), start, dtype=e.dtype)
    step = (end - start) / (steps - 1)
    k = nb.cast(nb.arange(0, steps, 1, "int64"), "float64")
    low = nb.scale(k, step, float(start))
    high = nb.scale(k, step, float(end) - step * (steps - 1))
    half = nb.less_than(k, nb.fill_constant([steps], float(steps // 2), dtype="float64"))
    values = nb.select(half, low, high)
    if e.dtype.startswith(("int", "uint")):
        values = nb.trunc(values)
    return nb.cast(values, e.dtype)


def _tensor_ends(start: Any, end: Any, steps: int, *rest: Any, **kwargs: Any) -> str | None:
    """linspace/logspace with 0-d tensor ends (torch reads their values): the steps and options
    must be constants."""
    return _plain_factory(steps, *[r for r in rest if not hasattr(r, "meta")], **kwargs)


def _as_wide(e: Emitter, v: Any) -> Variable:
    """A 0-d tensor end (or a number) as a float64 [1]."""
    if not isinstance(v, Variable):
        return e.nb.fill_constant([1], float(v), dtype="float64")
    v = v if str(v.dtype) == "float64" else e.nb.cast(v, "float64")
    return e.to_shape(v, [1])


@converts("aten.linspace.Tensor_Tensor", "aten.linspace.Tensor_Scalar", "aten.linspace.Scalar_Tensor",
          check=_tensor_ends)
def _linspace_tensors(e: Emitter, start: Any, end: Any, steps: int, **_: Any) -> Value:
    """linspace with tensor ends: `_linspace`'s two halves with the step computed in the graph."""
    nb = e.nb
    lo, hi = _as_wide(e, start), _as_wide(e, end)
    if steps <= 1:
        return nb.cast(e.to_shape(lo, list(e.shape)), e.dtype) if steps == 1 else \
            nb.fill_constant(list(e.shape), 0, dtype=e.dtype)
    wide = [steps]
    step = nb.scale(nb.subtract(hi, lo), 1.0 / (steps - 1))
    k = nb.cast(nb.arange(0, steps, 1, "int64"), "float64")
    spread = [nb.broadcast_to(v, wide, [0]) for v in (lo, hi, step)]
    low = nb.add(spread[0], nb.multiply(k, spread[2]))
    high = nb.subtract(spread[1], nb.multiply(nb.scale(k, -1.0, float(steps - 1)), spread[2]))
    half = nb.less_than(k, nb.fill_constant(wide, float(steps // 2), dtype="float64"))
    values = nb.select(half, low, high)
    if e.dtype.startswith(("int", "uint")):
        values = nb.trunc(values)
    return nb.cast(values, e.dtype)


@converts("aten.logspace.Tensor_Tensor", "aten.logspace.Tensor_Scalar", "aten.logspace.Scalar_Tensor",
          check=_tensor_ends)
def _logspace_tensors(e: Emitter, start: Any, end: Any, steps: int, base: float = 10.0, **_: Any) -> Value:
    nb = e.nb
    exponents = _linspace_tensors(Emitter(nb, e.shape, "float64"), start, end, steps)
    values = nb.pow(nb.fill_constant([steps], float(base), dtype="float64"), exponents)
    if e.dtype.startswith(("int", "uint")):
        values = nb.trunc(values)
    return nb.cast(values, e.dtype)


@converts("aten.narrow_copy.default", check=lambda x, dim, start, length: static_axis(x, dim, "narrow_copy"))
def _narrow_copy(e: Emitter, x: Variable, dim: int, start: int, length: int) -> Value:
    axis = axis_of(dim, x.ndim)
    begin = start % static_dim(x.shape[axis]) if start < 0 else start
    if length == 0:
        return nb_empty(e)
    return e.nb.slice(x, [axis], [begin], [begin + length])


def nb_empty(e: Emitter) -> Variable:
    return e.nb.fill_constant(list(e.shape), 0, dtype=e.dtype)


@converts("aten._efficientzerotensor.default", check=lambda size, **kw: _plain_factory(**kw))
def _zero_tensor(e: Emitter, size: Any, **_: Any) -> Value:
    """The zeros autograd passes for a gradient it knows is zero (`sgn`'s)."""
    return nb_empty(e)


@converts("aten.logspace.default", check=_plain_factory)
def _logspace(e: Emitter, start: float, end: float, steps: int, base: float = 10.0, **_: Any) -> Value:
    nb = e.nb
    exponents = _linspace(Emitter(nb, e.shape, "float64"), start, end, steps)
    values = nb.pow(nb.fill_constant([steps], float(base), dtype="float64"), exponents)
    if e.dtype.startswith(("int", "uint")):
        values = nb.trunc(values)
    return nb.cast(values, e.dtype)


@converts("aten.zero.default")
def _zero(e: Emitter, x: Variable) -> Value:
    return e.nb.fill_constant(list(e.shape), 0, dtype=e.dtype)


def _static_shuffle(x: Any, *_: Any) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None or all(isinstance(s, int) for s in fake.shape):
        return None
    return "pixel/channel shuffle of a symbolic shape"


@converts("aten.pixel_shuffle.default", check=_static_shuffle)
def _pixel_shuffle(e: Emitter, x: Variable, r: int) -> Value:
    """[.., C r r, H, W] -> [.., C, H r, W r]: a reshape, a transpose, a reshape."""
    lead, (c, h, w) = list(x.shape[:-3]), [static_dim(d) for d in x.shape[-3:]]
    k = len(lead)
    split = e.to_shape(x, [*lead, c // (r * r), r, r, h, w])
    moved = e.nb.transpose(split, [*range(k), k, k + 3, k + 1, k + 4, k + 2])
    return e.to_shape(moved)


@converts("aten.pixel_unshuffle.default", check=_static_shuffle)
def _pixel_unshuffle(e: Emitter, x: Variable, r: int) -> Value:
    """[.., C, H r, W r] -> [.., C r r, H, W]."""
    lead, (c, h, w) = list(x.shape[:-3]), [static_dim(d) for d in x.shape[-3:]]
    k = len(lead)
    split = e.to_shape(x, [*lead, c, h // r, r, w // r, r])
    moved = e.nb.transpose(split, [*range(k), k, k + 2, k + 4, k + 1, k + 3])
    return e.to_shape(moved)


@converts("aten.channel_shuffle.default", "aten.native_channel_shuffle.default", check=_static_shuffle)
def _channel_shuffle(e: Emitter, x: Variable, groups: int) -> Value:
    n, c = static_dim(x.shape[0]), static_dim(x.shape[1])
    rest = list(x.shape[2:])
    split = e.to_shape(x, [n, groups, c // groups, *rest])
    moved = e.nb.transpose(split, [0, 2, 1, *range(3, 3 + len(rest))])
    return e.to_shape(moved)
