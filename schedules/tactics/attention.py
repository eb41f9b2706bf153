"""The x86 schedule of the fused attention kernels (`cinn_py.lowering.attention`).

The templates lower already tiled: their loops carry roles (`cinn_py.lowering.attention.nest`),
the tiling a performance engineer would write once for every target. On x86 each role becomes a
loop kind through the schedule primitives (so the legality checks run, and the trace replays):

- PARALLEL (the head loops, one per nest): `parallel` (one task per batch x head);
- UNROLL (the register tile's rows and column vectors of every micro-kernel): `unroll`, so the
  mr x nv accumulators live in registers over the depth loop, as in `schedules.tactics.matmul`;
- VECTOR (the lanes of micro-kernels, softmax passes, copies and stores): `vectorize` at the
  loop's extent (16 float32 lanes with AVX-512 over a tile of 16 columns);

and every block that calls exp or log is annotated `fast_math`: the polynomial exp of
`codegen.llvm.fastmath` (1 ulp) vectorises where libm's stays a call per lane, which would cost
more than the two matmuls of a tile (torch's kernel uses its own vectorised exp as well).
A role that a primitive refuses keeps its serial loop (correct, slower); the report says which.
"""

from __future__ import annotations

from cinn_py.ir import FAST_MATH_ATTR, Call, For, LoweredFunc, walk
from cinn_py.lowering.attention.nest import PARALLEL, UNROLL, VECTOR, role_of
from schedules.analysis.regions import const_value
from schedules.errors import ScheduleError
from schedules.schedule import IRSchedule
from schedules.state import LoopRV

__all__ = ["attention_cuda_tactic", "attention_x86_tactic", "is_attention_kernel"]

CUDA_THREADS = 256
"""Threads of the CUDA block: one per (batch, head) task, up to this many at a time."""


def is_attention_kernel(func: LoweredFunc) -> bool:
    """Whether `func` is an attention template's kernel (its head loop has the PARALLEL role)."""
    return any(isinstance(n, For) and role_of(n.loop_var.name) == PARALLEL for n in walk(func.body))


def attention_x86_tactic(sch: IRSchedule) -> list[str]:
    """Map the loop roles to x86 loop kinds (module docstring); returns notes for the report."""
    notes: list[str] = []
    seen: set[int] = set()
    counts = {PARALLEL: 0, UNROLL: 0, VECTOR: 0}
    for blk in sch.get_all_blocks():
        realize = sch.get(blk)
        if any(isinstance(n, Call) and n.name in ("exp", "log") for n in walk(realize.schedule_block.body)):
            sch.annotate(blk, FAST_MATH_ATTR, True)
        for loop in sch.get_loops(blk):
            node = sch.get(loop)
            role = role_of(node.loop_var.name)
            if node.uid in seen or role not in counts:
                continue
            seen.add(node.uid)
            try:
                _apply(sch, loop, role)
                counts[role] += 1
            except ScheduleError as err:
                notes.append(f"loop '{node.loop_var.name}' stays serial ({type(err).__name__}: "
                             f"{str(err).splitlines()[0]})")
    notes.insert(0, f"attention kernel: {counts[PARALLEL]} parallel, {counts[UNROLL]} unrolled, "
                    f"{counts[VECTOR]} vectorised loops")
    return notes


def _apply(sch: IRSchedule, loop: object, role: str) -> None:
    if role == PARALLEL:
        sch.parallel(loop)  # type: ignore[arg-type]
    elif role == UNROLL:
        sch.unroll(loop)  # type: ignore[arg-type]
    else:
        extent = const_value(sch.get(loop).extent)  # type: ignore[arg-type]
        if extent is not None and extent > 1:
            sch.vectorize(loop, min(extent, 16))  # type: ignore[arg-type]


def attention_cuda_tactic(sch: IRSchedule) -> list[str]:
    """The CUDA schedule: one thread block; each nest's PARALLEL head loop is bound to threadIdx.x
    (a thread runs one (batch, head) task with its tiles in its local memory, as an x86 task
    does), `__syncthreads()` between the nests (the transposed copies and the row statistics
    that later nests read). Correct, and parallel over heads only: the tiles are not yet split
    across the threads of a block (no shared-memory tiling), so it is far from the GPU's peak."""
    heads = _head_loops(sch)
    for k, loop in enumerate(heads):
        extent = const_value(sch.get(loop).extent)
        if extent is None or extent > CUDA_THREADS:
            loop = sch.split(loop, [-1, CUDA_THREADS])[1]
        sch.bind(loop, "threadIdx.x")
        if k:
            sch.sync_threads(loop, after=False)
    return [f"attention kernel on CUDA: one block, {len(heads)} nests with their head loop on threadIdx.x, "
            "__syncthreads() between them (tiles per thread, not split across the block)"]


def _head_loops(sch: IRSchedule) -> list[LoopRV]:
    """The PARALLEL loop of every nest, in program order."""
    found: list[LoopRV] = []
    seen: set[int] = set()
    for blk in sch.get_all_blocks():
        for loop in sch.get_loops(blk):
            node = sch.get(loop)
            if role_of(node.loop_var.name) == PARALLEL and node.uid not in seen:
                seen.add(node.uid)
                found.append(loop)
    return found
