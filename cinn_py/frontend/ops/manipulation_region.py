"""Shape-manipulation ops that read or write a region of an axis (kInjective): `pad`, `split`,
`slice_assign`. Reads are always in bounds: `pad` and `slice_assign` select between two loads
whose indices are clamped, as `concat` does.

`split` has several results; an `Operator` has one, so `nb.split` adds one `split` op per
section (attribute `index`), each an independent slice that fuses with its own consumers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import Attrs, Dim, FrontendError, OpDef, Shape, SymbolEnv, TensorType, register
from cinn_py.frontend.ops.elementwise_base import check_same_dtypes, scalar_of
from cinn_py.frontend.ops.injective import INT_MAX, MOVE_DTYPES
from cinn_py.frontend.ops.slice_concat import slice_attrs
from cinn_py.frontend.ops.manipulation import (
    _INJECTIVE, _first, _fold_uniform, _idx_const, _idx_dim, _pad_fold,
)
from cinn_py.frontend.ops.reduce import frontend_dims
from cinn_py.frontend.ops.shapes import (
    add_dims, dims_equal, div_dims, eval_dim, fmt_dim, fmt_shape, normalize_axis, shapes_equal,
)
from cinn_py.frontend.ops.signature import OpCall, Signature, any_value, attr, int_list, integer, tensor
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import EQ, And, Expr, const


# -- pad -----------------------------------------------------------------------------------------------------
def pad_attrs(x: TensorType, paddings: Any, pad_value: float, method: str = "pad") -> dict[str, Any]:
    """`paddings`: one [before, after] pair of non-negative ints per axis (CINN's pad attribute)."""
    pairs = paddings if isinstance(paddings, (list, tuple)) else None
    if pairs is None or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
        raise FrontendError(f"{method}: argument 'paddings' must be a list of [before, after] pairs, got "
                            f"{paddings!r}")
    if len(pairs) != x.ndim:
        raise FrontendError(f"{method}: argument 'paddings' must have one [before, after] pair per axis of "
                            f"{fmt_shape(x.shape)} ({x.ndim}), got {len(pairs)}")
    out = []
    for k, pair in enumerate(pairs):
        before, after = (int_list(method, f"paddings[{k}]", list(pair)))
        if before < 0 or after < 0:
            raise FrontendError(f"{method}: argument 'paddings'[{k}] must be non-negative, got {list(pair)}")
        out.append((before, after))
    try:
        value = scalar_of(pad_value, x.dtype, method)
    except (FrontendError, TypeError) as exc:
        raise FrontendError(f"{method}: argument 'pad_value': {str(exc).split(': ', 1)[-1]}") from None
    return {"paddings": tuple(out), "pad_value": value}


def _pad_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x = ins[0]
    return [TensorType(tuple(add_dims(d, b + a) for d, (b, a) in zip(x.shape, attrs["paddings"])), x.dtype)]


def _pad_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    return [np.pad(x, attrs["paddings"], constant_values=np.asarray(attrs["pad_value"]).astype(x.dtype))]


def _pad_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                 out_name: str) -> cdsl.ComputeTensor:
    x, pads = ins[0], attrs["paddings"]
    src = frontend_dims(x)

    def body(*idx: Expr) -> Expr:
        index, inside = [], []
        for i, dim, (before, after) in zip(idx, src, pads):
            if before == 0 and after == 0:
                index.append(i)
                continue
            local = i - _idx_const(before, i) if before else i
            last = _idx_dim(dim, i) - _idx_const(1, i)
            index.append(cdsl.minimum(cdsl.maximum(local, _idx_const(0, i)), last))
            inside += [local >= _idx_const(0, i), local <= last] if before else [local <= last]
        load = x[tuple(index)]
        if not inside:
            return load
        cond = inside[0]
        for c in inside[1:]:
            cond = And(cond, c)
        return cdsl.select(cond, load, const(attrs["pad_value"], x.dtype))

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("pad", _INJECTIVE, _pad_infer, _pad_numpy, _pad_compute, fold=_pad_fold, arity=1,
               signature=Signature((tensor("x"), attr("paddings", any_value),
                                    attr("pad_value", any_value, 0.0)),
                                   attrs=lambda ins, at: pad_attrs(ins[0], at["paddings"], at["pad_value"]),
                                   doc="Pad each axis d with `paddings[d] = [before, after]` elements of "
                                       "`pad_value`."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((7,)),), {"paddings": [[2, 3]]}),
                   Case((Input((3, 5)),), {"paddings": [[1, 0], [0, 2]], "pad_value": 1}),
                   Case((Input((2, 1, 6)),), {"paddings": [[0, 0], [1, 1], [3, 0]]}),
                   Case((Input((1,)),), {"paddings": [[0, 0]]}),
                   Case((Input(("S0", 5)),), {"paddings": [[1, 2], [0, 1]], "pad_value": 1})])))


# -- split ---------------------------------------------------------------------------------------------------
def split_sections(shape: Shape, num_or_sections: Sequence[int], axis: int,
                   method: str = "split") -> tuple[Dim, ...]:
    """The section extents along `axis`: `[n]` is n equal sections, a longer list the extents
    (one of them may be -1: the rest of the axis). A symbolic axis splits into equal sections
    only when the count provably divides it (`2 * S0` into 2, not `S0`)."""
    dim = shape[axis]
    if not num_or_sections:
        raise FrontendError(f"{method}: argument 'num_or_sections' must not be empty")
    if len(num_or_sections) == 1:
        n = num_or_sections[0]
        if n < 1:
            raise FrontendError(f"{method}: argument 'num_or_sections' = [{n}] must be a positive section "
                                "count")
        part = div_dims(dim, n)
        if part is None:
            raise FrontendError(f"{method}: axis {axis} of {fmt_shape(shape)} has extent {fmt_dim(dim)}, not "
                                f"divisible into {n} equal sections"
                                + ("" if isinstance(dim, int) else "; give the extents with one -1"))
        return (part,) * n
    return _explicit_sections(dim, tuple(num_or_sections), axis, shape, method)


def _explicit_sections(dim: Dim, sections: tuple[int, ...], axis: int, shape: Shape,
                       method: str) -> tuple[Dim, ...]:
    inferred = [k for k, s in enumerate(sections) if s == -1]
    bad = [s for s in sections if s < -1]
    if bad or len(inferred) > 1:
        raise FrontendError(f"{method}: argument 'num_or_sections' {list(sections)} must hold non-negative "
                            "extents and at most one -1")
    known = sum(s for s in sections if s != -1)
    if not inferred:
        if not dims_equal(dim, known):
            raise FrontendError(f"{method}: sections {list(sections)} sum to {known}, but axis {axis} of "
                                f"{fmt_shape(shape)} has extent {fmt_dim(dim)}")
        return sections
    rest: Dim = add_dims(dim, -known)
    if isinstance(rest, int) and rest < 0:
        raise FrontendError(f"{method}: sections {list(sections)} exceed the extent {fmt_dim(dim)} of axis "
                            f"{axis} "
                            f"of {fmt_shape(shape)}")
    return tuple(rest if s == -1 else s for s in sections)


def _split_section(shape: Shape, attrs: Attrs) -> tuple[Dim, Dim]:
    """(start, extent) of section `attrs["index"]` along `attrs["axis"]` of an input of `shape`."""
    sections = split_sections(shape, attrs["num_or_sections"], attrs["axis"])
    start: Dim = 0
    for s in sections[:attrs["index"]]:
        start = add_dims(start, s)
    return start, sections[attrs["index"]]


def _split_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, axis = ins[0], attrs["axis"]
    _, extent = _split_section(x.shape, attrs)
    return [TensorType(tuple(extent if a == axis else d for a, d in enumerate(x.shape)), x.dtype)]


def _split_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    start, extent = _split_section(x.shape, attrs)  # static: the array's shape
    index: list[Any] = [slice(None)] * x.ndim
    index[attrs["axis"]] = slice(start, start + extent)  # type: ignore[operator]
    return [x[tuple(index)].copy()]


def _split_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                   out_name: str) -> cdsl.ComputeTensor:
    x, axis = ins[0], attrs["axis"]
    start, _ = _split_section(frontend_dims(x), attrs)
    offset = not (isinstance(start, int) and start == 0)

    def body(*idx: Expr) -> Expr:
        return x[tuple(i + _idx_dim(start, i) if a == axis and offset else i for a, i in enumerate(idx))]

    return cdsl.compute(out.shape, body, out_name)


def _split_build(nb: Any, call: OpCall) -> list[Any]:
    """One `split` op per section, returned as a list (CINN returns std::vector<Variable>)."""
    x = nb.variable(call.args["x"], call.method, "x")
    axis = normalize_axis(call.args["axis"], x.ndim, call.method)
    sections = tuple(call.args["num_or_sections"])
    count = len(split_sections(x.shape, sections, axis, call.method))
    base = {"num_or_sections": sections, "axis": axis}
    return [nb.emit(call.op, (x,), {**base, "index": k}) for k in range(count)]


register(OpDef("split", _INJECTIVE, _split_infer, _split_numpy, _split_compute, fold=_first, arity=1,
               signature=Signature((tensor("x"), attr("num_or_sections", int_list), attr("axis", integer, 0)),
                                   build=_split_build,
                                   doc="Split `x` along `axis` into `num_or_sections` ([n]: n equal parts; "
                                       "else the extents, one may be -1); returns a list of Variables."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((6,)),), {"num_or_sections": [3]}),
                   Case((Input((3, 5)),), {"num_or_sections": [2, 3], "axis": 1}),
                   Case((Input((3, 5)),), {"num_or_sections": [1, -1, 1], "axis": -1}),
                   Case((Input((2, 1, 6)),), {"num_or_sections": [1], "axis": 1}),
                   Case((Input(("S0", 7)),), {"num_or_sections": [2, -1], "axis": 1}),
                   Case((Input(("S0", 5)),), {"num_or_sections": [1, -1], "axis": 0})])))


# -- slice_assign --------------------------------------------------------------------------------------------
def slice_assign_attrs(x: TensorType, assign: TensorType, axes: Sequence[int], starts: Sequence[int],
                       ends: Sequence[int], strides: Sequence[int]) -> dict[str, Any]:
    """`slice`'s attributes of the assigned region; `assign` must have the region's shape and
    `x`'s dtype."""
    try:
        at = slice_attrs(x, axes, starts, ends, strides or None)
    except (FrontendError, TypeError) as exc:
        raise FrontendError(f"slice_assign: {str(exc).split(': ', 1)[-1]}") from None
    if not shapes_equal(assign.shape, at["shape"]):
        raise FrontendError(f"slice_assign: argument 'assign' has shape {fmt_shape(assign.shape)}, but the "
                            "slice of "
                            f"{fmt_shape(x.shape)} it replaces has shape {fmt_shape(at['shape'])}")
    return {"axes": at["axes"], "starts": at["starts"], "ends": at["ends"], "strides": at["strides"],
            "_spec": at["spec"]}


def _slice_assign_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    check_same_dtypes("slice_assign", ins)
    return [ins[0]]


def _slice_assign_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x, assign = arrays
    out = x.copy()
    index: list[Any] = [slice(None)] * x.ndim
    for a, start, step in attrs["_spec"]:
        s = eval_dim(start, env)
        n = assign.shape[a]
        index[a] = slice(s, s + step * n if s + step * n >= 0 else None, step) if n else slice(0, 0)
    out[tuple(index)] = assign
    return [out]


def _slice_assign_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                          out_name: str) -> cdsl.ComputeTensor:
    """out[i] = assign[j] where i = start + j * step on every sliced axis with 0 <= j < extent,
    else x[i]; j is clamped so the assign load is in bounds whichever branch is taken."""
    x, assign = ins
    spec = {a: (start, step) for a, start, step in attrs["_spec"]}
    extents = frontend_dims(assign)

    def body(*idx: Expr) -> Expr:
        conds, index = [], []
        for a, i in enumerate(idx):
            if a not in spec:
                index.append(i)
                continue
            start, step = spec[a]
            offset = i - _idx_dim(start, i) if step > 0 else _idx_dim(start, i) - i
            stride = abs(step)
            j = offset if stride == 1 else offset // _idx_const(stride, i)
            last = _idx_dim(extents[a], i) - _idx_const(1, i)
            conds += [offset >= _idx_const(0, i), j <= last]
            if stride != 1:
                conds.append(EQ(offset % _idx_const(stride, i), _idx_const(0, i)))
            index.append(cdsl.minimum(cdsl.maximum(j, _idx_const(0, i)), last))
        if not conds:
            return assign[tuple(index)]
        cond = conds[0]
        for c in conds[1:]:
            cond = And(cond, c)
        return cdsl.select(cond, assign[tuple(index)], x[tuple(idx)])

    return cdsl.compute(out.shape, body, out_name)


def _slice_assign_sig_attrs(ins: Sequence[TensorType], at: Attrs) -> dict[str, Any]:
    return slice_assign_attrs(ins[0], ins[1], at["axes"], at["starts"], at["ends"], at["strides"])


register(OpDef("slice_assign", _INJECTIVE, _slice_assign_infer, _slice_assign_numpy, _slice_assign_compute,
               fold=_fold_uniform, arity=2,
               signature=Signature((tensor("x"), tensor("assign"), attr("axes", int_list),
                                    attr("starts", int_list),
                                    attr("ends", int_list), attr("strides", int_list, ())),
                                   attrs=_slice_assign_sig_attrs,
                                   doc="`x` with its slice (axes, starts, ends, strides as `slice`) replaced "
                                       "by "
                                       "`assign`."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((7,)), Input((4,))), {"axes": [0], "starts": [1], "ends": [5]}),
                   Case((Input((3, 5)), Input((3, 2))),
                        {"axes": [1], "starts": [4], "ends": [0], "strides": [-2]}),
                   Case((Input((3, 5)), Input((1, 2))), {"axes": [0, 1], "starts": [1, 0], "ends": [2, 5],
                                                        "strides": [1, 3]}),
                   Case((Input((1,)), Input((1,))), {"axes": [0], "starts": [0], "ends": [1]}),
                   Case((Input(("S0", 6)), Input(("S0", 3))), {"axes": [1], "starts": [0], "ends": [6],
                                                              "strides": [2]}),
                   Case((Input(("S0", 6)), Input((1, 6))),
                        {"axes": [0], "starts": [-1], "ends": [INT_MAX]})])))
