"""Gradient rules of the broadcast, injective, reduction and matmul ops.

`broadcast_to` sums its cotangent over the broadcast axes (the unbroadcasting of binary
operands); reductions broadcast the cotangent back (reduce_max/min split it evenly among the
tied maxima, as PyTorch's amax/amin); `slice` pads the cotangent with zeros by `concat` (stride 1),
`concat` splits it; matmul is two matmuls, summed over the batch when y had none.
"""

from __future__ import annotations

from typing import Any

from cinn_py.autodiff.core import GradContext, define_grad, define_no_grad
from cinn_py.autodiff.rules_elementwise import masked
from cinn_py.autodiff.rules_gather import dim_value, iota
from cinn_py.frontend.grad_methods import sum_to
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.shapes import add_dims, dims_equal, simplify_dim
from cinn_py.frontend.program import Variable

INT_MAX = 2**31 - 1


def split(nb: NetBuilder, g: Variable, sections: list[Any], axis: int) -> list[Variable]:
    """`nb.split`'s sections (the generated method is typed as returning one Variable)."""
    parts: Any = nb.split(g, sections, axis)
    return list(parts)


def expand_to(nb: NetBuilder, g: Variable, like: Variable, axes: tuple[int, ...], keepdim: bool) -> Variable:
    """Broadcast a reduction's cotangent (reduced over `axes`) back to `like`'s shape."""
    if not keepdim:
        g = nb.reshape(g, [1 if a in axes else d for a, d in enumerate(like.shape)])
    return nb.broadcast_to(g, list(like.shape), list(range(like.ndim)))


@define_grad("broadcast_to")
def _broadcast(c: GradContext) -> list[Variable | None]:
    return [sum_to(c.nb, c.dout, c.inputs[0], tuple(c.attrs["broadcast_axes"]))]


@define_grad("reshape")
def _reshape(c: GradContext) -> list[Variable | None]:
    return [c.nb.reshape(c.dout, list(c.inputs[0].shape))]


@define_grad("transpose")
def _transpose(c: GradContext) -> list[Variable | None]:
    perm = list(c.attrs["perm"])
    return [c.nb.transpose(c.dout, [perm.index(a) for a in range(len(perm))])]


@define_grad("concat")
def _concat(c: GradContext) -> list[Variable | None]:
    """`split` of the cotangent into the inputs' extents: static ones, with at most one symbolic
    extent (the -1 section) or all of them equal (equal sections); otherwise (S0 and S1) each
    input's rows are gathered at their positions start + 0 .. n - 1 (symbolic starts)."""
    nb, axis = c.nb, c.attrs["axis"]
    extents = [x.shape[axis] for x in c.inputs]
    if len(extents) == 1:  # (split's one-element list is a section count)
        return [c.dout]
    symbolic = [n for n in extents if not isinstance(n, int)]
    if len(symbolic) <= 1:
        return list(split(nb, c.dout, [n if isinstance(n, int) else -1 for n in extents], axis))
    if all(dims_equal(n, extents[0]) for n in extents):
        return list(split(nb, c.dout, [len(extents)], axis))
    grads, start = [], 0
    for n in extents:
        grads.append(nb.gather(c.dout, nb.add(iota(nb, n), dim_value(nb, start, [n])), axis))
        start = add_dims(start, n)
    return grads



@define_grad("slice")
def _slice(c: GradContext) -> list[Variable | None]:
    """Each sliced axis in turn: undo the stride (reverse a negative one; interleave zeros), then
    pad with zeros to the input's extent."""
    nb, (x,) = c.nb, c.inputs
    g = c.dout
    for axis, start, step in c.attrs["spec"]:
        n = g.shape[axis]
        if step < 0:
            g = nb.slice(g, [axis], [-1], [-n - 1], strides=[-1])  # reversed
            start, step = start + (n - 1) * step, -step
        if step > 1:
            g = _spread(nb, g, axis, step, x.shape[axis] - start)
        g = pad_axis(nb, g, axis, start, x.shape[axis])
    return [g]


def _spread(nb: NetBuilder, g: Variable, axis: int, step: int, room: int) -> Variable:
    """g's elements along `axis` `step` apart (zeros between), cut to at most `room` elements."""
    n = g.shape[axis]
    inner = nb.reshape(g, list(g.shape[:axis + 1]) + [1] + list(g.shape[axis + 1:]))
    gap = nb.fill_constant([step - 1 if a == axis + 1 else d for a, d in enumerate(inner.shape)], 0.0,
                           dtype=g.dtype)
    woven = nb.concat([inner, gap], axis + 1)
    flat = nb.reshape(woven, list(g.shape[:axis]) + [n * step] + list(g.shape[axis + 1:]))
    keep = min(n * step, room)
    return flat if keep == n * step else nb.slice(flat, [axis], [0], [keep])


def pad_axis(nb: NetBuilder, g: Variable, axis: int, start: Any, extent: Any) -> Variable:
    """`g` placed at [start, start + g.shape[axis]) of an axis of `extent`, zeros elsewhere."""
    parts = []
    after = extent - start - g.shape[axis]
    after = after if isinstance(after, int) else simplify_dim(after)  # [S0 - 1] at S0 - 1 ends at S0: 0
    for size, piece in ((start, None), (g.shape[axis], g), (after, None)):
        if isinstance(size, int) and size == 0:
            continue
        shape = [size if a == axis else d for a, d in enumerate(g.shape)]
        parts.append(piece if piece is not None else nb.fill_constant(shape, 0.0, dtype=g.dtype))
    return parts[0] if len(parts) == 1 else nb.concat(parts, axis)


@define_grad("reduce_sum")
def _reduce_sum(c: GradContext) -> list[Variable | None]:
    return [expand_to(c.nb, c.dout, c.inputs[0], tuple(c.attrs["axes"]), c.attrs["keepdim"])]


@define_grad("reduce_mean")
def _reduce_mean(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    axes = tuple(c.attrs["axes"])
    count = 1
    for a in axes:
        if not isinstance(x.shape[a], int):
            g = expand_to(nb, c.dout, x, axes, c.attrs["keepdim"])
            return [nb.divide(g, nb.cast(_dim_product(nb, x, axes), x.dtype))]
        count *= x.shape[a]
    return [expand_to(nb, nb.scale(c.dout, 1.0 / count), x, axes, c.attrs["keepdim"])]


def _dim_product(nb: NetBuilder, x: Variable, axes: tuple[int, ...]) -> Variable:
    """The element count of `axes` of x (symbolic dims) as an int64 tensor of x's shape."""
    ones = nb.fill_constant(list(x.shape), 1, dtype="int64")
    return nb.broadcast_to(nb.reduce_sum(ones, list(axes), keep_dim=True), list(x.shape), list(range(x.ndim)))


@define_grad("reduce_max", "reduce_min")
def _reduce_extremum(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    axes, keepdim = tuple(c.attrs["axes"]), c.attrs["keepdim"]
    hit = nb.equal(x, expand_to(nb, c.out, x, axes, keepdim))
    ones = nb.cast(hit, x.dtype)
    ties = expand_to(nb, nb.reduce_sum(ones, list(axes), keep_dim=keepdim), x, axes, keepdim)
    share = nb.divide(expand_to(nb, c.dout, x, axes, keepdim), ties)
    return [masked(nb, hit, share)]


define_no_grad("reduce_all", "reduce_any", why="bool operand and result")


@define_grad("reduce_prod")
def _reduce_prod(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    axes, keepdim = tuple(c.attrs["axes"]), c.attrs["keepdim"]
    full = expand_to(nb, nb.multiply(c.dout, c.out), x, axes, keepdim)
    return [nb.divide(full, x)]  # d prod / dx_i = prod / x_i (x_i != 0)


@define_grad("matmul")
def _matmul(c: GradContext) -> list[Variable | None]:
    nb, (x, y), g = c.nb, c.inputs, c.dout
    tx, ty = c.attrs["transpose_x"], c.attrs["transpose_y"]
    if not tx:
        dx = nb.matmul(g, y, transpose_y=not ty)                     # g @ op(y)^T
    else:
        yb = y if y.ndim == x.ndim else nb.broadcast_to(y, list(x.shape[:-2]) + list(y.shape),
                                                          list(range(x.ndim - 2, x.ndim)))
        dx = nb.matmul(yb, g, transpose_x=ty, transpose_y=True)      # op(y) @ g^T
    dy = nb.matmul(x, g, transpose_x=not tx) if not ty else nb.matmul(g, x, transpose_x=True, transpose_y=tx)
    # batch dims broadcast as numpy's (an operand of fewer dims, or a batch dim of 1): each
    # gradient is summed over the batch dims its operand was broadcast along
    return [_unbroadcast(nb, dx, x), _unbroadcast(nb, dy, y)]


def _unbroadcast(nb: NetBuilder, grad: Variable, operand: Variable) -> Variable:
    """`grad` (of the product's batch shape) summed down to `operand`'s shape; the operand's
    dims are grad's trailing ones."""
    return sum_to(nb, grad, operand, tuple(range(grad.ndim - operand.ndim, grad.ndim)))
