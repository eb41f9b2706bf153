"""C arithmetic on numpy values: the exact semantics the interpreter promises.

Values are numpy scalars (serial evaluation) or numpy arrays (vectorised evaluation) of the
*compute dtype* of their IR dtype: the storage dtype for every type except bfloat16, which is
computed as float32 holding bfloat16-representable values (rounded to nearest even after every
bfloat16 operation, as CINN's `bfloat16` C++ type rounds on every conversion from float).

- Integer `+ - *` and negation wrap at the dtype width (numpy arithmetic on same-dtype operands).
- Integer `/` truncates toward zero and `%` takes the sign of the dividend (C99); a zero divisor
  raises `DivisionByZeroError`; `INT_MIN / -1` wraps to `INT_MIN` (undefined in C).
- `cinn_min(a, b)` is `a < b ? a : b` and `cinn_max(a, b)` is `a > b ? a : b`, exactly CINN's
  runtime macros: when either operand is NaN the result is `b`.
- float -> integer casts truncate toward zero. Out-of-range values saturate to the target's
  min/max and NaN becomes 0 (CUDA's `cvt.rzi.sat` behaviour; C leaves both undefined and x86
  `cvttss2si` yields INT_MIN instead, so tests must not depend on them). integer -> integer casts
  wrap; anything -> bool is `x != 0` (NaN -> true).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cinn_py.interp.errors import DivisionByZeroError
from cinn_py.ir import DType

Value = Any
"""A numpy scalar or ndarray of a compute dtype."""


def compute_dtype(dtype: DType) -> np.dtype:
    """numpy dtype the interpreter computes `dtype` in (bfloat16 -> float32)."""
    if dtype.kind == "bfloat":
        return np.dtype(np.float32)
    if dtype.kind in ("handle", "string"):
        raise TypeError(f"dtype {dtype} has no numeric value")
    return dtype.element_of().to_numpy()


def round_bf16(x: Value) -> Value:
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32; NaN stays
    NaN (quietened), infinities stay infinite."""
    arr = np.asarray(x, dtype=np.float32)
    bits = arr.view(np.uint32)
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))) & np.uint32(0xFFFF0000)
    nan = np.isnan(arr)
    if nan.any():
        rounded = np.where(nan, (bits | np.uint32(0x00400000)) & np.uint32(0xFFFF0000), rounded)
    return np.asarray(rounded, dtype=np.uint32).view(np.float32)[()]


def float32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) of float values, rounded to nearest even."""
    rounded = np.asarray(round_bf16(np.asarray(x, dtype=np.float32)), dtype=np.float32)
    return (rounded.view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """float32 values of bfloat16 bit patterns (uint16), exactly."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def make_const(value: int | float, dtype: DType) -> Value:
    """The numpy scalar of an IR immediate; integers wrap into range like a C constant cast."""
    np_dtype = compute_dtype(dtype)
    if dtype.is_bool:
        return np.bool_(bool(value))
    if dtype.is_integral:
        bits = np_dtype.itemsize * 8
        wrapped = int(value) % (1 << bits)
        if dtype.is_int and wrapped >= 1 << (bits - 1):
            wrapped -= 1 << bits
        return np_dtype.type(wrapped)
    if dtype.kind == "bfloat":
        return round_bf16(np.float32(value))
    return np_dtype.type(value)


def _as_array(x: Value) -> np.ndarray:
    return np.asarray(x)


def c_div(a: Value, b: Value, dtype: DType) -> Value:
    """`a / b` in C: float true division, integer division truncating toward zero."""
    if dtype.is_float:
        return a / b
    if dtype.is_bool:
        raise TypeError("division of bool values")
    _check_divisor(b, "/")
    if dtype.is_uint:
        return a // b
    q = a // b
    # Floor and truncation differ when the remainder is non-zero and the signs differ.
    fix = (a - q * b != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype) if isinstance(fix, np.ndarray) else q + q.dtype.type(bool(fix))


def c_mod(a: Value, b: Value, dtype: DType) -> Value:
    """`a % b` in C: the remainder has the sign of the dividend (`fmod` for floats)."""
    if dtype.is_float:
        return np.fmod(a, b)
    if dtype.is_bool:
        raise TypeError("remainder of bool values")
    _check_divisor(b, "%")
    return np.fmod(a, b)


def _check_divisor(b: Value, op: str) -> None:
    if np.any(_as_array(b) == 0):
        raise DivisionByZeroError(f"interp: integer '{op}' by zero (undefined behaviour in C)")


def cinn_min(a: Value, b: Value) -> Value:
    """CINN's `cinn_min(a, b)` = `a < b ? a : b` (NaN in either operand gives `b`)."""
    return np.where(a < b, a, b)[()]


def cinn_max(a: Value, b: Value) -> Value:
    """CINN's `cinn_max(a, b)` = `a > b ? a : b` (NaN in either operand gives `b`)."""
    return np.where(a > b, a, b)[()]


def c_cast(x: Value, src: DType, dst: DType) -> Value:
    """Convert `x` (of IR dtype `src`) to IR dtype `dst` with the C rules in the module doc."""
    src, dst = src.element_of(), dst.element_of()
    if src == dst:
        return x
    arr = _as_array(x)
    if dst.is_bool:
        return (arr != 0)[()]
    if dst.kind == "bfloat":
        return round_bf16(arr.astype(np.float32))
    target = compute_dtype(dst)
    if dst.is_integral and src.is_float:
        return _float_to_int(arr, target)
    return arr.astype(target)[()]


def _float_to_int(arr: np.ndarray, target: np.dtype) -> Value:
    info = np.iinfo(target)
    wide = arr.astype(np.float64)
    truncated = np.trunc(np.where(np.isnan(wide), 0.0, wide))
    # The largest float64 not above info.max (2**63 - 1 is not representable in float64).
    hi = np.nextafter(np.float64(info.max) + 1.0, 0.0) if info.bits == 64 else np.float64(info.max)
    clipped = np.clip(truncated, np.float64(info.min), hi).astype(target)
    saturate_hi = truncated > hi
    if saturate_hi.any():
        clipped = np.where(saturate_hi, target.type(info.max), clipped)
    return clipped[()]


# -- exact emulation of serial folds (vectorised reductions) ---------------------------------------
def fold_min_max(acc: Value, values: np.ndarray, is_max: bool) -> Value:
    """The result of `acc = cinn_max(acc, v)` (or `cinn_min`) over `values` along axis 0, exactly.

    The fold keeps `acc` only when it is strictly better, so ties and NaNs go to the later
    operand: the result is the last value equal to the extreme value after the last NaN, or the
    last NaN itself when it comes last.
    """
    seq = np.concatenate([np.broadcast_to(acc, (1,) + values.shape[1:]), values], axis=0)
    if not np.issubdtype(seq.dtype, np.floating):
        return (seq.max(axis=0) if is_max else seq.min(axis=0))[()]
    n = seq.shape[0]
    positions = np.arange(n).reshape((n,) + (1,) * (seq.ndim - 1))
    nan = np.isnan(seq)
    last_nan = np.where(nan, positions, -1).max(axis=0)
    live = positions > last_nan
    fill = -np.inf if is_max else np.inf
    masked = np.where(live, seq, fill)
    extreme = masked.max(axis=0) if is_max else masked.min(axis=0)
    # Last live position holding a value equal to the extreme (ties: the later operand wins).
    hit = live & (seq == extreme)
    last_hit = np.where(hit, positions, -1).max(axis=0)
    pick = np.where(last_nan == n - 1, n - 1, last_hit)
    pick = np.where(pick < 0, n - 1, pick)  # all-equal infinities etc. are covered by `hit`
    return np.take_along_axis(seq, pick.reshape((1,) + pick.shape), axis=0)[0][()]
