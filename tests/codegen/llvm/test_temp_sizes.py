"""x86 backend: the byte size of a heap temp buffer sized by symbolic dims is computed with
overflow checks (issue 23 item 3): a size past int64 fails the call with OverflowError before the
buffer is used, never a wrapped small allocation that the kernel writes past."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.ir import dtype as dt
from codegen.llvm import build_x86
from tests.codegen.llvm.llvm_helpers import func, loop, random_array, sym, tensor


def _temp_of_rank(rank: int) -> ir.LoweredFunc:
    """B[i] = T[i, 0, ..., 0] after T[i, 0, ..., 0] = A[i] * 2, T of shape [S] * rank."""
    S = sym("S")
    i = ir.Var("i", dt.int64)
    zero = ir.const(0, dt.int64)
    A, B = tensor("A", (S,)), tensor("B", (S,))
    T = tensor("T", (S,) * rank)
    corner = (i,) + (zero,) * (rank - 1)
    body = ir.Block((loop(i, S, ir.Store(T, ir.Load(A, (i,)) * 2.0, corner)),
                     loop(i, S, ir.Store(B, ir.Load(T, corner), (i,)))))
    return func("temp_rank", [A], [B], body, temps=[T.buffer], syms=[S])


def test_temp_size_overflowing_int64_raises_before_use() -> None:
    kernel = build_x86(_temp_of_rank(4), cache=False)
    x = random_array((1 << 16,), dt.float32)  # 2**64 elements of 4 bytes: wraps to 0 bytes unchecked
    with pytest.raises(OverflowError,
                       match=r"temp_rank.*exceeds 2\*\*63.*'S': 65536.*T\[S, S, S, S\] float32"):
        kernel(x)
    small = random_array((5,), dt.float32)  # the kernel still works for sizes that fit
    np.testing.assert_array_equal(kernel(small), small * 2)


def test_temp_size_overflowing_only_through_the_element_size() -> None:
    # 1.5e6**3 = 3.4e18 elements fit in int64, their 13.5e18 bytes do not: the last product is checked too
    kernel = build_x86(_temp_of_rank(3), cache=False)
    with pytest.raises(OverflowError, match="1500000"):
        kernel(np.zeros(1_500_000, dtype=np.float32))


def test_temp_size_representable_but_unallocatable_is_a_memory_error() -> None:
    kernel = build_x86(_temp_of_rank(3), cache=False)
    with pytest.raises(MemoryError, match="temp_rank"):
        kernel(np.zeros(1 << 20, dtype=np.float32))  # 2**62 bytes
