"""Shape-manipulation ops with CINN's NetBuilder names (kInjective): `squeeze`, `expand_dims`,
`reverse` (`flip`), `tile`, `repeat`, and the index helpers shared with `manipulation_region`
(`pad`, `split`, `slice_assign`).

Each output element reads one input element through an index map, so every op here fuses with
elementwise and injective neighbours (CINN registers squeeze/expand_dims as ElementWise because
there they only re-label a buffer; here they compute their elements, so they are injective like
`reshape`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, register,
)
from cinn_py.frontend.ops.injective import MOVE_DTYPES
from cinn_py.frontend.ops.reduce import frontend_dims
from cinn_py.frontend.ops.shapes import fmt_dim, fmt_shape, mul_dims, normalize_axis
from cinn_py.frontend.ops.signature import Signature, attr, int_list, integer, tensor
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import Expr, IntImm, const

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


def _axis_set(method: str, axes: Sequence[int], rank: int, arg: str) -> tuple[int, ...]:
    """The axes as a set (sorted): CINN's reverse and Paddle's flip mark each named axis once, so
    `[2, -1, 3]` on rank 4 reverses axes 2 and 3 (CINN's test_reverse_op.py checks exactly that)."""
    return tuple(sorted({normalize_axis(a, rank, method, f"argument '{arg}' entry") for a in axes}))


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
                                   attrs=lambda ins, at: {"axis": _axis_set("reverse", at["axis"],
                                                                            ins[0].ndim, "axis")},
                                   doc="Reverse the order of elements along the axes `axis` (`flip` is the "
                                       "same op; an axis named twice is reversed once, as in CINN)."),
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
