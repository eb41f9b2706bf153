"""Elementwise ops (kElementWise): arithmetic, math functions, comparisons, cast, select, scale,
fill_constant.

Operands of an elementwise op have the output's shape: `NetBuilder` makes numpy-style
broadcasting explicit by inserting `broadcast_to` ops first (as CINN's PIR frontend inserts
`cinn_op.broadcast`). Mixed dtypes are never promoted implicitly (CINN and the compute DSL
require an explicit `cast`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, check_dtype, register,
)
from cinn_py.frontend.ops.shapes import eval_shape, fmt_shape, shapes_equal, to_dim
from cinn_py.interp import math_fns
from cinn_py.ir import And, DType, EQ, Expr, GE, GT, LE, LT, Minus, NE, Not, Or, bool_, const, dtype_of

ExprFn = Callable[..., Expr]
NpFn = Callable[..., Any]

# dtype classes an op accepts
FLOAT, NUMERIC, BOOL, ANY = "floating-point", "numeric", "bool", "any"


def _accepts(kind: str, d: DType) -> bool:
    if kind == FLOAT:
        return d.is_float
    if kind == NUMERIC:
        return not d.is_bool
    if kind == BOOL:
        return d.is_bool
    return True


def check_same_shapes(op: str, ins: Sequence[TensorType]) -> None:
    for t in ins[1:]:
        if not shapes_equal(t.shape, ins[0].shape):
            raise FrontendError(f"{op}: operand shapes {fmt_shape(ins[0].shape)} and {fmt_shape(t.shape)} "
                                "differ; elementwise operands must have one shape (broadcast_to first)")


def check_same_dtypes(op: str, ins: Sequence[TensorType]) -> None:
    for t in ins[1:]:
        if t.dtype != ins[0].dtype:
            raise FrontendError(f"{op}: operands have different dtypes {ins[0].dtype} and {t.dtype}; "
                                "insert an explicit cast")


def _check_kind(op: str, kind: str, t: TensorType, what: str = "operand") -> None:
    if not _accepts(kind, t.dtype):
        raise FrontendError(f"{op}: needs a {kind} {what}, got {t.dtype}"
                            + ("; cast it first" if kind != BOOL else "; compare it first (x != 0)"))


def _np_fold(np_fn: NumpyImpl) -> Callable[..., Any]:
    def fold(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
        arrays = [np.full((), v, dtype=t.dtype.to_numpy()) for v, t in zip(values, ins)]
        with np.errstate(all="ignore"):
            return np_fn(arrays, attrs, {})[0].item()
    return fold


NumpyImpl = Callable[[Sequence[np.ndarray], Attrs, SymbolEnv], list[np.ndarray]]


def _elementwise(name: str, arity: int, kind: str, expr_fn: ExprFn, np_fn: NpFn,
                 result: Callable[[TensorType, Attrs], DType] | None = None) -> OpDef:
    """Register an elementwise op: `expr_fn(attrs, *loads)` builds the element expression and
    `np_fn(attrs, *arrays)` its numpy reference."""

    def infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        check_same_shapes(name, ins)
        check_same_dtypes(name, ins)
        for t in ins:
            _check_kind(name, kind, t)
        out_dtype = result(ins[0], attrs) if result is not None else ins[-1].dtype
        return [TensorType(ins[-1].shape, out_dtype)]

    def numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
        out_dtype = (result(_type_of(arrays[0]), attrs) if result is not None
                     else dtype_of(arrays[-1].dtype))
        with np.errstate(all="ignore"):
            value = np.asarray(np_fn(attrs, *arrays))
        return [value.astype(out_dtype.to_numpy(), copy=False)]

    def compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                out_name: str) -> cdsl.ComputeTensor:
        return cdsl.compute(out.shape, lambda *idx: expr_fn(attrs, *(t[idx] for t in ins)), out_name)

    return register(OpDef(name, OpPatternKind.kElementWise, infer, numpy, compute,
                          fold=_np_fold(numpy), arity=arity))


def _type_of(a: np.ndarray) -> TensorType:
    return TensorType(tuple(a.shape), dtype_of(a.dtype))


def _c_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Division with C semantics: true division for floats, truncation toward zero for ints."""
    if a.dtype.kind == "f":
        return a / b
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe)
    return np.where((a < 0) != (safe < 0), -q, q)


def _const(attrs: Attrs, key: str, like: Expr) -> Expr:
    return const(attrs[key], like.dtype)


# -- binary arithmetic -------------------------------------------------------------------------------
_elementwise("add", 2, NUMERIC, lambda at, a, b: a + b, lambda at, a, b: a + b)
_elementwise("subtract", 2, NUMERIC, lambda at, a, b: a - b, lambda at, a, b: a - b)
_elementwise("multiply", 2, NUMERIC, lambda at, a, b: a * b, lambda at, a, b: a * b)
_elementwise("divide", 2, NUMERIC, lambda at, a, b: a / b, lambda at, a, b: _c_divide(a, b))
_elementwise("maximum", 2, NUMERIC, lambda at, a, b: cdsl.maximum(a, b), lambda at, a, b: np.maximum(a, b))
_elementwise("minimum", 2, NUMERIC, lambda at, a, b: cdsl.minimum(a, b), lambda at, a, b: np.minimum(a, b))
_elementwise("pow", 2, FLOAT, lambda at, a, b: cdsl.pow(a, b), lambda at, a, b: np.power(a, b))

# -- logic and comparisons -> bool ------------------------------------------------------------------
_elementwise("logical_and", 2, BOOL, lambda at, a, b: And(a, b), lambda at, a, b: a & b)
_elementwise("logical_or", 2, BOOL, lambda at, a, b: Or(a, b), lambda at, a, b: a | b)
_elementwise("logical_not", 1, BOOL, lambda at, a: Not(a), lambda at, a: ~a)


def _bool_result(t: TensorType, attrs: Attrs) -> DType:
    return bool_


for _name, _node, _np in (
    ("equal", EQ, np.equal), ("not_equal", NE, np.not_equal), ("less_than", LT, np.less),
    ("less_equal", LE, np.less_equal), ("greater_than", GT, np.greater), ("greater_equal", GE, np.greater_equal),
):
    _elementwise(_name, 2, ANY, (lambda node: lambda at, a, b: node(a, b))(_node),
                 (lambda f: lambda at, a, b: f(a, b))(_np), _bool_result)

# -- unary ----------------------------------------------------------------------------------------------
_elementwise("negative", 1, NUMERIC, lambda at, a: Minus(a), lambda at, a: -a)
_elementwise("abs", 1, NUMERIC, lambda at, a: cdsl.abs(a), lambda at, a: np.abs(a))
_elementwise("relu", 1, NUMERIC, lambda at, a: cdsl.maximum(a, const(0, a.dtype)),
             lambda at, a: np.maximum(a, np.zeros((), a.dtype)))
_elementwise("exp", 1, FLOAT, lambda at, a: cdsl.exp(a), lambda at, a: np.exp(a))
_elementwise("log", 1, FLOAT, lambda at, a: cdsl.log(a), lambda at, a: np.log(a))
_elementwise("sqrt", 1, FLOAT, lambda at, a: cdsl.sqrt(a), lambda at, a: np.sqrt(a))
_elementwise("rsqrt", 1, FLOAT, lambda at, a: cdsl.rsqrt(a),
             lambda at, a: (np.ones((), a.dtype) / np.sqrt(a)))
_elementwise("tanh", 1, FLOAT, lambda at, a: cdsl.tanh(a), lambda at, a: np.tanh(a))
_elementwise("erf", 1, FLOAT, lambda at, a: cdsl.erf(a), lambda at, a: math_fns.erf(a))
_elementwise("sigmoid", 1, FLOAT, lambda at, a: cdsl.sigmoid(a),
             lambda at, a: np.ones((), a.dtype) / (np.ones((), a.dtype) + np.exp(-a)))


def _scale_expr(at: Attrs, a: Expr) -> Expr:
    # CINN scale: bias_after_scale ? x * scale + bias : (x + bias) * scale
    s, b = _const(at, "scale", a), _const(at, "bias", a)
    return a * s + b if at["bias_after_scale"] else (a + b) * s


def _scale_np(at: Attrs, a: np.ndarray) -> np.ndarray:
    s, b = np.asarray(at["scale"], a.dtype), np.asarray(at["bias"], a.dtype)
    return a * s + b if at["bias_after_scale"] else (a + b) * s


_elementwise("scale", 1, NUMERIC, _scale_expr, _scale_np)


def _cast_result(t: TensorType, attrs: Attrs) -> DType:
    return attrs["dtype"]


_elementwise("cast", 1, ANY, lambda at, a: cdsl.cast(a, at["dtype"]),
             lambda at, a: a.astype(at["dtype"].to_numpy()), _cast_result)


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


register(OpDef("select", OpPatternKind.kElementWise, _infer_select, _select_numpy, _select_compute,
               fold=_np_fold(_select_numpy), arity=3))


# -- fill_constant ------------------------------------------------------------------------------------
def _infer_fill(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    return [TensorType(attrs["shape"], attrs["dtype"])]


def _fill_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.full(eval_shape(attrs["shape"], env), attrs["value"], dtype=attrs["dtype"].to_numpy())]


def _fill_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                  out_name: str) -> cdsl.ComputeTensor:
    return cdsl.compute(out.shape, lambda *i: const(attrs["value"], attrs["dtype"]), out_name)


register(OpDef("fill_constant", OpPatternKind.kElementWise, _infer_fill, _fill_numpy, _fill_compute,
               arity=0))


def fill_attrs(shape: Sequence[object], value: object, dtype: object) -> dict[str, Any]:
    """Validated attributes of fill_constant: the value is stored as the Python scalar of `dtype`
    (numpy's conversion: a float value for an int dtype must be integral)."""
    d = check_dtype(dtype, "fill_constant")
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"fill_constant: shape must be a list or tuple, got {type(shape).__name__}")
    dims = tuple(to_dim(s, f"fill_constant: shape[{k}]") for k, s in enumerate(shape))
    return {"shape": dims, "value": scalar_of(value, d, "fill_constant"), "dtype": d}


def scalar_of(value: object, d: DType, op: str) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{op}: value must be a Python number, got {type(value).__name__}")
    if d.is_bool:
        return bool(value)
    if d.is_float:
        return float(np.asarray(value, dtype=d.to_numpy()).item())
    if isinstance(value, float) and not value.is_integer():
        raise FrontendError(f"{op}: value {value} is not representable in {d}")
    info = np.iinfo(d.to_numpy())
    if not info.min <= int(value) <= info.max:
        raise FrontendError(f"{op}: value {int(value)} is out of range for {d} [{info.min}, {info.max}]")
    return int(value)
