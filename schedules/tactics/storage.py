"""Storage assignment for CUDA (CINN `VariableTypeAssignment` in TileFirstGeneralTactic, and the
2023 `ArrangeStorageTactic`).

* `<T>_rf` partial results are per-thread: local (registers).
* An intermediate (not a group output) goes to a local buffer when its producer and every
  consumer share the master's spatial loops after loop fusion: each thread then reads only
  values it computed itself (a reduce result is broadcast to every thread by the cross-thread
  helper), and the GPU passes privatise the buffer per iteration of the serial loops.
* Anything else stays global (a host-allocated temp space).

Differs from CINN, which sets every non-output intermediate local before loop fusion: a value
read by a nest that was not fused would then be read after the register holding it was reused.
"""

from __future__ import annotations

from cinn_py.ir import Block, For, ForType, ScheduleBlockRealize, Stmt, walk
from schedules.analysis.loops import root_body
from schedules.schedule import IRSchedule
from schedules.state import LoopRV
from schedules.tactics.group import analyze_group

__all__ = ["assign_storage", "sync_between_nests"]


def assign_storage(sch: IRSchedule, rf_blocks: list[str], fused: list[str]) -> list[str]:
    """Move per-thread values to local buffers; returns the blocks set to local."""
    info = analyze_group(sch.func)
    fused_set = set(fused)
    local: list[str] = []
    for block in info.blocks:
        if block.is_init or len(block.written) != 1:
            continue
        tensor = block.written[0]
        if tensor in info.outputs:
            continue
        consumers = {b.name for b in info.consumers_of(tensor)} - {block.name}
        writers = {b.name for b in info.producers_of(tensor) if not b.is_init}
        per_thread = block.name in rf_blocks or (writers | consumers) <= fused_set
        if per_thread:
            sch.set_buffer(block.name, "local")
            local.append(block.name)
    return local


def sync_between_nests(sch: IRSchedule) -> int:
    """Put `__syncthreads()` before every loop nest of a tiled CUDA group but the first, so a nest
    reads what the block's other threads wrote in the nests before it (through global memory: the
    barrier orders the block's accesses to it too). The nests are the statements under the
    block-bound loops they share; the barriers sit outside every thread-bound loop and guard, so
    all threads of the block reach them. Returns the number of barriers added (0: the nests are
    not reachable that way, e.g. a guard above them)."""
    siblings = _nests_under_blocks(root_body(sch.func))
    found = [_loop_handle(sch, nest) for nest in siblings[1:]]
    handles = [h for h in found if h is not None]
    if len(handles) < len(found):
        return 0
    for handle in handles:
        sch.sync_threads(handle, after=False)
    return len(handles)


def _loop_handle(sch: IRSchedule, loop: Stmt) -> LoopRV | None:
    """The schedule's handle of `loop` (found through the first block under it)."""
    block = next((n for n in walk(loop) if isinstance(n, ScheduleBlockRealize)), None)
    if block is None:
        return None
    return next((h for h in sch.get_loops(block.schedule_block.name) if sch.get(h) is loop), None)


def _nests_under_blocks(node: Stmt) -> list[Stmt]:
    """The sibling statements at the top of the kernel body below the blockIdx-bound loops."""
    while True:
        if isinstance(node, Block):
            if len(node.stmts) != 1:
                return list(node.stmts) if all(_unguarded(s) for s in node.stmts) else []
            node = node.stmts[0]
        elif isinstance(node, For) and node.for_type is ForType.GPU_BLOCK:
            node = node.body
        else:
            return []


def _unguarded(stmt: Stmt) -> bool:
    """A loop (not a guard or a bare block) heads the nest: `sync_threads` can anchor on it."""
    return isinstance(stmt, For) and stmt.for_type is not ForType.GPU_THREAD
