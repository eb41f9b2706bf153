"""x86 backend: loops (vectorize with tails, parallel, unroll), temp buffers, symbolic shapes,
infer-shape, loop-kind errors."""

from __future__ import annotations

import numpy as np
import pytest

from cinn_py import ir
from cinn_py.diagnostics import CompileError
from cinn_py.ir import dtype as dt
from cinn_py.runtime import threadpool
from codegen.llvm import build_x86, generate_x86
from codegen.llvm.names import symbol_name
from tests.codegen.llvm.llvm_helpers import elementwise_1d, func, loop, random_array, sym, tensor

V = ir.ForType.VECTORIZED
P = ir.ForType.PARALLEL


def relu_2x_plus_1(a: ir.Expr) -> ir.Expr:
    return ir.Max(a * 2.0 + 1.0, ir.const(0.0))


def test_vectorized_loop_emits_vector_instructions() -> None:
    f = elementwise_1d(1024, dt.float32, relu_2x_plus_1, kind=V, factor=8)
    code = generate_x86(f)
    assert "<8 x float>" in code.unoptimized_ir  # our own vector ops, not only LLVM's
    assert "<8 x float>" in code.llvm_ir or "<16 x float>" in code.llvm_ir
    assert "ymm" in code.asm or "zmm" in code.asm
    x = random_array((1024,), dt.float32)
    np.testing.assert_array_equal(build_x86(f, cache=False)(x), np.maximum(x * 2 + 1, 0))


@pytest.mark.parametrize("n", [1, 7, 8, 13, 64, 100])
def test_vectorized_loop_with_scalar_tail_and_symbolic_extent(n: int) -> None:
    S = sym("S")
    f = elementwise_1d(S, dt.float32, relu_2x_plus_1, kind=V, factor=8, syms=[S])
    x = random_array((n,), dt.float32)
    np.testing.assert_array_equal(build_x86(f)(x), np.maximum(x * 2 + 1, 0))


def test_vectorized_2d_broadcast_gather_and_inner_reduction() -> None:
    # B[i, j] = A[j, i] (gather: stride 16) + bias[i] (lane invariant) + sum_k W[k, j] (inner serial loop)
    i, j, k = ir.Var("i"), ir.Var("j"), ir.Var("k")
    A, W = tensor("A", (16, 12), dt.float32), tensor("W", (5, 12), dt.float32)
    bias, B = tensor("bias", (12,), dt.float32), tensor("B", (12, 16), dt.float32)
    acc = tensor("acc", (1,), dt.float32, ir.MemoryType.GPU_LOCAL)
    body = loop(i, 12, loop(
        j, 16,
        ir.Store(acc, ir.const(0.0), (ir.const(0),)),
        loop(k, 5, ir.Store(acc, ir.Load(acc, (ir.const(0),)) + ir.Load(W, (k, i)), (ir.const(0),))),
        ir.Store(B, ir.Load(A, (j, i)) + ir.Load(bias, (i,)) + ir.Load(acc, (ir.const(0),)), (i, j)),
        kind=V, factor=4))
    f = func("mix", [A, W, bias], [B], body)
    a, w, b = (random_array(s, dt.float32) for s in ((16, 12), (5, 12), (12,)))
    expected = a.T + b[:, None] + w.sum(axis=0)[:, None]
    np.testing.assert_allclose(build_x86(f, cache=False)(a, w, b), expected, rtol=1e-5, atol=1e-5)


def test_vector_reduction_into_invariant_address_falls_back_to_scalar() -> None:
    i, j = ir.Var("i"), ir.Var("j")
    A, B = tensor("A", (4, 10), dt.float32), tensor("B", (4,), dt.float32)
    body = loop(i, 4, ir.Store(B, ir.const(0.0), (i,)),
                loop(j, 10, ir.Store(B, ir.Load(B, (i,)) + ir.Load(A, (i, j)), (i,)), kind=V, factor=4))
    a = random_array((4, 10), dt.float32)
    np.testing.assert_allclose(build_x86(func("rsum", [A], [B], body), cache=False)(a), a.sum(1), rtol=1e-5)


def _parallel_func() -> ir.LoweredFunc:
    S = sym("S")
    i, j = ir.Var("i", dt.int64), ir.Var("j", dt.int64)
    A, B = tensor("A", (S, 33), dt.float32), tensor("B", (S, 33), dt.float32)
    tmp = tensor("tmp", (33,), dt.float32, ir.MemoryType.GPU_LOCAL)  # private per task
    scale = ir.Var("scale", dt.float32)
    body = ir.Block((ir.Let(scale, ir.const(3.0)), loop(
        i, S,
        loop(j, 33, ir.Store(tmp, ir.Load(A, (i, j)) * scale, (j,))),
        loop(j, 33, ir.Store(B, ir.Load(tmp, (ir.const(32, dt.int64) - j,)) + ir.Cast(dt.float32, i), (i, j)),
             kind=V, factor=8),
        kind=P)))
    return func("par", [A], [B], body, syms=[S])


@pytest.mark.parametrize("rows", [1, 3, 50])
def test_parallel_loop_identical_for_1_2_4_threads(rows: int) -> None:
    f = _parallel_func()
    x = random_array((rows, 33), dt.float32)
    expected = (x * 3)[:, ::-1] + np.arange(rows, dtype=np.float32)[:, None]
    results = [build_x86(f, num_threads=n)(x) for n in (1, 2, 4)]
    for r in results:
        np.testing.assert_array_equal(r, expected)
    assert "__parallel" in generate_x86(f).llvm_ir


def test_parallel_thread_count_from_the_pool_setting() -> None:
    f = _parallel_func()
    x = random_array((9, 33), dt.float32)
    before = threadpool.get_num_threads()
    try:
        threadpool.set_num_threads(3)
        assert threadpool.get_num_threads() == 3
        out = build_x86(f)(x)
    finally:
        threadpool.set_num_threads(before)
    np.testing.assert_array_equal(out, build_x86(f, num_threads=1)(x))


def test_nested_parallel_loops_are_rejected() -> None:
    i, j = ir.Var("i"), ir.Var("j")
    A, B = tensor("A", (4, 4)), tensor("B", (4, 4))
    body = loop(i, 4, loop(j, 4, ir.Store(B, ir.Load(A, (i, j)), (i, j)), kind=P), kind=P)
    with pytest.raises(CompileError,
                       match="Nested parallel loop is not supported, try to fuse them instead") as err:
        build_x86(func("nested", [A], [B], body), cache=False)
    assert "^^^" in str(err.value)  # IR excerpt with the inner loop marked


def test_gpu_bound_loops_are_rejected() -> None:
    i = ir.Var("i")
    A, B = tensor("A", (4,)), tensor("B", (4,))
    bound = ir.For(i, ir.const(0), ir.const(4), ir.Block((ir.Store(B, ir.Load(A, (i,)), (i,)),)),
                   for_type=ir.ForType.GPU_THREAD, bind_offset=0)
    with pytest.raises(CompileError, match="threadIdx.x"):
        build_x86(func("gpu", [A], [B], bound), cache=False)


def test_unrolled_loop() -> None:
    f = elementwise_1d(6, dt.int32, lambda a: a * 3, kind=ir.ForType.UNROLLED)
    assert ".header" not in generate_x86(f).unoptimized_ir.split("define")[1]
    np.testing.assert_array_equal(build_x86(f, cache=False)(np.arange(6, dtype=np.int32)), np.arange(6) * 3)


@pytest.mark.parametrize("n", [16, 20000])
def test_temp_buffers_on_stack_and_heap(n: int) -> None:
    # T = A + 1 (temp buffer, 64 B on the stack or 80 kB on the heap); B = T[n-1-i] * 2
    i = ir.Var("i")
    A, B = tensor("A", (n,)), tensor("B", (n,))
    T = tensor("T", (n,))
    body = ir.Block((loop(i, n, ir.Store(T, ir.Load(A, (i,)) + 1.0, (i,))),
                     loop(i, n, ir.Store(B, ir.Load(T, (ir.const(n - 1) - i,)) * 2.0, (i,)))))
    f = func("temps", [A], [B], body, temps=[T.buffer])
    ir_text = generate_x86(f).unoptimized_ir
    assert ("aligned_alloc" in ir_text) == (n > 8192)
    x = random_array((n,), dt.float32)
    np.testing.assert_array_equal(build_x86(f, cache=False)(x), (x + 1)[::-1] * 2)


def test_symbolic_temp_buffer_and_infer_shape() -> None:
    # out shape (2*S, S + 1): exercises the infer-shape function with expressions of syms
    S = sym("S")
    i, j = ir.Var("i", dt.int64), ir.Var("j", dt.int64)
    two, one = ir.const(2, dt.int64), ir.const(1, dt.int64)
    A = tensor("A", (S,))
    B = tensor("B", (S * two, S + one))
    T = tensor("T", (S,))
    body = ir.Block((
        loop(i, S, ir.Store(T, ir.Load(A, (i,)) * 10.0, (i,))),
        loop(i, S * two,
             loop(j, S + one, ir.Store(B, ir.Load(T, (i / two,)) + ir.Cast(dt.float32, j), (i, j))))))
    f = func("shape_fn", [A], [B], body, syms=[S])
    kernel = build_x86(f)
    for n in (1, 4, 9):
        assert kernel.infer_shape({"S": n}) == [(2 * n, n + 1)]
        x = random_array((n,), dt.float32)
        expected = np.repeat(x * 10, 2)[:, None] + np.arange(n + 1, dtype=np.float32)[None, :]
        np.testing.assert_array_equal(kernel(x), expected)


def test_kernel_name_clashing_with_libm_is_renamed() -> None:
    f = elementwise_1d(4, dt.float32, lambda a: ir.Call("exp", (a,), dt.float32))
    f = ir.LoweredFunc("exp", f.args, f.body)
    kernel = build_x86(f, cache=False)
    assert kernel.symbol != "exp" and kernel.symbol.startswith("exp_")
    assert kernel.symbol == symbol_name("exp")  # deterministic
    np.testing.assert_allclose(kernel(np.zeros(4, np.float32)), np.ones(4))


def _scaled(rows: int, cols: int, nontemporal: bool, split: int | None = None):  # type: ignore[no-untyped-def]
    import cinn_py as cp
    from schedules import IRSchedule

    X = cp.placeholder((rows, cols), "float32", "X")
    Y = cp.compute((rows, cols), lambda i, j: X[i, j] * 3.0 - 1.0, "Y")
    sch = IRSchedule(cp.lower("scaled", [X, Y]))
    j = sch.get_loops("Y")[1]
    if split is not None:
        j = sch.split(j, [-1, split])[1]
    sch.vectorize(j, 16)
    if nontemporal:
        sch.annotate("Y", ir.NONTEMPORAL_ATTR, True)
    return sch.func


@pytest.mark.parametrize("offset", [0, 1, 3, 15])
def test_streaming_stores_peel_to_alignment(offset: int) -> None:
    """`x86_nontemporal` blocks store with `!nontemporal` (vmovntps) after scalar iterations that
    reach a 64-byte aligned address; outputs at any element offset are written correctly."""
    f = _scaled(7, 300, nontemporal=True)
    code = generate_x86(f)
    assert "!nontemporal" in code.llvm_ir and "vmovntps" in code.asm and "sfence" in code.asm
    x = random_array((7, 300), dt.float32)
    storage = np.zeros(7 * 300 + 16, np.float32)
    out = storage[offset:offset + 7 * 300].reshape(7, 300)
    build_x86(f)(x, out=out)
    np.testing.assert_array_equal(out, x * 3 - 1)
    assert "!nontemporal" not in generate_x86(_scaled(7, 300, nontemporal=False)).llvm_ir


@pytest.mark.parametrize("cols", [17, 37, 300])
def test_split_tail_guard_in_a_vector_loop_stays_vectorised(cols: int) -> None:
    """`split(j, [-1, 16])` guards the tail with `if (j_0 * 16 + j_1 < cols)`; the backend turns
    the guard into the vector loop's bound instead of emitting a scalar loop."""
    f = _scaled(3, cols, nontemporal=False, split=16)
    assert "<16 x float>" in generate_x86(f).unoptimized_ir
    x = random_array((3, cols), dt.float32)
    np.testing.assert_array_equal(build_x86(f)(x), x * 3 - 1)
