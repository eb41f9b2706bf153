"""Lowered functions run through the reference interpreter (`run_ir`) agree with numpy.

The seed example is checked for (S1, S2) in {(1, 1), (3, 5), (4, 7)}, in the iteration-by-iteration
mode as well as the vectorised one; every reduction kind, 0-d and keep-dims reductions, float16 /
bfloat16, integer and bool programs, and mixed static/symbolic functions are checked too.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.interp import run_ir
from tests.lower import programs
from tests.lower.test_seed_example import build_seed

RNG = np.random.default_rng(20240607)


@pytest.mark.parametrize(("s1", "s2"), [(1, 1), (3, 5), (4, 7)])
@pytest.mark.parametrize("vectorize", [True, False], ids=["vectorized", "scalar"])
def test_seed_example_matches_numpy(s1: int, s2: int, vectorize: bool) -> None:
    X, F = build_seed()
    func = cp.lower("fn", [X, F])
    x = RNG.standard_normal((s1, s2, 1024)).astype(np.float32)
    out = run_ir(func, {"X": x}, vectorize=vectorize)["F"]
    b = x * np.float32(2) + np.float32(1)
    d = b.sum(axis=2, dtype=np.float64).astype(np.float32) * np.float32(2)
    expected = np.broadcast_to(d[:, :, None], (s1, s2, 1024)) + np.float32(1)
    assert out.shape == (s1, s2, 1024) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize(("kind", "dtype", "ref"), [
    ("sum", "float32", np.sum), ("prod", "int32", np.prod), ("max", "float32", np.max),
    ("min", "int64", np.min), ("all", "bool", np.all), ("any", "bool", np.any),
])
def test_every_reduction_kind_matches_numpy(kind: str, dtype: str, ref: Callable[..., np.ndarray]) -> None:
    A = cp.placeholder((5, 6), dtype, "A")
    k = cp.reduce_axis(6, "k")
    B = cp.compute((5,), lambda i: getattr(cp, f"reduce_{kind}")(A[i, k], k), "B")
    func = cp.lower("fn", [A, B])
    if dtype == "bool":
        a = RNG.random((5, 6)) < 0.8
        a[0] = True
        a[1] = False
    elif dtype == "float32":
        a = RNG.standard_normal((5, 6)).astype(np.float32)
        a[2] = -np.inf  # max over an all -inf row is -inf, as in numpy
    else:
        a = RNG.integers(-3, 4, (5, 6)).astype(dtype)
    out = run_ir(func, {"A": a})["B"]
    np.testing.assert_allclose(out, ref(a, axis=1), rtol=1e-6)


def test_full_reduction_to_a_0d_tensor() -> None:
    A = cp.placeholder((4, 8), "float32", "A")
    r0, r1 = cp.reduce_axis(4, "r0"), cp.reduce_axis(8, "r1")
    T = cp.compute((), lambda: cp.reduce_sum(A[r0, r1], [r0, r1]), "T")
    U = cp.compute((), lambda: T[()] / 32.0, "U")
    a = RNG.standard_normal((4, 8)).astype(np.float32)
    out = run_ir(cp.lower("mean", [A, U]), {"A": a})["U"]
    assert out.shape == ()
    np.testing.assert_allclose(out, a.mean(), rtol=1e-5)


def test_keepdims_multi_axis_reduction() -> None:
    A = cp.placeholder((2, 3, 4), "float32", "A")
    r0, r2 = cp.reduce_axis(2, "r0"), cp.reduce_axis(4, "r2")
    B = cp.compute((1, 3, 1), lambda i, j, k: cp.reduce_max(A[r0 + i, j, r2 + k], [r0, r2]), "B")
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    out = run_ir(cp.lower("keep", [A, B]), {"A": a})["B"]
    np.testing.assert_array_equal(out, a.max(axis=(0, 2), keepdims=True))


def test_float16_math_and_bfloat16_relu() -> None:
    A = cp.placeholder((16,), "float16", "A")
    B = cp.placeholder((16,), "bfloat16", "B")
    C = cp.compute((16,), lambda i: cp.exp(A[i]) * 2, "C")
    D = cp.compute((16,), lambda i: cp.maximum(B[i], 0), "D")
    a = RNG.uniform(-2, 2, 16).astype(np.float16)
    b = RNG.uniform(-2, 2, 16).astype(np.float32)
    out = run_ir(cp.lower("half", [A, B, C, D]), {"A": a, "B": b})
    np.testing.assert_allclose(out["C"].astype(np.float32), np.exp(a.astype(np.float32)) * 2, rtol=2e-3)
    d = np.asarray(out["D"])
    d = cp_bf16_to_float(d)
    b_rounded = cp_bf16_to_float(cp_float_to_bf16(b))
    np.testing.assert_array_equal(d, np.maximum(b_rounded, 0))


def cp_float_to_bf16(x: np.ndarray) -> np.ndarray:
    from cinn_py.interp import float32_to_bf16_bits

    return float32_to_bf16_bits(x.astype(np.float32))


def cp_bf16_to_float(x: np.ndarray) -> np.ndarray:
    from cinn_py.interp import bf16_bits_to_float32

    return bf16_bits_to_float32(x) if x.dtype == np.uint16 else x.astype(np.float32)


def test_integer_and_bool_program() -> None:
    a = np.array([5, -4, 7, 0, 9, 2], dtype=np.int32)
    m = np.array([True, True, False, True, True, True])
    out = run_ir(programs.ints_bool(), {"A": a, "M": m})
    b = np.where(m & (a > 0), a % 3, -1).astype(np.int32)
    np.testing.assert_array_equal(out["B"], b)
    np.testing.assert_array_equal(out["C"], b.astype(np.float32) + np.arange(6, dtype=np.float32))


@pytest.mark.parametrize("s", [1, 3])
def test_mixed_static_and_symbolic_function(s: int) -> None:
    x = RNG.standard_normal((s, 4)).astype(np.float32)
    w = RNG.standard_normal(4).astype(np.float32)
    out = run_ir(programs.symbolic_mixed(), {"X": x, "W": w})["Z"]
    np.testing.assert_allclose(out, np.repeat(x @ w, 2) + w[3], rtol=1e-5, atol=1e-6)


def test_rms_norm_from_the_readme() -> None:
    S = cp.sym("S")
    X = cp.placeholder((S, 768), "float32", "X")
    k = cp.reduce_axis(768, "k")
    SS = cp.compute((S,), lambda i: cp.reduce_sum(X[i, k] * X[i, k], [k]), "SS")
    Y = cp.compute((S, 768), lambda i, j: X[i, j] * cp.rsqrt(SS[i] / 768.0 + 1e-6), "Y")
    x = RNG.standard_normal((3, 768)).astype(np.float32)
    out = run_ir(cp.lower("rms_norm", [X, Y]), {"X": x})["Y"]
    expected = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
