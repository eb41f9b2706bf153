"""Elementwise ops with attributes or several operands: `sign`, `reciprocal`, `identity`,
activations with parameters (`relu6`, `leaky_relu`, `clip`), `scale` and `dropout_infer`,
`cast`, `select`, `isclose`, the n-ary `sum` and `fill_constant`. The elementwise framework
(`_elementwise`, dtype classes, CINN's axis broadcasting) is `elementwise_base`.
"""

from __future__ import annotations

import math

from collections.abc import Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, is_variable, numpy_dtype, register,
)
from cinn_py.frontend.ops.elementwise_base import (
    ANY, BOOL, FLOAT, NUMERIC, _check_kind, _const, _elementwise, _np_fold, binary_operands,
    check_same_dtypes, check_same_shapes, fill_attrs, scalar_of,
)
from cinn_py.frontend.ops.shapes import eval_shape
from cinn_py.frontend.ops.signature import (
    OpCall, Signature, any_value, attr, boolean, dtype_arg, floating, number, one_of, operand, optional,
    string, tensor, tensors,
)
from cinn_py.frontend.ops.reference import cinn_maximum, cinn_minimum
from cinn_py.frontend.ops.testing import Case, Input, OpTest
from cinn_py.ir import And, DType, EQ, Expr, GE, GT, LE, LT, Or, bool_, const


def _sign(a: Expr) -> Expr:
    zero = const(0, a.dtype)
    if a.dtype.is_uint:
        return cdsl.select(GT(a, zero), const(1, a.dtype), zero)
    return cdsl.select(GT(a, zero), const(1, a.dtype), cdsl.select(LT(a, zero), const(-1, a.dtype), zero))


_elementwise("sign", 1, NUMERIC, lambda at, a: _sign(a), lambda at, a: np.sign(a))
_elementwise("reciprocal", 1, FLOAT, lambda at, a: const(1, a.dtype) / a,
             lambda at, a: np.ones((), a.dtype) / a,
             low=0.25, high=3.0)
_elementwise("identity", 1, ANY, lambda at, a: a, lambda at, a: a.copy())
_elementwise("relu6", 1, NUMERIC,
             lambda at, a: cdsl.minimum(cdsl.maximum(a, const(0, a.dtype)), const(at["threshold"], a.dtype)),
             lambda at, a: cinn_minimum(cinn_maximum(a, np.zeros((), a.dtype)),
                                        np.asarray(at["threshold"], a.dtype)),
             signature=Signature((tensor("a"), attr("threshold", number, 6.0)), attrs=lambda ins, at: {
                 "threshold": scalar_of(at["threshold"], ins[0].dtype, "relu6")},
                 doc="`min(max(a, 0), threshold)`."),
             test=OpTest(testing.NUMERIC, lambda d: [Case((Input(s, low=-8.0, high=8.0),), {"threshold": t})
                                                     for s in testing.SHAPES for t in (6, 3)]))
_elementwise("leaky_relu", 1, FLOAT,
             lambda at, a: cdsl.select(GE(a, const(0, a.dtype)), a, a * const(at["alpha"], a.dtype)),
             lambda at, a: np.where(a >= 0, a, a * np.asarray(at["alpha"], a.dtype)),
             signature=Signature((tensor("x"), attr("alpha", floating, 0.01)),
                                 doc="`x` if x >= 0 else `alpha * x`."),
             test=OpTest(testing.FLOATS, lambda d: [Case((Input(s),), {"alpha": al})
                                                    for s in testing.SHAPES for al in (0.01, 0.2)]))


def _clip_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    d = ins[0].dtype
    lo, hi = scalar_of(at["min"], d, "clip"), scalar_of(at["max"], d, "clip")
    if lo > hi:
        raise FrontendError(f"clip: argument 'min' ({lo}) must not exceed 'max' ({hi})")
    return {"min": lo, "max": hi}


_elementwise("clip", 1, NUMERIC,
             lambda at, a: cdsl.minimum(cdsl.maximum(a, const(at["min"], a.dtype)),
                                        const(at["max"], a.dtype)),
             lambda at, a: cinn_minimum(cinn_maximum(a, np.asarray(at["min"], a.dtype)),
                                        np.asarray(at["max"], a.dtype)),
             signature=Signature((tensor("x"), attr("min", number), attr("max", number)), attrs=_clip_attrs,
                                 doc="Clamp `x` to [min, max]."),
             test=OpTest(testing.NUMERIC,
                         lambda d: [Case((Input(s, low=-4.0, high=4.0),), {"min": -1, "max": 2})
                                                     for s in testing.SHAPES]))


def _scale_expr(at: Attrs, a: Expr) -> Expr:
    # CINN scale: bias_after_scale ? x * scale + bias : (x + bias) * scale
    s, b = _const(at, "scale", a), _const(at, "bias", a)
    return a * s + b if at["bias_after_scale"] else (a + b) * s


def _scale_np(at: Attrs, a: np.ndarray) -> np.ndarray:
    s, b = np.asarray(at["scale"], a.dtype), np.asarray(at["bias"], a.dtype)
    return a * s + b if at["bias_after_scale"] else (a + b) * s


def _scale_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    d = ins[0].dtype
    return {"scale": scalar_of(_in_dtype(at["scale"], d), d, "scale"),
            "bias": scalar_of(_in_dtype(at["bias"], d), d, "scale"),
            "bias_after_scale": at["bias_after_scale"]}


def _in_dtype(value: object, d: Any) -> object:
    """CINN (and Paddle) convert `scale` and `bias` to x's dtype: for an integer x a fractional
    value is truncated toward zero as C converts it (scale -0.1 is 0), not refused. A non-finite
    value stays as given (and is refused for an integer x)."""
    if d.is_int and isinstance(value, float) and math.isfinite(value):
        return float(math.trunc(value))
    return value


_elementwise("scale", 1, NUMERIC, _scale_expr, _scale_np, signature=Signature(
    (tensor("x"), attr("scale", number, 1.0), attr("bias", number, 0.0),
     attr("bias_after_scale", boolean, True)),
    attrs=_scale_attrs, doc="`x * scale + bias`, or `(x + bias) * scale` when not bias_after_scale."),
    test=OpTest(testing.NUMERIC, lambda d: [
        Case((Input(s),),
             {"scale": 2.0 if d.startswith("float") else 3, "bias": 1, "bias_after_scale": after})
        for s in testing.SHAPES for after in (True, False)]))


def _dropout_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    p = at["dropout_prob"]
    if not 0.0 <= p <= 1.0:
        raise FrontendError(f"dropout_infer: argument 'dropout_prob' must be in [0, 1], got {p}")
    # downgrade_in_infer: training dropped without rescaling, so inference scales by (1 - p);
    # upscale_in_train: training rescaled already, inference is the identity
    factor = 1.0 - p if at["dropout_implementation"] == "downgrade_in_infer" else 1.0
    return {"scale": scalar_of(factor, ins[0].dtype, "dropout_infer"),
            "bias": scalar_of(0, ins[0].dtype, "dropout_infer"),
            "bias_after_scale": True}


_elementwise("dropout_infer", 1, FLOAT, _scale_expr, _scale_np, signature=Signature(
    (tensor("x"), attr("dropout_prob", floating, 0.5),
     attr("dropout_implementation", one_of("downgrade_in_infer", "upscale_in_train"), "downgrade_in_infer")),
    attrs=_dropout_attrs, doc="Dropout at inference: `x * (1 - dropout_prob)` (downgrade_in_infer) or `x`."),
    test=OpTest(testing.FLOATS,
                lambda d: [Case((Input(s),), {"dropout_prob": 0.25, "dropout_implementation": impl})
                                           for s in testing.SHAPES for impl
                           in ("downgrade_in_infer", "upscale_in_train")]))


def _cast_result(t: TensorType, attrs: Attrs) -> DType:
    return attrs["dtype"]


_elementwise("cast", 1, ANY, lambda at, a: cdsl.cast(a, at["dtype"]),
             lambda at, a: a.astype(numpy_dtype(at["dtype"])), _cast_result,
             signature=Signature((tensor("x"), attr("dtype", dtype_arg))),
             test=OpTest(("float32", "float16", "bfloat16", "int32", "int64", "bool"), lambda d: [
                 Case((Input(s, low=-100.0, high=100.0),), {"dtype": to}) for s in ((7,), ("S0", 5))
                 for to in ("float32", "float16", "bfloat16", "int32", "int64", "bool", "float64")
                 if to != d]))


def _infer_select(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    check_same_shapes("select", ins)
    _check_kind("select", BOOL, ins[0], "condition")
    check_same_dtypes("select", ins[1:])
    return [TensorType(ins[1].shape, ins[1].dtype)]


def _select_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.where(arrays[0], arrays[1], arrays[2]).astype(arrays[1].dtype, copy=False)]


def _select_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    c, x, y = ins
    return cdsl.compute(out.shape, lambda *i: cdsl.select(c[i], x[i], y[i]), out_name)


def _select_build(nb: Any, call: OpCall) -> Any:
    """select(condition, true_value, false_value): the values may be Python numbers (of the other
    value's dtype); all three broadcast to one shape (numpy's rule)."""
    a = call.args
    c = nb.variable(a["condition"], call.method, "condition")
    values = [a["true_value"], a["false_value"]]
    like = next((v for v in values if is_variable(v)), None)
    if like is None:
        raise FrontendError(f"{call.method}: argument 'true_value' or 'false_value' must be a Variable, got "
                            f"{type(values[0]).__name__} and {type(values[1]).__name__}")
    vs = [nb.variable(v, call.method, what) if is_variable(v) else nb.constant_like(v, like, call.method)
          for v, what in zip(values, ("true_value", "false_value"))]
    return nb.emit(call.op, nb.operands(call.method, c, *vs))


register(OpDef("select", OpPatternKind.kElementWise, _infer_select, _select_numpy, _select_compute,
               fold=_np_fold(_select_numpy), arity=3,
               signature=Signature((tensor("condition"), operand("true_value"), operand("false_value")),
                                   build=_select_build),
               test=OpTest(("float32", "float16", "bfloat16", "int32", "bool"), lambda d: [
                   Case((Input(s, "bool"), Input(s), Input(s))) for s in testing.SHAPES] + [
                   Case((Input((3, 5), "bool"), Input((5,)), Input((3, 1))))])))


# -- isclose, sum ----------------------------------------------------------------------------------------
def _isclose_expr(at: Attrs, a: Expr, b: Expr) -> Expr:
    """`|a - b| <= atol + rtol * |b|` (numpy's isclose; equal infinities are close); NaNs are
    close to each other only under equal_nan."""
    close = Or(EQ(a, b),
               LE(cdsl.abs(a - b), const(at["atol"], a.dtype) + const(at["rtol"], a.dtype) * cdsl.abs(b)))
    return Or(close, And(cdsl.isnan(a), cdsl.isnan(b))) if at["equal_nan"] else close


def _isclose_build(nb: Any, call: OpCall) -> Any:
    a = call.args
    ins = binary_operands(nb, call.method, a["x"], a["y"], -1)
    return nb.emit(call.op, ins, {"rtol": a["rtol"], "atol": a["atol"], "equal_nan": a["equal_nan"]})


_elementwise("isclose", 2, FLOAT, _isclose_expr,
             lambda at, a, b: np.isclose(a, b, rtol=at["rtol"], atol=at["atol"], equal_nan=at["equal_nan"]),
             lambda t, at: bool_,
             signature=Signature((operand("x"), operand("y"), attr("rtol", floating, 1e-5),
                                  attr("atol", floating, 1e-8),
                                  attr("equal_nan", boolean, False)), build=_isclose_build,
                                 doc="Elementwise `|x - y| <= atol + rtol * |y|` (numpy.isclose)."),
             test=OpTest(("float32", "bfloat16", "float64"), lambda d: [
                 Case((Input(s, low=-1.0, high=1.0, specials=True), Input(s, low=-1.0, high=1.0)),
                      {"rtol": 0.5, "atol": 0.1, "equal_nan": en}) for s in testing.SHAPES for en
                 in (False, True)]))


def _sum_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    if not ins:
        raise FrontendError("sum: argument 'inputs' must name at least one Variable")
    check_same_shapes("sum", ins)
    check_same_dtypes("sum", ins)
    _check_kind("sum", NUMERIC, ins[0], "inputs")
    return [ins[0]]


def _sum_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    total = arrays[0].copy()
    for a in arrays[1:]:
        total = total + a
    return [total.astype(arrays[0].dtype, copy=False)]


def _sum_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                 out_name: str) -> cdsl.ComputeTensor:
    def body(*idx: Expr) -> Expr:
        total: Expr = ins[0][idx]
        for t in ins[1:]:
            total = total + t[idx]
        return total
    return cdsl.compute(out.shape, body, out_name)


register(OpDef("sum", OpPatternKind.kElementWise, _sum_infer, _sum_numpy, _sum_compute,
               fold=_np_fold(_sum_numpy),
               arity=None,
               signature=Signature((tensors("inputs"),), doc="Elementwise sum of equally shaped inputs."),
               test=OpTest(testing.NUMERIC, lambda d: [Case(([Input(s) for _ in range(n)],))
                                                       for s in testing.SHAPES for n in (1, 3)])))


# -- fill_constant ------------------------------------------------------------------------------------
def _infer_fill(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    return [TensorType(attrs["shape"], attrs["dtype"])]


def _fill_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.full(eval_shape(attrs["shape"], env), attrs["value"], dtype=numpy_dtype(attrs["dtype"]))]


def _fill_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                  out_name: str) -> cdsl.ComputeTensor:
    return cdsl.compute(out.shape, lambda *i: const(attrs["value"], attrs["dtype"]), out_name)


def _fill_build(nb: Any, call: OpCall) -> Any:
    """fill_constant(shape, value, name, dtype, force_cpu): without `dtype`, the value's Python
    type picks it (bool, int -> int32, float -> float32), as CINN's typed overloads do."""
    a = call.args
    value, dtype = a["value"], a["dtype"]
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    name = a["name"] or None
    return nb.emit(call.op, (), fill_attrs(a["shape"], value, dtype), name)


register(OpDef("fill_constant", OpPatternKind.kElementWise, _infer_fill, _fill_numpy, _fill_compute,
               arity=0, signature=Signature(
                   (attr("shape", any_value), attr("value", number), attr("name", string, ""),
                    attr("dtype", optional(dtype_arg), None), attr("force_cpu", boolean, False)),
                   build=_fill_build, doc="A tensor of `shape` filled with `value`."),
               test=OpTest(("float32", "float16", "bfloat16", "int32", "int64", "bool"), lambda d: [
                   Case((shape, 1 if d == "bool" else 3), {"dtype": d}) for shape
                   in ([1], [7], [3, 5], [])])))
