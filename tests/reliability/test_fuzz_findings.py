"""Regression tests for bugs the fuzzer found (minimal reproducers, shrunk by hand)."""

from __future__ import annotations

import numpy as np

import cinn_py as cp
from schedules import IRSchedule


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
