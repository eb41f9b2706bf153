"""Facts about one loop nest that the x86 tactics share: vector lanes, store contiguity, the
loop a gathering load runs along, whether a loop is worth the thread pool.

Read-only helpers over the schedule's current function (block names in, plain values out).
"""

from __future__ import annotations

from cinn_py.ir import DType, Expr, For, Load, Var, walk
from schedules.analysis.loops import block_stores, find_block
from schedules.analysis.regions import const_value
from schedules.errors import ScheduleError
from schedules.schedule import IRSchedule
from schedules.state import LoopRV
from schedules.tactics.config import ScheduleConfig
from schedules.tactics.group import loops_of

__all__ = [
    "TacticNotApplicable", "contiguous_store", "gather_loop", "lanes_for", "loop_vars_of", "parallel_worth",
    "static_iterations",
    "store_dtype",
]


class TacticNotApplicable(ScheduleError):
    """An x86 tactic's precondition does not hold for this group (the driver falls back to a
    simpler schedule and reports this message)."""


def store_dtype(sch: IRSchedule, block: str) -> DType | None:
    stores = block_stores(find_block(sch.func, block))
    return stores[0].tensor.dtype if stores else None


def lanes_for(sch: IRSchedule, block: str, cfg: ScheduleConfig) -> int:
    """Vector lanes of the target's native width for the block's stored dtype (0: do not
    vectorise: bool and sub-byte types)."""
    dtype = store_dtype(sch, block)
    if dtype is None or dtype.is_bool or dtype.bits < 8:
        return 0
    return max(1, cfg.vector_width_bits // dtype.bits)


def loop_vars_of(sch: IRSchedule, block: str, loop: For) -> set[Var]:
    """The block's iter vars whose binding uses `loop`'s var."""
    realize = find_block(sch.func, block)
    return {iv for iv, val in zip(realize.schedule_block.iter_vars, realize.iter_values)
            if any(isinstance(n, Var) and n == loop.loop_var for n in walk(val))}


def _uses(index: Expr, ivs: set[Var]) -> bool:
    return any(isinstance(n, Var) and n in ivs for n in walk(index))


def contiguous_store(sch: IRSchedule, block: str, loop: For) -> bool:
    """Every store of the block moves with `loop` only in its last index (a vector store)."""
    ivs = loop_vars_of(sch, block, loop)
    stores = block_stores(find_block(sch.func, block))
    if not stores or not ivs:
        return False
    for store in stores:
        uses = [_uses(i, ivs) for i in store.indices]
        if not uses or not uses[-1] or any(uses[:-1]):
            return False
    return True


def gather_loop(sch: IRSchedule, block: str, loops: list[For]) -> int | None:
    """Position in `loops` of the loop a transposing load is contiguous along: a load that moves
    with the innermost loop in a non-last index (a strided gather in a vector loop) and whose
    last index moves with another loop of the nest. None when every load is contiguous or
    invariant along the innermost loop."""
    realize = find_block(sch.func, block)
    inner = loop_vars_of(sch, block, loops[-1])
    for load in (n for n in walk(realize.schedule_block.body) if isinstance(n, Load) and n.indices):
        if not any(_uses(i, inner) for i in load.indices[:-1]) or _uses(load.indices[-1], inner):
            continue
        for pos, lp in enumerate(loops[:-1]):
            if _uses(load.indices[-1], loop_vars_of(sch, block, lp)):
                return pos
    return None


def static_iterations(loops: list[For]) -> int | None:
    total = 1
    for lp in loops:
        extent = const_value(lp.extent)
        if extent is None:
            return None
        total *= extent
    return total


def parallel_worth(sch: IRSchedule, loop: LoopRV, block: str, cfg: ScheduleConfig) -> bool:
    """The loop has more than one iteration and the nest under it enough work for a thread-pool
    dispatch (symbolic extents count as enough)."""
    node = sch.get(loop)
    extent = const_value(node.extent) if isinstance(node, For) else None
    if extent is not None and extent <= 1:
        return False
    loops = loops_of(sch.func, block)
    total = static_iterations(loops)
    return total is None or total >= cfg.min_parallel_work
