"""A padded window read `select(inside, x[min(max(e, lo), hi)], pad)` in a vector loop is one
`llvm.masked.load` at the unclamped index when `inside` bounds every clamp (codegen/llvm/
window_load.py); otherwise (a condition that does not bound the clamp, a strided index) it stays
a gather. Both give the select's values, padding lanes included."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.ir import dtype as dt
from codegen.llvm import build_x86, generate_x86
from codegen.llvm.window_load import unclamped_window_load
from tests.codegen.llvm.llvm_helpers import func, loop, random_array, tensor

N, PAD = 37, 3


def _shifted(cond_hi: int, stride: int = 1, pad: float = -1.5) -> ir.LoweredFunc:
    """B[i] = select(0 <= s*i - PAD < cond_hi, A[clamp(s*i - PAD, 0, N - 1)], pad), i in [0, N + 2 PAD)."""
    i = ir.Var("i")
    A, B = tensor("A", (N,), dt.float32), tensor("B", (N + 2 * PAD,), dt.float32)
    e = i * ir.const(stride) - ir.const(PAD)
    inside = ir.And(ir.GE(e, ir.const(0)), ir.LT(e, ir.const(cond_hi)))
    clamped = ir.Min(ir.Max(e, ir.const(0)), ir.Sub(ir.const(N), ir.const(1)))
    value = ir.Select(inside, ir.Load(A, (clamped,)), ir.const(pad, dt.float32))
    return func("window", [A], [B], loop(i, N + 2 * PAD, ir.Store(B, value, (i,)), kind=ir.ForType.VECTORIZED,
                                          factor=8))


def _expected(a: np.ndarray, cond_hi: int, stride: int = 1, pad: float = -1.5) -> np.ndarray:
    e = np.arange(N + 2 * PAD) * stride - PAD
    return np.where((e >= 0) & (e < cond_hi), a[np.clip(e, 0, N - 1)], pad).astype(np.float32)


def test_bounded_clamp_becomes_a_masked_load() -> None:
    f = _shifted(N)
    code = generate_x86(f)
    assert "llvm.masked.load" in code.unoptimized_ir and "masked.gather" not in code.unoptimized_ir
    a = random_array((N,), dt.float32)
    np.testing.assert_array_equal(build_x86(f, cache=False)(a), _expected(a, N))


@pytest.mark.parametrize("cond_hi, stride", [(N + 1, 1), (N - 4, 1), (N, 2)])
def test_other_reads_stay_gathers(cond_hi: int, stride: int) -> None:
    f = _shifted(cond_hi, stride)
    assert "llvm.masked.load" not in generate_x86(f).unoptimized_ir
    a = random_array((N,), dt.float32)
    np.testing.assert_array_equal(build_x86(f, cache=False)(a), _expected(a, cond_hi, stride))


def test_the_pattern_needs_both_bounds() -> None:
    i, A = ir.Var("i"), tensor("A", (N,), dt.float32)
    clamped = ir.Min(ir.Max(i, ir.const(0)), ir.const(N - 1))
    only_low = ir.Select(ir.GE(i, ir.const(0)), ir.Load(A, (clamped,)), ir.const(0.0, dt.float32))
    both = ir.Select(ir.And(ir.GE(i, ir.const(0)), ir.LE(i, ir.const(N - 1))), ir.Load(A, (clamped,)),
                     ir.const(0.0, dt.float32))
    assert unclamped_window_load(only_low) is None
    load = unclamped_window_load(both)
    assert load is not None and load.indices == (i,)
