"""The scatters, with CINN's NetBuilder names and arguments: `scatter_add(x, updates, index,
axis=0)` and `scatter_assign(x, updates, index, axis=0)` (index helpers from `indexing`).

The scatters are kNonFusible. The compute DSL defines each output element from its inputs
(no data-dependent writes), so a scatter is a gather over the updates: output element `i` along
`axis` adds the updates of every `k` with `index[k] == i` (scatter_add; a masked sum over the
updates, float32 accumulation for 16-bit floats; duplicates accumulate) or takes the update of
the last such `k` (scatter_assign: CINN's serial order, the last write wins). No access is made
with an index, so one outside `[0, N)` matches no element: its update is dropped, in the kernels
and in the numpy reference alike. The work is O(N * K) per row, against O(K) for a serial
scatter; CINN's lowering searches the index list per element the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.indexing import _DATA_DTYPES, _NUMERIC_DTYPES, _axis, check_index, index_value
from cinn_py.frontend.ops.reduce import accumulator
from cinn_py.frontend.ops.shapes import dims_equal, fmt_shape
from cinn_py.frontend.ops.signature import Signature, attr, integer, tensor
from cinn_py.frontend.ops.sorting import at_axis, same_width
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import EQ, GE, Expr, const, dtype_of


# -- scatter_add / scatter_assign ----------------------------------------------------------------------------
def _scatter_infer(op: str) -> Any:
    def infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        x, updates, index = ins
        axis = attrs["axis"]
        if op == "scatter_add" and x.dtype.is_bool:
            raise FrontendError("scatter_add: needs numeric x and updates, got bool; use scatter_assign or "
                                "cast")
        if updates.dtype != x.dtype:
            raise FrontendError(f"{op}: updates must have the dtype of x ({x.dtype}), got {updates.dtype}; "
                                "insert a cast")
        check_index(op, "index", index)
        if index.ndim != 1:
            raise FrontendError(f"{op}: argument 'index' must have rank 1, got {fmt_shape(index.shape)}")
        expected = x.shape[:axis] + (index.shape[0],) + x.shape[axis + 1:]
        if updates.ndim != x.ndim or not all(dims_equal(a, b) for a, b in zip(updates.shape, expected)):
            raise FrontendError(f"{op}: updates must have x's shape with dim {axis} the length of index: "
                                "expected "
                                f"{fmt_shape(expected)}, got {fmt_shape(updates.shape)}")
        return [x]
    return infer


def _scatter_numpy(op: str) -> Any:
    def numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
        x, updates, index = arrays
        axis = attrs["axis"]
        acc = accumulator(dtype_of(x.dtype)).to_numpy() if op == "scatter_add" else x.dtype
        out = x.astype(acc)  # a copy
        rows, ups = np.moveaxis(out, axis, 0), np.moveaxis(updates, axis, 0)  # views
        idx = index.astype(np.int64)
        keep = (idx >= 0) & (idx < x.shape[axis])  # an out-of-range update is dropped (module docstring)
        if op == "scatter_add":
            np.add.at(rows, idx[keep], ups[keep].astype(acc))
        else:
            for k in np.flatnonzero(keep):  # serial: the last write wins
                rows[idx[k]] = ups[k]
        return [out.astype(x.dtype, copy=False)]
    return numpy


def _hits(index: cdsl.ComputeTensor, k: Expr, position: Expr) -> Expr:
    value, pos = same_width(index_value(index[k]), position)
    return EQ(value, pos)


def _scatter_add_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                         out_name: str) -> cdsl.ComputeTensor:
    x, updates, index = ins
    axis = attrs["axis"]
    acc = accumulator(x.dtype)
    k = cdsl.reduce_axis(index.shape[0])
    added = cdsl.compute(out.shape, lambda *i: cdsl.reduce_sum(cdsl.select(
        _hits(index, k, i[axis]), cdsl.cast(updates[at_axis(i, axis, k)], acc), const(0, acc)), [k]),
        out_name + "__added")
    return cdsl.compute(out.shape, lambda *i: cdsl.cast(cdsl.cast(x[i], acc) + added[i], x.dtype), out_name)


def _scatter_assign_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                            out_name: str) -> cdsl.ComputeTensor:
    x, updates, index = ins
    axis = attrs["axis"]
    k = cdsl.reduce_axis(index.shape[0])
    none = const(-1, k.dtype)
    last = cdsl.compute(out.shape, lambda *i: cdsl.reduce_max(
        cdsl.select(_hits(index, k, i[axis]), k, none), [k]), out_name + "__last")

    def body(*i: Expr) -> Expr:
        # the clamped position keeps the untaken arm's read in bounds (a backend may evaluate both)
        source = cdsl.maximum(last[i], const(0, last.dtype))
        return cdsl.select(GE(last[i], const(0, last.dtype)), updates[at_axis(i, axis, source)], x[i])

    return cdsl.compute(out.shape, body, out_name)


def _scatter_cases(dtype: str) -> list[Case]:
    def c(xs: tuple[Any, ...], us: tuple[Any, ...], ix: tuple[Any, ...], low: int, high: int, axis: int,
          idt: str = "int32") -> Case:
        return Case((Input(xs), Input(us), Input(ix, idt, low=low, high=high)), {"axis": axis})
    return [c((10,), (5,), (5,), 0, 3, 0), c((3, 5), (3, 8), (8,), 0, 4, 1, "int64"),
            c((4, 3), (3, 3), (3,), -1, 4, 0),
            c((2, 1, 6), (2, 1, 3), (3,), 0, 5, -1), c(("S0", 5), ("S0", 2), (2,), 0, 4, 1),
            c((5, 3), ("S0", 3), ("S0",), 0, 4, 0, "int64"), c((1,), (1,), (1,), 0, 0, 0),
            c(("S0", 3), (4, 3), (4,), 0, 2, 0)]  # into a symbolic axis (S0 = 1: indices 1 and 2 dropped)


def _scatter_op(op: str, compute: Any, dtypes: tuple[str, ...], what: str) -> None:
    register(OpDef(op, OpPatternKind.kNonFusible, _scatter_infer(op), _scatter_numpy(op), compute, arity=3,
                   signature=Signature((tensor("x"), tensor("updates"), tensor("index"),
                                        attr("axis", integer, 0)),
                                       attrs=lambda ins, at: {"axis": _axis(op, ins[0], at["axis"])},
                                       doc=f"x with updates[..., k, ...] {what} x[..., index[k], ...] along "
                                           "`axis` "
                                           "(an index outside x's dim drops its update)."),
                   test=OpTest(dtypes, _scatter_cases)))


_scatter_op("scatter_add", _scatter_add_compute, _NUMERIC_DTYPES, "added to (duplicates accumulate)")
_scatter_op("scatter_assign", _scatter_assign_compute, _DATA_DTYPES, "written to (the last duplicate wins)")
