"""Shape-manipulation ops with CINN's NetBuilder names (kInjective): `squeeze`, `expand_dims`,
`reverse` (`flip`), `tile`, `repeat`, `pad`, `split`, `slice_assign`.

Each output element reads one input element through an index map, so every op here fuses with
elementwise and injective neighbours (CINN registers squeeze/expand_dims as ElementWise because
there they only re-label a buffer; here they compute their elements, so they are injective like
`reshape`). Reads are always in bounds: `pad` and `slice_assign` select between two loads whose
indices are clamped, as `concat` does.

`split` has several results; an `Operator` has one, so `nb.split` adds one `split` op per
section (attribute `index`), each an independent slice that fuses with its own consumers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, Dim, FrontendError, OpDef, OpPatternKind, Shape, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.elementwise_base import check_same_dtypes, scalar_of
from cinn_py.frontend.ops.injective import INT_MAX, MOVE_DTYPES, slice_attrs
from cinn_py.frontend.ops.reduce import frontend_dims
from cinn_py.frontend.ops.shapes import (
    add_dims, dims_equal, div_dims, eval_dim, fmt_dim, fmt_shape, mul_dims, normalize_axis,
    shapes_equal,
)
from cinn_py.frontend.ops.signature import (OpCall, Signature, any_value, attr, int_list, integer,
                                            tensor)
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import EQ, And, Expr, IntImm, const

_INJECTIVE = OpPatternKind.kInjective


def _first(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
    return values[0]


def _same_scalar(a: Any, b: Any) -> bool:
    """Whether two uniform values are the same bits' worth (-0.0 is not 0.0; NaN is NaN)."""
    return type(a) is type(b) and repr(a) == repr(b)


def _fold_uniform(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
    """slice_assign of uniform operands: uniform when both hold the same value."""
    return values[0] if _same_scalar(values[0], values[1]) else None


def _pad_fold(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
    return values[0] if _same_scalar(values[0], attrs["pad_value"]) else None


def _idx_const(value: int, like: Expr) -> Expr:
    return const(value, like.dtype)


def _idx_dim(dim: Any, like: Expr) -> Expr:
    """A tensor dim (int, IntImm or symbolic expr) as an expression in the loop index's dtype."""
    if isinstance(dim, IntImm):
        return const(dim.value, like.dtype)
    return const(dim, like.dtype) if isinstance(dim, int) else dim


def _unique_axes(method: str, axes: Sequence[int], rank: int, arg: str = "axes") -> tuple[int, ...]:
    norm = [normalize_axis(a, rank, method, f"argument '{arg}' entry") for a in axes]
    if len(set(norm)) != len(norm):
        raise FrontendError(f"{method}: argument '{arg}' {list(axes)} names the same axis twice")
    return tuple(sorted(norm))


# -- squeeze / expand_dims: remove or insert unit axes -------------------------------------------------------
def _unit_axes_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                       out_name: str) -> cdsl.ComputeTensor:
    """Output index -> input index for an op that only removes (`squeeze`: input axes
    `attrs["axes"]`) or inserts (`expand_dims`: output axes `attrs["axes"]`) extent-1 axes."""
    x, axes = ins[0], set(attrs["axes"])
    squeeze = attrs["_kind"] == "squeeze"

    def body(*idx: Expr) -> Expr:
        if not squeeze:
            return x[tuple(i for a, i in enumerate(idx) if a not in axes)]
        rest = iter(idx)
        like = idx[0] if idx else x.shape[0]
        return x[tuple(_idx_const(0, like) if a in axes else next(rest) for a in range(x.ndim))]

    return cdsl.compute(out.shape, body, out_name)


def squeeze_axes(x: TensorType, axes: Sequence[int], method: str = "squeeze") -> tuple[int, ...]:
    """The axes `squeeze` removes: the listed ones (each must be a static 1), or with none listed
    every static extent-1 axis (a symbolic dim is never removed: its value is unknown)."""
    if not axes:
        return tuple(a for a, d in enumerate(x.shape) if isinstance(d, int) and d == 1)
    norm = _unique_axes(method, axes, x.ndim)
    for a in norm:
        if not (isinstance(x.shape[a], int) and x.shape[a] == 1):
            raise FrontendError(f"{method}: argument 'axes' names axis {a} of {fmt_shape(x.shape)}, whose "
                                "extent is "
                                f"{fmt_dim(x.shape[a])}, expected 1")
    return norm


def _squeeze_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, axes = ins[0], attrs["axes"]
    return [TensorType(tuple(d for a, d in enumerate(x.shape) if a not in axes), x.dtype)]


def _squeeze_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.squeeze(arrays[0], axis=tuple(attrs["axes"])).copy()]


register(OpDef("squeeze", _INJECTIVE, _squeeze_infer, _squeeze_numpy, _unit_axes_compute,
               fold=_first, arity=1,
               signature=Signature((tensor("a"), attr("axes", int_list, ())),
                                   attrs=lambda ins, at: {"axes": squeeze_axes(ins[0], at["axes"]),
                                                          "_kind": "squeeze"},
                                   doc="Remove the extent-1 axes `axes` (default: every static extent-1 "
                                       "axis)."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((2, 1, 6)),), {}), Case((Input((1, 7, 1)),), {"axes": [-1]}),
                   Case((Input((1,)),), {}), Case((Input(("S0", 1, 5)),), {"axes": [1]}),
                   Case((Input((3, 5)),), {})])))


def expand_dims_axes(x: TensorType, axes: Sequence[int], method: str = "expand_dims") -> tuple[int, ...]:
    """Positions of the new axes in the output (rank x.ndim + len(axes)), as numpy.expand_dims."""
    if not axes:
        raise FrontendError(f"{method}: argument 'axes' must name at least one new axis, got []")
    return _unique_axes(method, axes, x.ndim + len(axes))


def _expand_dims_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, axes = ins[0], attrs["axes"]
    rest = iter(x.shape)
    return [TensorType(tuple(1 if a in axes else next(rest) for a in range(x.ndim + len(axes))), x.dtype)]


def _expand_dims_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.expand_dims(arrays[0], tuple(attrs["axes"])).copy()]


register(OpDef("expand_dims", _INJECTIVE, _expand_dims_infer, _expand_dims_numpy, _unit_axes_compute,
               fold=_first,
               arity=1,
               signature=Signature((tensor("x"), attr("axes", int_list)),
                                   attrs=lambda ins, at: {"axes": expand_dims_axes(ins[0], at["axes"]),
                                                          "_kind": "expand_dims"},
                                   doc="Insert extent-1 axes at the output positions `axes` "
                                       "(numpy.expand_dims)."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((7,)),), {"axes": [0]}), Case((Input((3, 5)),), {"axes": [1, -1]}),
                   Case((Input((1,)),), {"axes": [0, 1]}), Case((Input(("S0", 5)),), {"axes": [0, 2]})])))


# -- reverse / flip ------------------------------------------------------------------------------------------
def _reverse_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    return [ins[0]]


def _reverse_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.flip(arrays[0], tuple(attrs["axis"])).copy()]


def _reverse_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                     out_name: str) -> cdsl.ComputeTensor:
    x, axes = ins[0], set(attrs["axis"])

    def body(*idx: Expr) -> Expr:
        return x[tuple(_idx_dim(x.shape[a], i) - _idx_const(1, i) - i if a in axes else i
                       for a, i in enumerate(idx))]

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("reverse", _INJECTIVE, _reverse_infer, _reverse_numpy, _reverse_compute, fold=_first, arity=1,
               signature=Signature((tensor("x"), attr("axis", int_list)), methods=("reverse", "flip"),
                                   attrs=lambda ins, at: {"axis": _unique_axes("reverse", at["axis"],
                                                                               ins[0].ndim, "axis")},
                                   doc="Reverse the order of elements along the axes `axis` (`flip` is the "
                                       "same op)."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((7,)),), {"axis": [0]}), Case((Input((3, 5)),), {"axis": [0, 1]}),
                   Case((Input((2, 1, 6)),), {"axis": [-1, 1]}), Case((Input(("S0", 5)),), {"axis": [0]}),
                   Case((Input(("S0", 5)),), {"axis": [1]}, method="flip")])))


# -- tile ----------------------------------------------------------------------------------------------------
def tile_attrs(x: TensorType, repeat_times: Sequence[int], method: str = "tile") -> dict[str, Any]:
    """Paddle's tile: `repeat_times` shorter than the rank is padded with leading 1s; longer, the
    input gets leading extent-1 axes (`rank` is the output rank)."""
    if not repeat_times:
        raise FrontendError(f"{method}: argument 'repeat_times' must not be empty")
    for k, r in enumerate(repeat_times):
        if r < 1:
            raise FrontendError(f"{method}: argument 'repeat_times'[{k}] must be >= 1, got {r}")
    rank = max(x.ndim, len(repeat_times))
    return {"repeat_times": (1,) * (rank - len(repeat_times)) + tuple(repeat_times)}


def _tile_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, reps = ins[0], attrs["repeat_times"]
    shape = (1,) * (len(reps) - x.ndim) + tuple(x.shape)
    return [TensorType(tuple(mul_dims(d, r) for d, r in zip(shape, reps)), x.dtype)]


def _tile_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.tile(arrays[0], attrs["repeat_times"])]


def _tile_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                  out_name: str) -> cdsl.ComputeTensor:
    x, reps = ins[0], attrs["repeat_times"]
    src = frontend_dims(x)
    lead = len(reps) - x.ndim

    def body(*idx: Expr) -> Expr:
        index = []
        for d, dim in enumerate(src):
            i, r = idx[lead + d], reps[lead + d]
            unit = isinstance(dim, int) and dim == 1
            index.append(i if r == 1 else _idx_const(0, i) if unit else i % _idx_dim(dim, i))
        return x[tuple(index)]

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("tile", _INJECTIVE, _tile_infer, _tile_numpy, _tile_compute, fold=_first, arity=1,
               signature=Signature((tensor("x"), attr("repeat_times", int_list)),
                                   attrs=lambda ins, at: tile_attrs(ins[0], at["repeat_times"]),
                                   doc="Repeat `x` `repeat_times[d]` times along each axis d (numpy.tile)."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((7,)),), {"repeat_times": [3]}),
                   Case((Input((3, 5)),), {"repeat_times": [2, 1]}),
                   Case((Input((2, 1, 6)),), {"repeat_times": [3, 1]}),
                   Case((Input((1,)),), {"repeat_times": [2, 5]}),
                   Case((Input(("S0", 5)),), {"repeat_times": [2, 3]})])))


# -- repeat --------------------------------------------------------------------------------------------------
def _repeat_attrs(x: TensorType, repeats: int, axis: int, method: str = "repeat") -> dict[str, Any]:
    if repeats < 1:
        raise FrontendError(f"{method}: argument 'repeats' must be >= 1, got {repeats}")
    return {"repeats": repeats, "axis": normalize_axis(axis, x.ndim, method, "argument 'axis'")}


def _repeat_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x, axis = ins[0], attrs["axis"]
    return [TensorType(tuple(mul_dims(d, attrs["repeats"]) if a == axis else d for a,
                             d in enumerate(x.shape)),
                       x.dtype)]


def _repeat_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.repeat(arrays[0], attrs["repeats"], axis=attrs["axis"])]


def _repeat_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    x, axis, reps = ins[0], attrs["axis"], attrs["repeats"]

    def body(*idx: Expr) -> Expr:
        return x[tuple(i // _idx_const(reps, i) if a == axis and reps != 1 else i for a, i in enumerate(idx))]

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("repeat", _INJECTIVE, _repeat_infer, _repeat_numpy, _repeat_compute, fold=_first, arity=1,
               signature=Signature((tensor("x"), attr("repeats", integer), attr("axis", integer)),
                                   attrs=lambda ins, at: _repeat_attrs(ins[0], at["repeats"], at["axis"]),
                                   doc="Repeat every element `repeats` times along `axis` (numpy.repeat)."),
               test=OpTest(MOVE_DTYPES, lambda d: [
                   Case((Input((7,)),), {"repeats": 2, "axis": 0}),
                   Case((Input((3, 5)),), {"repeats": 3, "axis": 1}),
                   Case((Input((2, 1, 6)),), {"repeats": 1, "axis": -2}),
                   Case((Input(("S0", 5)),), {"repeats": 2, "axis": 0})])))


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
