"""Gradient rules of the shape-manipulation and index ops (`ops/manipulation*.py`,
`ops/indexing.py`, `ops/axis_scan.py`, `ops/sorting.py`): each moves the cotangent back to where the input's
elements went (reshape for expand_dims/squeeze, reverse, the middle split section for pad,
sums over the copies for tile/repeat, reverse cumsum for cumsum, zero padding for a split
section, the slice for slice_assign); index results (argmax, one_hot, sort ranks) carry no
gradient. The gathers and scatters are in `rules_gather`."""

from __future__ import annotations

from cinn_py.autodiff.core import GradContext, define_grad, define_no_grad
from cinn_py.autodiff.rules_elementwise import zeros_like
from cinn_py.autodiff.rules_structural import pad_axis, split
from cinn_py.frontend.ops.base import Dim
from cinn_py.frontend.ops.manipulation_region import split_sections
from cinn_py.frontend.ops.shapes import add_dims
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
    return [c.nb.cumsum(c.dout, c.attrs["axis"], exclusive=c.attrs["exclusive"],
                        reverse=not c.attrs["reverse"])]


@define_grad("pad")
def _pad(c: GradContext) -> list[Variable | None]:
    """The middle section of each padded axis (`split` [before, -1, after]: the axis may be
    symbolic, where `slice` takes no non-negative start)."""
    g = c.dout
    for axis, (before, after) in enumerate(c.attrs["paddings"]):
        if before or after:
            g = split(c.nb, g, [before, -1, after], axis)[1]
    return [g]


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
    axis, r = c.attrs["axis"], c.attrs["repeats"]  # one count for every element (numpy.repeat's int form)
    split = list(x.shape[:axis + 1]) + [r] + list(x.shape[axis + 1:])  # each element's copies adjacent
    return [nb.reduce_sum(nb.reshape(c.dout, split), [axis + 1])]


@define_grad("split")
def _split(c: GradContext) -> list[Variable | None]:
    """Each section is its own op (attribute `index`): its cotangent goes back to the section's
    offset along the axis, zeros elsewhere; the sections' cotangents meet at x and are summed."""
    (x,) = c.inputs
    axis = c.attrs["axis"]
    sections = split_sections(x.shape, c.attrs["num_or_sections"], axis)
    start: Dim = 0
    for s in sections[:c.attrs["index"]]:
        start = add_dims(start, s)
    return [pad_axis(c.nb, c.dout, axis, start, x.shape[axis])]


@define_grad("slice_assign")
def _slice_assign(c: GradContext) -> list[Variable | None]:
    """x's elements in the assigned slice were overwritten (no gradient); `assign` got the slice
    of the cotangent (the same axes, starts, ends and strides)."""
    nb, (_, assign), a = c.nb, c.inputs, c.attrs
    region = (list(a["axes"]), list(a["starts"]), list(a["ends"]), list(a["strides"]))
    dx = nb.slice_assign(c.dout, zeros_like(nb, assign), *region)
    return [dx, nb.slice(c.dout, *region[:3], strides=region[3])]


define_no_grad("argmax", "argmin", "isclose", "one_hot", "sort_rank", "rank_order", "pool2d_argmax",
               why="an index, bool or one-hot result (integer-valued)")
