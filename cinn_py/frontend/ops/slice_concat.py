"""Data-movement ops that select parts of their operands (kInjective): `slice` (Python slicing on
static dims, stride 1 from the end on symbolic ones) and `concat`. `concat` reads every operand with
clamped indices and selects the right one, so no branch ever reads out of bounds, whichever way
a backend evaluates `select`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, Dim, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.elementwise_base import check_same_dtypes
from cinn_py.frontend.ops.injective import INT_MAX, MOVE_DTYPES, _first, _index_const, _like
from cinn_py.frontend.ops.signature import OpCall, Signature, attr, int_list, integer, tensor, tensors
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.frontend.ops.shapes import (
    add_dims, dims_equal, eval_dim, eval_shape, fmt_dim, fmt_shape, normalize_axis, simplify_dim,
)
from cinn_py.ir import Expr, IntImm, as_expr


# -- slice -----------------------------------------------------------------------------------------------
def slice_attrs(x: TensorType, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                strides: Sequence[int] | None) -> dict[str, Any]:
    """Per sliced axis (start, stride, extent). Static dims follow Python slicing (negative
    indices, clamping). On a symbolic dim only stride 1 is accepted, with negative start/end taken
    from the end and `end >= 2^31 - 1` meaning "to the end"; a non-negative start/end cannot be
    checked against an unknown extent, so it is rejected (except start 0)."""
    strides = [1] * len(axes) if strides is None else list(strides)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise FrontendError(f"slice: axes, starts, ends and strides must have one length, got "
                            f"{len(axes)}, {len(starts)}, {len(ends)}, {len(strides)}")
    norm = [normalize_axis(a, x.ndim, "slice") for a in axes]
    if len(set(norm)) != len(norm):
        raise FrontendError(f"slice: axes {list(axes)} name an axis twice")
    spec: dict[int, tuple[Dim, int, Dim]] = {}
    for a, s, e, st in zip(norm, starts, ends, strides):
        for what, v in (("start", s), ("end", e), ("stride", st)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"slice: {what} must be an int, got {type(v).__name__}")
        if st == 0:
            raise FrontendError("slice: stride must not be 0")
        dim = x.shape[a]
        spec[a] = _static_slice(dim, int(s), int(e), int(st)) if isinstance(dim, int) \
            else _symbolic_slice(dim, int(s), int(e), int(st), a)
    out = tuple(spec[a][2] if a in spec else d for a, d in enumerate(x.shape))
    return {"spec": tuple(sorted((a, st, step) for a, (st, step, _) in spec.items())), "shape": out,
            "axes": tuple(norm), "starts": tuple(starts), "ends": tuple(ends), "strides": tuple(strides)}


def _static_slice(dim: int, s: int, e: int, st: int) -> tuple[Dim, int, Dim]:
    start, stop, step = slice(s, e, st).indices(dim)
    return start, step, len(range(start, stop, step))


def _symbolic_slice(dim: Expr, s: int, e: int, st: int, axis: int) -> tuple[Dim, int, Dim]:
    if st != 1:
        raise FrontendError(f"slice: axis {axis} has the symbolic extent {fmt_dim(dim)}; only stride 1 is "
                            f"supported there, got {st}")
    if s > 0 or (e >= 0 and e < INT_MAX):
        raise FrontendError(f"slice: axis {axis} has the symbolic extent {fmt_dim(dim)}; a non-negative "
                            "start "
                            f"or end ({s}:{e}) cannot be checked against it; index from the end "
                            "(negative values) or slice to the end (end = 2^31 - 1)")
    start: Dim = 0 if s == 0 else add_dims(dim, s)
    stop: Dim = dim if e >= INT_MAX else add_dims(dim, e)
    return start, 1, simplify_dim(as_expr(stop, None) - as_expr(start, None)) if not isinstance(stop, int) \
        or not isinstance(start, int) else stop - start


def _slice_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    return [TensorType(tuple(attrs["shape"]), ins[0].dtype)]


def _slice_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    out_shape = eval_shape(attrs["shape"], env)
    index: list[Any] = [slice(None)] * x.ndim
    for a, start, step in attrs["spec"]:
        s = eval_dim(start, env)
        stop = s + step * out_shape[a]
        # a negative step that reaches index 0 stops at -1, which numpy would read as the last index
        index[a] = slice(s, stop if stop >= 0 else None, step) if out_shape[a] > 0 else slice(0, 0)
    return [x[tuple(index)].copy()]


def _slice_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                   out_name: str) -> cdsl.ComputeTensor:
    x = ins[0]
    spec = {a: (start, step) for a, start, step in attrs["spec"]}

    def body(*idx: Expr) -> Expr:
        index = []
        for a, i in enumerate(idx):
            if a not in spec:
                index.append(i)
                continue
            start, step = spec[a]
            e = i * step if step != 1 else i
            index.append(e + start if not (isinstance(start, int) and start == 0) else e)
        return x[tuple(index)]

    return cdsl.compute(out.shape, body, out_name)


def _slice_build(nb: Any, call: OpCall) -> Any:
    """CINN slice: `strides` empty means 1; `decrease_axis` drops the listed (extent-1) axes of the
    result (a reshape; all dropped leaves shape [1], as CINN). `infer_flags` is accepted and
    ignored (Paddle's marker for starts/ends known only at run time)."""
    a = call.args
    x = nb.variable(a["x"], call.method, "x")
    strides = a["strides"] or None
    out = nb.emit(call.op, (x,), slice_attrs(x.type, a["axes"], a["starts"], a["ends"], strides))
    drop = {normalize_axis(d, out.ndim, call.method, "decrease_axis entry") for d in a["decrease_axis"]}
    if not drop:
        return out
    for d in sorted(drop):
        if not (isinstance(out.shape[d], int) and out.shape[d] == 1):
            raise FrontendError(f"{call.method}: decrease_axis names axis {d}, whose sliced extent is "
                                f"{fmt_dim(out.shape[d])}, expected 1")
    keep = [dim for k, dim in enumerate(out.shape) if k not in drop]
    return nb.reshape(out, keep or [1])


register(OpDef("slice", OpPatternKind.kInjective, _slice_infer, _slice_numpy, _slice_compute,
               fold=_first, arity=1,
               signature=Signature((tensor("x"), attr("axes", int_list), attr("starts", int_list),
                                    attr("ends", int_list), attr("infer_flags", int_list, ()),
                                    attr("strides", int_list, ()), attr("decrease_axis", int_list, ())),
                                   build=_slice_build),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((7,)),), {"axes": [0], "starts": [1], "ends": [6]}),
                   Case((Input((3, 5)),), {"axes": [1], "starts": [4], "ends": [0], "strides": [-2]}),
                   Case((Input((3, 5)),), {"axes": [0, 1], "starts": [1, -3], "ends": [2, 100],
                                           "decrease_axis": [0]}),
                   Case((Input(("S0", 6)),), {"axes": [1], "starts": [0], "ends": [6], "strides": [2]}),
                   Case((Input(("S0", 6)),), {"axes": [0], "starts": [-1], "ends": [INT_MAX]})])))


# -- concat ---------------------------------------------------------------------------------------------
def _concat_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    if not ins:
        raise FrontendError("concat: needs at least one operand")
    first = ins[0]
    axis = attrs["axis"]
    check_same_dtypes("concat", ins)
    total: Dim = 0
    for k, t in enumerate(ins):
        if t.ndim != first.ndim:
            raise FrontendError(f"concat: operand {k} has rank {t.ndim} but operand 0 has rank {first.ndim}")
        for d, (a, b) in enumerate(zip(first.shape, t.shape)):
            if d != axis and not dims_equal(a, b):
                raise FrontendError(f"concat: operand {k} {fmt_shape(t.shape)} differs from operand 0 "
                                    f"{fmt_shape(first.shape)} at axis {d}: {fmt_dim(b)} vs {fmt_dim(a)} "
                                    f"(only the concat axis {axis} may differ)")
        total = add_dims(total, t.shape[axis])
    shape = tuple(total if d == axis else s for d, s in enumerate(first.shape))
    return [TensorType(shape, first.dtype)]


def _concat_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.concatenate(list(arrays), axis=attrs["axis"])]


def _concat_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    axis = attrs["axis"]

    def body(*idx: Expr) -> Expr:
        i = idx[axis]
        extents = [_like(t.shape[axis], i) for t in ins]
        offsets: list[Expr] = []
        acc: Expr = _index_const(0, i)
        for ext in extents:
            offsets.append(acc)
            acc = acc + ext
        value: Expr | None = None
        for t, off, ext in reversed(list(zip(ins, offsets, extents))):
            local = i - off if not (isinstance(off, IntImm) and off.value == 0) else i
            clamped = cdsl.minimum(cdsl.maximum(local, _index_const(0, i)), ext - 1)
            index = tuple(clamped if d == axis else e for d, e in enumerate(idx))
            load = t[index]
            value = load if value is None else cdsl.select(i < off + ext, load, value)
        return value  # type: ignore[return-value]

    return cdsl.compute(out.shape, body, out_name)


def _concat_fold(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
    return values[0] if all(v == values[0] for v in values) else None


register(OpDef("concat", OpPatternKind.kInjective, _concat_infer, _concat_numpy, _concat_compute,
               fold=_concat_fold, arity=None,
               signature=Signature((tensors("xs"), attr("axis", integer, 0)),
                                   attrs=lambda ins, at: {"axis": normalize_axis(at["axis"], ins[0].ndim,
                                                                                 "concat")}),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case(([Input((2, 5)), Input((3, 5))],), {"axis": 0}),
                   Case(([Input((3, 1)), Input((3, 4)), Input((3, 2))],), {"axis": -1}),
                   Case(([Input(("S0", 2)), Input(("S0", 3))],), {"axis": 1}),
                   Case(([Input((7,))],), {})])))
