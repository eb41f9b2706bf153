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
from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, Shape, SymbolEnv, TensorType, check_dtype, is_variable, register,
)
from cinn_py.frontend.ops.shapes import dims_equal, eval_shape, fmt_dim, fmt_shape, shapes_equal, to_dim
from cinn_py.frontend.ops.signature import (
    OpCall, Signature, any_value, attr, boolean, dtype_arg, floating, integer, number, operand, optional, string, tensor,
)
from cinn_py.frontend.ops.testing import Case, Input, OpTest, binary_cases, unary_cases
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
                 result: Callable[[TensorType, Attrs], DType] | None = None, *,
                 signature: Signature | None = None, test: OpTest | None = None,
                 methods: tuple[str, ...] = (), low: float = -2.0, high: float = 2.0,
                 y_low: float | None = None, y_high: float | None = None,
                 dtypes: tuple[str, ...] | None = None, rtol: float | None = None) -> OpDef:
    """Register an elementwise op: `expr_fn(attrs, *loads)` builds the element expression and
    `np_fn(attrs, *arrays)` its numpy reference. Unless given, the NetBuilder signature is CINN's
    `(x)` for unary ops and `(x, y, axis=-1)` for binary ones, and the harness runs the default
    cases over [low, high] for the dtypes of `kind`."""

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

    if signature is None:
        signature = (Signature((tensor("x"),), methods=methods) if arity == 1
                     else Signature((operand("x"), operand("y"), attr("axis", integer, -1)), build=binary_build,
                                    methods=methods))
    if test is None:
        cases = (unary_cases(low, high) if arity == 1
                 else binary_cases(low, high, y_low, y_high, scalar=None if kind == BOOL else 2.0))
        test = OpTest(dtypes or DTYPES[kind], cases, rtol=rtol)
    return register(OpDef(name, OpPatternKind.kElementWise, infer, numpy, compute,
                          fold=_np_fold(numpy), arity=arity, signature=signature, test=test))


DTYPES = {FLOAT: testing.FLOATS, NUMERIC: testing.NUMERIC, BOOL: ("bool",), ANY: ("float32", "int32", "bool")}


# -- CINN's axis broadcasting of binary operands -----------------------------------------------------------
def broadcast_pair(op: str, a: Shape, b: Shape, axis: int) -> tuple[Shape, tuple[int, ...], tuple[int, ...]]:
    """CINN's elementwise broadcast: the lower-rank operand's dims align with the higher-rank
    one's from `axis` on (-1: trailing alignment, numpy's rule); paired dims are equal or 1.
    Returns the output shape and the output axes each operand's dims map to."""
    swap = len(a) < len(b)
    big, small = (b, a) if swap else (a, b)
    room = len(big) - len(small)
    start = room if axis == -1 else axis
    if not 0 <= start <= room:
        raise FrontendError(f"{op}: argument 'axis' must be -1 or in [0, {room}] to align {fmt_shape(small)} "
                            f"within {fmt_shape(big)}, got {axis}")
    out = list(big)
    for d, s in enumerate(small):
        k = start + d
        if isinstance(s, int) and s == 1:
            continue
        if isinstance(big[k], int) and big[k] == 1:
            out[k] = s
        elif not dims_equal(s, big[k]):
            where = f" with axis={axis}" if axis != -1 else ""
            raise FrontendError(f"{op}: shapes {fmt_shape(a)} and {fmt_shape(b)} are not broadcastable{where}: "
                                f"{fmt_dim(big[k]) if not swap else fmt_dim(s)} vs "
                                f"{fmt_dim(s) if not swap else fmt_dim(big[k])}")
    small_axes, big_axes = tuple(range(start, start + len(small))), tuple(range(len(big)))
    return tuple(out), (small_axes if swap else big_axes), (big_axes if swap else small_axes)


def binary_operands(nb: Any, method: str, x: Any, y: Any, axis: int) -> list[Any]:
    """The two operands as Variables of one shape: a Python number becomes a 0-d constant of the
    other operand's dtype, and each operand whose shape differs from the output gets a
    `broadcast_to` (so the elementwise op itself always sees equal shapes)."""
    like = x if is_variable(x) else y
    if not is_variable(like):
        raise FrontendError(f"{method}: at least one of 'x' and 'y' must be a Variable, got "
                            f"{type(x).__name__} and {type(y).__name__}")
    vs = [nb.variable(v, method, what) if is_variable(v) else nb.constant_like(v, like, method)
          for v, what in ((x, "x"), (y, "y"))]
    out, ax, ay = broadcast_pair(method, vs[0].shape, vs[1].shape, axis)
    return [v if shapes_equal(v.shape, out) else nb.broadcast_to(v, list(out), list(axes))
            for v, axes in zip(vs, (ax, ay))]


def binary_build(nb: Any, call: OpCall) -> Any:
    a = call.args
    return nb.emit(call.op, binary_operands(nb, call.method, a["x"], a["y"], a["axis"]))


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
_elementwise("divide", 2, NUMERIC, lambda at, a, b: a / b, lambda at, a, b: _c_divide(a, b), y_low=0.5, y_high=3.0)
_elementwise("maximum", 2, NUMERIC, lambda at, a, b: cdsl.maximum(a, b), lambda at, a, b: np.maximum(a, b),
             methods=("max", "maximum"))
_elementwise("minimum", 2, NUMERIC, lambda at, a, b: cdsl.minimum(a, b), lambda at, a, b: np.minimum(a, b),
             methods=("min", "minimum"))
_elementwise("pow", 2, FLOAT, lambda at, a, b: cdsl.pow(a, b), lambda at, a, b: np.power(a, b), low=0.25, high=2.0)

# -- logic and comparisons -> bool ------------------------------------------------------------------
_elementwise("logical_and", 2, BOOL, lambda at, a, b: And(a, b), lambda at, a, b: a & b)
_elementwise("logical_or", 2, BOOL, lambda at, a, b: Or(a, b), lambda at, a, b: a | b)
_elementwise("logical_not", 1, ANY, lambda at, a: Not(a) if a.dtype.is_bool else EQ(a, const(0, a.dtype)),
             lambda at, a: np.logical_not(a), lambda t, at: bool_)


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
_elementwise("log", 1, FLOAT, lambda at, a: cdsl.log(a), lambda at, a: np.log(a), low=0.1, high=3.0)
_elementwise("sqrt", 1, FLOAT, lambda at, a: cdsl.sqrt(a), lambda at, a: np.sqrt(a), low=0.0, high=3.0)
_elementwise("rsqrt", 1, FLOAT, lambda at, a: cdsl.rsqrt(a),
             lambda at, a: (np.ones((), a.dtype) / np.sqrt(a)), low=0.1, high=3.0)
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


def _scale_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    d = ins[0].dtype
    return {"scale": scalar_of(at["scale"], d, "scale"), "bias": scalar_of(at["bias"], d, "scale"),
            "bias_after_scale": at["bias_after_scale"]}


_elementwise("scale", 1, NUMERIC, _scale_expr, _scale_np, signature=Signature(
    (tensor("x"), attr("scale", number, 1.0), attr("bias", number, 0.0), attr("bias_after_scale", boolean, True)),
    attrs=_scale_attrs, doc="`x * scale + bias`, or `(x + bias) * scale` when not bias_after_scale."),
    test=OpTest(testing.NUMERIC, lambda d: [
        Case((Input(s),), {"scale": 2.0 if d.startswith("float") else 3, "bias": 1, "bias_after_scale": after})
        for s in testing.SHAPES for after in (True, False)]))


def _cast_result(t: TensorType, attrs: Attrs) -> DType:
    return attrs["dtype"]


_elementwise("cast", 1, ANY, lambda at, a: cdsl.cast(a, at["dtype"]),
             lambda at, a: a.astype(at["dtype"].to_numpy()), _cast_result,
             signature=Signature((tensor("x"), attr("dtype", dtype_arg))),
             test=OpTest(("float32", "float16", "int32", "int64", "bool"), lambda d: [
                 Case((Input(s, low=-100.0, high=100.0),), {"dtype": to}) for s in ((7,), ("S0", 5))
                 for to in ("float32", "float16", "int32", "int64", "bool", "float64") if to != d]))


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
               test=OpTest(("float32", "float16", "int32", "bool"), lambda d: [
                   Case((Input(s, "bool"), Input(s), Input(s))) for s in testing.SHAPES] + [
                   Case((Input((3, 5), "bool"), Input((5,)), Input((3, 1))))])))


# -- fill_constant ------------------------------------------------------------------------------------
def _infer_fill(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    return [TensorType(attrs["shape"], attrs["dtype"])]


def _fill_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    return [np.full(eval_shape(attrs["shape"], env), attrs["value"], dtype=attrs["dtype"].to_numpy())]


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
               test=OpTest(("float32", "float16", "int32", "int64", "bool"), lambda d: [
                   Case((shape, 1 if d == "bool" else 3), {"dtype": d}) for shape in ([1], [7], [3, 5], [])])))


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
