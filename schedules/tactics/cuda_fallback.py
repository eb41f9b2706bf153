"""The CUDA schedule of last resort: one thread block, the nests in program order separated by
`__syncthreads()`.

Used when the tiling tactics do not apply (nests that cannot share one `[spatial, reduce]`
space; a tactic that raised). Every nest's spatial loops are fused and split `[-1, THREADS]`;
the inner loop is bound to `threadIdx.x`, so the block's threads share the nest's iterations
(each thread runs its reductions serially); a nest without a spatial loop runs on thread 0 only,
and a function with a top-level 0-d result block (no iter vars: not addressable, so not
bindable) runs on one thread.

A barrier after every nest makes each nest see the complete results of the ones before it:
correct for any dependences between nests, since there is a single block. Slow for large groups
(one SM), which is why the tactics come first and the report says why they did not apply.
"""

from __future__ import annotations

from cinn_py.ir import Block, ScheduleBlockRealize, Var, walk
from schedules.analysis.loops import find_block, root_body
from schedules.analysis.regions import const_value
from schedules.schedule import IRSchedule
from schedules.tactics.group import is_init_name, loops_of
from schedules.tactics.x86_reduce import nests

__all__ = ["THREADS", "single_block_schedule"]

THREADS = 256


def _spatial_depth(sch: IRSchedule, block: str) -> int:
    realize = find_block(sch.func, block)
    reduce_vars = {n for iv,
                   v in zip(realize.schedule_block.iter_vars, realize.iter_values) if iv.is_reduce_axis
                   for n in walk(v) if isinstance(n, Var)}
    depth = 0
    for loop in loops_of(sch.func, block):
        if loop.loop_var in reduce_vars:
            break
        depth += 1
    return depth


def single_block_schedule(sch: IRSchedule) -> str:
    """Schedule every nest of `sch` onto one block of `THREADS` threads (see the module docstring)."""
    groups = nests(sch)
    # A top-level block without iter vars cannot be addressed, so nothing keeps it off the other
    # threads. A 0-d reduction's init only writes the identity (the same value from every
    # thread), so a barrier between it and its update's nest suffices: without one, a thread
    # still writing the identity overwrote what thread 0 had accumulated (fuzz --net --emulate
    # seed 2027 case 56). Any other such block (a 0-d result reading earlier nests) makes one
    # thread run everything.
    unaddressable = _unaddressable(sch)
    threads = 1 if any(not is_init_name(name) for name in unaddressable) else THREADS
    first = True
    for names in groups:
        if not names:
            continue
        mains = [n for n in names if not is_init_name(n)]
        depth = _spatial_depth(sch, mains[-1]) if mains else 0
        after_own_init = any(f"{name}__reduce_init" in unaddressable for name in mains)
        if not first or (after_own_init and threads > 1):
            loops = sch.get_loops(names[0])
            sch.sync_threads(loops[0] if loops else names[0], after=False)
        first = False
        if depth == 0:
            for name in names:  # on thread 0 only: `if (threadIdx.x < 1)`, no race on the element
                sch.bind(sch.add_unit_loop(name), "threadIdx.x")
            continue
        loops = sch.get_loops(mains[-1])
        fused = sch.fuse(loops[:depth]) if depth > 1 else loops[0]
        extent = const_value(sch.get(fused).extent)  # type: ignore[union-attr]
        if extent is None or extent > threads:
            fused = sch.split(fused, [-1, threads])[1]
        sch.bind(fused, "threadIdx.x")
    return f"single block of up to {threads} threads, nests separated by __syncthreads()"


def _unaddressable(sch: IRSchedule) -> list[str]:
    """Names of the top-level blocks without iter vars (no schedule primitive can name them)."""
    body = root_body(sch.func)
    stmts = body.stmts if isinstance(body, Block) else (body,)
    return [s.schedule_block.name for s in stmts if isinstance(s, ScheduleBlockRealize) and not s.iter_values]
