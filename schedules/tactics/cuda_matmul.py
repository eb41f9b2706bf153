"""Matmul on CUDA: the tiled shared-memory schedule (the classic SGEMM of Volkov / CUTLASS's
"threadblock tile -> thread tile"), built from the public primitives.

For a group `match_matmul` recognises (fp16/bf16 operands read through a cast to
the float32 accumulator), with `CudaMatmulParams` block tile `BM x BN`, k step `BK` and thread
tile `TM x TN`:

    blockIdx.z  b                    (batch dims fused)
    blockIdx.y  bi  blockIdx.x  bj   (one BM x BN tile of C per block)
      threadIdx.y ti, threadIdx.x tj, ii, jj:  acc[ii, jj] = 0        (registers: C is `local`)
      for ko in K / BK:
        A_shared[BM, BK] = A[tile]   (cache_read + compute_at(ko); the copy's loops fused and
        B_shared[BK, BN] = B[tile]    split over the block's TY x TX threads: coalesced)
        __syncthreads()
        threadIdx.y ti, threadIdx.x tj:
          for ki in BK: for ii in TM: for jj in TN:  acc[ii, jj] += A_shared[..] * B_shared[..]
        __syncthreads()              (the next ko overwrites the tiles)
      threadIdx.y ti, threadIdx.x tj, ii, jj:  epilogue (bias, activation, the cast to the
                                              output type) reading acc from registers

The GPU passes give each thread a `TM x TN` register array (`drop_scope_variables`, per dim) and
each block one `BM x BK` / `BK x BN` shared tile (`rebase_shared_tiles`); `check_races` verifies
the two barriers. Shapes that are not tile multiples get the splits' guards (the copies load
only in-range elements, the products skip out-of-range k). A C that is itself the output is
accumulated in a `local` cache (`cache_write`) and written once.

`cuda_matmul_tactic` raises `ScheduleError` when a primitive refuses (the caller falls back to
the generic tactics with the reason in `report.fallbacks`).
"""

from __future__ import annotations

from dataclasses import dataclass

from cinn_py.ir import Load, walk
from cinn_py.target import GpuLimits
from schedules.analysis.regions import const_value
from schedules.errors import InvalidArgumentError, ScheduleError, schedule_error
from schedules.schedule import IRSchedule
from schedules.state import LoopRV
from schedules.tactics.matmul import MatmulInfo, match_matmul

__all__ = ["CudaMatmulParams", "cuda_matmul_tactic", "fit_cuda_params"]


@dataclass(frozen=True)
class CudaMatmulParams:
    """Tile sizes of the CUDA matmul schedule (defaults: 64 x 64 x 16 with 4 x 4 per thread, 256
    threads, 8 KiB of float32 tiles per block)."""

    block_m: int = 64
    block_n: int = 64
    block_k: int = 16
    thread_m: int = 4
    thread_n: int = 4

    @property
    def threads_y(self) -> int:
        return self.block_m // self.thread_m

    @property
    def threads_x(self) -> int:
        return self.block_n // self.thread_n


def fit_cuda_params(info: MatmulInfo, p: CudaMatmulParams) -> CudaMatmulParams:
    """`p` narrowed for small static sizes: no block tile larger than its dimension (`split`
    refuses factors beyond the extent; a thin matrix keeps its threads busy), thread tiles no
    larger than the block tile, no k step beyond K."""
    m, n, k = const_value(info.m), const_value(info.n), const_value(info.k)
    bm, bn, bk, tm, tn = p.block_m, p.block_n, p.block_k, p.thread_m, p.thread_n
    while m is not None and bm > 1 and bm > m:
        bm //= 2
    while n is not None and bn > 1 and bn > n:
        bn //= 2
    while k is not None and bk > 1 and bk > k:
        bk //= 2
    tm, tn = min(tm, bm), min(tn, bn)
    return CudaMatmulParams(bm, bn, bk, tm, tn)


def _check(sch: IRSchedule, info: MatmulInfo, p: CudaMatmulParams, limits: GpuLimits) -> None:
    threads = p.threads_y * p.threads_x
    if p.block_m % p.thread_m or p.block_n % p.thread_n or threads > limits.max_threads_per_block:
        raise schedule_error(InvalidArgumentError, "cuda_matmul",
                             f"tile {p} needs thread tiles dividing the block "
                             f"tile and at most {limits.max_threads_per_block} threads, got {threads}",
                             sch.func)
    tiles = (p.block_m + p.block_n) * p.block_k * 4
    if tiles > limits.max_shared_memory_per_block:
        raise schedule_error(InvalidArgumentError, "cuda_matmul",
                             f"tile {p} needs {tiles} bytes of shared memory, "
                             f"more than the {limits.max_shared_memory_per_block} a block has", sch.func)


def _bind_tile(sch: IRSchedule, name: str, batch: int, p: CudaMatmulParams,
               split: bool = True) -> list[LoopRV]:
    """Tile the `(batch.., i, j[, k])` nest of block `name` and bind it; returns the loops from the
    block's point of view: `[bi, bj, ko?, ti, tj, ki?, ii, jj]` without the batch loop."""
    loops = sch.get_loops(name)
    head, (i, j), rest = loops[:batch], loops[batch:batch + 2], loops[batch + 2:]
    if split:
        bi, ti, ii = sch.split(i, [-1, p.threads_y, p.thread_m])
        bj, tj, jj = sch.split(j, [-1, p.threads_x, p.thread_n])
    else:  # the init nest: already split along with the update, loops [bi, ti, ii, bj, tj, jj]
        bi, ti, ii, bj, tj, jj = loops[batch:]
        rest = []
    order: list[LoopRV]
    if rest:
        ko, ki = sch.split(rest[0], [-1, p.block_k])
        order = [bi, bj, ko, ti, tj, ki, ii, jj]
    else:
        order = [bi, bj, ti, tj, ii, jj]
    sch.reorder(order)
    if head and split:  # the init nest shares the update's (already bound) batch loops
        sch.bind(sch.fuse(head) if len(head) > 1 else head[0], "blockIdx.z")
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    return order


def _operands(sch: IRSchedule, block: str, acc: str) -> list[str]:
    """Tensors the update reads other than its accumulator, in order of first appearance
    (cache_read's `read_idx` counts the accumulator first)."""
    realize = sch.get(sch.get_block(block))
    names: list[str] = []
    for node in walk(realize.schedule_block.body):  # type: ignore[union-attr]
        if isinstance(node, Load) and node.tensor.name != acc and node.tensor.name not in names:
            names.append(node.tensor.name)
    return names


def _stage_in_shared(sch: IRSchedule, info: MatmulInfo, block: str, acc: str, ko: LoopRV,
                     p: CudaMatmulParams) -> None:
    for operand in (info.a, info.b):
        copy = sch.cache_read(block, 1 + _operands(sch, block, acc).index(operand), "shared")
        sch.compute_at(copy, ko)
        loops = sch.get_loops(copy)
        at = next(n for n, lp in enumerate(loops) if sch.get(lp).uid == sch.get(ko).uid)
        own = loops[at + 1:]  # the copy's own loops, under ko
        if not own:  # a one-element tile (K or M/N of 1): its unit loops were dropped; one thread copies
            own = [sch.add_unit_loop(copy)]
        fused = sch.fuse(own) if len(own) > 1 else own[0]
        _, ty, tx = sch.split(fused, [-1, p.threads_y, p.threads_x])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")


def cuda_matmul_tactic(sch: IRSchedule, info: MatmulInfo, params: CudaMatmulParams,
                       limits: GpuLimits) -> list[str]:
    """Apply the schedule of the module docstring to a group `match_matmul` recognised (after
    inlining); returns notes for the report."""
    p = fit_cuda_params(info, params)
    _check(sch, info, p, limits)
    notes = [f"cuda matmul {info.structure}: block tile {p.block_m}x{p.block_n}x{p.block_k}, "
             f"thread tile {p.thread_m}x{p.thread_n}, {p.threads_y}x{p.threads_x} threads"]
    block, acc, init = info.block, info.tensor, info.init
    epilogue = list(info.epilogue)
    if info.output:  # accumulate in registers, write C once
        sch.cache_write(block, 0, "local")
        found = match_matmul(sch.func)
        if found is None:
            raise schedule_error(InvalidArgumentError, "cuda_matmul",
                                 "the local accumulator of an output C is "
                                 "not a matmul nest", sch.func)
        block, acc, init, epilogue = found.block, found.tensor, found.init, list(found.epilogue)
        notes.append(f"'{info.tensor}' accumulated in a local cache, written once")
    order = _bind_tile(sch, block, info.batch, p)
    ko = order[2]
    _bind_tile(sch, init, info.batch, p, split=False)
    try:  # one block nest: the init under the update's block loops
        sch.simple_compute_at(init, order[1])
    except ScheduleError as err:  # its own nest on the same threads: each zeroes its own registers
        notes.append(f"init '{init}' kept in its own nest ({type(err).__name__})")
    _stage_in_shared(sch, info, block, acc, ko, p)
    compute = sch.get_loops(block)[info.batch + 3]  # ti: the product loops of one ko step
    sch.sync_threads(compute, after=False)
    sch.sync_threads(compute, after=True)
    for name in epilogue:
        _bind_tile(sch, name, info.batch, p)
    for name in [block, *epilogue[:-1]] if not info.output else [block]:
        _set_local(sch, name, notes)
    return notes


def _set_local(sch: IRSchedule, name: str, notes: list[str]) -> None:
    try:
        sch.set_buffer(name, "local")
    except ScheduleError as err:  # an output or a tensor read elsewhere: global is still correct
        notes.append(f"'{name}' stays global ({type(err).__name__})")
