"""The math intrinsics an IR `Call` may name, with their arity, dtype rules and numpy semantics.

This table is the contract between the compute DSL (which builds `Call(name, args, dtype)`), the
reference interpreter and the backends (which must implement every entry). CINN builds the same
calls with `lang::CallExtern("exp", {x})` and lets the codegen map the generic name to a typed
device function (`cinn_nvgpu_exp_fp32`, `expf`, ...); we keep generic names in the IR too.

Dtype rules (`ArgKind`):
- `FLOAT`: every argument is a float (float16/bfloat16/float32/float64) of one dtype; the result
  has that dtype. float16/bfloat16 calls stay in their own dtype in the IR; backends widen them
  to float32 to compute, as CINN's CUDA runtime does.
- `NUMERIC`: signed/unsigned integer or float (`abs`).
- `INT`: signed/unsigned integers of one dtype (`bitwise_and/or/xor/not`, `left_shift`,
  `right_shift` (arithmetic for signed, logical for unsigned, as C's `>>`), `clz`, `popc`); shift
  counts outside [0, bits) are undefined, as in C.
- `result_bool`: the result is bool (`isnan`, `isinf`, `isfinite`).

`reference` is the numpy definition of the semantics (C semantics where C and numpy differ:
`round` rounds half away from zero like C's `round`, not half to even like `np.round`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cinn_py.ir.dtype import DType, bool_


class ArgKind(enum.Enum):
    FLOAT = "float"
    NUMERIC = "numeric"
    INT = "int"


@dataclass(frozen=True, slots=True)
class Intrinsic:
    """One callable math function: `name(args...)`."""

    name: str
    arity: int
    arg_kind: ArgKind
    reference: Callable[..., np.ndarray]
    result_bool: bool = False
    int_identity: bool = False
    """On integer operands the function is the identity (floor/ceil/round/trunc), so the DSL
    returns the operand instead of building a call (as TVM does)."""

    def accepts(self, dtype: DType) -> bool:
        """Whether an argument of `dtype` is allowed."""
        elem = dtype.element_of()
        if self.arg_kind is ArgKind.FLOAT:
            return elem.is_float
        if self.arg_kind is ArgKind.INT:
            return elem.is_integral
        return elem.is_float or elem.is_integral

    def result_dtype(self, arg_dtype: DType) -> DType:
        """Dtype of the call given the (common) argument dtype."""
        if self.result_bool:
            return bool_.with_lanes(arg_dtype.lanes)
        return arg_dtype


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


def _c_round(x: np.ndarray) -> np.ndarray:
    # C `round`: halfway cases away from zero (np.round rounds half to even).
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    arr = np.asarray(x)
    return np.asarray(_erf_scalar(arr.astype(np.float64)), dtype=np.float64).astype(arr.dtype, copy=False)


_UNARY_FLOAT: dict[str, Callable[..., np.ndarray]] = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "sqrt": np.sqrt, "rsqrt": _rsqrt, "cbrt": np.cbrt,
    "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "erf": _erf,
}
_ROUNDING: dict[str, Callable[..., np.ndarray]] = {
    "floor": np.floor, "ceil": np.ceil, "round": _c_round, "trunc": np.trunc,
}
_PREDICATES: dict[str, Callable[..., np.ndarray]] = {
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
}


def _unsigned_view(x: np.ndarray) -> np.ndarray:
    arr = np.asarray(x)
    return arr.view(np.dtype(f"u{arr.dtype.itemsize}"))


def _popc(x: np.ndarray) -> np.ndarray:
    """Number of set bits of the two's-complement pattern."""
    arr = np.asarray(x)
    u = _unsigned_view(arr).astype(np.uint64)
    count = np.zeros(u.shape, np.uint64)
    for _ in range(arr.dtype.itemsize * 8):
        count += u & np.uint64(1)
        u = u >> np.uint64(1)
    return count.astype(arr.dtype)[()]


def _clz(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of the two's-complement pattern (the width for 0), as CUDA's `__clz`."""
    arr = np.asarray(x)
    bits = arr.dtype.itemsize * 8
    u = _unsigned_view(arr).astype(np.uint64)
    count = np.full(u.shape, bits, np.int64)
    for k in range(bits):  # the highest set bit k leaves bits - 1 - k leading zeros
        count = np.where((u >> np.uint64(k)) & np.uint64(1), bits - 1 - k, count)
    return count.astype(arr.dtype)[()]


def _right_shift(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.right_shift(a, b)  # numpy: arithmetic for signed, logical for unsigned (as C)


_INTEGER: dict[str, tuple[int, Callable[..., np.ndarray]]] = {
    "bitwise_and": (2, np.bitwise_and), "bitwise_or": (2, np.bitwise_or), "bitwise_xor": (2, np.bitwise_xor),
    "bitwise_not": (1, np.invert), "left_shift": (2, np.left_shift), "right_shift": (2, _right_shift),
    "clz": (1, _clz), "popc": (1, _popc),
}


def _build_table() -> dict[str, Intrinsic]:
    table: dict[str, Intrinsic] = {}
    for name, fn in _UNARY_FLOAT.items():
        table[name] = Intrinsic(name, 1, ArgKind.FLOAT, fn)
    for name, fn in _ROUNDING.items():
        table[name] = Intrinsic(name, 1, ArgKind.FLOAT, fn, int_identity=True)
    for name, fn in _PREDICATES.items():
        table[name] = Intrinsic(name, 1, ArgKind.FLOAT, fn, result_bool=True)
    table["abs"] = Intrinsic("abs", 1, ArgKind.NUMERIC, np.abs)
    table["pow"] = Intrinsic("pow", 2, ArgKind.FLOAT, np.power)
    table["atan2"] = Intrinsic("atan2", 2, ArgKind.FLOAT, np.arctan2)
    table["fmod"] = Intrinsic("fmod", 2, ArgKind.FLOAT, np.fmod)
    for name, (arity, fn) in _INTEGER.items():
        table[name] = Intrinsic(name, arity, ArgKind.INT, fn)
    return table


INTRINSICS: dict[str, Intrinsic] = _build_table()
"""Every math intrinsic by Call name."""


def lookup(name: str) -> Intrinsic | None:
    """The intrinsic called `name`, or None for runtime helpers / unknown names."""
    return INTRINSICS.get(name)
