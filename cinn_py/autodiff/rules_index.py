"""Gradient rules of the shape-manipulation and index ops (`ops/manipulation.py`,
`ops/indexing.py`, `ops/sorting.py`): each moves the cotangent back to where the input's
elements went (reshape for expand_dims/squeeze, reverse, slice for pad, sums over the copies
for tile/repeat, reverse cumsum for cumsum, scatter_add for a 1-d gather); index results
(argmax, one_hot, sort ranks) carry no gradient.
"""

from __future__ import annotations

from cinn_py.autodiff.core import AutodiffError, GradContext, define_grad
from cinn_py.autodiff.rules_elementwise import zeros_like
from cinn_py.frontend.program import Variable


@define_grad("expand_dims", "squeeze")
def _unit_axes(c: GradContext) -> list[Variable | None]:
    return [c.nb.reshape(c.dout, list(c.inputs[0].shape))]


@define_grad("reverse")
def _reverse(c: GradContext) -> list[Variable | None]:
    return [c.nb.reverse(c.dout, list(c.attrs["axis"]))]


@define_grad("sum")
def _sum(c: GradContext) -> list[Variable | None]:
    return [c.dout] * len(c.inputs)


@define_grad("cumsum")
def _cumsum(c: GradContext) -> list[Variable | None]:
    # y_i = sum_{j <= i} x_j  =>  dx_j = sum_{i >= j} dy_i: the cumsum in the other direction
    return [c.nb.cumsum(c.dout, c.attrs["axis"], exclusive=c.attrs["exclusive"], reverse=not c.attrs["reverse"])]


@define_grad("pad")
def _pad(c: GradContext) -> list[Variable | None]:
    (x,) = c.inputs
    axes = [a for a, (before, after) in enumerate(c.attrs["paddings"]) if before or after]
    if not axes:
        return [c.dout]
    starts = [c.attrs["paddings"][a][0] for a in axes]
    ends = [c.attrs["paddings"][a][0] + x.shape[a] for a in axes]
    return [c.nb.slice(c.dout, axes, starts, ends)]


@define_grad("tile")
def _tile(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    reps = list(c.attrs["repeat_times"])
    if len(reps) != x.ndim:  # leading new axes: sum them away first
        lead = len(reps) - x.ndim
        g = nb.reduce_sum(c.dout, list(range(lead))) if lead else c.dout
        reps = reps[lead:]
    else:
        g = c.dout
    split = [d for r, n in zip(reps, x.shape) for d in (r, n)]  # copies vary slowest per axis
    g = nb.reduce_sum(nb.reshape(g, split), list(range(0, 2 * x.ndim, 2)))
    return [g]


@define_grad("repeat")
def _repeat(c: GradContext) -> list[Variable | None]:
    nb, (x,) = c.nb, c.inputs
    axis, r = c.attrs["axis"], c.attrs["repeats"]
    if not isinstance(r, int):
        raise AutodiffError(f"grad: repeat with per-element repeats {r} has no gradient rule yet")
    split = list(x.shape[:axis + 1]) + [r] + list(x.shape[axis + 1:])  # each element's copies adjacent
    return [nb.reduce_sum(nb.reshape(c.dout, split), [axis + 1])]


@define_grad("gather")
def _gather(c: GradContext) -> list[Variable | None]:
    nb, (x, index) = c.nb, c.inputs
    if index.ndim != 1:
        raise AutodiffError(f"grad: gather with a {index.ndim}-d index has no gradient rule yet (1-d only)")
    return [nb.scatter_add(zeros_like(nb, x), c.dout, index, c.attrs["axis"]), None]


@define_grad("argmax", "argmin", "isclose", "one_hot", "sort_rank", "rank_order")
def _no_gradient(c: GradContext) -> list[Variable | None]:
    return [None] * len(c.inputs)
