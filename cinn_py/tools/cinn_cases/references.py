"""Numpy references of the ops CINN's op tests call, written from the ops' definitions (Paddle's
semantics where CINN follows them: floor-mod `remainder`, round half away from zero)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special


def paddle_broadcast(y: np.ndarray, x_rank: int, axis: int) -> np.ndarray:
    """y viewed in x's rank with its dims at [axis, axis + rank(y)) (Paddle's elementwise `axis`;
    -1: aligned to the right, numpy's rule)."""
    if axis < 0 or y.ndim == x_rank:
        return y
    return y.reshape((1,) * axis + y.shape + (1,) * (x_rank - axis - y.ndim))


def _wide(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """`fn` evaluated in float64 (float32 for float16: its own rounding), cast back to x's dtype."""

    def ref(x: np.ndarray, **_: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)

    return ref


def _same(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """`fn` in x's own dtype (exact ops); a float result keeps x's dtype (bfloat16 arithmetic
    promotes to float32 in numpy)."""

    def ref(x: np.ndarray, **_: Any) -> np.ndarray:
        out = np.asarray(fn(x))
        return out.astype(x.dtype) if out.dtype.kind == "f" and out.dtype != x.dtype else out

    return ref


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _gelu(x: np.ndarray, approximate: bool = False) -> np.ndarray:
    w = x.astype(np.float64)
    if approximate:
        out = 0.5 * w * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (w + 0.044715 * w**3)))
    else:
        out = 0.5 * w * (1.0 + special.erf(w / np.sqrt(2.0)))
    return out.astype(x.dtype)


def _popcount(x: np.ndarray, **_: Any) -> np.ndarray:
    """Set bits of each element's two's complement (CINN's popc test computes the same)."""
    bits = np.unpackbits(np.ascontiguousarray(x).view(np.uint8).reshape(*x.shape, x.itemsize), axis=-1)
    return bits.sum(axis=-1).astype(x.dtype)


def _clz(x: np.ndarray, **_: Any) -> np.ndarray:
    """Leading zero bits of each element's two's complement (0 for a negative value)."""
    bits = 8 * x.itemsize
    count = np.frompyfunc(lambda v: 0 if v < 0 else bits - int(v).bit_length(), 1, 1)
    return np.asarray(count(x), dtype=np.int64).astype(x.dtype)


# op -> (reference, exact): `exact` where CINN checks with all_equal (or the result is exact)
UNARY: dict[str, tuple[Callable[..., np.ndarray], bool]] = {
    "abs": (_same(np.abs), True),
    "acos": (_wide(np.arccos), False),
    "acosh": (_wide(np.arccosh), False),
    "asin": (_wide(np.arcsin), False),
    "asinh": (_wide(np.arcsinh), False),
    "atan": (_wide(np.arctan), False),
    "atanh": (_wide(np.arctanh), False),
    "cbrt": (_wide(np.cbrt), False),
    "ceil": (_same(np.ceil), True),
    "cos": (_wide(np.cos), False),
    "cosh": (_wide(np.cosh), False),
    "erf": (_wide(special.erf), False),
    "exp": (_wide(np.exp), False),
    "floor": (_same(np.floor), True),
    "gelu": (_gelu, False),
    "identity": (_same(np.array), True),
    "is_finite": (_same(np.isfinite), True),
    "is_inf": (_same(np.isinf), True),
    "is_nan": (_same(np.isnan), True),
    "log": (_wide(np.log), False),
    "log2": (_wide(np.log2), False),
    "log10": (_wide(np.log10), False),
    "logical_not": (_same(np.logical_not), True),
    "negative": (_same(np.negative), True),
    "popc": (_popcount, True),
    "clz": (_clz, True),
    "reciprocal": (_wide(np.reciprocal), False),
    "relu": (_same(lambda x: np.maximum(x, np.zeros((), x.dtype))), True),
    "relu6": (
        _same(lambda x: np.minimum(np.maximum(x, np.zeros((), x.dtype)), np.asarray(6, x.dtype))),
        True,
    ),
    "round": (_same(_round_half_away), True),
    "rsqrt": (_wide(lambda x: 1.0 / np.sqrt(x)), False),
    "sigmoid": (_wide(lambda x: 1.0 / (1.0 + np.exp(-x))), False),
    "sign": (_same(np.sign), True),
    "sin": (_wide(np.sin), False),
    "sinh": (_wide(np.sinh), False),
    "sqrt": (_wide(np.sqrt), False),
    "tan": (_wide(np.tan), False),
    "tanh": (_wide(np.tanh), False),
    "trunc": (_same(np.trunc), True),
}


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu":  # C's truncation, as CINN's integer divide
        return (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(x.dtype)
    return np.asarray(x.astype(np.float64) / y).astype(x.dtype)


def _floor_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.mod(x, y).astype(x.dtype)


def _floor_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.floor_divide(x, y).astype(x.dtype)


def _typed(
    fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, y)).astype(x.dtype)

    return ref


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integers: CINN's host rule, `(T)pow((double)x, (double)y)`, and -1 for 0 ** negative."""
    if x.dtype.kind in "iu":
        undefined = (x == 0) & (y < 0)
        with np.errstate(all="ignore"):
            power = np.trunc(np.power(x.astype(np.float64), np.where(undefined, 1, y).astype(np.float64)))
        return np.where(undefined, -1, power).astype(x.dtype)
    with np.errstate(all="ignore"):
        return np.power(x.astype(np.float64), y).astype(x.dtype)


BINARY: dict[str, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], bool]] = {
    "add": (_typed(np.add), False),
    "subtract": (_typed(np.subtract), False),
    "multiply": (_typed(np.multiply), False),
    "divide": (_div, False),
    "maximum": (_typed(np.maximum), True),
    "minimum": (_typed(np.minimum), True),
    "pow": (_pow, False),
    "remainder": (_floor_mod, False),
    "mod": (_floor_mod, False),
    "floor_divide": (_floor_div, True),
    "atan2": (_typed(lambda x, y: np.arctan2(x.astype(np.float64), y)), False),
    "equal": (np.equal, True),
    "not_equal": (np.not_equal, True),
    "greater_than": (np.greater, True),
    "less_than": (np.less, True),
    "greater_equal": (np.greater_equal, True),
    "less_equal": (np.less_equal, True),
    "logical_and": (np.logical_and, True),
    "logical_or": (np.logical_or, True),
    "logical_xor": (np.logical_xor, True),
    "bitwise_and": (_typed(np.bitwise_and), True),
    "bitwise_or": (_typed(np.bitwise_or), True),
    "bitwise_xor": (_typed(np.bitwise_xor), True),
    "left_shift": (_typed(np.left_shift), True),
    "right_shift": (_typed(np.right_shift), True),
}
