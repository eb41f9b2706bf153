"""Math functions of the compute DSL: intrinsic calls, `maximum/minimum`, `select`, `cast`.

Python numbers promote to the dtype of the other operand (`maximum(x, 0)` on float16 builds a
float16 zero). Operands of different dtypes are never promoted implicitly: that is a
`LoweringError` naming the function and both dtypes (TVM te raises too). Math in float16 /
bfloat16 stays in that dtype in the IR; backends widen it to float32 to compute.
"""

from __future__ import annotations

from typing import Union

from cinn_py.diagnostics import LoweringError
from cinn_py.ir import (
    Call, CallType, Cast, DType, Expr, FloatImm, INTRINSICS, Intrinsic, Max, Min, Minus, Select, as_expr,
    bool_, const, dtype_of,
)

Operand = Union[Expr, int, float, bool]


def _operand(x: object, fn: str, like: DType | None = None) -> Expr:
    """An Expr, or a Python number promoted to `like` (or its default dtype)."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, (bool, int, float)):
        return as_expr(x, like)
    if hasattr(x, "tensor") and hasattr(x, "shape"):
        raise TypeError(f"{fn}: got the tensor {getattr(x, 'name', '?')!r} itself; index it (X[i, j])")
    raise TypeError(f"{fn}: expected an IR expression or a Python number, got {type(x).__name__}")


def _pair(a: object, b: object, fn: str) -> tuple[Expr, Expr]:
    """Two operands with Python numbers promoted to the other side's dtype; dtypes must match."""
    if not isinstance(a, Expr) and isinstance(b, Expr):
        eb = b
        ea = _operand(a, fn, eb.dtype)
    else:
        ea = _operand(a, fn)
        eb = _operand(b, fn, ea.dtype)
    if ea.dtype != eb.dtype:
        raise LoweringError(f"{fn}: operands have different dtypes {ea.dtype} and {eb.dtype}; "
                            "insert an explicit cast(x, dtype)",
                            f"  in: {fn}({ea}, {eb})")
    return ea, eb


def call_intrinsic(name: str, *args: Operand) -> Expr:
    """`name(args...)` for an entry of `cinn_py.ir.intrinsics.INTRINSICS`, dtype-checked."""
    info = INTRINSICS.get(name)
    if info is None:
        raise ValueError(f"unknown intrinsic '{name}'; known: {', '.join(sorted(INTRINSICS))}")
    if len(args) != info.arity:
        raise TypeError(f"{name}: expects {info.arity} argument(s), got {len(args)}")
    if info.arity == 1:
        exprs: tuple[Expr, ...] = (_operand(args[0], name),)
    else:
        exprs = _pair(args[0], args[1], name)
    return _typed_call(info, exprs)


def _typed_call(info: Intrinsic, exprs: tuple[Expr, ...]) -> Expr:
    arg_dtype = exprs[0].dtype
    if not info.accepts(arg_dtype):
        need = {"float": "a floating-point", "int": "an integer"}.get(info.arg_kind.value, "a numeric")
        if arg_dtype.element_of().is_integral and (info.int_identity or info.result_bool):
            return _integer_case(info, exprs[0])
        raise LoweringError(f"{info.name}: needs {need} operand, got {arg_dtype}; "
                            f"cast it first (e.g. cast(x, 'float32'))", f"  in: {info.name}({exprs[0]})")
    if info.name == "abs" and arg_dtype.element_of().is_uint:
        return exprs[0]  # |x| == x for unsigned types
    return Call(info.name, exprs, info.result_dtype(arg_dtype), CallType.EXTERN)


def _integer_case(info: Intrinsic, x: Expr) -> Expr:
    """floor/ceil/round/trunc are the identity on integers; isnan/isinf are false, isfinite true
    (TVM te folds these the same way)."""
    if info.int_identity:
        return x
    return const(info.name == "isfinite", bool_)


def _unary(name: str):  # type: ignore[no-untyped-def]
    def fn(x: Operand) -> Expr:
        return call_intrinsic(name, x)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"`{name}(x)`: elementwise {name} (IR `Call(\"{name}\")`)."
    return fn


exp = _unary("exp")
exp2 = _unary("exp2")
expm1 = _unary("expm1")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
log1p = _unary("log1p")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
cbrt = _unary("cbrt")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
sinh = _unary("sinh")
cosh = _unary("cosh")
tanh = _unary("tanh")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
erf = _unary("erf")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001 - the DSL mirrors numpy/TVM names
trunc = _unary("trunc")
isnan = _unary("isnan")
isinf = _unary("isinf")
isfinite = _unary("isfinite")
abs = _unary("abs")  # noqa: A001


def pow(x: Operand, y: Operand) -> Expr:  # noqa: A001
    """`pow(x, y)` for floats of one dtype (a Python number promotes to the other side)."""
    return call_intrinsic("pow", x, y)


def atan2(y: Operand, x: Operand) -> Expr:
    return call_intrinsic("atan2", y, x)


def fmod(x: Operand, y: Operand) -> Expr:
    return call_intrinsic("fmod", x, y)


def sigmoid(x: Operand) -> Expr:
    """`1 / (1 + exp(-x))`, built from IR nodes as CINN's `pe::Sigmoid` decomposes it."""
    ex = _operand(x, "sigmoid")
    if not ex.dtype.is_float:
        raise LoweringError(f"sigmoid: needs a floating-point operand, got {ex.dtype}; cast it first",
                            f"  in: sigmoid({ex})")
    one = FloatImm(ex.dtype.element_of(), 1.0)
    return one / (one + exp(Minus(ex)))


def maximum(a: Operand, b: Operand) -> Expr:
    """Elementwise max, printed `cinn_max(a, b)`."""
    ea, eb = _pair(a, b, "maximum")
    _check_numeric(ea, "maximum")
    return Max(ea, eb)


def minimum(a: Operand, b: Operand) -> Expr:
    """Elementwise min, printed `cinn_min(a, b)`."""
    ea, eb = _pair(a, b, "minimum")
    _check_numeric(ea, "minimum")
    return Min(ea, eb)


def _check_numeric(e: Expr, fn: str) -> None:
    if e.dtype.element_of().is_bool:
        raise LoweringError(f"{fn}: needs numeric operands, got bool; use `&` / `|` for bool logic")


def select(condition: Operand, true_value: Operand, false_value: Operand) -> Expr:
    """`select(c, t, f)`: `t` where `c` holds, else `f`; `c` must be a bool expression."""
    if isinstance(condition, bool):
        # `a == b` on IR expressions is structural equality (a Python bool), not a comparison
        # node; a constant condition here is almost always that mistake.
        raise TypeError("select: the condition is a Python bool, not an IR expression; for an "
                        "elementwise comparison use ir.eq(a, b) / ir.ne(a, b) instead of == / !=")
    cond = _operand(condition, "select", bool_)
    if not cond.dtype.element_of().is_bool:
        raise LoweringError(f"select: condition must be bool, got {cond.dtype} "
                            "(compare it, e.g. x > 0)", f"  in: select({cond}, ...)")
    t, f = _pair(true_value, false_value, "select")
    return Select(cond, t, f)


def cast(x: Operand, dtype: str | DType) -> Expr:
    """`float32(x)`: convert to `dtype`; returns `x` itself when it already has that dtype."""
    target = dtype_of(dtype)
    if target.lanes != 1 or target.kind in ("handle", "string"):
        raise TypeError(f"cast: target must be a scalar numeric or bool dtype, got {target}")
    ex = _operand(x, "cast")
    if ex.dtype == target:
        return ex
    return Cast(target, ex)
