"""Regression tests for CUDA C the fuzzer (`python -m cinn_py.fuzz --cuda`) found NVRTC rejecting.

Each test is a hand-written minimal program + schedule reproducing one finding; the autouse
fixture of this directory compiles every generated source with NVRTC, so a test fails if the
printed CUDA C does not compile. Text checks pin the spelling that fixed the finding.
"""

from __future__ import annotations

import cinn_py as cp
from cinn_py import ir
from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from codegen.cuda import generate_cuda
from codegen.cuda.codegen import CudaPrinter
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
