"""Index arithmetic past 2^31 elements: i64 addressing, int64 loops, and silent-overflow guards."""

from __future__ import annotations

import re

import numpy as np

import cinn_py as cp
from cinn_py.diagnostics import ScheduleError
from cinn_py.ir import For, walk
from schedules import IRSchedule

N = 2 ** 16   # a [N, N] tensor has 2^32 elements


def _huge_elementwise() -> cp.ir.LoweredFunc:  # type: ignore[name-defined]
    a = cp.placeholder((N, N), "float32", "A")
    b = cp.compute((N, N), lambda i, j: a[i, j] * 2.0, "B")
    return cp.lower("huge", [a, b])


def test_llvm_ir_addresses_a_2pow32_element_tensor_with_i64() -> None:
    code = cp.codegen(_huge_elementwise(), target="x86")
    for text in (code.unoptimized_ir, code.llvm_ir):
        geps = ([line for line in text.splitlines() if "getelementptr" in line
                 and ("_A" in line or "_B" in line)])
        assert geps, text[:2000]
        for line in geps:
            # every index operand is i64 (after O3, LLVM may address bytes: `getelementptr i8, ...`)
            indices = re.findall(r",\s*(i\d+)\s+[%\-\w.\"]+", line.split("getelementptr", 1)[1])
            assert indices and all(t == "i64" for t in indices), line
    # the row offset i * 65536 is computed in 64 bits (an i32 multiply would wrap at 2^31)
    assert not re.search(r"mul (nsw |nuw )*i32 [^\n]*65536", code.unoptimized_ir)
    assert re.search(r"mul (nsw |nuw )*i64 [^\n]*65536", code.unoptimized_ir)


def _sum_mod7(lo: int, hi: int) -> int:
    """sum(g % 7 for g in range(lo, hi)) in closed form."""
    def upto(n: int) -> int:   # sum over [0, n)
        return (n // 7) * 21 + (n % 7) * (n % 7 - 1) // 2
    return upto(hi) - upto(lo)


ROW = 2 ** 28 + 1


def test_iteration_space_past_2pow31_matches_closed_form() -> None:
    """C[i] = sum_{k < 2^28 + 1} ((i * (2^28 + 1) + k) % 7) * X[0] for i < S = 8: a broadcast
    [S]-shaped input, 2^31 + 8 iterations in all, a global index g past 2^31 in the last row
    (int64 indices: the function has a symbolic dim), rows in parallel, a small int64 result."""
    s = cp.sym("S")
    x = cp.placeholder((s,), "int64", "X")
    k = cp.reduce_axis(ROW, "k")
    c = cp.compute((s,), lambda i: cp.reduce_sum(cp.cast((i * ROW + k) % 7, "int64") * x[0], [k]), "C")
    sch = IRSchedule(cp.lower("bigsum", [x, c]))
    sch.parallel(sch.get_loops("C")[0])
    kernel = cp.build(sch, "x86")
    assert 8 * ROW > 2 ** 31
    expected = [3 * _sum_mod7(i * ROW, (i + 1) * ROW) for i in range(8)]
    np.testing.assert_array_equal(kernel(np.full(8, 3, np.int64)), expected)


def test_window_of_indices_around_2pow31() -> None:
    """A reduce axis over [S * 2^28 - 1000, S * 2^28 + 1000) with S = 8: index values on both
    sides of 2^31, used in arithmetic (k itself and k % 7); 2000 iterations."""
    s = cp.sym("S")
    x = cp.placeholder((s,), "int64", "X")
    k = cp.reduce_axis((s * 2 ** 28 - 1000, s * 2 ** 28 + 1000), "k")
    c = cp.compute((1,), lambda i: cp.reduce_sum((cp.cast(k, "int64") + cp.cast(k % 7, "int64")) * x[0], [k]),
                   "C")
    kernel = cp.build(cp.lower("window", [x, c]), "x86")
    lo, hi = 2 ** 31 - 1000, 2 ** 31 + 1000
    expected = sum(range(lo, hi)) + _sum_mod7(lo, hi)
    np.testing.assert_array_equal(kernel(np.ones(8, np.int64)), [expected])


def test_static_extent_past_int32_is_not_truncated() -> None:
    """A static reduce extent >= 2^31 lowers with int64 indices (an int32 counter compared with
    the wrapped bound ran no iterations and silently returned 0)."""
    x = cp.placeholder((1,), "int64", "X")
    k = cp.reduce_axis(2 ** 31 + 9, "k")
    c = cp.compute((1,), lambda i: cp.reduce_sum(cp.cast(k % 7, "int64") * x[i], [k]), "C")
    func = cp.lower("bigsum", [x, c])
    loops = [n for n in walk(func.body) if isinstance(n, For)]
    assert all(lp.loop_var.dtype.bits == 64 for lp in loops if int(lp.extent.value)
               >= 2 ** 31), cp.print_ir(func)


def test_fusing_past_int32_widens_or_refuses() -> None:
    """Fusing two int32 loops of 65536 must not produce an int32 counter over 2^32 iterations."""
    sch = IRSchedule(_huge_elementwise())
    try:
        sch.fuse(sch.get_loops("B"))
    except ScheduleError:
        return
    for loop in (n for n in walk(sch.func.body) if isinstance(n, For)):
        extent = int(loop.extent.value)
        assert extent < 2 ** (loop.loop_var.dtype.bits - 1), cp.print_ir(sch.func)
