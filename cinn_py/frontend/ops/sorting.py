"""Ops that order along one axis, with CINN's NetBuilder names: `sort`, `argsort` (`axis`,
`is_ascend`) and `top_k` (`k`, `axis`, `largest`), and the axis helpers shared with `axis_scan`
(`argmax`, `argmin`, `cumsum`).

All are kNonFusible (CINN registers sort/argsort/top_k so): each is its own group, lowered as
reductions over the axis — parallel over every output element, no serial loop: the rank of every
element (how many elements come before it: smaller, or equal at a smaller index), then the element
of each rank (CINN's `ArgSort` counts the same way with an extern call). Sorts are stable in both
directions; NaN is larger than every number (numpy's order: last ascending, first descending).
O(n^2) work per row, as CINN's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    REGISTRY, Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, check_operand_dtype,
    numpy_dtype, register,
)
from cinn_py.frontend.ops.shapes import eval_dim, fmt_shape, normalize_axis
from cinn_py.frontend.ops.signature import OpCall, Signature, attr, boolean, integer, tensor
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import EQ, LT, And, Expr, Not, Or, const, int32, int64

INDEX_DTYPE = int32
"""The dtype of argmax/argmin/argsort results (CINN's `Int(32)`)."""
_SORT_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64")


def axis_attr(op: str, x: TensorType, axis: int) -> int:
    """CINN's `axis` (negative: from the end) as a non-negative axis of `x`."""
    if x.ndim == 0:
        raise FrontendError(f"{op}: needs an operand of rank >= 1 to work along argument 'axis', got a 0-d "
                            "tensor")
    return normalize_axis(axis, x.ndim, op, "argument 'axis'")


def _check_orderable(op: str, x: TensorType) -> None:
    check_operand_dtype(op, "x", x.dtype, "numeric", "cast it to an int dtype first")


def same_width(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """`a` and `b` in the wider of their integer dtypes (an index or reduce var of a static dim is
    int32 where the loop vars of symbolic shapes are int64)."""
    if a.dtype == b.dtype:
        return a, b
    wide = a.dtype if a.dtype.bits >= b.dtype.bits else b.dtype
    return cdsl.cast(a, wide), cdsl.cast(b, wide)


def at_axis(idx: Sequence[Expr], axis: int, value: Expr, keep: bool = True) -> tuple[Expr, ...]:
    """The input index of output element `idx` with `value` at `axis` (the output lacks `axis`
    unless `keep`)."""
    out = list(idx)
    if keep:
        out[axis] = value
    else:
        out.insert(axis, value)
    return tuple(out)


# -- sort / argsort / top_k ----------------------------------------------------------------------------------
# Composite ops (their numpy reference is the oracle), decomposed before fusion into two
# kNonFusible primitives and a gather (the rank of an element reads its whole row, and the
# element of a rank reads every rank of its row: each needs the previous one complete, so each is
# a group, hence a kernel, of its own):
#   sort_rank(x)          the sorted position of every element (CINN's argsort "positions")
#   rank_order(ranks)     the position along the axis of each of the first `count` ranks
#   gather(x, order)      the values (take_along_axis)
def _precedes(a: Expr, b: Expr, ka: Expr, kb: Expr, ascending: bool) -> Expr:
    """Whether element `a` (at `ka` along the axis) comes before element `b` (at `kb`): a stable
    order in which NaN is larger than every number."""
    first, second = (a, b) if ascending else (b, a)
    ka, kb = same_width(ka, kb)
    if not a.dtype.is_float:
        return Or(LT(first, second), And(EQ(a, b), LT(ka, kb)))
    a_nan, b_nan = cdsl.isnan(a), cdsl.isnan(b)
    first_nan, second_nan = (a_nan, b_nan) if ascending else (b_nan, a_nan)
    smaller = Or(LT(first, second), And(second_nan, Not(first_nan)))
    tie = Or(EQ(a, b), And(a_nan, b_nan))
    return Or(smaller, And(tie, LT(ka, kb)))


def _numpy_order(x: np.ndarray, axis: int, ascending: bool) -> np.ndarray:
    """The stable permutation along `axis` (numpy's NaN-last order ascending, NaN-first descending)."""
    if ascending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable"), axis=axis)


def _inverse(perm: np.ndarray, axis: int) -> np.ndarray:
    return np.argsort(perm, axis=axis, kind="stable")


def _rank_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    _check_orderable("sort_rank", ins[0])
    return [TensorType(ins[0].shape, INDEX_DTYPE)]


def _rank_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    perm = _numpy_order(arrays[0], attrs["axis"], attrs["is_ascend"])
    return [_inverse(perm, attrs["axis"]).astype(np.int32)]


def _rank_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                  out_name: str) -> cdsl.ComputeTensor:
    """rank[..., j, ...]: how many elements of j's row come before it."""
    x, axis = ins[0], attrs["axis"]
    k = cdsl.reduce_axis(x.shape[axis])

    def body(*j: Expr) -> Expr:
        before = _precedes(x[at_axis(j, axis, k)], x[j], k, j[axis], attrs["is_ascend"])
        return cdsl.reduce_sum(cdsl.cast(before, INDEX_DTYPE), [k])

    return cdsl.compute(out.shape, body, out_name)


def _order_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    shape = list(ins[0].shape)
    shape[attrs["axis"]] = attrs["count"]
    return [TensorType(tuple(shape), attrs["dtype"])]


def _order_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    axis = attrs["axis"]
    count = eval_dim(attrs["count"], env)
    perm = _inverse(arrays[0], axis)
    return [np.take(perm, np.arange(count), axis=axis).astype(numpy_dtype(attrs["dtype"]))]


def _order_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                   out_name: str) -> cdsl.ComputeTensor:
    """perm[..., i, ...]: the position of the element of rank i; ranks are a permutation, so
    exactly one term of the sum is nonzero."""
    ranks, axis, dtype = ins[0], attrs["axis"], attrs["dtype"]
    j = cdsl.reduce_axis(ranks.shape[axis])

    def body(*i: Expr) -> Expr:
        hit = EQ(ranks[at_axis(i, axis, j)], cdsl.cast(i[axis], INDEX_DTYPE))
        return cdsl.reduce_sum(cdsl.select(hit, cdsl.cast(j, dtype), const(0, dtype)), [j])

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("sort_rank", OpPatternKind.kNonFusible, _rank_infer, _rank_numpy, _rank_compute, arity=1))
register(OpDef("rank_order", OpPatternKind.kNonFusible, _order_infer, _order_numpy, _order_compute, arity=1))


def _ascending(op: str, attrs: Attrs) -> bool:
    return not attrs["largest"] if op == "top_k" else attrs["is_ascend"]


def _sort_infer(op: str) -> Any:
    def infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        x = ins[0]
        _check_orderable(op, x)
        if op == "sort":
            return [x]
        if op == "argsort":
            return [TensorType(x.shape, INDEX_DTYPE)]
        shape = list(x.shape)
        shape[attrs["axis"]] = attrs["k"]
        return [TensorType(tuple(shape), x.dtype if attrs["output"] == 0 else int64)]
    return infer


def _sort_numpy(op: str) -> Any:
    def numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
        x, axis = arrays[0], attrs["axis"]
        perm = _numpy_order(x, axis, _ascending(op, attrs))
        if op == "sort":
            return [np.take_along_axis(x, perm, axis=axis)]
        if op == "argsort":  # output 1: CINN's positions, the sorted position of every element
            return [(perm if attrs["output"] == 0 else _inverse(perm, axis)).astype(np.int32)]
        top = np.take(perm, np.arange(attrs["k"]), axis=axis)
        return [np.take_along_axis(x, top, axis=axis) if attrs["output"] == 0 else top.astype(np.int64)]
    return numpy


def _sort_decompose(op: str) -> Any:
    def decompose(nb: Any, ins: list[Any], attrs: dict[str, Any], name: str) -> Any:
        (x,) = ins
        axis = attrs["axis"]
        rank_attrs = {"axis": axis, "is_ascend": _ascending(op, attrs)}
        output = attrs.get("output", 0)
        if op == "argsort" and output == 1:
            return nb.emit("sort_rank", (x,), rank_attrs, name=name)
        ranks = nb.emit("sort_rank", (x,), rank_attrs)
        count = attrs["k"] if op == "top_k" else x.shape[axis]
        indices = op == "argsort" or output == 1
        dtype = int64 if op == "top_k" and indices else INDEX_DTYPE
        order = nb.emit("rank_order", (ranks,), {"axis": axis, "count": count, "dtype": dtype},
                        name=name if indices else None)
        return order if indices else nb.emit("gather", (x, order), {"axis": axis}, name=name)
    return decompose


def _sort_attrs(op: str) -> Any:
    def attrs(ins: Sequence[TensorType], at: Attrs) -> dict[str, Any]:
        return {"axis": axis_attr(op, ins[0], at["axis"]), "is_ascend": at["is_ascend"]}
    return attrs


def _multi_output_build(nb: Any, call: OpCall) -> list[Any]:
    """One op per CINN output (attribute `output`), returned as a list as CINN's std::vector."""
    sig = REGISTRY[call.op].signature
    assert sig is not None and sig.attrs is not None
    x = nb.variable(call.args[sig.params[0].name], call.method, sig.params[0].name)
    at = sig.attrs([x.type], {p.name: call.args[p.name] for p in sig.params[1:]})
    return [nb.emit(call.op, (x,), {**at, "output": k}) for k in range(2)]


def _top_k_attrs(ins: Sequence[TensorType], at: Attrs) -> dict[str, Any]:
    x, k = ins[0], at["k"]
    axis = axis_attr("top_k", x, at["axis"])
    n = x.shape[axis]
    if k < 1:
        raise FrontendError(f"top_k: argument 'k' must be >= 1, got {k}")
    if not isinstance(n, int):
        raise FrontendError(f"top_k: the dim along argument 'axis' ({axis}) must be static, got "
                            f"{fmt_shape(x.shape)}")
    return {"k": min(k, n), "axis": axis, "largest": at["largest"]}  # CINN: k beyond the dim takes it all


def _order_input(dtype: str, shape: tuple[Any, ...], specials: bool = False) -> Input:
    # integers in [-3, 3] repeat often (stability); planted NaN/inf order with the numbers
    return Input(shape, specials=specials) if dtype.startswith("float") else Input(shape, low=-3, high=3)


def _sort_cases(dtype: str) -> list[Case]:
    x = lambda shape, specials=False: _order_input(dtype, shape, specials)  # noqa: E731
    out = [Case((x((1,)), 0)), Case((x((7,)), -1, False)), Case((x((3, 5)), 1)), Case((x((3, 5)), 0, False)),
           Case((x((2, 1, 6)), 2, False)), Case((x((2, 3, 4)), 1)), Case((x(("S0", 5)), 1, False)),
           Case((x(("S0", 3)), 0))]
    if dtype.startswith("float"):
        out += [Case((x((3, 9), True), 1)), Case((x((3, 9), True), 1, False))]
    return out


def _top_k_cases(dtype: str) -> list[Case]:
    x = lambda shape, specials=False: _order_input(dtype, shape, specials)  # noqa: E731
    out = [Case((x((1,)), 1, 0, True)), Case((x((7,)), 3, -1, True)), Case((x((3, 5)), 2, 0, False)),
           Case((x((2, 1, 6)), 6, 2, False)), Case((x((2, 3, 4)), 9, 1, True)),
           Case((x(("S0", 5)), 4, 1, True))]
    if dtype.startswith("float"):
        out.append(Case((x((3, 9), True), 4, 1, True)))
    return out


for _op, _doc in (("sort", "`operand` sorted along `axis`"),
                  ("argsort",
                   "[indices (int32) that sort `operand` along `axis`, positions (int32): the sorted "
                              "position of every element]")):
    register(OpDef(_op, OpPatternKind.kNonFusible, _sort_infer(_op), _sort_numpy(_op),
                   composite=True, arity=1,
                   decompose=_sort_decompose(_op),
                   signature=Signature((tensor("operand"), attr("axis", integer),
                                        attr("is_ascend", boolean, True)),
                                       attrs=_sort_attrs(_op),
                                       build=_multi_output_build if _op == "argsort" else None,
                                       doc=f"{_doc}; stable, NaN larger than every number."),
                   test=OpTest(_SORT_DTYPES, _sort_cases)))

register(OpDef("top_k", OpPatternKind.kNonFusible, _sort_infer("top_k"), _sort_numpy("top_k"), composite=True,
               arity=1, decompose=_sort_decompose("top_k"),
               signature=Signature((tensor("x"), attr("k", integer), attr("axis", integer, -1),
                                    attr("largest", boolean, True)),
                                   attrs=_top_k_attrs, build=_multi_output_build,
                                   doc="[values, indices (int64)] of the k largest (smallest unless "
                                       "`largest`) "
                                       "elements along `axis`, in order; ties keep index order, NaN is "
                                       "largest."),
               test=OpTest(_SORT_DTYPES, _top_k_cases)))
