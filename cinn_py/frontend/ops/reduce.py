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
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.shapes import dims_equal, fmt_dim, fmt_shape, numel
from cinn_py.ir import DType, Expr, IntImm, const

_DSL = {"reduce_sum": cdsl.reduce_sum, "reduce_prod": cdsl.reduce_prod, "reduce_max": cdsl.reduce_max,
        "reduce_min": cdsl.reduce_min, "reduce_all": cdsl.reduce_all, "reduce_any": cdsl.reduce_any,
        "reduce_mean": cdsl.reduce_sum}
_NUMPY: dict[str, Callable[..., np.ndarray]] = {
    "reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_max": np.max, "reduce_min": np.min,
    "reduce_all": np.all, "reduce_any": np.any, "reduce_mean": np.mean,
}


def reduced_shape(shape: Sequence[Any], axes: Sequence[int], keepdim: bool) -> tuple[Any, ...]:
    if keepdim:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def reduce_count(shape: Sequence[Any], axes: Sequence[int]) -> Any:
    """Number of elements reduced into each output element (int or symbolic Dim)."""
    return numel([shape[a] for a in axes])


def _check_dtype(op: str, d: DType) -> None:
    if op in ("reduce_all", "reduce_any"):
        if not d.is_bool:
            raise FrontendError(f"{op}: needs a bool operand, got {d}; compare it first (x != 0)")
    elif op == "reduce_mean" and not d.is_float:
        raise FrontendError(f"{op}: needs a floating-point operand, got {d}; cast it first")
    elif d.is_bool:
        other = "reduce_any" if op in ("reduce_sum", "reduce_max") else "reduce_all"
        raise FrontendError(f"{op}: cannot reduce a bool operand; use {other}, or cast to an int dtype to count")


def _make(op: str) -> OpDef:
    def infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        x = ins[0]
        _check_dtype(op, x.dtype)
        if any(a >= x.ndim for a in attrs["axes"]):
            raise FrontendError(f"{op}: axes {list(attrs['axes'])} out of range for rank {x.ndim}")
        return [TensorType(reduced_shape(x.shape, attrs["axes"], attrs["keepdim"]), x.dtype)]

    def numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
        x = arrays[0]
        out = _NUMPY[op](x, axis=tuple(attrs["axes"]), keepdims=attrs["keepdim"])
        return [np.asarray(out).astype(x.dtype, copy=False)]

    def compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                out_name: str) -> cdsl.ComputeTensor:
        x = ins[0]
        total = _reduce_compute(op, x, attrs["axes"], attrs["keepdim"], out,
                                out_name if op != "reduce_mean" else out_name + "__sum")
        if op != "reduce_mean":
            return total
        count = reduce_count(frontend_dims(x), attrs["axes"])
        return cdsl.compute(out.shape, lambda *i: total[i] / _count_expr(count, x.dtype), out_name)

    return register(OpDef(op, OpPatternKind.kReduction, infer, numpy, compute, fold=_fold(op), arity=1))


def frontend_dims(t: cdsl.ComputeTensor) -> tuple[Any, ...]:
    """A DSL tensor's shape as frontend Dims (ints for static dims)."""
    return tuple(d.value if isinstance(d, IntImm) else d for d in t.shape)


def _count_expr(count: Any, dtype: DType) -> Expr:
    if isinstance(count, int):
        return const(float(count), dtype)
    return cdsl.cast(count, dtype)


def _reduce_compute(op: str, x: cdsl.ComputeTensor, axes: Sequence[int], keepdim: bool,
                    out: TensorType, name: str) -> cdsl.ComputeTensor:
    rvars = {a: cdsl.reduce_axis(x.shape[a]) for a in axes}
    reducer = _DSL[op]

    def body(*idx: Expr) -> Expr:
        it = iter(idx)
        index: list[Expr] = []
        for d in range(x.ndim):
            if d in rvars:
                index.append(rvars[d])
                if keepdim:
                    next(it)
            else:
                index.append(next(it))
        return reducer(x[tuple(index)], list(rvars.values()))

    return cdsl.compute(out.shape, body, name)


def _fold(op: str) -> Callable[..., Any]:
    """A reduction of a uniform value v: max/min/all/any/mean give v, sum v*N, prod v**N (N the
    static count of reduced elements; a symbolic or zero count is not folded)."""

    def fold(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
        count = reduce_count(ins[0].shape, attrs["axes"])
        if op in ("reduce_max", "reduce_min", "reduce_all", "reduce_any", "reduce_mean"):
            return values[0] if not (isinstance(count, int) and count == 0) else None
        if not isinstance(count, int) or count == 0:
            return None
        v = np.full((count,), values[0], dtype=ins[0].dtype.to_numpy())
        with np.errstate(all="ignore"):
            return _NUMPY[op](v).astype(v.dtype).item()

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
    if y.ndim != 2 and y.ndim != x.ndim:
        raise FrontendError(f"matmul: y must have rank 2 or the rank of x ({x.ndim}), got {fmt_shape(y.shape)}")
    if y.ndim > 2:
        for d, (a, b) in enumerate(zip(x.shape[:-2], y.shape[:-2])):
            if not dims_equal(a, b):
                raise FrontendError(f"matmul: batch dims of {fmt_shape(x.shape)} and {fmt_shape(y.shape)} "
                                    f"differ at axis {d}: {fmt_dim(a)} vs {fmt_dim(b)}")
    m, kx = _rows_cols(x.shape, attrs["transpose_x"])
    ky, n = _rows_cols(y.shape, attrs["transpose_y"])
    if not dims_equal(kx, ky):
        raise FrontendError(f"matmul: contracting dims differ: x {fmt_shape(x.shape)} has {fmt_dim(kx)}, "
                            f"y {fmt_shape(y.shape)} has {fmt_dim(ky)}")
    return [TensorType(tuple(x.shape[:-2]) + (m, n), x.dtype)]


def _rows_cols(shape: Sequence[Any], transpose: bool) -> tuple[Any, Any]:
    r, c = shape[-2], shape[-1]
    return (c, r) if transpose else (r, c)


def _matmul_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x, y = arrays
    x = np.swapaxes(x, -1, -2) if attrs["transpose_x"] else x
    y = np.swapaxes(y, -1, -2) if attrs["transpose_y"] else y
    return [np.matmul(x, y).astype(arrays[0].dtype, copy=False)]


def _matmul_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    x, y = ins
    kdim = x.shape[-2] if attrs["transpose_x"] else x.shape[-1]
    k = cdsl.reduce_axis(kdim)

    def body(*idx: Expr) -> Expr:
        batch, i, j = idx[:-2], idx[-2], idx[-1]
        xi = batch + ((k, i) if attrs["transpose_x"] else (i, k))
        yb = batch if y.ndim > 2 else ()
        yj = yb + ((j, k) if attrs["transpose_y"] else (k, j))
        return cdsl.reduce_sum(x[xi] * y[yj], [k])

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("matmul", OpPatternKind.kNonFusible, _matmul_infer, _matmul_numpy, _matmul_compute, arity=2))


def reduce_attrs(op_attrs: Attrs, in_type: TensorType) -> tuple[tuple[Any, ...], tuple[int, ...]]:
    """(input shape, axes): what two reductions must share to fuse."""
    return tuple(in_type.shape), tuple(op_attrs["axes"])


