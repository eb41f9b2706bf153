"""Composite ops: `softmax`, `rms_norm`, `layer_norm`, `gelu`.

They exist in a built `Program` with their shape rules and numpy semantics (so the un-decomposed
program is the oracle of its decomposition) but have no compute: `decompose.py` rewrites them
into primitive ops before fusion, as Paddle's prim system does for CINN. Their `OpPatternKind`
is CINN's registration (softmax NonFusible in old CINN, gelu ElementWise); it never reaches
fusion.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, check_operand_dtype, register,
)
from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.shapes import fmt_shape, normalize_axes, normalize_axis, shapes_equal
from cinn_py.frontend.ops.signature import (Signature, attr, boolean, floating, int_list, integer, one_of,
                                            tensor)
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.interp import math_fns


def _check_float(op: str, t: TensorType, what: str = "x") -> None:
    check_operand_dtype(op, what, t.dtype, "floating-point")


# -- softmax ------------------------------------------------------------------------------------------
def _softmax_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    _check_float("softmax", ins[0])
    return [ins[0]]


def _softmax_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    axes = tuple(attrs["axes"])
    e = np.exp(x - np.max(x, axis=axes, keepdims=True))
    return [(e / np.sum(e, axis=axes, keepdims=True)).astype(x.dtype, copy=False)]


def _softmax_attrs(ins: Sequence[TensorType], at: Attrs) -> dict[str, Any]:
    """CINN softmax(x, axes=[-1], mode, data_format): `mode` ("fast"/"accurate") and the layout
    do not change the result here (both subtract the max)."""
    if not at["axes"]:
        raise FrontendError("softmax: argument 'axes' must name at least one axis, got []")
    return {"axes": normalize_axes(list(at["axes"]), ins[0].ndim, "softmax")}


register(OpDef("softmax", OpPatternKind.kNonFusible, _softmax_infer, _softmax_numpy, composite=True, arity=1,
               signature=Signature((tensor("x"), attr("axes", int_list, (-1,)),
                                    attr("mode", one_of("fast", "accurate"), "fast"),
                                    attr("data_format", one_of("AnyLayout", "NCHW", "NHWC"), "AnyLayout")),
                                   attrs=_softmax_attrs),
               test=OpTest(testing.FLOATS, lambda d: [
                   Case((Input(s, low=-4.0, high=4.0),), {"axes": axes})
                   for s, axes in (((7,), [-1]), ((3, 5), [0]), ((2, 1, 6), [1, 2]), (("S0", 5), [-1]),
                                   ((1, 5), [-1]))])))


# -- gelu -------------------------------------------------------------------------------------------------
def _gelu_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    _check_float("gelu", ins[0])
    return [ins[0]]


def _gelu_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0].astype(np.float64)
    if attrs["approximate"]:
        y = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        y = 0.5 * x * (1.0 + math_fns.erf(x / math.sqrt(2.0)))
    return [y.astype(arrays[0].dtype)]


register(OpDef("gelu", OpPatternKind.kElementWise, _gelu_infer, _gelu_numpy, composite=True, arity=1,
               signature=Signature((tensor("x"), attr("approximate", boolean, False)),
                                   doc="GELU: `x * (0.5 + 0.5 * erf(x / sqrt(2)))`, or the tanh "
                                       "approximation."),
               test=OpTest(testing.FLOATS,
                           lambda d: [Case((Input(s, low=-4.0, high=4.0),), {"approximate": ap})
                                                      for s in testing.SHAPES for ap in (False, True)],
                           rtol=1e-5, atol=1e-5)))


# -- rms_norm / layer_norm ------------------------------------------------------------------------------
def _norm_infer(op: str, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    x = ins[0]
    _check_float(op, x)
    begin = attrs["begin_norm_axis"]
    norm_shape = x.shape[begin:]
    for k, (w, label) in enumerate(zip(ins[1:], attrs["param_names"])):
        if w.dtype != x.dtype:
            raise FrontendError(f"{op}: {label} has dtype {w.dtype} but x has {x.dtype}")
        if not shapes_equal(w.shape, norm_shape):
            raise FrontendError(f"{op}: {label} has shape {fmt_shape(w.shape)} but the normalized dims of x "
                                f"{fmt_shape(x.shape)} from axis {begin} are {fmt_shape(norm_shape)}")
    return [x]


def _norm_axes(x: np.ndarray, attrs: Attrs) -> tuple[int, ...]:
    return tuple(range(attrs["begin_norm_axis"], x.ndim))


def _rms_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    ms = np.mean(x * x, axis=_norm_axes(x, attrs), keepdims=True)
    y = x / np.sqrt(ms + np.asarray(attrs["eps"], x.dtype))
    if len(arrays) > 1:
        y = y * arrays[1]
    return [y.astype(x.dtype, copy=False)]


def _layer_norm_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    x = arrays[0]
    axes = _norm_axes(x, attrs)
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + np.asarray(attrs["eps"], x.dtype))
    params = dict(zip(attrs["param_names"], arrays[1:]))
    if "gamma" in params:
        y = y * params["gamma"]
    if "beta" in params:
        y = y + params["beta"]
    return [y.astype(x.dtype, copy=False)]


def _norm_attrs(op: str) -> Callable[[Sequence[TensorType], dict[str, Any]], dict[str, Any]]:
    def attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
        return {"eps": at["eps"], "begin_norm_axis": normalize_axis(at["begin_norm_axis"], ins[0].ndim, op,
                                                                      "begin_norm_axis"),
                "param_names": at["param_names"]}
    return attrs


def _norm_cases(params: tuple[str, ...]) -> Callable[[str], list[Case]]:
    def cases(dtype: str) -> list[Case]:
        out = []
        for shape, begin in (((7,), -1), ((3, 5), -1), ((2, 3, 4), 1), (("S0", 6), -1), ((4, 1), -1)):
            norm = shape[begin:] if begin >= 0 else shape[len(shape) + begin:]
            for k in range(len(params) + 1):
                kwargs: dict[str, Any] = {"begin_norm_axis": begin}
                kwargs.update({p: Input(norm, low=0.5, high=1.5) for p in params[:k]})
                out.append(Case((Input(shape),), kwargs))
        return out
    return cases


register(OpDef("rms_norm", OpPatternKind.kNonFusible, lambda ins, at: _norm_infer("rms_norm", ins, at),
               _rms_numpy, composite=True, arity=None,
               signature=Signature((tensor("x"), tensor("weight", optional=True), attr("eps", floating, 1e-6),
                                    attr("begin_norm_axis", integer, -1)), attrs=_norm_attrs("rms_norm"),
                                   doc="`x / sqrt(mean(x^2 over axes >= begin_norm_axis) + eps) * weight`."),
               test=OpTest(testing.FLOATS, _norm_cases(("weight",)), rtol=1e-4, atol=1e-5)))
register(OpDef("layer_norm", OpPatternKind.kNonFusible, lambda ins, at: _norm_infer("layer_norm", ins, at),
               _layer_norm_numpy, composite=True, arity=None,
               signature=Signature((tensor("x"), tensor("gamma", optional=True),
                                    tensor("beta", optional=True),
                                    attr("eps", floating, 1e-5), attr("begin_norm_axis", integer, -1)),
                                   attrs=_norm_attrs("layer_norm"),
                                   doc="`(x - mean) / sqrt(var + eps) * gamma + beta` over the axes >= "
                                       "begin_norm_axis."),
               test=OpTest(testing.FLOATS, _norm_cases(("gamma", "beta")), rtol=1e-4, atol=1e-5)))
