"""gpu_sync: cross-block global temporaries and unsynchronised shared memory are CompileErrors."""

from __future__ import annotations

import dataclasses

import pytest

import cinn_py as cp
from cinn_py.diagnostics import CompileError
from cinn_py.ir import Block, Evaluate, For, Load, LoweredFunc, MemoryType, Store, Var
from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir.buffer import make_tensor
from cinn_py.ir.func import CudaAxisInfo
from cinn_py.passes.gpu_bind import gpu_bind
from cinn_py.passes.gpu_sync import check_races
from codegen.cuda import generate_cuda
from schedules import IRSchedule
from tests.codegen.cuda.nvrtc_helpers import every_generated_source_compiles

pytestmark = pytest.mark.usefixtures("every_generated_source_compiles")
__all__ = ["every_generated_source_compiles"]

I32 = dt.int32
TX = Var("threadIdx.x", I32)


def _c(v: int) -> E.IntImm:
    return E.IntImm(I32, v)


def _two_stage(read_row, shared: bool = False, sync: bool = False) -> IRSchedule:
    A = cp.placeholder((8, 32), "float32", "A")
    B = cp.compute((8, 32), lambda i, j: A[i, j] * 2.0, "B")
    C = cp.compute((8, 32), lambda i, j: B[read_row(i), 31 - j] + 1.0, "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    for name in ("B", "C"):
        loops = s.get_loops(name)
        s.bind(loops[0], "blockIdx.x")
        s.bind(loops[1], "threadIdx.x")
    if shared:
        s.set_buffer("B", "shared")
    if sync:
        s.sync_threads(s.get_loops("B")[0], after=True)
    return s


def test_global_temporary_read_by_another_block_is_an_error() -> None:
    """Block b reads the row block 7 - b wrote: only a grid-wide barrier could order that."""
    with pytest.raises(CompileError,
                       match=r"global temporary '_B' is written by one block and read by another"
                                           r".*compute_at"):
        generate_cuda(_two_stage(lambda i: 7 - i).func)


def _rows_symbolic(read_row) -> LoweredFunc:
    """Rows of symbolic length, one block per row; C's row i reads B's row `read_row(i)`."""
    S0 = cp.sym("S0")
    A = cp.placeholder((8, S0), "float32", "A")
    B = cp.compute((8, S0), lambda i, j: A[i, j] * 2.0, "B")
    C = cp.compute((8, S0), lambda i, j: B[read_row(i), j] + 1.0, "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    for name in ("B", "C"):
        s.bind(s.get_loops(name)[0], "blockIdx.x")
    return s.func


def test_cross_block_read_with_a_symbolic_row_stride_is_an_error() -> None:
    """Fuzz seed 1 case 3 (`--cuda --emulate`): the flat index `blockIdx.x * S0 + j` is not affine,
    so the check gave up and the kernel read rows other blocks had not written yet; the indices,
    compared per dimension, are."""
    with pytest.raises(CompileError,
                       match=r"global temporary '_B' is written by one block and read by another"):
        generate_cuda(_rows_symbolic(lambda i: 7 - i))
    assert "S0" in generate_cuda(_rows_symbolic(lambda i: i)).source   # the same row: no race


def _fused_producer_serial_consumer() -> IRSchedule:
    """Fuzz seed 2026 case 87 (`--cuda --emulate`): B over a fused (16 * S0) loop bound to blocks
    (indices `blockIdx.x / S0`, `blockIdx.x % S0`), then an unbound serial row reduction, run by
    every block, that reads all of B: neither index is affine in S0."""
    S0 = cp.sym("S0")
    A = cp.placeholder((S0, 16), "float32", "A")
    B = cp.compute((16, S0), lambda i, j: A[j, i] * 2.0, "B")
    k = cp.reduce_axis(S0, "k")
    C = cp.compute((16,), lambda i: cp.reduce_max(B[i, k], k), "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    fused = s.fuse(s.get_loops("B"))
    bx, tx = s.split(fused, [-1, 1])
    s.bind(bx, "blockIdx.x")
    s.bind(tx, "threadIdx.x")
    return s


def test_cross_block_race_shown_only_at_concrete_sizes_is_an_error() -> None:
    with pytest.raises(CompileError,
                       match=r"global temporary '_B' is written by one block and read by another.*"
                                           r"\(at S0=1\)"):
        generate_cuda(_fused_producer_serial_consumer().func)


def test_the_same_kernel_with_the_producer_in_the_consumers_thread_compiles() -> None:
    # B inlined and C's rows bound to blocks: each block reads and accumulates only its own row.
    s = _fused_producer_serial_consumer()
    s.compute_inline("B")
    s.bind(s.get_loops("C")[0], "blockIdx.x")  # the init shares the row loop
    assert "blockIdx.x" in generate_cuda(s.func).source


def test_global_temporary_read_by_another_thread_of_the_same_block_needs_syncthreads() -> None:
    with pytest.raises(CompileError, match=r"global temporary '_B'.*read by another thread.*__syncthreads"):
        generate_cuda(_two_stage(lambda i: i).func)
    code = generate_cuda(_two_stage(lambda i: i, sync=True).func)
    assert "__syncthreads();" in code.source and [t.name for t in code.temp_spaces] == ["B"]


def test_shared_read_by_another_thread_needs_syncthreads() -> None:
    with pytest.raises(CompileError, match=r"shared buffer '_B_temp_buffer'.*written by one thread.*read by "
                                           r"another thread.*without __syncthreads\(\) between "
                                           r"them.*sync_threads"):
        gpu_bind(_two_stage(lambda i: i, shared=True).func)
    assert "__syncthreads();" in generate_cuda(_two_stage(lambda i: i, shared=True, sync=True).func).source


def _tile_loop(syncs: tuple[bool, bool]) -> tuple:
    """for k < 4: S[tx] = A[k*32 + tx]; [sync]; O[k*32 + tx] = S[31 - tx]; [sync]"""
    A = cp.placeholder((128,), "float32", "A")
    Out = cp.compute((128,), lambda i: A[i], "O")
    func = cp.lower("fn", [A, Out])
    a, o = (arg.tensor for arg in func.args)
    shm = make_tensor("S", (_c(32),), dt.float32, MemoryType.GPU_SHARED)
    k = Var("k", I32)
    sync = Evaluate(E.Call("__syncthreads", (), I32))
    body = [Store(shm, Load(a, (k * _c(32) + TX,)), (TX,))]
    if syncs[0]:
        body.append(sync)
    body.append(Store(o, Load(shm, (_c(31) - TX,)), (k * _c(32) + TX,)))
    if syncs[1]:
        body.append(sync)
    loop = For(k, _c(0), _c(4), Block(tuple(body)))
    info = CudaAxisInfo((_c(1),) * 3, (_c(32), _c(1), _c(1)))
    return dataclasses.replace(func, body=Block((loop,))), loop, info


def test_shared_reuse_across_iterations_needs_a_second_barrier() -> None:
    """Iteration k+1 overwrites S[tx] while a slower thread may still read S[31 - tx] of
    iteration k: the classic tiled-loop write-after-read race."""
    func, body, info = _tile_loop((True, False))
    with pytest.raises(CompileError, match="different iterations of the enclosing loop"):
        check_races(func, body, info)
    func, body, info = _tile_loop((True, True))
    check_races(func, body, info)
    func, body, info = _tile_loop((False, True))
    with pytest.raises(CompileError, match="between them"):
        check_races(func, body, info)


def test_seed_with_shared_temporaries_compiles() -> None:
    """C of the seed is written by every thread of a row (the same warp-reduce result) and read by
    each of them after its own write: a write-write overlap, not reported."""
    from tests.codegen.cuda.test_seed_cuda import scheduled_seed  # noqa: PLC0415

    assert "__shared__ float C_rf_temp_buffer[1024];" in generate_cuda(scheduled_seed("shared")).source


def test_barrier_under_a_thread_dependent_guard_is_an_error() -> None:
    """Fuzz seed 2026 case 316 (`--cuda --emulate`): a sync_threads after a block inside a split
    guard (`threadIdx.x < 8` on a 10-thread block); the emulator deadlocked, a GPU would hang."""
    A = cp.placeholder((8,), "float32", "A")
    B = cp.compute((8,), lambda i: A[i] * 2.0, "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    _, inner = s.split(s.get_loops("B")[0], [1, 10])
    s.bind(inner, "threadIdx.x")
    s.sync_threads(s.get_block("B"), after=True)
    with pytest.raises(CompileError,
                       match=r"__syncthreads\(\) of kernel 'fn' is inside a branch 'if \(.*threadIdx"
                                           r".*that depends on threadIdx.*deadlock"):
        generate_cuda(s.func)


def test_cross_block_race_through_a_fused_loop_index_is_an_error() -> None:
    """Fuzz seed 2026 cases 192/485/846 (`--cuda --emulate`): C's rows are a fused loop bound to
    blocks, so B is read at `(blockIdx.x / 4) * 4 + blockIdx.x % 4`; the div/mod is quasi-affine
    only with `blockIdx.x >= 0` known, which the check did not tell its prover: it gave up."""
    A = cp.placeholder((8, 4), "float32", "A")
    B = cp.compute((8, 4), lambda i, j: A[i, j] * 2.0, "B")
    C = cp.compute((2, 4, 4), lambda i, j, k: B[k + 4 * i, j] + 1.0, "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    s.bind(s.get_loops("B")[0], "blockIdx.x")
    loops = s.get_loops("C")
    s.bind(s.fuse([loops[0], loops[1]]), "blockIdx.x")
    with pytest.raises(CompileError,
                       match=r"global temporary '_B' is written by one block and read by another"):
        generate_cuda(s.func)
