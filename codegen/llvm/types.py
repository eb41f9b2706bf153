"""IR dtypes in LLVM: register and storage types, constants, casts, half/bfloat16 conversions.

Registers hold `bool` as `i1`, integers as `iN`, float32/float64 natively, and **float16 and
bfloat16 as float32** ("storage-only" half types: math runs in float32, values are converted on
load and store, and an explicit `Cast` to float16/bfloat16 rounds the value so that it is
representable). In memory `bool` is one byte (numpy's layout), float16 is `half` and bfloat16 is
its `i16` bit pattern. Conversion to bfloat16 rounds to nearest even and keeps NaNs quiet.

Every helper works on scalars and on `<N x T>` vectors alike; the lane count is read from the
LLVM type of the value.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from cinn_py.diagnostics import CompileError
from cinn_py.ir import DType

I1, I8, I16, I32, I64 = (ir.IntType(b) for b in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()


def alloca(b: ir.IRBuilder, typ: ir.Type, name: str = "", align: int | None = None) -> ir.Value:
    """A stack slot typed as an opaque `ptr` (llvmlite would otherwise make a typed pointer)."""
    slot = b.alloca(typ, name=name)
    slot.type = PTR
    if align is not None:
        slot.align = align
    return slot


def lanes_of(value: ir.Value) -> int:
    """1 for scalars, N for `<N x T>`."""
    return value.type.count if isinstance(value.type, ir.VectorType) else 1


def with_lanes(t: ir.Type, lanes: int) -> ir.Type:
    return t if lanes == 1 else ir.VectorType(t, lanes)


def scalar_reg_type(dtype: DType) -> ir.Type:
    """Scalar register type of an IR dtype (float16/bfloat16 compute in float32)."""
    if dtype.is_bool:
        return I1
    if dtype.is_integral:
        return ir.IntType(dtype.bits)
    if dtype.kind == "bfloat" or (dtype.kind == "float" and dtype.bits in (16, 32)):
        return F32
    if dtype.kind == "float" and dtype.bits == 64:
        return F64
    raise CompileError(f"x86 codegen: dtype {dtype} has no LLVM register type")


def reg_type(dtype: DType, lanes: int = 1) -> ir.Type:
    return with_lanes(scalar_reg_type(dtype), lanes)


def scalar_storage_type(dtype: DType) -> ir.Type:
    """Element type of a buffer of `dtype` in memory."""
    if dtype.is_bool:
        return I8
    if dtype.kind == "bfloat":
        return I16
    if dtype.kind == "float" and dtype.bits == 16:
        return F16
    return scalar_reg_type(dtype)


def storage_bytes(dtype: DType) -> int:
    return 1 if dtype.is_bool else dtype.bits // 8


def round_half_value(value: float, dtype: DType) -> float:
    """`value` rounded to float16/bfloat16 (as a Python float); other dtypes unchanged."""
    if dtype.kind == "float" and dtype.bits == 16:
        with np.errstate(over="ignore"):
            return float(np.float16(value))
    if dtype.kind == "bfloat":
        bits = int(np.array(value, dtype=np.float32).view(np.uint32))
        if np.isnan(value):
            return float("nan")
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.array(bits, dtype=np.uint32).view(np.float32))
    return value


def constant(dtype: DType, value: float | int, lanes: int = 1) -> ir.Constant:
    """A register constant of `dtype` (splat over `lanes`)."""
    t = scalar_reg_type(dtype)
    if isinstance(t, ir.IntType):
        scalar = ir.Constant(t, int(value) & ((1 << t.width) - 1))
    else:
        scalar = ir.Constant(t, round_half_value(float(value), dtype))
    if lanes == 1:
        return scalar
    # one element Constant shared by every lane (llvmlite's splat form): the same IR as a list
    # of `lanes` copies, without building and checking `lanes` Constant objects per splat
    return ir.Constant(ir.VectorType(t, lanes), scalar)


def splat(b: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    """Broadcast a scalar to `<lanes x T>` (identity when already that wide)."""
    if lanes == 1 or lanes_of(value) == lanes:
        return value
    if lanes_of(value) != 1:
        raise CompileError(f"x86 codegen: cannot combine vectors of {lanes_of(value)} and {lanes} lanes")
    if isinstance(value, ir.Constant):
        return ir.Constant(ir.VectorType(value.type, lanes), value)
    vt = ir.VectorType(value.type, lanes)
    one = b.insert_element(ir.Constant(vt, ir.Undefined), value, ir.Constant(I32, 0))
    return b.shuffle_vector(one, ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(I32, lanes), 0))


def match_lanes(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    lanes = max(lanes_of(x), lanes_of(y))
    return splat(b, x, lanes), splat(b, y, lanes)


# ---------------------------------------------------------------------------------------------
# Memory <-> register
# ---------------------------------------------------------------------------------------------
def load_convert(b: ir.IRBuilder, raw: ir.Value, dtype: DType) -> ir.Value:
    """Storage value -> register value."""
    lanes = lanes_of(raw)
    if dtype.is_bool:
        return b.icmp_unsigned("!=", raw, ir.Constant(raw.type, None))
    if dtype.kind == "bfloat":
        wide = b.shl(b.zext(raw, with_lanes(I32, lanes)), splat(b, ir.Constant(I32, 16), lanes))
        return b.bitcast(wide, with_lanes(F32, lanes))
    if dtype.kind == "float" and dtype.bits == 16:
        return b.fpext(raw, with_lanes(F32, lanes))
    return raw


def store_convert(b: ir.IRBuilder, value: ir.Value, dtype: DType) -> ir.Value:
    """Register value -> storage value."""
    lanes = lanes_of(value)
    if dtype.is_bool:
        return b.zext(value, with_lanes(I8, lanes))
    if dtype.kind == "bfloat":
        return f32_to_bf16_bits(b, value)
    if dtype.kind == "float" and dtype.bits == 16:
        return b.fptrunc(value, with_lanes(F16, lanes))
    return value


def f32_to_bf16_bits(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """Round float32 to bfloat16 bits: nearest even; NaN stays a (quiet) NaN."""
    lanes = lanes_of(value)
    i32 = with_lanes(I32, lanes)

    def c(v: int) -> ir.Value:
        return splat(b, ir.Constant(I32, v), lanes)

    bits = b.bitcast(value, i32)
    lsb = b.and_(b.lshr(bits, c(16)), c(1))
    rounded = b.lshr(b.add(b.add(bits, c(0x7FFF)), lsb), c(16))
    quiet_nan = b.or_(b.lshr(bits, c(16)), c(0x40))
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.trunc(b.select(is_nan, quiet_nan, rounded), with_lanes(I16, lanes))


def round_to(b: ir.IRBuilder, value: ir.Value, dtype: DType) -> ir.Value:
    """Round a float32 register value to what float16/bfloat16 can represent (still float32)."""
    return load_convert(b, store_convert(b, value, dtype), dtype)


# ---------------------------------------------------------------------------------------------
# Casts (C semantics)
# ---------------------------------------------------------------------------------------------
def cast(b: ir.IRBuilder, value: ir.Value, src: DType, dst: DType) -> ir.Value:
    """Convert a register value of IR dtype `src` to IR dtype `dst` (lanes preserved)."""
    src, dst = src.element_of(), dst.element_of()
    if src == dst:
        return value
    lanes = lanes_of(value)
    target = reg_type(dst, lanes)
    if dst.is_bool:
        zero = ir.Constant(value.type, None)
        return b.fcmp_unordered("!=", value, zero) if src.is_float else b.icmp_unsigned("!=", value, zero)
    if dst.is_float:
        return _cast_to_float(b, value, src, dst, target)
    # integer destination
    if src.is_float:
        return b.fptosi(value, target) if dst.is_int else b.fptoui(value, target)
    width_src, width_dst = target_width(value.type), target_width(target)
    if width_src == width_dst:
        return value
    if width_src > width_dst:
        return b.trunc(value, target)
    return b.sext(value, target) if src.is_int else b.zext(value, target)


def target_width(t: ir.Type) -> int:
    return (t.element if isinstance(t, ir.VectorType) else t).width


def _cast_to_float(b: ir.IRBuilder, value: ir.Value, src: DType, dst: DType, target: ir.Type) -> ir.Value:
    lanes = lanes_of(value)
    half = dst.kind == "bfloat" or dst.bits == 16
    if src.is_bool or src.is_uint:
        out = b.uitofp(value, target)
    elif src.is_int:
        out = b.sitofp(value, target)
    elif value.type == target:
        out = value
    elif src.bits == 64 and dst.kind == "float" and dst.bits == 16:
        # double -> half without rounding twice: round to float32 *to odd*, then to half (RNE).
        # (A direct fptrunc double->half is a libcall, __truncdfhf2, that MCJIT cannot resolve.)
        return b.fpext(b.fptrunc(_f64_to_f32_round_odd(b, value), with_lanes(F16, lanes)), target)
    elif target_float_bits(target) > target_float_bits(value.type):
        out = b.fpext(value, target)
    else:
        out = b.fptrunc(value, target)
    return round_to(b, out, dst) if half else out


def _f64_to_f32_round_odd(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """float64 -> float32 rounded to odd: truncate toward zero, set the last bit when inexact.
    A later rounding to a narrower type (half) then equals a single correct rounding."""
    lanes = lanes_of(value)
    nearest = b.fptrunc(value, with_lanes(F32, lanes))
    back = b.fpext(nearest, value.type)
    inexact = b.fcmp_ordered("!=", back, value)
    mag = _fabs(b, value)
    overshoot = b.fcmp_ordered(">", _fabs(b, back), mag)
    bits = b.bitcast(nearest, with_lanes(I32, lanes))
    toward_zero = b.select(overshoot, b.sub(bits, splat(b, ir.Constant(I32, 1), lanes)), bits)
    odd = b.or_(toward_zero, splat(b, ir.Constant(I32, 1), lanes))
    return b.bitcast(b.select(inexact, odd, bits), with_lanes(F32, lanes))


def _fabs(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    zero = ir.Constant(value.type, None)
    return b.select(b.fcmp_ordered("<", value, zero), b.fneg(value), value)


def target_float_bits(t: ir.Type) -> int:
    element = t.element if isinstance(t, ir.VectorType) else t
    return 64 if isinstance(element, ir.DoubleType) else 32 if isinstance(element, ir.FloatType) else 16
