"""Math calls (`Call` nodes) in LLVM IR.

Every entry of `cinn_py.ir.intrinsics.INTRINSICS` (plus `sigmoid`) is implemented. By default
the results are exactly libm's: LLVM intrinsics where they exist (`llvm.sqrt`, `llvm.floor`,
`llvm.exp`, ... which lower to instructions or to `expf`/`exp` calls) and direct libm calls
otherwise (`tanhf`, `erff`, ...); vectors of a libm call are computed lane by lane. With
`fast_math=True`, float32 exp/log/tanh/erf/sigmoid/rsqrt use the polynomial versions of
`codegen.llvm.fastmath`, which vectorise. float16/bfloat16 arguments are computed in float32
(the register type), as CINN's runtime does.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from cinn_py.diagnostics import CompileError
from cinn_py.ir import DType, INTRINSICS
from codegen.llvm.fastmath import FAST_F32
from codegen.llvm.types import F32, I32, lanes_of, scalar_reg_type, splat

# name -> LLVM intrinsic (overloaded on the float type, vector forms legal).
_LLVM_INTRINSIC = {
    "sqrt": "llvm.sqrt", "floor": "llvm.floor", "ceil": "llvm.ceil", "trunc": "llvm.trunc",
    "round": "llvm.round", "exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log",
    "log2": "llvm.log2", "log10": "llvm.log10", "sin": "llvm.sin", "cos": "llvm.cos",
    "pow": "llvm.pow", "abs": "llvm.fabs",
    "fmuladd": "llvm.fmuladd",  # only from `fp_contract` blocks (analysis._Contract): a*b+c, fused
}
# name -> libm symbol (float64 name; float32 adds the `f` suffix).
_LIBM = {"tanh": "tanh", "erf": "erf", "expm1": "expm1", "log1p": "log1p", "cbrt": "cbrt",
         "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "tan": "tan", "sinh": "sinh", "cosh": "cosh",
         "asin": "asin", "acos": "acos", "atan": "atan", "atan2": "atan2"}
SUPPORTED = frozenset(_LLVM_INTRINSIC) | frozenset(_LIBM) | {"rsqrt", "sigmoid", "fmod", "isnan",
                                                             "isinf", "isfinite", "bitwise_and", "bitwise_or",
                                                             "bitwise_xor", "bitwise_not", "left_shift",
                                                             "right_shift", "clz", "popc"}


class MathEmitter:
    """Emits math calls into one LLVM module."""

    def __init__(self, module: ir.Module, fast_math: bool) -> None:
        self.module = module
        self.fast_math = fast_math

    def _declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        return ir.Function(self.module, ir.FunctionType(ret, args), name)

    def _intrinsic(self, b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
        t = args[0].type
        scalar_t = t.element if isinstance(t, ir.VectorType) else t
        suffix = ("f32" if scalar_t == F32 else "f64")
        if isinstance(t, ir.VectorType):
            suffix = f"v{t.count}{suffix}"
        fn = self._declare(f"{name}.{suffix}", t, [t] * len(args))
        return b.call(fn, args)

    def _libm(self, b: ir.IRBuilder, base: str, args: list[ir.Value]) -> ir.Value:
        lanes = lanes_of(args[0])
        scalar_t = args[0].type.element if lanes > 1 else args[0].type
        symbol = base + ("f" if scalar_t == F32 else "")
        fn = self._declare(symbol, scalar_t, [scalar_t] * len(args))
        if lanes == 1:
            return b.call(fn, args)
        out: ir.Value = ir.Constant(args[0].type, ir.Undefined)
        for k in range(lanes):
            idx = ir.Constant(I32, k)
            out = b.insert_element(out, b.call(fn, [b.extract_element(a, idx) for a in args]), idx)
        return out

    def emit(self, b: ir.IRBuilder, name: str, args: list[ir.Value], arg_dtype: DType,
             result: DType) -> ir.Value:
        """`name(args)`; `args` are register values of IR dtype `arg_dtype` (lanes matched)."""
        if name == "abs" and arg_dtype.is_integral:
            return _int_abs(b, args[0], arg_dtype)
        if name in _INTEGER:
            if not arg_dtype.is_integral:
                raise CompileError(f"x86 codegen: '{name}' needs integer arguments, got {arg_dtype}")
            return _INTEGER[name](self, b, args, arg_dtype)
        if not arg_dtype.is_float:
            raise CompileError(f"x86 codegen: math function '{name}' needs float arguments, got {arg_dtype}")
        is_f32 = scalar_reg_type(arg_dtype) == F32
        if name.startswith("fast_") and name[5:] in FAST_F32:  # a `fast_math` block's call
            name = name[5:]
            if is_f32:
                return FAST_F32[name](b, args[0])
        if self.fast_math and is_f32 and name in FAST_F32:
            return FAST_F32[name](b, args[0])
        handler = _SPECIAL.get(name)
        if handler is not None:
            return handler(self, b, args)
        if name in _LLVM_INTRINSIC:
            return self._intrinsic(b, _LLVM_INTRINSIC[name], args)
        if name in _LIBM:
            return self._libm(b, _LIBM[name], args)
        known = "" if name in INTRINSICS else " (not in cinn_py.ir.intrinsics)"
        raise CompileError(f"x86 codegen: unsupported math function '{name}'{known}; "
                           f"supported: {', '.join(sorted(SUPPORTED))}")


def _one(b: ir.IRBuilder, like: ir.Value, value: float) -> ir.Value:
    scalar_t = like.type.element if isinstance(like.type, ir.VectorType) else like.type
    return splat(b, ir.Constant(scalar_t, value), lanes_of(like))


def _rsqrt(m: MathEmitter, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    return b.fdiv(_one(b, args[0], 1.0), m._intrinsic(b, "llvm.sqrt", args))


def _sigmoid(m: MathEmitter, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    e = m._intrinsic(b, "llvm.exp", [b.fneg(args[0])])
    return b.fdiv(_one(b, args[0], 1.0), b.fadd(_one(b, args[0], 1.0), e))


def _fmod(m: MathEmitter, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    return b.frem(args[0], args[1])  # C fmod semantics (sign of the dividend)


def _isnan(m: MathEmitter, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    return b.fcmp_unordered("uno", args[0], args[0])


def _isinf(m: MathEmitter, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    mag = m._intrinsic(b, "llvm.fabs", args)
    return b.fcmp_ordered("==", mag, _one(b, args[0], float("inf")))


def _isfinite(m: MathEmitter, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    mag = m._intrinsic(b, "llvm.fabs", args)
    return b.fcmp_ordered("<", mag, _one(b, args[0], float("inf")))


_SPECIAL: dict[str, Callable[[MathEmitter, ir.IRBuilder, list[ir.Value]], ir.Value]] = {
    "rsqrt": _rsqrt, "sigmoid": _sigmoid, "fmod": _fmod, "isnan": _isnan, "isinf": _isinf,
    "isfinite": _isfinite,
}


def _bit_count(m: MathEmitter, b: ir.IRBuilder, name: str, v: ir.Value) -> ir.Value:
    """llvm.ctlz / llvm.ctpop (overloaded on the integer or vector type); ctlz(0) is the width."""
    t = v.type
    scalar_t = t.element if isinstance(t, ir.VectorType) else t
    suffix = f"i{scalar_t.width}" if not isinstance(t, ir.VectorType) else f"v{t.count}i{scalar_t.width}"
    if name == "llvm.ctpop":
        return b.call(m._declare(f"{name}.{suffix}", t, [t]), [v])
    fn = m._declare(f"{name}.{suffix}", t, [t, ir.IntType(1)])
    return b.call(fn, [v, ir.Constant(ir.IntType(1), 0)])


_INTEGER: dict[str, Callable[[MathEmitter, ir.IRBuilder, list[ir.Value], DType], ir.Value]] = {
    "bitwise_and": lambda m, b, a, d: b.and_(a[0], a[1]),
    "bitwise_or": lambda m, b, a, d: b.or_(a[0], a[1]),
    "bitwise_xor": lambda m, b, a, d: b.xor(a[0], a[1]),
    "bitwise_not": lambda m, b, a, d: b.not_(a[0]),
    "left_shift": lambda m, b, a, d: b.shl(a[0], a[1]),
    "right_shift": lambda m, b, a, d: b.lshr(a[0], a[1]) if d.is_uint else b.ashr(a[0], a[1]),
    "clz": lambda m, b, a, d: _bit_count(m, b, "llvm.ctlz", a[0]),
    "popc": lambda m, b, a, d: _bit_count(m, b, "llvm.ctpop", a[0]),
}


def _int_abs(b: ir.IRBuilder, v: ir.Value, dtype: DType) -> ir.Value:
    if dtype.is_uint:
        return v
    zero = ir.Constant(v.type, None)
    return b.select(b.icmp_signed("<", v, zero), b.sub(zero, v), v)

