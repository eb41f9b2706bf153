"""Regression tests for bugs the fuzzer found (minimal reproducers, shrunk by hand)."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from schedules import IRSchedule

PARALLEL_SYMBOLIC_STRIDE = (
    "x86: a parallel loop whose body indexes a tensor with a symbolic stride (A[k, i] with A: [2, S0]) "
    "fails with CompileError \"variable 'S0' (int64) is used but not defined here\": the outlined "
    "parallel body does not capture symbolic dims that only occur in buffer shapes. Found by "
    "`python -m cinn_py.fuzz --seed 20240601` (5 of 300 cases). Reproducer: this test — owner: codegen/llvm")


@pytest.mark.xfail(strict=True, reason=PARALLEL_SYMBOLIC_STRIDE)
def test_parallel_loop_reading_a_symbolic_strided_tensor() -> None:
    s = cp.sym("S0")
    a = cp.placeholder((2, s), "float32", "A")
    k = cp.reduce_axis(2)
    b = cp.compute((s,), lambda i: cp.reduce_sum(a[k, i], [k]), "B")
    sch = IRSchedule(cp.lower("f", [a, b]))
    sch.parallel(sch.get_loops("B")[0])
    kernel = cp.build(sch, "x86")
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    np.testing.assert_array_equal(kernel(x), x.sum(axis=0))
