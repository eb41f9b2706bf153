"""Numpy references with the compiled code's semantics where numpy's differ (docs/semantics.md).

`Program.run_numpy` is the oracle that compiled programs are compared with, so it must compute
what the kernels compute, not what numpy happens to do:

- max/min follow CINN's `cinn_max(a, b) = a > b ? a : b` (`cinn_min`: `<`): a NaN operand gives
  `b` (numpy's `maximum` propagates it). relu, relu6, clip and max pooling are built from them.
- `reduce_max`/`reduce_min` fold left to right in row-major order of the reduced axes from
  -inf/+inf (the type's lowest/highest value for integers), with the same rule, as a serial
  kernel does (`cinn_py.interp.numerics.fold_min_max` computes the fold exactly).
- integer division and remainder by zero give 0, as the x86 backend does (C leaves it undefined;
  numpy gives 0 with a warning, and truncating division through a safe divisor gave `a`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cinn_py.interp.numerics import fold_min_max


def cinn_maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a > b ? a : b` elementwise (NaN in either operand gives `b`)."""
    a, b = np.asarray(a), np.asarray(b)
    return np.where(a > b, a, b).astype(np.result_type(a, b), copy=False)


def cinn_minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a < b ? a : b` elementwise (NaN in either operand gives `b`)."""
    a, b = np.asarray(a), np.asarray(b)
    return np.where(a < b, a, b).astype(np.result_type(a, b), copy=False)


def fold_extreme(x: np.ndarray, axes: Sequence[int], keepdims: bool, is_max: bool) -> np.ndarray:
    """`reduce_max`/`reduce_min` of `x` over `axes` as a serial left-to-right fold (see above)."""
    axes = sorted(a % max(x.ndim, 1) for a in axes) if x.ndim else []
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, axes + kept) if x.ndim else x.reshape(())
    rest = tuple(x.shape[d] for d in kept)
    values = moved.reshape((-1,) + rest)
    out = np.asarray(fold_min_max(np.asarray(_start(x.dtype, is_max), x.dtype), values, is_max))
    if keepdims:
        out = out.reshape(tuple(1 if d in axes else x.shape[d] for d in range(x.ndim)))
    return out.astype(x.dtype, copy=False)


def _start(dtype: np.dtype, is_max: bool) -> float | int:
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return int(info.min if is_max else info.max)
    if dtype == np.bool_:
        return not is_max
    return -np.inf if is_max else np.inf


def int_division(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], a: np.ndarray,
                 b: np.ndarray) -> np.ndarray:
    """`fn(a, b)` for integer operands with a zero divisor giving 0 (floats: `fn` unchanged,
    IEEE gives inf/NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(a, b)
    zero = b == 0
    safe = np.where(zero, np.ones((), b.dtype), b)
    return np.where(zero, np.zeros((), a.dtype), fn(a, safe)).astype(np.result_type(a, b), copy=False)
