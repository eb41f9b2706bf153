"""What a compute-DSL reduction is made of, apart from the tensors (`compute.reduce_sum` and friends
build the `Reduce` node): the checks of its reduce axes (each from `reduce_axis()`, with an extent,
listed once) and the identity element of each reduce kind (-inf/+inf for float max/min, so a
reduction over all -inf matches numpy; CINN starts from the lowest/highest finite value).
"""

from __future__ import annotations

import math

import numpy as np

from cinn_py.diagnostics import LoweringError
from cinn_py.ir import DType, Expr, ReduceType, Var, bool_, const


def _reduce_axes(axes: object, fn: str) -> tuple[Var, ...]:
    items = (axes,) if isinstance(axes, Var) else axes
    if not isinstance(items, (tuple, list)) or not items:
        raise TypeError(f"{fn}: axes must be a reduce axis or a non-empty list of them")
    seen: set[str] = set()
    for ax in items:
        if not isinstance(ax, Var) or not ax.is_reduce_axis:
            raise TypeError(f"{fn}: every axis must come from reduce_axis(), got {ax!r}")
        if ax.upper_bound is None:
            raise LoweringError(f"{fn}: reduce axis '{ax.name}' has no extent; create it with "
                                "reduce_axis(extent, name)")
        if ax.name in seen:
            raise LoweringError(f"{fn}: reduce axis '{ax.name}' is listed twice; each axis is reduced once")
        seen.add(ax.name)
    return tuple(items)


def identity(kind: ReduceType, dtype: DType, fn: str = "reduce") -> Expr:
    """The identity of a reduction in `dtype` (the `__reduce_init` value).

    Differs from CINN for float max/min: CINN starts from the lowest/highest finite value, we
    start from -inf/+inf so that a reduction over all -inf (e.g. a fully masked softmax row)
    matches numpy.
    """
    elem = dtype.element_of()
    if kind in (ReduceType.ALL, ReduceType.ANY):
        if not elem.is_bool:
            raise LoweringError(f"{fn}: needs a bool expression, got {dtype}; compare it first (x != 0)")
        return const(kind is ReduceType.ALL, bool_)
    if elem.is_bool:
        other = "reduce_any" if kind in (ReduceType.SUM, ReduceType.MAX) else "reduce_all"
        raise LoweringError(f"{fn}: cannot reduce a bool expression; use {other}, or cast to an integer "
                            "dtype to count")
    if kind is ReduceType.SUM:
        return const(0, elem)
    if kind is ReduceType.MUL:
        return const(1, elem)
    lowest = kind is ReduceType.MAX
    if elem.is_float:
        return const(-math.inf if lowest else math.inf, elem)
    info = np.iinfo(elem.to_numpy())
    return const(int(info.min if lowest else info.max), elem)
