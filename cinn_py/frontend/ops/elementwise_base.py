"""The elementwise framework: `_elementwise` (registers a kElementWise op from an expression
builder and its numpy reference, with dtype checks, constant folding and op-test cases), the
dtype classes an op accepts, shape / dtype checks, CINN's axis broadcasting of binary operands,
and the scalar / `fill_constant` attribute validation shared by the ops' builders.

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
    Attrs, FrontendError, OpDef, OpPatternKind, Shape, SymbolEnv, TensorType, check_dtype,
    check_operand_dtype, is_variable, numpy_dtype, register, widen_bfloat16,
)
from cinn_py.frontend.ops.shapes import dims_equal, fmt_dim, fmt_shape, shapes_equal, to_dim
from cinn_py.frontend.ops.signature import OpCall, Signature, attr, integer, operand, tensor
from cinn_py.frontend.ops.testing import OpTest, binary_cases, unary_cases
from cinn_py.ir import DType, Expr, const, dtype_of


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

def _const(attrs: Attrs, key: str, like: Expr) -> Expr:
    return const(attrs[key], like.dtype)

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
