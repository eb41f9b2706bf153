"""Vector and matrix products beyond mm/bmm/addmm (dot, vdot, mv, addmv, addr, baddbmm), and the
diagonal family (diagonal and its backward, diag_embed, trace) as gathers and scatters of the
flattened last two dims."""

from __future__ import annotations

from typing import Any

from cinn_py.frontend.program import Variable
from cinn_py.torch.converters.base import Emitter, Value, axis_of, converts, scaled, static_dim
from cinn_py.torch.converters.math import as_dtype


@converts("aten.dot.default", "aten.vdot.default")
def _dot(e: Emitter, a: Variable, b: Variable) -> Value:
    return e.nb.reduce_sum(e.nb.multiply(as_dtype(e, a), as_dtype(e, b)), [0])


@converts("aten.mv.default")
def _mv(e: Emitter, m: Variable, v: Variable) -> Value:
    return e.to_shape(e.nb.matmul(m, e.to_shape(v, [v.shape[0], 1])))


def _blend(e: Emitter, bias: Any, prod: Variable, beta: Any, alpha: Any) -> Variable:
    """beta * bias + alpha * prod (beta == 0: bias ignored, NaN included, as torch)."""
    prod = scaled(e, prod, alpha)
    return prod if beta == 0 else e.nb.add(prod, e.broadcast(scaled(e, bias, beta)))


@converts("aten.addmv.default")
def _addmv(e: Emitter, bias: Variable, m: Variable, v: Variable, *, beta: Any = 1, alpha: Any = 1) -> Value:
    return _blend(e, bias, _mv(e, m, v), beta, alpha)


@converts("aten.addr.default")
def _addr(e: Emitter, bias: Variable, u: Variable, v: Variable, *, beta: Any = 1, alpha: Any = 1) -> Value:
    nb = e.nb
    rows, cols = u.shape[0], v.shape[0]
    outer = nb.multiply(nb.broadcast_to(u, [rows, cols], [0]), nb.broadcast_to(v, [rows, cols], [1]))
    if e.dtype == "bool":
        return nb.logical_or(outer, e.broadcast(bias)) if beta else outer
    return _blend(e, bias, outer, beta, alpha)


@converts("aten.baddbmm.default")
def _baddbmm(e: Emitter, bias: Variable, a: Variable, b: Variable, *, beta: Any = 1, alpha: Any = 1) -> Value:
    return _blend(e, bias, e.nb.matmul(a, b), beta, alpha)


def _diagonal_slots(n: int, m: int, offset: int) -> list[int]:
    """Flat positions (row * m + col) of the diagonal `offset` of an n x m matrix."""
    rows = range(max(0, -offset), min(n, m - offset))
    return [r * m + r + offset for r in rows]


def _to_back(x: Variable, a: int, b: int) -> list[int]:
    return _to_back_order(x.ndim, a, b)


def _static_pair(x: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None or fake.dim() < 2:
        return None
    sizes = (fake.shape[dim1 % fake.dim()], fake.shape[dim2 % fake.dim()])
    return None if all(isinstance(s, int) for s in sizes) else f"diagonal of symbolic dims {sizes}"


def _line(e: Emitter, start: int, stride: int, count: int) -> Variable:
    """start + k * stride for k < count, int64."""
    nb = e.nb
    k = nb.arange(0, count, 1, "int64")
    k = nb.multiply(k, nb.fill_constant([count], stride, dtype="int64")) if stride != 1 else k
    return nb.add(k, nb.fill_constant([count], start, dtype="int64")) if start else k


@converts("aten.diagonal.default", "aten.diagonal_copy.default", check=_static_pair)
def _diagonal(e: Emitter, x: Variable, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Value:
    """The last two dims (dim1, dim2 moved there) flattened, the diagonal's slots gathered."""
    nb = e.nb
    a, b = axis_of(dim1, x.ndim), axis_of(dim2, x.ndim)
    n, m = static_dim(x.shape[a]), static_dim(x.shape[b])
    slots = _diagonal_slots(n, m, offset)
    if not slots:
        return nb.fill_constant(list(e.shape), 0, dtype=e.dtype)
    moved = nb.transpose(x, _to_back(x, a, b))
    flat = e.to_shape(moved, [*moved.shape[:-2], n * m])
    return nb.gather(flat, _line(e, slots[0], m + 1, len(slots)), axis=flat.ndim - 1)


def _embedded(e: Emitter, g: Variable, shape: list[int], offset: int, a: int, b: int) -> Variable:
    """Zeros of `shape` with `g` (the diagonal, last dim) on the diagonal `offset` of dims a, b."""
    nb = e.nb
    n, m = shape[a], shape[b]
    rest = [s for d, s in enumerate(shape) if d not in (a, b)]
    slots = _diagonal_slots(n, m, offset)
    table = nb.fill_constant([*rest, n * m], 0, dtype=e.dtype)
    if slots:
        table = nb.scatter_assign(table, as_dtype(e, g), _line(e, slots[0], m + 1, len(slots)),
                                  axis=len(rest))
    moved = e.to_shape(table, [*rest, n, m])
    order = _to_back_order(len(shape), a, b)
    return nb.transpose(moved, [order.index(d) for d in range(len(shape))])


def _to_back_order(ndim: int, a: int, b: int) -> list[int]:
    return [d for d in range(ndim) if d not in (a, b)] + [a, b]


def _static_sizes(g: Any, sizes: Any, *_: Any) -> str | None:
    return None if all(isinstance(s, int) for s in sizes) else f"diagonal_backward to symbolic sizes {sizes}"


def _static_input(x: Any, *_: Any) -> str | None:
    fake = getattr(x, "meta", {}).get("val")
    if fake is None:
        return None
    return (None if all(isinstance(s, int) for s in fake.shape)
            else f"diag_embed of symbolic shape {fake.shape}")


@converts("aten.diagonal_backward.default", check=_static_sizes)
def _diagonal_backward(e: Emitter, g: Variable, sizes: Any, offset: int, dim1: int, dim2: int) -> Value:
    shape = [static_dim(s) for s in sizes]
    return _embedded(e, g, shape, offset, axis_of(dim1, len(shape)), axis_of(dim2, len(shape)))


@converts("aten.diag_embed.default", check=_static_input)
def _diag_embed(e: Emitter, x: Variable, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Value:
    shape = [static_dim(s) for s in e.shape]
    return _embedded(e, x, shape, offset, axis_of(dim1, len(shape)), axis_of(dim2, len(shape)))


@converts("aten.trace.default", check=_static_pair)
def _trace(e: Emitter, x: Variable) -> Value:
    return e.nb.reduce_sum(as_dtype(e, _diagonal(Emitter(e.nb, (min(x.shape),), str(x.dtype)), x)), [0])


@converts("aten.addbmm.default")
def _addbmm(e: Emitter, bias: Variable, a: Variable, b: Variable, *, beta: Any = 1, alpha: Any = 1) -> Value:
    """beta * bias + alpha * the sum over the batch of a @ b."""
    return _blend(e, bias, e.nb.reduce_sum(e.nb.matmul(a, b), [0]), beta, alpha)


@converts("aten.linalg_cross.default")
def _cross(e: Emitter, a: Variable, b: Variable, dim: int = -1) -> Value:
    """The cross product of 3-vectors along `dim` (operands broadcast to the node's shape)."""
    nb = e.nb
    a, b = e.broadcast(as_dtype(e, a)), e.broadcast(as_dtype(e, b))
    axis = axis_of(dim, a.ndim)

    def part(v: Variable, k: int) -> Variable:
        return nb.slice(v, [axis], [k], [k + 1])

    comps = [nb.subtract(nb.multiply(part(a, (k + 1) % 3), part(b, (k + 2) % 3)),
                         nb.multiply(part(a, (k + 2) % 3), part(b, (k + 1) % 3))) for k in range(3)]
    return nb.concat(comps, axis=axis)


@converts("aten.diagonal_scatter.default",
          check=lambda x, src, offset=0, dim1=0, dim2=1: _static_pair(x, offset, dim1, dim2))
def _diagonal_scatter(e: Emitter, x: Variable, src: Variable, offset: int = 0, dim1: int = 0,
                      dim2: int = 1) -> Value:
    """x with its diagonal replaced by src: a mask of the diagonal's places selects src embedded."""
    nb = e.nb
    shape = [static_dim(s) for s in x.shape]
    a, b = axis_of(dim1, len(shape)), axis_of(dim2, len(shape))
    placed = _embedded(e, src, shape, offset, a, b)
    ones = nb.fill_constant(list(src.shape), 1.0, dtype=e.dtype)
    mask = nb.not_equal(_embedded(e, ones, shape, offset, a, b), nb.fill_constant(shape, 0.0, dtype=e.dtype))
    return nb.select(mask, placed, x)
