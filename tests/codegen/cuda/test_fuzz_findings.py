"""Regression tests for CUDA C the fuzzer (`python -m cinn_py.tools.fuzz --cuda`) found NVRTC rejecting.

Each test is a hand-written minimal program + schedule reproducing one finding; the autouse
fixture of this directory compiles every generated source with NVRTC, so a test fails if the
printed CUDA C does not compile. Text checks pin the spelling that fixed the finding.
"""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py import ir
from cinn_py.diagnostics import CompileError
from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from codegen.c_family import MAX_UNROLL_STEPS
from codegen.cuda import generate_cuda
from codegen.cuda.codegen import CudaPrinter
from schedules import IRSchedule
from tests.codegen.cuda.nvrtc_helpers import nvrtc_check


def _kernel_with_expression(ctype: str, text: str) -> str:
    return (f'#include "cinn_cuda_runtime.cuh"\nextern "C" __global__ void k({ctype}* out) '
            f'{{ out[0] = {text}; }}\n')


def test_minus_of_negative_literal_is_not_a_decrement() -> None:
    """Fuzz seed 7 case 318: `sigmoid(-1.5)` printed `exp((--1.5))`, which C parses as a
    pre-decrement of a literal ("expression must be a modifiable lvalue")."""
    t0 = cp.compute((1,), lambda i: cp.sigmoid(ir.const(-1.5, "float64")), "t0")
    source = generate_cuda(cp.lower("fn", [t0])).source
    assert "--" not in source
    assert "exp((-(-1.5000000000000000)))" in source


def test_minus_of_negative_integer_literals() -> None:
    # The GPU passes fold `-(-3)` in whole programs; the printer must still be right on its own.
    printer = CudaPrinter()
    assert printer.expr(E.Minus(E.IntImm(dt.int64, -3))) == "(-(-3ll))"
    assert printer.expr(E.Minus(E.IntImm(dt.int32, -3))) == "(-(-3))"
    assert printer.expr(E.Minus(E.FloatImm(dt.float32, -0.0))) == "(-(-0.00000000f))"
    nvrtc_check(_kernel_with_expression("long long", printer.expr(E.Minus(E.IntImm(dt.int64, -3)))))


def test_most_negative_integers_keep_their_type() -> None:
    """`-2147483648` is the negation of a `long` literal in C: `max(int, long)` is ambiguous in
    CUDA, so the minimum of int32/int64 prints as `(max + 1) - 1` of the right type."""
    A = cp.placeholder((4,), "int32", "A")
    L = cp.placeholder((4,), "int64", "L")
    B = cp.compute((4,), lambda i: cp.maximum(A[i], ir.const(-2**31, "int32")), "B")
    C = cp.compute((4,), lambda i: cp.minimum(L[i], ir.const(-2**63, "int64")), "C")
    source = generate_cuda(cp.lower("fn", [A, L, B, C])).source
    assert "max(A[i], (-2147483647 - 1))" in source
    assert "(-9223372036854775807ll - 1ll))" in source


@pytest.mark.parametrize(("dtype", "spelling"),
                         [("float32", "fmodf(A[i], B[i])"), ("float64", "fmod(A[i], B[i])"),
                                                 ("float16",
                                                  "fmodf(__half2float(A[i]), __half2float(B[i]))")])
def test_float_remainder_prints_fmod(dtype: str, spelling: str) -> None:
    """Found by an op x dtype sweep next to the fuzzer: a float `%` printed C's integer-only `%`
    ("expression must have integral or unscoped enum type"); the IR's float `%` is C's fmod."""
    A = cp.placeholder((8,), dtype, "A")
    B = cp.placeholder((8,), dtype, "B")
    C = cp.compute((8,), lambda i: A[i] % B[i], "C")
    source = generate_cuda(cp.lower("fn", [A, B, C])).source
    assert spelling in source
    assert " % " not in source


def _unrolled_row_sums(rows: int, inner: int | None) -> str:
    """`t1[i, j] = sum_k A[i, j, k]` with i (`rows`) and j (8) unrolled; k has extent `inner`, or
    a symbolic one when None."""
    extent = cp.sym("S0") if inner is None else inner
    A = cp.placeholder((rows, 8, extent), "float32", "A")
    k = cp.reduce_axis(extent, "k")
    t1 = cp.compute((rows, 8), lambda i, j: cp.reduce_sum(A[i, j, k], k), "t1")
    s = IRSchedule(cp.lower("fn", [A, t1]))
    i, j = s.get_loops("t1")[:2]
    s.unroll(i)
    s.unroll(j)
    return generate_cuda(s.func).source


def test_unroll_around_a_symbolic_loop_stays_rolled() -> None:
    """Fuzz seed 7 case 1060 (a hang): `#pragma unroll` on a 16 x 8 nest around reduce loops of
    symbolic extent made NVRTC replicate their runtime unrolling 128 times (over a minute of
    NVRTC time); loops that cannot fully unroll now print without the pragma."""
    source = _unrolled_row_sums(16, None)
    assert "#pragma unroll" not in source
    assert "for (int64_t k = 0ll; k < S0; k += 1)" in source


def test_unroll_pragma_within_the_step_budget() -> None:
    assert MAX_UNROLL_STEPS == 512
    # i: 4 x 8 x (init + 4 updates) = 160 steps, j: 8 x 5 = 40: both unroll.
    assert _unrolled_row_sums(4, 4).count("#pragma unroll") == 2
    # i: 16 x 8 x 5 = 640 steps is over the budget and stays rolled; j (40 steps) still unrolls.
    lines = _unrolled_row_sums(16, 4).splitlines()
    pragmas = [n for n, line in enumerate(lines) if "#pragma unroll" in line]
    assert len(pragmas) == 1 and "for (int32_t j = 0; j < 8; j += 1)" in lines[pragmas[0] + 1]


def test_unbound_reduction_output_read_by_other_blocks_is_rejected() -> None:
    """Fuzz seed 7 case 1060, second finding: the reduction nest of output `t1` could not be
    bound (its loop was unrolled), so every block of the kernel ran it, re-zeroing `t1` while
    other blocks accumulated into it and a bound stage read it. Only temporaries were
    race-checked; an output the kernel reads is now checked across blocks too."""
    A = cp.placeholder((16, 8), "float32", "A")
    k = cp.reduce_axis(8, "k")
    t1 = cp.compute((16,), lambda i: cp.reduce_sum(A[i, k], k), "t1")
    t2 = cp.compute((16,), lambda i: t1[i] * 2.0, "t2")
    s = IRSchedule(cp.lower("fn", [A, t1, t2]))
    s.unroll(s.get_loops("t1")[0])
    outer, inner = s.split(s.get_loops("t2")[0], [-1, 4])
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")
    with pytest.raises(CompileError, match=r"output '_t1' is written by one block and read by another"):
        generate_cuda(s.func)


def test_output_consumed_in_its_own_block_still_compiles() -> None:
    A = cp.placeholder((16, 8), "float32", "A")
    k = cp.reduce_axis(8, "k")
    t1 = cp.compute((16,), lambda i: cp.reduce_sum(A[i, k], k), "t1")
    t2 = cp.compute((16,), lambda i: t1[i] * 2.0, "t2")
    s = IRSchedule(cp.lower("fn", [A, t1, t2]))
    for name in ("t1", "t2"):
        outer, inner = s.split(s.get_loops(name)[0], [-1, 4])
        s.bind(outer, "blockIdx.x")
        s.bind(inner, "threadIdx.x")
    assert "t2[" in generate_cuda(s.func).source


@pytest.mark.parametrize("fn", [cp.maximum, cp.minimum])
def test_max_of_int64_and_a_bound_variable(fn) -> None:
    """Fuzz seed 2 case 1221: in an int64 (symbolic) function a bound loop variable prints as
    `(int)blockIdx.x`, so `max(A[i], i)` became `max(int64_t, int)`, which matches several CUDA
    overloads; the int side is widened now."""
    S0 = cp.sym("S0")
    A = cp.placeholder((S0,), "int64", "A")
    B = cp.compute((S0,), lambda i: fn(A[i], cp.cast(i, "int64")), "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    s.bind(s.get_loops("B")[0], "blockIdx.x")
    name = "max" if fn is cp.maximum else "min"
    assert f"{name}(A[(int)blockIdx.x], ((int64_t)(int)blockIdx.x))" in generate_cuda(s.func).source
