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
from cinn_py.frontend.math_ops import call_intrinsic
from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, Shape, SymbolEnv, TensorType, check_dtype,
    check_operand_dtype,
    is_variable, numpy_dtype, register, widen_bfloat16,
)
from cinn_py.frontend.ops.shapes import dims_equal, eval_shape, fmt_dim, fmt_shape, shapes_equal, to_dim
from cinn_py.frontend.ops.signature import (
    OpCall, Signature, any_value, attr, boolean, dtype_arg, floating, integer, number, one_of,
    operand, optional,
    string, tensor, tensors,
)
from cinn_py.frontend.ops.reference import cinn_maximum, cinn_minimum, int_division
from cinn_py.frontend.ops.testing import Case, Input, OpTest, binary_cases, unary_cases
from cinn_py.interp import math_fns
from cinn_py.ir import (And, DType, EQ, Expr, GE, GT, INTRINSICS, LE, LT, Minus, Mod, NE, Not, Or, bool_,
                        const, dtype_of)

ExprFn = Callable[..., Expr]
NpFn = Callable[..., Any]

# dtype classes an op accepts
FLOAT, NUMERIC, BOOL, ANY, INTEGER = "floating-point", "numeric", "bool", "any", "integer"  # DTYPE_KINDS


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


def _check_kind(op: str, kind: str, t: TensorType, arg: str = "x") -> None:
    hint = "compare it first (x != 0)" if kind == BOOL else "cast it first"
    check_operand_dtype(op, arg, t.dtype, kind, hint)


def _np_fold(np_fn: NumpyImpl) -> Callable[..., Any]:
    def fold(values: Sequence[Any], attrs: Attrs, ins: Sequence[TensorType], out: TensorType) -> Any:
        arrays = widen_bfloat16([np.full((), v, dtype=numpy_dtype(t.dtype)) for v, t in zip(values, ins)])
        with np.errstate(all="ignore"):
            return np_fn(arrays, attrs, {})[0].astype(numpy_dtype(out.dtype)).item()
    return fold


NumpyImpl = Callable[[Sequence[np.ndarray], Attrs, SymbolEnv], list[np.ndarray]]


def _elementwise(name: str, arity: int, kind: str, expr_fn: ExprFn, np_fn: NpFn,
                 result: Callable[[TensorType, Attrs], DType] | None = None, *,
                 signature: Signature | None = None, test: OpTest | None = None,
                 methods: tuple[str, ...] = (), low: float = -2.0, high: float = 2.0,
                 y_low: float | None = None, y_high: float | None = None, y_avoid_zero: bool = False,
                 specials: bool = False, dtypes: tuple[str, ...] | None = None,
                 rtol: float | None = None) -> OpDef:
    """Register an elementwise op: `expr_fn(attrs, *loads)` builds the element expression and
    `np_fn(attrs, *arrays)` its numpy reference. Unless given, the NetBuilder signature is CINN's
    `(x)` for unary ops and `(x, y, axis=-1)` for binary ones, and the harness runs the default
    cases over [low, high] for the dtypes of `kind`."""

    def infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        check_same_shapes(name, ins)
        check_same_dtypes(name, ins)
        for t, arg in zip(ins, ("x", "y", "z")):
            _check_kind(name, kind, t, arg)
        out_dtype = result(ins[0], attrs) if result is not None else ins[-1].dtype
        return [TensorType(ins[-1].shape, out_dtype)]

    def numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
        out_dtype = (result(_type_of(arrays[0]), attrs) if result is not None
                     else dtype_of(arrays[-1].dtype))
        with np.errstate(all="ignore"):
            value = np.asarray(np_fn(attrs, *arrays))
        return [value.astype(numpy_dtype(out_dtype), copy=False)]

    def compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                out_name: str) -> cdsl.ComputeTensor:
        return cdsl.compute(out.shape, lambda *idx: expr_fn(attrs, *(t[idx] for t in ins)), out_name)

    if signature is None:
        signature = (Signature((tensor("x"),), methods=methods) if arity == 1
                     else Signature((operand("x"), operand("y"), attr("axis", integer, -1)),
                                    build=binary_build,
                                    methods=methods))
    if test is None:
        cases = (unary_cases(low, high, specials=specials) if arity == 1
                 else binary_cases(low, high, y_low, y_high, scalar=None if kind == BOOL else 2.0,
                                   y_avoid_zero=y_avoid_zero))
        test = OpTest(dtypes or DTYPES[kind], cases, rtol=rtol)
    return register(OpDef(name, OpPatternKind.kElementWise, infer, numpy, compute,
                          fold=_np_fold(numpy), arity=arity, signature=signature, test=test))


DTYPES = {FLOAT: testing.FLOATS, NUMERIC: testing.NUMERIC, BOOL: ("bool",),
          ANY: ("float32", "bfloat16", "int32", "bool"),
          INTEGER: ("int32", "int64", "int8", "uint8")}


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
            raise FrontendError(f"{op}: shapes {fmt_shape(a)} and {fmt_shape(b)} are not "
                                f"broadcastable{where}: "
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
_elementwise("divide", 2, NUMERIC, lambda at, a, b: a / b, lambda at, a, b: int_division(_c_divide, a, b),
             y_low=0.5, y_high=3.0)
_elementwise("maximum", 2, NUMERIC, lambda at, a, b: cdsl.maximum(a, b), lambda at, a, b: cinn_maximum(a, b),
             methods=("max", "maximum"))
_elementwise("minimum", 2, NUMERIC, lambda at, a, b: cdsl.minimum(a, b), lambda at, a, b: cinn_minimum(a, b),
             methods=("min", "minimum"))
_elementwise("pow", 2, FLOAT, lambda at, a, b: cdsl.pow(a, b), lambda at, a, b: np.power(a, b),
             low=0.25, high=2.0)
_elementwise("atan2", 2, FLOAT, lambda at, a, b: cdsl.atan2(a, b), lambda at, a, b: np.arctan2(a, b))


def _c_rem(a: Expr, b: Expr) -> Expr:
    """C remainder (sign of the dividend): `%` on integers, `fmod` on floats."""
    return cdsl.fmod(a, b) if a.dtype.is_float else Mod(a, b)


def _floor_mod(a: Expr, b: Expr) -> Expr:
    """Python/numpy `%` (sign of the divisor): the C remainder, plus b when the signs differ."""
    r = _c_rem(a, b)
    zero = const(0, a.dtype)
    return cdsl.select(And(NE(r, zero), NE(LT(r, zero), LT(b, zero))), r + b, r)


def _floor_divide(a: Expr, b: Expr) -> Expr:
    if a.dtype.is_float:
        return cdsl.floor(a / b)
    zero = const(0, a.dtype)
    q = a / b  # truncates toward zero
    inexact_negative = And(NE(Mod(a, b), zero), NE(LT(a, zero), LT(b, zero)))
    return cdsl.select(inexact_negative, q - const(1, a.dtype), q)


# CINN: `mod` and `remainder` are both the floor modulo (Python's %, sign of the divisor: CINN's
# lang::Remainder and lang::Mod both call its `mod` extern, and Paddle's remainder is Python's);
# `fmod` (cinn-py's, for torch.fmod) is the truncated remainder (C's % / fmod, sign of the
# dividend); floor_divide rounds the quotient down.
_elementwise("floor_divide", 2, NUMERIC, lambda at, a, b: _floor_divide(a, b),
             lambda at, a, b: int_division(np.floor_divide, a, b),
             low=-6.0, high=6.0, y_low=-3.0, y_high=3.0, y_avoid_zero=True, rtol=1e-3)
_elementwise("mod", 2, NUMERIC, lambda at, a, b: _floor_mod(a, b),
             lambda at, a, b: int_division(np.mod, a, b),
             low=-6.0, high=6.0, y_low=-3.0, y_high=3.0, y_avoid_zero=True)
_elementwise("remainder", 2, NUMERIC, lambda at, a, b: _floor_mod(a, b),
             lambda at, a, b: int_division(np.mod, a, b),
             low=-6.0, high=6.0, y_low=-3.0, y_high=3.0, y_avoid_zero=True)
_elementwise("fmod", 2, NUMERIC, lambda at, a, b: _c_rem(a, b),
             lambda at, a, b: int_division(np.fmod, a, b),
             low=-6.0, high=6.0, y_low=-3.0, y_high=3.0, y_avoid_zero=True)

# -- logic and comparisons -> bool ------------------------------------------------------------------
def truth(a: Expr) -> Expr:
    """`a` as bool (nonzero is true), as CINN's logical ops cast their operands."""
    return a if a.dtype.is_bool else NE(a, const(0, a.dtype))


_elementwise("logical_and", 2, ANY, lambda at, a, b: And(truth(a), truth(b)),
             lambda at, a, b: np.logical_and(a, b),
             lambda t, at: bool_)
_elementwise("logical_or", 2, ANY, lambda at, a, b: Or(truth(a), truth(b)),
             lambda at, a, b: np.logical_or(a, b),
             lambda t, at: bool_)
_elementwise("logical_xor", 2, ANY, lambda at, a, b: NE(truth(a), truth(b)),
             lambda at, a, b: np.logical_xor(a, b),
             lambda t, at: bool_)
_elementwise("logical_not", 1, ANY, lambda at, a: Not(truth(a)), lambda at, a: np.logical_not(a),
             lambda t, at: bool_)


def _bool_result(t: TensorType, attrs: Attrs) -> DType:
    return bool_


for _name, _node, _np in (
    ("equal", EQ, np.equal), ("not_equal", NE, np.not_equal), ("less_than", LT, np.less),
    ("less_equal", LE, np.less_equal), ("greater_than", GT, np.greater),
    ("greater_equal", GE, np.greater_equal),
):
    _elementwise(_name, 2, ANY, (lambda node: lambda at, a, b: node(a, b))(_node),
                 (lambda f: lambda at, a, b: f(a, b))(_np), _bool_result)

# -- unary ----------------------------------------------------------------------------------------------
_elementwise("negative", 1, NUMERIC, lambda at, a: Minus(a), lambda at, a: -a)
_elementwise("abs", 1, NUMERIC, lambda at, a: cdsl.abs(a), lambda at, a: np.abs(a))
_elementwise("relu", 1, NUMERIC, lambda at, a: cdsl.maximum(a, const(0, a.dtype)),
             lambda at, a: cinn_maximum(a, np.zeros((), a.dtype)))
_elementwise("exp", 1, FLOAT, lambda at, a: cdsl.exp(a), lambda at, a: np.exp(a))
_elementwise("log", 1, FLOAT, lambda at, a: cdsl.log(a), lambda at, a: np.log(a), low=0.1, high=3.0)
_elementwise("sqrt", 1, FLOAT, lambda at, a: cdsl.sqrt(a), lambda at, a: np.sqrt(a), low=0.0, high=3.0)
_elementwise("rsqrt", 1, FLOAT, lambda at, a: cdsl.rsqrt(a),
             lambda at, a: (np.ones((), a.dtype) / np.sqrt(a)), low=0.1, high=3.0)
_elementwise("tanh", 1, FLOAT, lambda at, a: cdsl.tanh(a), lambda at, a: np.tanh(a))
_elementwise("erf", 1, FLOAT, lambda at, a: cdsl.erf(a), lambda at, a: math_fns.erf(a))
_elementwise("sigmoid", 1, FLOAT, lambda at, a: cdsl.sigmoid(a),
             lambda at, a: np.ones((), a.dtype) / (np.ones((), a.dtype) + np.exp(-a)))
_elementwise("silu", 1, FLOAT, lambda at, a: a * cdsl.sigmoid(a),
             lambda at, a: a / (np.ones((), a.dtype) + np.exp(-a)),
             signature=Signature((tensor("x"),),
                                 doc="`x * sigmoid(x)` (swish); `x * sigmoid(x)` is rewritten to it."),
             low=-6.0, high=6.0)


def _intrinsic(name: str, low: float = -2.0, high: float = 2.0, kind: str = FLOAT, **kw: Any) -> OpDef:
    """A unary op that is one math intrinsic of the IR (its numpy reference is the intrinsic's)."""
    fn = getattr(cdsl, name)
    ref = INTRINSICS[name].reference
    return _elementwise(kw.pop("op", name), 1, kind, lambda at, a: fn(a), lambda at, a: ref(a),
                        low=low, high=high,
                        **kw)


for _name in ("sin", "cos", "tan", "sinh", "cosh", "atan", "asinh", "cbrt"):
    _intrinsic(_name)
for _name in ("log2", "log10"):
    _intrinsic(_name, 0.1, 3.0)
_intrinsic("log1p", -0.5, 3.0)
_intrinsic("asin", -0.95, 0.95)
_intrinsic("acos", -0.95, 0.95)
_intrinsic("atanh", -0.9, 0.9)
_intrinsic("acosh", 1.0, 4.0)
for _name in ("floor", "ceil", "round", "trunc"):   # the identity on integers (CINN too)
    _intrinsic(_name, -4.0, 4.0, kind=NUMERIC)
for _name, _op in (("isnan", "is_nan"), ("isinf", "is_inf"), ("isfinite", "is_finite")):
    _intrinsic(_name, kind=NUMERIC, op=_op, result=lambda t, at: bool_, specials=True)


# -- bitwise (integers; C semantics: >> is arithmetic on signed, logical on unsigned dtypes) -----------
def _bits(name: str) -> ExprFn:
    return lambda at, *xs: call_intrinsic(name, *xs)


def _bits_np(name: str) -> NpFn:
    ref = INTRINSICS[name].reference
    return lambda at, *xs: ref(*xs)


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _elementwise(_name, 2, INTEGER, _bits(_name), _bits_np(_name), low=-100.0, high=100.0)
for _name in ("left_shift", "right_shift"):   # shift counts in [0, 7): defined for every dtype
    _elementwise(_name, 2, INTEGER, _bits(_name), _bits_np(_name), low=-100.0, high=100.0,
                 y_low=0.0, y_high=6.0)
_elementwise("bitwise_not", 1, INTEGER, _bits("bitwise_not"), _bits_np("bitwise_not"), low=-100.0, high=100.0)
for _name in ("clz", "popc"):   # CUDA's __clz/__popc: 32- and 64-bit integers (as CINN)
    _elementwise(_name, 1, INTEGER, _bits(_name), _bits_np(_name), low=-1000.0, high=1000.0,
                 dtypes=("int32", "int64"))


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
    return {"scale": scalar_of(at["scale"], d, "scale"), "bias": scalar_of(at["bias"], d, "scale"),
            "bias_after_scale": at["bias_after_scale"]}


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
        return float(np.asarray(value, dtype=numpy_dtype(d)).item())
    if isinstance(value, float) and not value.is_integer():
        raise FrontendError(f"{op}: value {value} is not representable in {d}")
    info = np.iinfo(d.to_numpy())
    if not info.min <= int(value) <= info.max:
        raise FrontendError(f"{op}: value {int(value)} is out of range for {d} [{info.min}, {info.max}]")
    return int(value)
