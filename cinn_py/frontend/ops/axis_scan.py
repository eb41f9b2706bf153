"""Ops that scan one axis, with CINN's NetBuilder names: the arg-reductions `argmax`, `argmin`
(`axis`, `keep_dim`) and the prefix sum `cumsum` (`axis`, `exclusive`, `reverse`). The axis
helpers they share with the sorts are in `sorting`.

All are kNonFusible (CINN registers argmax/argmin so): each is its own group, lowered as
reductions over the axis — parallel over every output element, no serial loop:

- `argmax`/`argmin`: the extreme value (NaNs ignored), then the smallest index holding it (or
  holding a NaN, which wins as in numpy), in int32 (CINN's index dtype).
- `cumsum`: element `i` is the masked sum over `k <= i` (`k < i` when exclusive, mirrored when
  reversed): O(n^2) work along the axis, accumulated in float32 for 16-bit floats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import Attrs, OpDef, OpPatternKind, SymbolEnv, TensorType, register
from cinn_py.frontend.ops.reduce import accumulator, reduced_shape
from cinn_py.frontend.ops.shapes import index_dim
from cinn_py.frontend.ops.signature import Signature, attr, boolean, integer, tensor
from cinn_py.frontend.ops.sorting import INDEX_DTYPE, _SORT_DTYPES, _check_orderable, at_axis, axis_attr
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import EQ, GE, GT, LE, LT, Expr, const, dtype_of


# -- argmax / argmin ---------------------------------------------------------------------------------------
def _arg_infer(op: str) -> Any:
    def infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        x = ins[0]
        _check_orderable(op, x)
        return [TensorType(reduced_shape(x.shape, (attrs["axis"],), attrs["keep_dim"]), INDEX_DTYPE)]
    return infer


def _arg_numpy(op: str) -> Any:
    fn = np.argmax if op == "argmax" else np.argmin

    def numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
        out = fn(arrays[0], axis=attrs["axis"], keepdims=attrs["keep_dim"])  # first NaN / first extreme
        return [np.asarray(out).astype(np.int32)]
    return numpy


def _arg_compute(op: str) -> Any:
    largest = op == "argmax"
    pick = cdsl.reduce_max if largest else cdsl.reduce_min

    def compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                out_name: str) -> cdsl.ComputeTensor:
        x = ins[0]
        axis, keep = attrs["axis"], attrs["keep_dim"]

        def value(i: Sequence[Expr], k: Expr) -> Expr:
            return x[at_axis(i, axis, k, keep)]

        if not x.dtype.is_float:
            kb = cdsl.reduce_axis(x.shape[axis])
            best = cdsl.compute(out.shape, lambda *i: pick(value(i, kb), [kb]), out_name + "__best")
            k = cdsl.reduce_axis(x.shape[axis])
            n = index_dim(x.shape[axis], k)
            return cdsl.compute(out.shape, lambda *i: cdsl.reduce_min(
                cdsl.cast(cdsl.select(EQ(value(i, k), best[i]), k, n), INDEX_DTYPE), [k]), out_name)

        # NaNs: ignored by the extreme value, but the first NaN is the answer (numpy): its key is
        # k - n < 0, below every other key
        ignore = const(-math.inf if largest else math.inf, x.dtype)
        kb = cdsl.reduce_axis(x.shape[axis])
        best = cdsl.compute(out.shape, lambda *i: pick(
            cdsl.select(cdsl.isnan(value(i, kb)), ignore, value(i, kb)), [kb]), out_name + "__best")
        k = cdsl.reduce_axis(x.shape[axis])
        n = index_dim(x.shape[axis], k)

        def key(*i: Expr) -> Expr:
            v = value(i, k)
            return cdsl.reduce_min(cdsl.select(cdsl.isnan(v), k - n, cdsl.select(EQ(v, best[i]), k, n)), [k])

        keys = cdsl.compute(out.shape, key, out_name + "__key")
        zero = const(0, keys.dtype)
        n_key = index_dim(x.shape[axis], zero)
        return cdsl.compute(out.shape, lambda *i: cdsl.cast(
            cdsl.select(LT(keys[i], zero), keys[i] + n_key, keys[i]), INDEX_DTYPE), out_name)

    return compute


def _arg_cases(dtype: str) -> list[Case]:
    floats = dtype.startswith("float")
    # integers in [-2, 2] repeat often: the first of equal extremes must win
    def x(shape: tuple[Any, ...]) -> Input:
        return Input(shape, specials=False) if floats else Input(shape, low=-2, high=2)
    out = [Case((x((1,)),), {"axis": 0}), Case((x((7,)),), {"axis": 0}),
           Case((x((7,)),), {"axis": -1, "keep_dim": True}),
           Case((x((3, 5)),), {"axis": 1}), Case((x((3, 5)),), {"axis": 0, "keep_dim": True}),
           Case((x((2, 1, 6)),), {"axis": 1}), Case((x((2, 3, 6)),), {"axis": -2}),
           Case((x(("S0", 5)),), {"axis": 1}), Case((x(("S0", 5)),), {"axis": 0, "keep_dim": True})]
    if floats:
        out.append(Case((Input((4, 9), specials=True),), {"axis": 1}))
    return out


def _arg_op(op: str) -> OpDef:
    what = "largest" if op == "argmax" else "smallest"
    return register(OpDef(
        op, OpPatternKind.kNonFusible, _arg_infer(op), _arg_numpy(op), _arg_compute(op), arity=1,
        signature=Signature((tensor("x"), attr("axis", integer, 0), attr("keep_dim", boolean, False)),
                            attrs=lambda ins, at: {"axis": axis_attr(op, ins[0], at["axis"]),
                                                   "keep_dim": at["keep_dim"]},
                            doc=f"Index (int32) of the first {what} element along `axis` (a NaN wins, as in "
                                "numpy)."),
        test=OpTest(_SORT_DTYPES, _arg_cases)))


_arg_op("argmax")
_arg_op("argmin")


# -- cumsum --------------------------------------------------------------------------------------------------
def _cumsum_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    _check_orderable("cumsum", ins[0])
    return [ins[0]]


def _cumsum_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x, axis = arrays[0], attrs["axis"]
    acc = accumulator(dtype_of(x.dtype)).to_numpy()
    src = np.flip(x, axis=axis) if attrs["reverse"] else x
    total = np.cumsum(src, axis=axis, dtype=acc)
    if attrs["exclusive"] and total.shape[axis]:
        total = np.roll(total, 1, axis=axis)
        np.moveaxis(total, axis, 0)[0] = 0  # a view: the first element of every row
    out = np.flip(total, axis=axis) if attrs["reverse"] else total
    return [np.ascontiguousarray(out).astype(x.dtype, copy=False)]


def _cumsum_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    x, axis = ins[0], attrs["axis"]
    acc = accumulator(x.dtype)
    k = cdsl.reduce_axis(x.shape[axis])
    # k is summed into element i when it lies before i (after i when reversed); i itself unless exclusive
    relation = {(False, False): LE, (True, False): LT, (False, True): GE, (True, True): GT}[
        (attrs["exclusive"], attrs["reverse"])]

    def body(*i: Expr) -> Expr:
        take = relation(k, cdsl.cast(i[axis], k.dtype))
        return cdsl.reduce_sum(cdsl.select(take, cdsl.cast(x[at_axis(i, axis, k)], acc), const(0, acc)), [k])

    if acc == x.dtype:
        return cdsl.compute(out.shape, body, out_name)
    total = cdsl.compute(out.shape, body, out_name + "__acc")
    return cdsl.compute(out.shape, lambda *i: cdsl.cast(total[i], x.dtype), out_name)


def _cumsum_cases(dtype: str) -> list[Case]:
    low, high = (-2.0, 2.0) if dtype.startswith("float") else (-100, 100)

    def c(shape: tuple[Any, ...], **kw: Any) -> Case:
        return Case((Input(shape, low=low, high=high),), kw)
    return [c((1,), axis=0), c((7,)), c((3, 5), axis=0), c((3, 5), axis=1, exclusive=True),
            c((2, 1, 6), axis=-1, reverse=True), c((2, 3, 6), axis=1, exclusive=True, reverse=True),
            c(("S0", 5)), c(("S0", 5), axis=0, reverse=True), c((33,), axis=0)]


register(OpDef("cumsum", OpPatternKind.kNonFusible, _cumsum_infer, _cumsum_numpy, _cumsum_compute, arity=1,
               signature=Signature((tensor("x"), attr("axis", integer, -1), attr("exclusive", boolean, False),
                                    attr("reverse", boolean, False)),
                                   attrs=lambda ins, at: {"axis": axis_attr("cumsum", ins[0], at["axis"]),
                                                          "exclusive": at["exclusive"],
                                                          "reverse": at["reverse"]},
                                   doc="Cumulative sum along `axis` (Paddle's cumsum attributes: `exclusive` "
                                       "leaves each element out of its own sum, `reverse` sums from the "
                                       "end)."),
               test=OpTest(("float32", "float16", "bfloat16", "float64", "int32", "int64"), _cumsum_cases,
                           rtol=1e-4, atol=1e-5)))
