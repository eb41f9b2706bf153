"""Index ops with CINN's NetBuilder names and arguments: `gather(x, index, axis=0)` (and its
one-dimensional form `index_select`), `gather_nd(x, index)`, `lookup_table(table, ids,
padding_idx)`, `one_hot(indices, on_value, off_value, depth, axis=-1, dtype="float32")`, and the
index checks shared with the scatters (`scatter`: `scatter_add`, `scatter_assign`).

The gathers, lookup_table and one_hot are kInjective (as CINN registers them): every output
element is one read, so they fuse with elementwise and injective neighbours. The read's index
is data: a gather index outside the gathered dim is an error that a checked build reports
(`OutOfBoundsAccessError` naming the access and the index, docs/semantics.md) instead of
reading outside the tensor; the numpy reference raises IndexError. Indices are not wrapped (a
negative index is out of range, as in CINN and Paddle). Index tensors may have any integer
dtype: int32/int64 index as they are, narrower ones are widened, unsigned 32/64-bit ones go
through int64 (a uint64 beyond the int64 range turns negative, hence out of range).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, numpy_dtype, register,
)
from cinn_py.frontend.ops.reduce import frontend_dims
from cinn_py.frontend.ops.shapes import dims_equal, fmt_dim, fmt_shape, normalize_axis
from cinn_py.frontend.ops.signature import OpCall, Signature, attr, dtype_arg, integer, tensor
from cinn_py.frontend.ops.sorting import at_axis, same_width
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import EQ, Expr, const, int32, int64

_DATA_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "bool")
_NUMERIC_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64")


# -- shared helpers ------------------------------------------------------------------------------------------
def check_index(op: str, arg: str, t: TensorType) -> None:
    if not t.dtype.is_integral:
        raise FrontendError(f"{op}: argument '{arg}' must be an integer tensor, got "
                            f"{t.dtype}{fmt_shape(t.shape)}")


def index_value(v: Expr) -> Expr:
    """An index tensor's element as a signed access index (see the module docstring)."""
    if v.dtype in (int32, int64):
        return v
    return cdsl.cast(v, int32 if v.dtype.bits < 32 else int64)


def _checked_indices(op: str, index: np.ndarray, extent: int) -> np.ndarray:
    """The reference's view of an index array: int64 values, IndexError for one outside [0, extent)."""
    wide = index.astype(np.int64)
    bad = wide[(wide < 0) | (wide >= extent)]
    if bad.size:
        raise IndexError(f"{op}: index {int(bad.reshape(-1)[0])} is outside [0, {extent})")
    return wide


def _axis(op: str, x: TensorType, axis: int) -> int:
    if x.ndim == 0:
        raise FrontendError(f"{op}: argument 'x' must have rank >= 1, got a 0-d tensor")
    return normalize_axis(axis, x.ndim, op, "argument 'axis'")


# -- gather / index_select -----------------------------------------------------------------------------------
def _gather_shape(op: str, x: TensorType, index: TensorType, axis: int) -> tuple[Any, ...]:
    """x's shape with `axis` sized by the index: a 1-d index selects along `axis`; an index of x's
    rank picks per element (numpy's take_along_axis; its other dims equal x's or are 1, broadcast)."""
    check_index(op, "index", index)
    if index.ndim == 1:
        return x.shape[:axis] + (index.shape[0],) + x.shape[axis + 1:]
    if index.ndim != x.ndim:
        raise FrontendError(f"{op}: argument 'index' must have rank 1 or the rank of x ({x.ndim}), got "
                            f"{fmt_shape(index.shape)}")
    for d, (a, b) in enumerate(zip(x.shape, index.shape)):
        if d != axis and not dims_equal(a, b) and b != 1:
            raise FrontendError(f"{op}: index {fmt_shape(index.shape)} must match x {fmt_shape(x.shape)} (or "
                                "be 1) "
                                f"in every dim but axis {axis}; dim {d} is {fmt_dim(b)}, expected "
                                f"{fmt_dim(a)}")
    return x.shape[:axis] + (index.shape[axis],) + x.shape[axis + 1:]


def _gather_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, index = ins
    return [TensorType(_gather_shape("gather", x, index, attrs["axis"]), x.dtype)]


def _gather_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x, index = arrays
    axis = attrs["axis"]
    idx = _checked_indices("gather", index, x.shape[axis])
    if idx.ndim == 1:
        return [np.take(x, idx, axis=axis)]
    shape = x.shape[:axis] + (idx.shape[axis],) + x.shape[axis + 1:]
    return [np.take_along_axis(x, np.broadcast_to(idx, shape), axis=axis)]


def _gather_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    x, index = ins
    axis = attrs["axis"]
    broadcast = [d != axis and size == 1 for d, size in enumerate(frontend_dims(index))]

    def body(*i: Expr) -> Expr:
        if index.ndim == 1:
            pos = index[i[axis]]
        else:
            pos = index[tuple(const(0, v.dtype) if broadcast[d] else v for d, v in enumerate(i))]
        return x[at_axis(i, axis, index_value(pos))]

    return cdsl.compute(out.shape, body, out_name)


def _gather_build(nb: Any, call: OpCall) -> Any:
    a = call.args
    x = nb.variable(a["x"], call.method, "x")
    index = nb.variable(a["index"], call.method, "index")
    axis = _axis(call.method, x.type, a["axis"])
    if call.method == "index_select" and index.ndim != 1:
        raise FrontendError(f"index_select: argument 'index' must have rank 1, got {fmt_shape(index.shape)}; "
                            "gather takes an index of x's rank")
    _gather_shape(call.method, x.type, index.type, axis)
    return nb.emit(call.op, (x, index), {"axis": axis})


def _gather_cases(dtype: str) -> list[Case]:
    def c(xs: tuple[Any, ...], ix: tuple[Any, ...], high: int, axis: int, idt: str = "int32",
          method: str | None = None) -> Case:
        return Case((Input(xs), Input(ix, idt, low=0, high=high)), {"axis": axis}, method)
    return [c((7,), (4,), 6, 0), c((3, 5), (6,), 4, 1, "int64"), c((3, 5), (2,), 2, -2),
            c((2, 1, 6), (1,), 0, 1), c(("S0", 5), (4,), 4, 1), c((5, 3), ("S0",), 4, 0, "int64"),
            c((3, 5), (3, 4), 4, 1), c((3, 5), (1, 4), 4, -1, "int64"), c((2, 3, 4), (2, 5, 1), 2, 1),
            c(("S0", 4), (5, 4), 0, 0),  # along a symbolic axis (S0 may be 1: index 0)
            c((3, 5), (4,), 4, 1, method="index_select"), c(("S0", 4), (3,), 3, 1, "int16", "index_select")]


register(OpDef("gather", OpPatternKind.kInjective, _gather_infer, _gather_numpy, _gather_compute, arity=2,
               signature=Signature((tensor("x"), tensor("index"), attr("axis", integer, 0)),
                                   build=_gather_build,
                                   methods=("gather", "index_select"),
                                   doc="Elements of `x` at `index` along `axis`: a 1-d index selects whole "
                                       "slices "
                                       "(index_select); an index of x's rank picks per element "
                                       "(take_along_axis, size-1 dims broadcast)."),
               test=OpTest(_DATA_DTYPES, _gather_cases)))


# -- gather_nd -----------------------------------------------------------------------------------------------
def _gather_nd_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, index = ins
    check_index("gather_nd", "index", index)
    if index.ndim == 0:
        raise FrontendError("gather_nd: argument 'index' must have rank >= 1 (its last dim indexes x), got a "
                            "0-d tensor")
    depth = index.shape[-1]
    if not isinstance(depth, int) or not 1 <= depth <= x.ndim:
        raise FrontendError(f"gather_nd: the last dim of index {fmt_shape(index.shape)} counts the leading "
                            "dims of "
                            f"x {fmt_shape(x.shape)} it indexes: expected a static 1..{x.ndim}, got "
                            f"{fmt_dim(depth)}")
    return [TensorType(tuple(index.shape[:-1]) + tuple(x.shape[depth:]), x.dtype)]


def _gather_nd_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x, index = arrays
    depth = index.shape[-1]
    coords = tuple(_checked_indices("gather_nd", index[..., m], x.shape[m]) for m in range(depth))
    return [x[coords]]


def _gather_nd_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                       out_name: str) -> cdsl.ComputeTensor:
    x, index = ins
    batch = index.ndim - 1
    depth = frontend_dims(index)[-1]

    def body(*i: Expr) -> Expr:
        coords = tuple(index_value(index[tuple(i[:batch]) + (m,)]) for m in range(depth))
        return x[coords + tuple(i[batch:])]

    return cdsl.compute(out.shape, body, out_name)


def _gather_nd_cases(dtype: str) -> list[Case]:
    def c(xs: tuple[Any, ...], ix: tuple[Any, ...], high: int, idt: str = "int32") -> Case:
        return Case((Input(xs), Input(ix, idt, low=0, high=high)))
    return [c((5,), (3, 1), 4), c((3, 5), (4, 2), 2, "int64"), c((3, 5, 2), (2, 2, 1), 2),
            c((4, 3), ("S0", 2), 2),
            c((2, 1, 6), (3, 2), 0), c((7, 3), (1,), 6), c(("S0", 3), (2, 1), 0, "int64")]


register(OpDef("gather_nd", OpPatternKind.kInjective, _gather_nd_infer, _gather_nd_numpy, _gather_nd_compute,
               arity=2, signature=Signature((tensor("x"), tensor("index")),
                                            doc="`x[index[..., 0], ..., index[..., m-1]]` for every leading "
                                                "position "
                                                "of `index` (shape index.shape[:-1] + x.shape[m:])."),
               test=OpTest(_DATA_DTYPES, _gather_nd_cases)))


# -- lookup_table --------------------------------------------------------------------------------------------
def _lookup_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    table, ids = ins
    if table.ndim != 2:
        raise FrontendError("lookup_table: argument 'table' must have rank 2 [rows, width], got "
                            f"{fmt_shape(table.shape)}")
    check_index("lookup_table", "ids", ids)
    if ids.ndim < 2 or ids.shape[-1] != 1:
        raise FrontendError("lookup_table: argument 'ids' must have rank >= 2 with a last dim of 1 ([..., "
                            "1]), "
                            f"got {fmt_shape(ids.shape)}")
    pad, rows = attrs["padding_idx"], table.shape[0]
    if pad < -1 or (isinstance(rows, int) and pad >= rows):
        raise FrontendError(f"lookup_table: argument 'padding_idx' must be -1 (none) or a row of the table "
                            f"(0..{fmt_dim(rows)} - 1), got {pad}")
    return [TensorType(tuple(ids.shape[:-1]) + (table.shape[1],), table.dtype)]


def _lookup_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    table, ids = arrays
    rows = _checked_indices("lookup_table", ids[..., 0], table.shape[0])
    out = table[rows]
    if attrs["padding_idx"] != -1:
        out = np.where((rows == attrs["padding_idx"])[..., None], np.zeros((), table.dtype), out)
    return [out]


def _lookup_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    table, ids = ins
    pad = attrs["padding_idx"]

    def body(*i: Expr) -> Expr:
        row = index_value(ids[tuple(i[:-1]) + (0,)])
        value = table[row, i[-1]]
        if pad == -1:
            return value
        return cdsl.select(EQ(row, const(pad, row.dtype)), const(0, table.dtype), value)

    return cdsl.compute(out.shape, body, out_name)


def _lookup_cases(dtype: str) -> list[Case]:
    def c(ts: tuple[Any, ...], ids: tuple[Any, ...], pad: int, idt: str = "int32") -> Case:
        return Case((Input(ts), Input(ids, idt, low=0, high=ts[0] - 1)), {"padding_idx": pad})
    return [c((10, 4), (3, 1), -1), c((10, 4), (2, 3, 1), 2, "int64"), c((7, 3), ("S0", 1), 0),
            c((1, 5), (4, 1), -1, "int16"), c((5, 1), (6, 1), 4)]


register(OpDef("lookup_table", OpPatternKind.kInjective, _lookup_infer, _lookup_numpy,
               _lookup_compute, arity=2,
               signature=Signature((tensor("table"), tensor("ids"), attr("padding_idx", integer)),
                                   doc="Rows of `table` [rows, width] at `ids` [..., 1] (shape [..., "
                                       "width]); rows "
                                       "whose id is `padding_idx` are zeros (-1: none)."),
               test=OpTest(_NUMERIC_DTYPES, _lookup_cases)))


# -- one_hot -------------------------------------------------------------------------------------------------
def _one_hot_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    indices, on, off = ins
    check_index("one_hot", "indices", indices)
    for arg, t in (("on_value", on), ("off_value", off)):
        if t.shape not in ((), (1,)):
            raise FrontendError(f"one_hot: argument '{arg}' must hold one value (shape [1]), got "
                                f"{fmt_shape(t.shape)}")
    shape = list(indices.shape)
    shape.insert(attrs["axis"], attrs["depth"])
    return [TensorType(tuple(shape), attrs["dtype"])]


def _one_hot_attrs(ins: Sequence[TensorType], at: Attrs) -> dict[str, Any]:
    depth, axis, rank = at["depth"], at["axis"], ins[0].ndim
    if depth < 1:
        raise FrontendError(f"one_hot: argument 'depth' must be >= 1, got {depth}")
    if not -1 <= axis <= rank:
        raise FrontendError(f"one_hot: argument 'axis' must be -1 (last) or in [0, {rank}] for indices of "
                            "rank "
                            f"{rank}, got {axis}")
    return {"depth": depth, "axis": rank if axis == -1 else axis, "dtype": at["dtype"]}


def _one_hot_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    indices, on, off = arrays
    dtype = numpy_dtype(attrs["dtype"])
    hit = indices.astype(np.int64)[..., None] == np.arange(attrs["depth"])
    out = np.where(hit, on.reshape(()).astype(dtype), off.reshape(()).astype(dtype))
    return [np.ascontiguousarray(np.moveaxis(out, -1, attrs["axis"]))]


def _one_hot_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                     out_name: str) -> cdsl.ComputeTensor:
    indices, on, off = ins
    axis, dtype = attrs["axis"], attrs["dtype"]
    on_v = cdsl.cast(on[(0,) * on.ndim], dtype)
    off_v = cdsl.cast(off[(0,) * off.ndim], dtype)

    def body(*i: Expr) -> Expr:
        value, position = same_width(index_value(indices[tuple(i[:axis]) + tuple(i[axis + 1:])]), i[axis])
        return cdsl.select(EQ(value, position), on_v, off_v)

    return cdsl.compute(out.shape, body, out_name)


def _one_hot_cases(dtype: str) -> list[Case]:
    def c(shape: tuple[Any, ...], depth: int, low: int = 0, **kw: Any) -> Case:
        return Case((Input(shape, low=low, high=depth - 1), Input((1,), "float32", low=1, high=3),
                     Input((1,), "float32", low=-1, high=0)), {"depth": depth, **kw})
    return [c((1,), 10), c((7,), 5, low=-2, dtype="int64"), c((3, 5), 4, axis=0),
            c((2, 1, 6), 3, axis=1, dtype="float16"),
            c(("S0", 5), 6, axis=-1), c(("S0",), 3, axis=0, dtype="int32")]


register(OpDef("one_hot", OpPatternKind.kInjective, _one_hot_infer, _one_hot_numpy, _one_hot_compute, arity=3,
               signature=Signature((tensor("indices"), tensor("on_value"), tensor("off_value"),
                                    attr("depth", integer),
                                    attr("axis", integer, -1), attr("dtype", dtype_arg, "float32")),
                                   attrs=_one_hot_attrs,
                                   doc="A new dim of size `depth` at `axis` (-1: last) holding `on_value` "
                                       "where its "
                                       "position equals the index, else `off_value` (an index outside [0, "
                                       "depth) "
                                       "gives all `off_value`); on/off are one-element Variables, cast to "
                                       "`dtype`."),
               test=OpTest(("int32", "int64"), _one_hot_cases)))
