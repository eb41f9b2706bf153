"""x86 codegen changes made for performance: task-private local buffers shrunk to one row,
strided vector loads as masked gathers, libc idioms (memset) resolvable by MCJIT."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from cinn_py import ir
from cinn_py.ir import dtype as dt
from codegen.llvm import build_x86, generate_x86
from cinn_py.passes.x86_privatize import privatize_local_buffers
from tests.codegen.llvm.llvm_helpers import func, loop, tensor

R, C = 8, 32


def _row_stage_func(index_of_row: Callable[[ir.Var], ir.Expr] = lambda i: i) -> ir.LoweredFunc:
    """parallel for i: { E[i', j] = X[i, j] * 2 (local);  Y[i, j] = E[i', j] + 1 }."""
    X, Y = tensor("X", (R, C)), tensor("Y", (R, C))
    E = tensor("E", (R, C), scope=ir.MemoryType.GPU_LOCAL)
    i, j, j2 = ir.Var("i", dt.int32), ir.Var("j", dt.int32), ir.Var("j2", dt.int32)
    row = index_of_row(i)
    body = loop(i, R,
                loop(j, C, ir.Store(E, ir.Load(X, (i, j)) * ir.FloatImm(dt.float32, 2.0), (row, j))),
                loop(j2, C, ir.Store(Y, ir.Load(E, (row, j2)) + ir.FloatImm(dt.float32, 1.0), (i, j2))),
                kind=ir.ForType.PARALLEL)
    return func("rowstage", [X], [Y], body, temps=[E.buffer])


def test_local_row_buffer_is_shrunk_to_one_row_per_task() -> None:
    f = _row_stage_func()
    par = f.body.stmts[0]
    body, bufs = privatize_local_buffers(par, [f.temp_bufs[0]])
    assert [tuple(int(d.value) for d in b.shape) for b in bufs] == [(1, C)]
    code = generate_x86(f)
    assert f"alloca [{C} x float]" in code.unoptimized_ir
    assert f"[{R * C} x float]" not in code.unoptimized_ir  # the kernel does not allocate it either
    x = np.random.default_rng(0).standard_normal((R, C), dtype=np.float32)
    np.testing.assert_array_equal(build_x86(f, cache=False)(x), x * 2 + 1)


def test_non_additive_parallel_index_keeps_the_full_buffer() -> None:
    f = _row_stage_func(lambda i: (i * i) % R)  # i*i: not a term c*i, collapsing is not provably safe
    _, bufs = privatize_local_buffers(f.body.stmts[0], [f.temp_bufs[0]])
    assert tuple(int(d.value) for d in bufs[0].shape) == (R, C)
    x = np.random.default_rng(1).standard_normal((R, C), dtype=np.float32)
    np.testing.assert_array_equal(build_x86(f, cache=False)(x), x * 2 + 1)


def test_strided_vector_load_is_a_gather() -> None:
    n = 16
    X, Y = tensor("X", (n, n)), tensor("Y", (n, n))
    i, j = ir.Var("i", dt.int32), ir.Var("j", dt.int32)
    body = loop(i, n,
                loop(j, n, ir.Store(Y, ir.Load(X, (j, i)), (i, j)), kind=ir.ForType.VECTORIZED, factor=8))
    f = func("tr", [X], [Y], body)
    assert re.search(r"llvm\.masked\.gather\.v8f32", generate_x86(f).unoptimized_ir)
    x = np.arange(n * n, dtype=np.float32).reshape(n, n)
    np.testing.assert_array_equal(build_x86(f, cache=False)(x), x.T)


def test_zero_fill_loop_turned_into_memset_links() -> None:
    # LLVM's loop-idiom pass turns this into a call of memset, which MCJIT must resolve.
    n = 4096
    Y = tensor("Y", (n,))
    X = tensor("X", (n,))
    i = ir.Var("i", dt.int32)
    f = func("zero", [X], [Y], loop(i, n, ir.Store(Y, ir.FloatImm(dt.float32, 0.0), (i,))))
    assert "memset" in generate_x86(f).asm
    np.testing.assert_array_equal(build_x86(f, cache=False)(np.ones(n, np.float32)), np.zeros(n, np.float32))


def test_parallel_task_body_has_noalias_buffers_and_is_inlined() -> None:
    f = _row_stage_func()
    code = generate_x86(f)
    body = re.search(r"define internal void @\"?rowstage__parallel_0_body\"?\((.*)\)", code.unoptimized_ir)
    assert body is not None and body.group(1).count("noalias") == 2  # X and Y
    assert "alwaysinline" in code.unoptimized_ir
    assert not re.search(r"define .*@\"?rowstage__parallel_0_body", code.llvm_ir)  # inlined away
    assert "!alias.scope" in code.llvm_ir or "!noalias" in code.llvm_ir


def test_column_sum_keeps_the_partial_row_in_registers_across_four_rows() -> None:
    from cinn_py.tools.bench import build_workload  # noqa: PLC0415
    from cinn_py.tools.bench_workloads import WORKLOADS  # noqa: PLC0415

    kernel = build_workload(WORKLOADS["colsum"], {"rows": 64, "cols": 128}, threads=2)
    task = kernel.llvm_ir[kernel.llvm_ir.index("__parallel_0("):]
    task = task[:task.index("\n}\n")]
    loads = len(re.findall(r"= load <16 x float>", task))
    stores = len(re.findall(r"store <16 x float>", task))
    assert stores and loads == 5 * stores  # 4 rows of X + the partial row, one store
    x = np.random.default_rng(2).standard_normal((64, 128), dtype=np.float32)
    np.testing.assert_allclose(kernel(x), x.sum(axis=0), rtol=1e-5, atol=1e-5)
