"""Ops that make a tensor from attributes alone: `arange` and the seeded generators
`uniform_random` / `gaussian_random`.

The random generators are counter based, so a kernel and the numpy reference draw the same
numbers: element `i` (row-major) of the output hashes `i + 1` with a degree-4 polynomial modulo
the prime 2^31 - 1 whose coefficients come from `seed` (a 4-independent hash family; products
stay below 2^62, so int64 arithmetic is exact on every backend). `gaussian_random` feeds two such
streams through Box-Muller. Unlike CINN, `seed=0` is a fixed seed too (CINN draws a random one):
programs here are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import compute as cdsl
from cinn_py.frontend.ops import testing
from cinn_py.frontend.ops.base import (
    Attrs, FrontendError, OpDef, OpPatternKind, SymbolEnv, TensorType, numpy_dtype, register,
)
from cinn_py.frontend.ops.elementwise_base import scalar_of
from cinn_py.frontend.ops.reduce import accumulator
from cinn_py.frontend.ops.shapes import eval_shape, to_dim
from cinn_py.frontend.ops.signature import Signature, any_value, attr, dtype_arg, floating, integer, number
from cinn_py.frontend.ops.testing import Case, OpTest
from cinn_py.ir import EQ, LT, And, Expr, const, float64, int64


# ---------------------------------------------------------------------------------------------------------
# arange
# ---------------------------------------------------------------------------------------------------------
def _arange_attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
    d = at["dtype"]
    start, stop, step = (scalar_of(at[k], d, "arange") for k in ("start", "stop", "step"))
    if step == 0:
        raise FrontendError("arange: argument 'step' must not be 0")
    count = max(math.ceil((stop - start) / step), 0)
    return {"start": start, "stop": stop, "step": step, "dtype": d, "shape": (count,)}


def _arange_numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
    d = attrs["dtype"]
    i = np.arange(attrs["shape"][0])
    if d.is_float:   # as the kernel computes: start + i * step in the dtype (float32 math for 16-bit floats)
        w = accumulator(d).to_numpy()
        return [(i.astype(w) * np.asarray(attrs["step"], w)
                 + np.asarray(attrs["start"], w)).astype(numpy_dtype(d))]
    return [(attrs["start"] + i * attrs["step"]).astype(numpy_dtype(d))]


def _arange_compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                    out_name: str) -> cdsl.ComputeTensor:
    d = attrs["dtype"]
    w = accumulator(d) if d.is_float else d

    def body(i: Expr) -> Expr:
        return cdsl.cast(cdsl.cast(i, w) * const(attrs["step"], w) + const(attrs["start"], w), d)

    return cdsl.compute(out.shape, body, out_name)


register(OpDef("arange", OpPatternKind.kElementWise, lambda ins, at: [TensorType(at["shape"], at["dtype"])],
               _arange_numpy, _arange_compute, arity=0,
               signature=Signature((attr("start", number), attr("stop", number), attr("step", number),
                                    attr("dtype", dtype_arg)), attrs=_arange_attrs,
                                   doc="[start, stop) in steps of `step`: ceil((stop - start) / step) "
                                       "elements."),
               test=OpTest(("float32", "int32", "int64", "float16", "bfloat16", "float64"), lambda d: [
                   Case((0, 7, 1, d)), Case((5, -4, -3, d)), Case((2, 3, 5, d))] + (
                   [Case((0.5, 2.0, 0.25, d))] if d.startswith("float") else []))))


# ---------------------------------------------------------------------------------------------------------
# uniform_random / gaussian_random
# ---------------------------------------------------------------------------------------------------------
PRIME = 2**31 - 1
_DEGREE = 4


def _coefficients(seed: int, stream: int) -> tuple[int, ...]:
    """The hash polynomial's coefficients for (seed, stream), all in [1, PRIME)."""
    rng = np.random.default_rng([seed & 0xFFFFFFFF, stream])
    return tuple(int(c) for c in rng.integers(1, PRIME, size=_DEGREE + 1))


def _hash_np(counter: np.ndarray, coeffs: Sequence[int]) -> np.ndarray:
    h = np.full(counter.shape, coeffs[0], np.int64)
    for c in coeffs[1:]:
        h = (h * counter + c) % PRIME
    return h


def _hash_expr(counter: Expr, coeffs: Sequence[int]) -> Expr:
    h: Expr = const(coeffs[0], int64)
    for c in coeffs[1:]:
        h = (h * counter + const(c, int64)) % const(PRIME, int64)
    return h


def _uniform01_np(counter: np.ndarray, coeffs: Sequence[int]) -> np.ndarray:
    return _hash_np(counter, coeffs).astype(np.float64) / PRIME


def _uniform01_expr(counter: Expr, coeffs: Sequence[int]) -> Expr:
    return cdsl.cast(_hash_expr(counter, coeffs), float64) / const(float(PRIME), float64)


def _linear_index(idx: Sequence[Expr], shape: Sequence[Any]) -> Expr:
    """Row-major element number (int64) + 1 (the hash counter must be nonzero mod PRIME)."""
    lin: Expr = const(1, int64)
    stride: Any = 1
    for i, dim in reversed(list(zip(idx, shape))):
        s = const(stride, int64) if isinstance(stride, int) else stride
        lin = lin + cdsl.cast(i, int64) * s
        stride = stride * dim if isinstance(stride, int) and isinstance(dim, int) else \
            (const(stride, int64) if isinstance(stride, int) else stride) * (const(dim, int64)
                                                                             if isinstance(dim, int) else dim)
    return lin


def _random_attrs(kind: str) -> Callable[[Sequence[TensorType], dict[str, Any]], dict[str, Any]]:
    def attrs(ins: Sequence[TensorType], at: dict[str, Any]) -> dict[str, Any]:
        d = at["dtype"]
        if not d.is_float:
            raise FrontendError(f"{kind}: argument 'dtype' must be a floating-point dtype, got {d}")
        shape = at["shape"]
        if not isinstance(shape, (list, tuple)):
            raise FrontendError(f"{kind}: argument 'shape' must be a list, got {type(shape).__name__}")
        dims = tuple(to_dim(v, f"{kind}: shape[{k}]") for k, v in enumerate(shape))
        out = {"shape": dims, "dtype": d, "seed": at["seed"]}
        if kind == "uniform_random":
            if at["min"] > at["max"]:
                raise FrontendError(f"uniform_random: argument 'min' ({at['min']}) must not exceed 'max' "
                                    f"({at['max']})")
            out.update(min=at["min"], max=at["max"], diag_num=at["diag_num"], diag_step=at["diag_step"],
                       diag_val=at["diag_val"])
        else:
            if at["std"] < 0:
                raise FrontendError(f"gaussian_random: argument 'std' must be >= 0, got {at['std']}")
            out.update(mean=at["mean"], std=at["std"])
        return out
    return attrs


def _random_numpy(kind: str) -> Callable[[Sequence[np.ndarray], Attrs, SymbolEnv], list[np.ndarray]]:
    def numpy(arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv) -> list[np.ndarray]:
        shape = eval_shape(attrs["shape"], env)
        counter = np.arange(1, math.prod(shape) + 1, dtype=np.int64).reshape(shape)
        u1 = _uniform01_np(counter, _coefficients(attrs["seed"], 0))
        if kind == "uniform_random":
            y = attrs["min"] + u1 * (attrs["max"] - attrs["min"])
            if attrs["diag_num"] > 0:
                k = counter - 1
                period = attrs["diag_step"] + 1
                y = np.where((k % period == 0) & (k // period < attrs["diag_num"]), attrs["diag_val"], y)
        else:
            u2 = _uniform01_np(counter, _coefficients(attrs["seed"], 1))
            y = attrs["mean"] + attrs["std"] * np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * math.pi * u2)
        return [np.asarray(y, np.float64).astype(numpy_dtype(attrs["dtype"]))]
    return numpy


def _random_compute(kind: str) -> Callable[..., cdsl.ComputeTensor]:
    def compute(ins: Sequence[cdsl.ComputeTensor], attrs: Attrs, out: TensorType,
                out_name: str) -> cdsl.ComputeTensor:
        def body(*idx: Expr) -> Expr:
            counter = _linear_index(idx, out.shape)
            u1 = _uniform01_expr(counter, _coefficients(attrs["seed"], 0))
            if kind == "uniform_random":
                lo, hi = const(float(attrs["min"]),
                               float64), const(float(attrs["max"] - attrs["min"]), float64)
                y = lo + u1 * hi
                if attrs["diag_num"] > 0:
                    k = counter - const(1, int64)
                    period = const(attrs["diag_step"] + 1, int64)
                    on_diag = And(_eq0(k % period), LT(k / period, const(attrs["diag_num"], int64)))
                    y = cdsl.select(on_diag, const(float(attrs["diag_val"]), float64), y)
            else:
                u2 = _uniform01_expr(counter, _coefficients(attrs["seed"], 1))
                radius = cdsl.sqrt(const(-2.0, float64) * cdsl.log1p(-u1))
                y = const(float(attrs["mean"]), float64) + const(float(attrs["std"]),
                                                                 float64) * radius * cdsl.cos(
                    const(2.0 * math.pi, float64) * u2)
            return cdsl.cast(y, attrs["dtype"])
        return cdsl.compute(out.shape, body, out_name)
    return compute


def _eq0(e: Expr) -> Expr:
    return EQ(e, const(0, e.dtype))


def _random_infer(ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    return [TensorType(attrs["shape"], attrs["dtype"])]


def _random_cases(kind: str) -> Callable[[str], list[Case]]:
    def cases(dtype: str) -> list[Case]:
        if kind == "uniform_random":
            return [Case(([7],), {"seed": 1, "dtype": dtype}),
                    Case(([3, 5],), {"min": 2.0, "max": 5.0, "dtype": dtype}),
                    Case(([4, 4],),
                         {"seed": 9, "dtype": dtype, "diag_num": 3, "diag_step": 4, "diag_val": 7.0})]
        return [Case(([7],), {"seed": 1, "dtype": dtype}),
                Case(([3, 5],), {"mean": 1.0, "std": 0.5, "dtype": dtype})]
    return cases


register(OpDef("uniform_random", OpPatternKind.kElementWise, _random_infer, _random_numpy("uniform_random"),
               _random_compute("uniform_random"), arity=0,
               signature=Signature(
                   (attr("shape", any_value), attr("min", floating, -1.0), attr("max", floating, 1.0),
                    attr("seed", integer, 0), attr("dtype", dtype_arg, "float32"),
                    attr("diag_num", integer, 0),
                    attr("diag_step", integer, 0), attr("diag_val", floating, 1.0)),
                   attrs=_random_attrs("uniform_random"),
                   doc="Uniform numbers in [min, max), reproducible for a seed (counter-based hash)."),
               test=OpTest(testing.FLOATS, _random_cases("uniform_random"), rtol=1e-5, atol=1e-6)))
register(OpDef("gaussian_random", OpPatternKind.kElementWise, _random_infer, _random_numpy("gaussian_random"),
               _random_compute("gaussian_random"), arity=0,
               signature=Signature(
                   (attr("shape", any_value), attr("mean", floating, 0.0), attr("std", floating, 1.0),
                    attr("seed", integer, 0), attr("dtype", dtype_arg, "float32")),
                   attrs=_random_attrs("gaussian_random"),
                   doc="Normal numbers N(mean, std^2), reproducible for a seed (Box-Muller on two hash "
                       "streams)."),
               test=OpTest(testing.FLOATS, _random_cases("gaussian_random"), rtol=1e-5, atol=1e-6)))
