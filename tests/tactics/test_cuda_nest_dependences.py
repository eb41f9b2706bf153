"""Two loop nests of one fused group in one CUDA kernel, the second reading what the first wrote
to global memory: the auto scheduler keeps a tiling only when every value read comes from the
reading thread, or from its block with a `__syncthreads()` between the nests (it adds the
barriers); a value from another block sends the group to the one-block schedule. The tilings are
checked with islpy (`gpu_sync.check_races(strict=True)`: what isl cannot prove race-free counts
as a race). Each kernel runs in the CPU emulator (race-checked) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.diagnostics import CompileError
from cinn_py.passes.gpu_bind import gpu_bind
from schedules.schedule import IRSchedule
from schedules.tactics import auto_schedule

pytestmark = pytest.mark.cuda_emulated


def _run(func: cp.LoweredFunc, *inputs: np.ndarray) -> tuple[object, list[np.ndarray]]:
    kernel = cp.build(func, "cuda", schedule="auto", emulate=True, race_check=True)
    got = kernel(*inputs)
    return kernel, list(got) if isinstance(got, (list, tuple)) else [got]


def test_masked_cumsum_then_row_max_matches_numpy() -> None:
    """R[i, j] = sum_{k <= j} X[i, k]; O[i] = max_j R[i, j] at (300, 5): the reported wrong result."""
    X = cp.placeholder((300, 5), "float32", "X")
    k = cp.reduce_axis(5, "k")
    R = cp.compute((300, 5), lambda i, j: cp.reduce_sum(cp.select(k <= j, X[i, k], 0.0), k), "R")
    k2 = cp.reduce_axis(5, "k2")
    Out = cp.compute((300,), lambda i: cp.reduce_max(R[i, k2], k2), "O")
    x = np.random.default_rng(0).standard_normal((300, 5)).astype(np.float32)
    for outputs in ([X, Out], [X, R, Out]):
        _, got = _run(cp.lower("cumsum_max", outputs), x)
        np.testing.assert_allclose(got[-1], np.cumsum(x, 1).max(1), rtol=1e-5, atol=1e-5)


def test_reading_other_blocks_output_leaves_the_tiling() -> None:
    """E reads A's row reversed; the elementwise tiling cuts rows across blocks (1024 elements per
    block, rows of 5), so a block would read A before another block wrote it."""
    X = cp.placeholder((300, 5), "float32", "X")
    A = cp.compute((300, 5), lambda i, j: X[i, j] * 2.0, "A")
    E = cp.compute((300, 5), lambda i, j: A[i, 4 - j] + 1.0, "E")
    func = cp.lower("reverse_rows", [X, A, E])
    sch = auto_schedule(func, "cuda")
    assert sch.report.strategy == "single-block"
    assert "written by one block and read by another" in sch.report.fallbacks[0]
    x = np.random.default_rng(1).standard_normal((300, 5)).astype(np.float32)
    _, (a, e) = _run(func, x)
    np.testing.assert_allclose(a, 2 * x, rtol=1e-6)
    np.testing.assert_allclose(e, 2 * x[:, ::-1] + 1, rtol=1e-6)


def test_reading_the_blocks_own_row_gets_a_barrier() -> None:
    """B[i] = sum_k A[i, 299 - k] * X[i, k] with A an output: one block per row reduces it, each
    thread reading A values other threads of the block wrote: a barrier between the nests."""
    X = cp.placeholder((7, 300), "float32", "X")
    A = cp.compute((7, 300), lambda i, j: X[i, j] * 2.0, "A")
    k = cp.reduce_axis(300, "k")
    B = cp.compute((7,), lambda i: cp.reduce_sum(A[i, 299 - k] * X[i, k], k), "B")
    func = cp.lower("reverse_dot", [X, A, B])
    sch = auto_schedule(func, "cuda")
    assert sch.report.strategy != "single-block" and not sch.report.fallbacks
    assert any("__syncthreads() between the nests" in n for n in sch.report.notes)
    x = np.random.default_rng(2).standard_normal((7, 300)).astype(np.float32)
    kernel, (a, b) = _run(func, x)
    source = kernel.source  # type: ignore[attr-defined]
    assert "blockIdx.x" in source
    assert source.index("__syncthreads();") < source.index("cinn_block_reduce_sum_fp32")
    np.testing.assert_allclose(a, 2 * x, rtol=1e-6)
    np.testing.assert_allclose(b, (2 * x[:, ::-1] * x).sum(1), rtol=1e-4, atol=1e-4)


def _gather_kernel() -> cp.LoweredFunc:
    """A[i] = X[i] * 2 then B[i] = A[idx[i]] on 64 threads: which thread wrote A[idx[i]] is not
    known at compile time (the index is data)."""
    X = cp.placeholder((64,), "float32", "X")
    idx = cp.placeholder((64,), "int32", "idx")
    A = cp.compute((64,), lambda i: X[i] * 2.0, "A")
    B = cp.compute((64,), lambda i: A[idx[i]], "B")
    sch = IRSchedule(cp.lower("gather", [X, idx, A, B]))
    for name in ("A", "B"):
        sch.bind(sch.get_loops(name)[0], "threadIdx.x")
    return sch.func


def test_strict_check_refuses_what_isl_cannot_prove() -> None:
    func = _gather_kernel()
    gpu_bind(func)  # the backend reports proven races only: a hand schedule is the user's call
    with pytest.raises(CompileError, match=r"'_A'.*read index idx\[threadIdx.x\]"):
        gpu_bind(func, strict=True)
    # the same read of the thread's own element is proven race-free either way
