"""Reductions (kReduction) `reduce_sum/mean/max/min/prod/all/any(x, axes, keepdim)` and `matmul`
(kNonFusible, lowered naively as one reduction over the contracting dim in its own group).

The reduce attributes that fusion compares (CINN: "reduction into reduction with the same
reduce attrs") are the input shape and the normalised, sorted `axes`. `reduce_mean` is a
primitive here (not decomposed): its compute is a `reduce_sum` followed by a division by the
element count, which may be symbolic (`cast(S0 * 768, float32)`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, check_operand_dtype,
    numpy_dtype, register,
)
from cinn_py.frontend.ops.reference import fold_extreme
from cinn_py.frontend.ops.shapes import dims_equal, fmt_dim, fmt_shape, normalize_axes, numel
from cinn_py.frontend.ops.signature import OpCall, Signature, attr, boolean, floating, int_list, tensor
from cinn_py.frontend.ops.testing import Case, CaseFn, Input, OpTest
from cinn_py.ir import DType, Expr, IntImm, bfloat16, const, dtype_of, float16, float32, float64

_DSL = {"reduce_sum": cdsl.reduce_sum, "reduce_prod": cdsl.reduce_prod, "reduce_max": cdsl.reduce_max,
        "reduce_min": cdsl.reduce_min, "reduce_all": cdsl.reduce_all, "reduce_any": cdsl.reduce_any,
        "reduce_mean": cdsl.reduce_sum}
_NUMPY: dict[str, Callable[..., np.ndarray]] = {
    "reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_max": np.max, "reduce_min": np.min,
    "reduce_all": np.all, "reduce_any": np.any, "reduce_mean": np.mean,
}


_ACCUMULATING = ("reduce_sum", "reduce_prod", "reduce_mean")


def reduced_shape(shape: Sequence[Any], axes: Sequence[int], keepdim: bool) -> tuple[Any, ...]:
    if keepdim:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def reduce_count(shape: Sequence[Any], axes: Sequence[int]) -> Any:
    """Number of elements reduced into each output element (int or symbolic Dim)."""
    return numel([shape[a] for a in axes])


def _check_dtype(op: str, d: DType) -> None:
    if op in ("reduce_all", "reduce_any"):
        check_operand_dtype(op, "x", d, "bool", "compare it first (x != 0)")
    elif op == "reduce_mean":
        check_operand_dtype(op, "x", d, "floating-point")
    elif d.is_bool:
        other = "reduce_any" if op in ("reduce_sum", "reduce_max") else "reduce_all"
        raise FrontendError(f"{op}: cannot reduce a bool operand; use {other}, or cast to an int dtype to "
                            "count")


def _make(op: str) -> OpDef:
    def infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        x = ins[0]
        _check_dtype(op, x.dtype)
        if any(a >= x.ndim for a in attrs["axes"]):
            raise FrontendError(f"{op}: axes {list(attrs['axes'])} out of range for rank {x.ndim}")
        return [TensorType(reduced_shape(x.shape, attrs["axes"], attrs["keepdim"]), x.dtype)]

    def numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
        x = arrays[0]
        if op in ("reduce_max", "reduce_min"):  # CINN's NaN rule, folded in the serial kernel's order
            return [fold_extreme(x, attrs["axes"], attrs["keepdim"], op == "reduce_max")]
        acc = _sum_accumulator(op, dtype_of(x.dtype), reduce_count(x.shape, attrs["axes"]))
        wide = x.astype(acc.to_numpy(), copy=False) if op in _ACCUMULATING else x
        out = _NUMPY[op](wide, axis=tuple(attrs["axes"]), keepdims=attrs["keepdim"])
        return [np.asarray(out).astype(x.dtype, copy=False)]

    def compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                out_name: str) -> cdsl.ComputeTensor:
        x = ins[0]
        acc = (_sum_accumulator(op, x.dtype, reduce_count(frontend_dims(x), attrs["axes"]))
               if op in _ACCUMULATING else x.dtype)
        direct = op != "reduce_mean" and acc == x.dtype
        total = _reduce_compute(op, x, attrs["axes"], attrs["keepdim"], out, acc,
                                out_name if direct else out_name
                                + ("__sum" if op == "reduce_mean" else "__acc"))
        if direct:
            return total
        if op != "reduce_mean":
            return cdsl.compute(out.shape, lambda *i: cdsl.cast(total[i], x.dtype), out_name)
        count = reduce_count(frontend_dims(x), attrs["axes"])
        return cdsl.compute(out.shape,
                            lambda *i: cdsl.cast(total[i] / _count_expr(count, acc), x.dtype), out_name)

    return register(OpDef(op, OpPatternKind.kReduction, infer, numpy, compute, fold=_fold(op), arity=1,
                          signature=Signature((tensor("x"), attr("dim", int_list, ()),
                                               attr("keep_dim", boolean, False)),
                                              attrs=lambda ins, at: reduce_dim_attrs(op, ins, at),
                                              doc=f"{op}(x, dim=[], keep_dim=False): an empty `dim` reduces "
                                                  "over all axes."),
                          test=OpTest(_REDUCE_DTYPES.get(op, testing.NUMERIC), _reduce_cases(op))))


def reduce_dim_attrs(op: str, ins: Sequence[TensorType], at: Attrs) -> dict[str, Any]:
    """CINN's `dim` (empty: all axes; negative: from the end) as sorted axes."""
    dim = at["dim"]
    return {"axes": normalize_axes(None if not dim else list(dim), ins[0].ndim, op),
            "keepdim": at["keep_dim"]}


_REDUCE_DTYPES = {"reduce_all": ("bool",), "reduce_any": ("bool",), "reduce_mean": testing.FLOATS}
_REDUCE_SHAPES = ((1,), (7,), (3, 5), (2, 1, 6), ("S0", 5), (3, "S0", 4))


def _reduce_cases(op: str) -> CaseFn:
    # prod of many values leaves float16's range: keep them near 1
    low, high = (0.5, 1.5) if op == "reduce_prod" else (-2.0, 2.0)

    def cases(dtype: str) -> list[Case]:
        out = []
        for shape in _REDUCE_SHAPES:
            dims: list[tuple[int, ...]] = ([(), (len(shape) - 1,)]
                                           + ([(0,), (0, len(shape) - 1)] if len(shape) > 1 else []))
            for k, dim in enumerate(dims):
                out.append(Case((Input(shape, low=low, high=high),),
                                {"dim": list(dim), "keep_dim": k % 2 == 1}))
        return out
    return cases


def accumulator(d: DType) -> DType:
    """The dtype sums and products accumulate in: float32 for 16-bit floats (their 11 or 8
    significant bits lose whole addends after a few hundred terms), else the dtype itself."""
    return float32 if d in (float16, bfloat16) else d


# float32 sums of more terms than this accumulate in float64: a vectorised sum of 100352 terms
# ([32, 64, 56, 56] over N, H, W: a conv bias gradient) kept ~1e-4 relative error in float32
# partial sums, 10x CINN's tolerance for it (test_reduce_op.py); memory-bound, so the wider
# accumulator costs little
LONG_FLOAT32_SUM = 1 << 16


def _sum_accumulator(op: str, d: DType, count: Any) -> DType:
    """`accumulator(d)`, and float64 for a float32 sum or mean over more than `LONG_FLOAT32_SUM`
    terms (a static count; products keep float32: their error does not grow with the count)."""
    if d == float32 and op in ("reduce_sum", "reduce_mean") and isinstance(count, int) \
            and count > LONG_FLOAT32_SUM:
        return float64
    return accumulator(d)


def frontend_dims(t: cdsl.ComputeTensor) -> tuple[Any, ...]:
    """A DSL tensor's shape as frontend Dims (ints for static dims)."""
    return tuple(d.value if isinstance(d, IntImm) else d for d in t.shape)


def _count_expr(count: Any, dtype: DType) -> Expr:
    if isinstance(count, int):
        return const(float(count), dtype)
    return cdsl.cast(count, dtype)


def _reduce_compute(op: str, x: cdsl.ComputeTensor, axes: Sequence[int], keepdim: bool,
                    out: TensorType, acc: DType, name: str) -> cdsl.ComputeTensor:
    if not axes:  # a 0-d input: the reduction of its one element is that element
        return cdsl.compute(out.shape, lambda *idx: cdsl.cast(x[tuple(idx)], acc), name)
    # a reduced axis of extent 1 is read at 0, not looped over: a unit reduce loop outside the
    # spatial ones hid a row reduction from the x86 row tactic ([1, 64, 56, 56] summed over
    # [0, 2, 3] ran as one serial float32 chain per channel, 10x the rounding error of partial sums)
    rvars = {a: cdsl.reduce_axis(x.shape[a]) for a in axes if not _unit(x.shape[a])}
    reducer = _DSL[op]

    def body(*idx: Expr) -> Expr:
        it = iter(idx)
        index: list[Expr | int] = []
        for d in range(x.ndim):
            if d in axes:
                index.append(rvars[d] if d in rvars else 0)
                if keepdim:
                    next(it)
            else:
                index.append(next(it))
        value = cdsl.cast(x[tuple(index)], acc)
        return reducer(value, list(rvars.values())) if rvars else value

    return cdsl.compute(out.shape, body, name)


def _unit(extent: Any) -> bool:
    return (isinstance(extent, IntImm) and extent.value == 1) or (isinstance(extent, int) and extent == 1)


def _fold(op: str) -> Callable[..., Any]:
    """A reduction of a uniform value v: max/min/all/any/mean give v, sum v*N, prod v**N (N the
    static count of reduced elements; a symbolic or zero count is not folded)."""

    def fold(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
        count = reduce_count(ins[0].shape, attrs["axes"])
        if op in ("reduce_max", "reduce_min", "reduce_all", "reduce_any", "reduce_mean"):
            return values[0] if not (isinstance(count, int) and count == 0) else None
        if not isinstance(count, int) or count == 0:
            return None
        v = np.full((count,), values[0], dtype=numpy_dtype(ins[0].dtype))  # rounded to the dtype
        # fp16/bf16 accumulate in float32, as kernels do
        wide = v.astype(accumulator(ins[0].dtype).to_numpy())
        with np.errstate(all="ignore"):
            return _NUMPY[op](wide).astype(v.dtype).item()

    return fold


for _op in _NUMPY:
    _make(_op)



# -- matmul ----------------------------------------------------------------------------------------------
def _matmul_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, y = ins
    if x.dtype != y.dtype:
        raise FrontendError(f"matmul: operands have different dtypes {x.dtype} and {y.dtype}; insert a cast")
    if x.dtype.is_bool:
        raise FrontendError("matmul: needs numeric operands, got bool")
    if x.ndim < 2 or y.ndim < 2:
        raise FrontendError(f"matmul: operands must have rank >= 2, got {fmt_shape(x.shape)} and "
                            f"{fmt_shape(y.shape)}")
    m, kx = _rows_cols(x.shape, attrs["transpose_x"])
    ky, n = _rows_cols(y.shape, attrs["transpose_y"])
    if not dims_equal(kx, ky):
        raise FrontendError(f"matmul: contracting dims differ: x {fmt_shape(x.shape)} has {fmt_dim(kx)}, "
                            f"y {fmt_shape(y.shape)} has {fmt_dim(ky)}")
    return [TensorType(_batch_dims(x.shape, y.shape) + (m, n), x.dtype)]


def _batch_dims(xs: Sequence[Any], ys: Sequence[Any]) -> tuple[Any, ...]:
    """The batch dims of x @ y by numpy's (and CINN's, Paddle's) rule: aligned from the right, a
    missing or size-1 dim broadcast ([8, 16, 4] @ [1, 4, 16] -> [8, 16, 16])."""
    bx, by = tuple(xs[:-2]), tuple(ys[:-2])
    rank = max(len(bx), len(by))
    bx, by = (1,) * (rank - len(bx)) + bx, (1,) * (rank - len(by)) + by
    out: list[Any] = []
    for d, (a, b) in enumerate(zip(bx, by)):
        if dims_equal(a, b) or _unit(b):
            out.append(a)
        elif _unit(a):
            out.append(b)
        else:
            raise FrontendError(f"matmul: batch dims of {fmt_shape(xs)} and {fmt_shape(ys)} differ at batch "
                                f"axis {d} (aligned from the right): {fmt_dim(a)} vs {fmt_dim(b)}; they must "
                                "be equal or 1")
    return tuple(out)


def _batch_index(shape: Sequence[Any], batch: Sequence[Expr], out_batch: Sequence[Any]) -> tuple[Any, ...]:
    """An operand's batch indices for the output's: its own trailing dims, 0 where it broadcasts."""
    own = len(shape) - 2
    tail = list(zip(shape[:own], batch[len(batch) - own:], out_batch[len(out_batch) - own:]))
    return tuple(0 if _unit(dim) and not _unit(odim) else i for dim, i, odim in tail)


def _rows_cols(shape: Sequence[Any], transpose: bool) -> tuple[Any, Any]:
    r, c = shape[-2], shape[-1]
    return (c, r) if transpose else (r, c)


def _matmul_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x, y = arrays
    x = np.swapaxes(x, -1, -2) if attrs["transpose_x"] else x
    y = np.swapaxes(y, -1, -2) if attrs["transpose_y"] else y
    acc = accumulator(dtype_of(x.dtype)).to_numpy()
    product = np.matmul(x.astype(acc, copy=False), y.astype(acc, copy=False))
    return [product.astype(arrays[0].dtype, copy=False)]


def _matmul_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    x, y = ins
    kdim = x.shape[-2] if attrs["transpose_x"] else x.shape[-1]
    k = cdsl.reduce_axis(kdim)

    def body(*idx: Expr) -> Expr:
        batch, i, j = idx[:-2], idx[-2], idx[-1]
        out_batch = out.shape[:-2]
        xi = _batch_index(x.shape, batch, out_batch) + ((k, i) if attrs["transpose_x"] else (i, k))
        yj = _batch_index(y.shape, batch, out_batch) + ((j, k) if attrs["transpose_y"] else (k, j))
        return cdsl.reduce_sum(cdsl.cast(x[xi], acc) * cdsl.cast(y[yj], acc), [k])

    acc = accumulator(x.dtype)
    if acc == x.dtype:
        return cdsl.compute(out.shape, body, out_name)
    total = cdsl.compute(out.shape, body, out_name + "__acc")
    return cdsl.compute(out.shape, lambda *i: cdsl.cast(total[i], x.dtype), out_name)


def _matmul_build(nb: Any, call: OpCall) -> Any:
    """CINN matmul: a rank-1 x is a row [1, K] and a rank-1 y a column [K, 1] (numpy's rule; the
    added dim is dropped from the result, transpose flags do not apply to it); `alpha` scales."""
    a = call.args
    x, y = nb.variable(a["x"], call.method, "x"), nb.variable(a["y"], call.method, "y")
    tx, ty = a["transpose_x"], a["transpose_y"]
    if x.ndim == 1:
        x, tx = nb.reshape(x, [1, x.shape[0]]), False
    if y.ndim == 1:
        y, ty = nb.reshape(y, [y.shape[0], 1]), False
    out = nb.emit(call.op, (x, y), {"transpose_x": tx, "transpose_y": ty})
    if a["x"].ndim == 1 or a["y"].ndim == 1:
        keep = [d for k, d in enumerate(out.shape)
                if not (k == out.ndim - 2 and a["x"].ndim == 1)
                and not (k == out.ndim - 1 and a["y"].ndim == 1)]
        out = nb.reshape(out, keep)
    if a["alpha"] != 1.0:
        out = nb.scale(out, a["alpha"])
    return out


def _matmul_cases(dtype: str) -> list[Case]:
    def mm(xs: tuple[Any, ...], ys: tuple[Any, ...], **kw: Any) -> Case:
        return Case((Input(xs, low=-1.0, high=1.0), Input(ys, low=-1.0, high=1.0)), kw)
    return [mm((3, 5), (5, 4)), mm((1, 7), (7, 1)), mm(("S0", 6), (6, 3)),
            mm((5, 3), (5, 4), transpose_x=True),
            mm((3, 5), (4, 5), transpose_y=True), mm((2, 3, 5), (2, 5, 4)), mm((2, 3, 5), (5, 4)),
            mm((5,), (5, 3)), mm((3, 5), (5,)),
            mm((5,), (5,)), mm((4, 3, 5), (1, 5, 2)), mm((5,), (2, 3, 5, 4)), mm((3, 5), (2, 5, 4))] + (
                [mm((3, 4), (4, 2), alpha=0.5)] if dtype.startswith("float") else [])


register(OpDef("matmul", OpPatternKind.kNonFusible, _matmul_infer, _matmul_numpy, _matmul_compute, arity=2,
               signature=Signature((tensor("x"), tensor("y"), attr("transpose_x", boolean, False),
                                    attr("transpose_y", boolean, False), attr("alpha", floating, 1.0)),
                                   build=_matmul_build, doc="Matrix product over the last two dims "
                                   "(rank-1 operands and batch dims broadcast as numpy)."),
               test=OpTest(("float32", "float16", "bfloat16", "float64", "int32"), _matmul_cases, rtol=1e-4,
                           atol=1e-5)))


def reduce_attrs(op_attrs: Attrs, in_type: TensorType) -> tuple[tuple[Any, ...], tuple[int, ...]]:
    """(input shape, axes): what two reductions must share to fuse."""
    return tuple(in_type.shape), tuple(op_attrs["axes"])


