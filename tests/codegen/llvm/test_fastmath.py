"""fast_math=True polynomial transcendentals: accuracy against numpy (float64) over wide ranges,
special values, and that they vectorise (no scalar libm calls left)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.ir import dtype as dt
from codegen.llvm import build_x86, fastmath, generate_x86
from tests.codegen.llvm.llvm_helpers import elementwise_1d

_erf = np.vectorize(math.erf)
# name -> (inputs, float64 reference, max ulp error documented in codegen/llvm/fastmath.py)
CASES = {
    "exp": (np.concatenate([np.linspace(-110, 100, 40001), np.linspace(-1, 1, 2001)]), np.exp, 1.0),
    "log": (np.concatenate([np.geomspace(1e-45, 3.4e38, 40001), np.linspace(0.5, 2, 2001)]), np.log, 1.0),
    "tanh": (np.concatenate([np.linspace(-20, 20, 40001), np.linspace(-0.4, 0.4, 40001),
                             np.geomspace(1e-30, 1, 2001)]), np.tanh, 2.5),
    "erf": (np.linspace(-10, 10, 40001), _erf, 6.0),
    "sigmoid": (np.linspace(-100, 100, 40001), lambda x: 1 / (1 + np.exp(-x)), 2.5),
    "rsqrt": (np.geomspace(1e-44, 3e38, 40001), lambda x: 1 / np.sqrt(x), 2.5),
}
SPECIALS = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -1.0], np.float32)
EXPECTED_SPECIALS = {
    "exp": [np.inf, 0, np.nan, 1, 1, math.exp(-1)],
    "log": [np.inf, np.nan, np.nan, -np.inf, -np.inf, np.nan],
    "tanh": [1, -1, np.nan, 0.0, -0.0, math.tanh(-1)],
    "erf": [1, -1, np.nan, 0.0, -0.0, math.erf(-1)],
    "sigmoid": [1, 0, np.nan, 0.5, 0.5, 1 / (1 + math.e)],
    "rsqrt": [0, np.nan, np.nan, np.inf, -np.inf, np.nan],
}


def _kernel(name: str, n: int, factor: int = 8):  # type: ignore[no-untyped-def]
    f = elementwise_1d(n, dt.float32, lambda a: ir.Call(name, (a,), dt.float32), kind=ir.ForType.VECTORIZED,
                       factor=factor)
    return build_x86(f, fast_math=True, cache=False)


@pytest.mark.parametrize("factor", [8, 16])
@pytest.mark.parametrize("name", sorted(CASES))
def test_accuracy_over_wide_ranges(name: str, factor: int) -> None:
    xs, ref_fn, max_ulp = CASES[name]
    x = xs.astype(np.float32)
    y = _kernel(name, len(x), factor)(x).astype(np.float64)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    normal = (np.isfinite(ref) & (np.abs(ref) >= np.finfo(np.float32).tiny)
              & (np.abs(ref) <= np.finfo(np.float32).max))
    ulp = np.spacing(np.abs(ref[normal]).astype(np.float32)).astype(np.float64)
    err = np.abs(y[normal] - ref[normal]) / ulp
    assert err.max() <= max_ulp, f"{name}: {err.max():.2f} ulp at x={x[normal][err.argmax()]}"
    # outside the normal range the result saturates the way the docstring says
    np.testing.assert_array_equal(np.isinf(y[np.isinf(ref)]), True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_values(name: str) -> None:
    y = _kernel(name, len(SPECIALS))(SPECIALS)
    expected = np.array(EXPECTED_SPECIALS[name], np.float32)
    np.testing.assert_allclose(y, expected, rtol=3e-7, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(y[expected == 0]), np.signbit(expected[expected == 0]))


def test_fast_math_vectorises_where_libm_does_not() -> None:
    f = elementwise_1d(1024, dt.float32, lambda a: ir.Call("tanh", (a,), dt.float32) + ir.Call(
        "exp", (a,), dt.float32), kind=ir.ForType.VECTORIZED, factor=8)
    exact, fast = generate_x86(f), generate_x86(f, fast_math=True)
    assert "tanhf" in exact.llvm_ir
    assert "tanhf" not in fast.llvm_ir and "expf" not in fast.asm and "llvm.exp" not in fast.llvm_ir
    assert "<8 x float>" in fast.llvm_ir or "<16 x float>" in fast.llvm_ir


def test_float64_keeps_exact_libm() -> None:
    f = elementwise_1d(8, dt.float64, lambda a: ir.Call("erf", (a,), dt.float64))
    x = np.linspace(-3, 3, 8)
    np.testing.assert_array_equal(build_x86(f, fast_math=True, cache=False)(x), _erf(x))


@pytest.mark.skipif(not fastmath._host_has("avx512f"), reason="vscalefps needs AVX-512")
def test_vector_exp_scales_with_one_vscalef() -> None:
    f = elementwise_1d(1024, dt.float32, lambda a: ir.Call("exp", (a,), dt.float32),
                       kind=ir.ForType.VECTORIZED,
                       factor=16)
    asm = generate_x86(f, fast_math=True).asm
    assert "vscalefps" in asm
    # denormal results come out of the single scaling correctly rounded
    x = np.linspace(-103.9, -87.4, 1024).astype(np.float32)
    y = build_x86(f, fast_math=True, cache=False)(x).astype(np.float64)
    assert np.max(np.abs(y - np.exp(x.astype(np.float64)))) <= 2.0 ** -149
