"""Math intrinsics (`Call` nodes) for the interpreter, vectorised and in C semantics.

The names are the generic ones of `cinn_py.ir.intrinsics` (`exp`, `tanh`, `erf`, ...). Every
function maps numpy values of the call's compute dtype to the same dtype: float16 calls run in
numpy's float16 loops (computed in float32, rounded once to float16, like CUDA's `hexp`), and
bfloat16 calls run in float32 and are rounded back to bfloat16 by the caller.

`erf` is computed here instead of with `math.erf` per element (too slow for the oracle): below
|x| = 3 with the everywhere-positive series erf(x) = 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1)/(2n+1)!!
(no cancellation), above with the continued fraction of erfc; the relative error is below 1e-15.
`round` is C's `round` (halfway away from zero), not numpy's half-to-even.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from cinn_py.interp.numerics import Value
from cinn_py.ir import INTRINSICS

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


def _erf_series(x: np.ndarray) -> np.ndarray:
    """erf for |x| < 3: sum of positive terms, stopped when they no longer change the sum."""
    x2 = x * x
    term = x.copy()
    total = x.copy()
    for n in range(1, 200):
        term = term * (2.0 * x2) / (2.0 * n + 1.0)
        total = total + term
        if not np.any(np.abs(term) > 1e-17 * np.abs(total)):
            break
    return _TWO_OVER_SQRT_PI * np.exp(-x2) * total


def _erfc_cf(x: np.ndarray) -> np.ndarray:
    """erfc for x >= 3 from its continued fraction, evaluated bottom-up (converges fast there)."""
    frac = np.zeros_like(x)
    for k in range(60, 0, -1):
        frac = (k / 2.0) / (x + frac)
    return _INV_SQRT_PI * np.exp(-x * x) / (x + frac)


def erf(x: Value) -> Value:
    """Vectorised error function in float64 precision, returned in the dtype of `x`."""
    arr = np.asarray(x)
    wide = arr.astype(np.float64).reshape(-1)
    out = np.empty_like(wide)
    ax = np.abs(wide)
    small = ax < 3.0
    large = ~small & (ax < 6.0)
    if small.any():
        out[small] = _erf_series(wide[small])
    if large.any():
        out[large] = np.copysign(1.0 - _erfc_cf(ax[large]), wide[large])
    rest = ~(small | large)
    out[rest] = np.where(np.isnan(wide[rest]), wide[rest], np.sign(wide[rest]))  # erf(|x|>=6) == +-1
    return out.reshape(arr.shape).astype(arr.dtype)[()]


def c_round(x: Value) -> Value:
    """C `round`: to nearest, halfway cases away from zero (exact: the fraction is exact)."""
    arr = np.asarray(x)
    whole = np.trunc(arr)
    frac = arr - whole
    step = np.where(np.abs(frac) >= 0.5, np.copysign(np.ones_like(arr), arr), np.zeros_like(arr))
    return (whole + step).astype(arr.dtype)[()]


def rsqrt(x: Value) -> Value:
    arr = np.asarray(x)
    return (arr.dtype.type(1) / np.sqrt(arr))[()]


def c_abs(x: Value) -> Value:
    """`abs`: floats clear the sign bit; integers wrap (`abs(INT_MIN) == INT_MIN`)."""
    return np.abs(x)


_OVERRIDES: dict[str, Callable[..., Value]] = {
    "rsqrt": rsqrt, "erf": erf, "round": c_round, "abs": c_abs, "fabs": c_abs,
}
"""Where the interpreter's definition differs from the table's numpy reference: `rsqrt` keeps
the operand's dtype, `erf` is vectorised, `round` is exact; `fabs` is an alias of `abs`."""

_FUNCTIONS: dict[str, Callable[..., Value]] = {
    **{name: entry.reference for name, entry in INTRINSICS.items()}, **_OVERRIDES,
}
_ARITY: dict[str, int] = {name: entry.arity for name, entry in INTRINSICS.items()}


# Calls that need real GPU threads (CINN's cross-thread reduce helpers and shuffles).
_THREAD_HELPER_PREFIXES = (
    "cinn_block_reduce", "cinn_warp_reduce", "cinn_discrete_reduce", "cinn_grid_reduce",
    "cinn_warp_shuffle", "__shfl",
)


def needs_threads(name: str) -> bool:
    """True for runtime helpers whose meaning depends on a team of real threads."""
    return name.startswith(_THREAD_HELPER_PREFIXES)


def lookup(name: str) -> tuple[Callable[..., Value], int] | None:
    """(function, arity) of the intrinsic `name`, or None if the interpreter does not know it.

    Every name of the shared intrinsic table (`cinn_py.ir.intrinsics`) is known: its numpy
    reference, or the interpreter's own definition in `_OVERRIDES`.
    """
    if name in _FUNCTIONS:
        return _FUNCTIONS[name], _ARITY.get(name, 1)
    return None


def known_names() -> list[str]:
    """Every intrinsic name the interpreter implements."""
    return sorted(_FUNCTIONS)
