"""The x86 tactic: parallel outer spatial loops, vectorised inner loops, rfactor-vectorised
row reductions (CINN schedules CPU groups with `parallel` + `vectorize`; there is no thread
binding on x86).

For each nest of the aligned (or unaligned) group:

* elementwise nests: the innermost loop, when the block's store is contiguous in it (its loop
  var appears only in the last store index), is split `[-1, W]` and the `W` loop vectorised,
  `W = vector_width_bits / dtype bits` (8 x float32 on AVX2); a non-dividing extent gets the
  split's tail guard, which the x86 backend turns into masked lanes;
* continuous reductions: the reduce loop is split `[-1, W]` and `rfactor`ed over the `W` loop
  into `rf_<T>[s, W]`, whose update loop is vectorised (W independent partial sums); the final
  `T[s] += rf_<T>[s, r]` is a short serial loop. Legal where rfactor is (the nest holds only
  the reduction and its init, op associative and commutative) and for non-bool dtypes;
* discrete reductions keep their serial reduce loop (vectorising over the spatial axis would need
  the reduce loop outside the init block);
* every nest whose outermost loop is spatial and that does at least `min_parallel_work`
  iterations (or has a symbolic extent) runs that loop on the thread pool (`parallel`).
"""

from __future__ import annotations

from cinn_py.ir import For, Var, walk
from schedules.analysis.loops import block_stores
from schedules.analysis.regions import const_value
from schedules.errors import ScheduleError
from schedules.schedule import IRSchedule
from schedules.tactics.config import ScheduleConfig
from schedules.tactics.group import BlockInfo, GroupInfo, analyze_group, loops_of

__all__ = ["x86_tactic"]


def _lanes(block: BlockInfo, cfg: ScheduleConfig) -> int:
    stores = block_stores(block.realize)
    dtype = stores[0].tensor.dtype if stores else None
    if dtype is None or dtype.is_bool or dtype.bits < 8:
        return 0
    return max(1, cfg.vector_width_bits // dtype.bits)


def _contiguous_in(block: BlockInfo, loop: For) -> bool:
    """The block's store index varies with `loop` only in its last dimension."""
    realize = block.realize
    bound = {iv for iv, val in zip(realize.schedule_block.iter_vars, realize.iter_values)
             if any(isinstance(n, Var) and n == loop.loop_var for n in walk(val))}
    for store in block_stores(realize):
        if not store.indices:
            return False
        uses = [any(isinstance(n, Var) and n in bound for n in walk(i)) for i in store.indices]
        if not uses[-1] or any(uses[:-1]):
            return False
    return True


def _worth_parallel(loops: list[For], cfg: ScheduleConfig) -> bool:
    total = 1
    for lp in loops:
        extent = const_value(lp.extent)
        if extent is None:
            return True
        total *= extent
    return const_value(loops[0].extent) not in (None, 0, 1) and total >= cfg.min_parallel_work


def _vectorize_innermost(sch: IRSchedule, block: BlockInfo, lanes: int) -> None:
    loops = loops_of(sch.func, block.name)
    if not loops or lanes < 2 or not _contiguous_in(block, loops[-1]):
        return
    extent = const_value(loops[-1].extent)
    if extent is not None and extent < lanes:
        return
    handle = sch.get_loops(block.name)[-1]
    _, inner = sch.split(handle, [-1, lanes])
    sch.vectorize(inner, lanes)


def _vectorized_reduction(sch: IRSchedule, block: BlockInfo, info: GroupInfo, lanes: int) -> list[str]:
    """Split + rfactor + vectorise a continuous reduction; returns the blocks of the new nests."""
    n_sp = 1 if info.spatial else 0
    loops = loops_of(sch.func, block.name)
    extent = const_value(loops[-1].extent) if loops else None
    if lanes < 2 or not info.continuous or len(loops) != n_sp + 1 or (extent is not None and extent < 2 * lanes):
        return [block.name]
    handles = sch.get_loops(block.name)
    _, inner = sch.split(handles[-1], [-1, lanes])
    try:
        rf = sch.rfactor(inner, len(block_stores(block.realize)[0].indices))
    except ScheduleError:
        return [block.name]
    sch.vectorize(sch.get_loops(rf.name)[-1], lanes)
    return [f"{rf.name}__reduce_init", rf.name, block.name]


def x86_tactic(sch: IRSchedule, cfg: ScheduleConfig) -> None:
    """Parallelise and vectorise every nest (see the module docstring)."""
    info = analyze_group(sch.func)
    nests: list[str] = []
    for block in info.blocks:
        if block.is_init:
            continue
        if block.is_reduce:
            nests += _vectorized_reduction(sch, block, info, _lanes(block, cfg))
        else:
            _vectorize_innermost(sch, block, _lanes(block, cfg))
            nests.append(block.name)
    if not info.spatial:
        return  # a reduce-all onto a 0-d tensor: every loop carries the reduction
    seen: set[int] = set()
    for name in nests:
        current = analyze_group(sch.func)
        block = next(b for b in current.blocks if b.name == name)
        loops = loops_of(sch.func, name)
        if not loops or loops[0].uid in seen:
            continue
        seen.add(loops[0].uid)
        first = loops[0]
        spatial = not any(iv.is_reduce_axis for iv, val in zip(block.realize.schedule_block.iter_vars,
                                                               block.realize.iter_values)
                          if any(isinstance(n, Var) and n == first.loop_var for n in walk(val)))
        if spatial and _worth_parallel(loops, cfg):
            sch.parallel(sch.get_loops(name)[0])
