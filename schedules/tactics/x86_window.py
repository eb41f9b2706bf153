"""x86 schedule of a reduction over a window: the reduce loops outside a vector strip along a
contiguous axis.

conv2d, its backward ops and sums over a middle axis (`C[b, j] = sum_k X[b, k, j]`) lower to
`for spatial.. { init; for reduce.. { C[..] += f(..) } }` whose loads are not contiguous along the
innermost (reduce) loop in the row tactic's sense, and a reduce loop cannot be vectorised. Two
plans, both with the strip in L1 (or registers) over the whole reduction, one vector update per
step (fp_contract: FMAs, invariant operands broadcast), loads that are not contiguous in the
strip (a conv's clamped padded reads) as vector gathers, tails under the split's guard:

**strip** (the innermost spatial loop `x` is at least a vector long: conv2d, conv2d_grad_data):

    parallel for spatial..           (the loops above x, fused)
      vectorize for x: init          (decompose_reduction at x)
      for reduce..
        vectorize for x: C[.., x] += f(.., x, reduce..)

**rfactor** (the output's rows are short but the innermost reduce loop `q` is long and every load
moves with it in its last index only: conv2d_grad_filter's [.., KH, KW] output, summed over the
output plane): `rfactor` over `q` gives `rf_C[.., q]`, whose reduce loops run outside a vector
strip of q; the final sum over q is a short row reduction.

    parallel for spatial..: vectorize for q: rf_C init
    parallel for spatial..: for reduce..: for taps..: vectorize for q: rf_C[.., q] += f(.., q, reduce..)
    parallel for spatial..: C[..] = sum_q rf_C[.., q]

where the trailing spatial loops spanning at most TAP_ROWS rows (a filter's KH x KW taps) run
inside the reduce loops: the rows of x and dy a step reads serve every tap from L1 (2x faster).

On [8, 64, 28, 28] x [64, 64, 3, 3] (3x3, padding 1): conv2d_grad_data 160 ms -> 20-24 ms,
conv2d_grad_filter 165 ms -> 37 ms (tap loops inside; 72 ms outside), under a load of 8 on 2 cores.
"""

from __future__ import annotations

from dataclasses import dataclass

from cinn_py.ir import FP_CONTRACT_ATTR, Expr, For, Load, Var, walk
from schedules.analysis.loops import block_stores, find_block
from schedules.analysis.regions import const_value
from schedules.schedule import IRSchedule
from schedules.state import LoopRV
from schedules.tactics.config import ScheduleConfig
from schedules.tactics.group import block_info, loops_of
from schedules.tactics.x86_nest import (
    TacticNotApplicable, contiguous_store, lanes_for, loop_vars_of, parallel_worth,
)
from schedules.tactics.x86_reduce import spatial_loops

__all__ = ["schedule_window_reduction", "window_misfit"]

MIN_LANES = 4
TAP_ROWS = 64


@dataclass(frozen=True)
class _Plan:
    kind: str          # "strip" or "rfactor"
    lanes: int
    extent: int        # of the strip loop
    n_spatial: int


def _not_applicable(block: str, why: str) -> TacticNotApplicable:
    return TacticNotApplicable(f"window tactic: '{block}' {why}")


def _uses(index: Expr, ivs: set[Var]) -> bool:
    return any(isinstance(n, Var) and n in ivs for n in walk(index))


def _strip_lanes(extent: int | None, native: int) -> int:
    """The native lanes, or fewer (a power of two >= MIN_LANES) for a strip shorter than them."""
    if extent is None or native < 2:
        return 0
    lanes = native
    while lanes > extent and lanes > MIN_LANES:
        lanes //= 2
    return lanes if lanes <= extent else 0


def _loads_in_last_index(sch: IRSchedule, block: str, loop: For) -> tuple[bool, bool]:
    """(every load moves with `loop` at most in its last index, some load moves with it)."""
    ivs = loop_vars_of(sch, block, loop)
    loads = [n for n in walk(find_block(sch.func, block).schedule_block.body) if isinstance(n, Load)]
    last_only = all(not any(_uses(i, ivs) for i in load.indices[:-1]) for load in loads)
    return last_only, any(load.indices and _uses(load.indices[-1], ivs) for load in loads)


def _plan(sch: IRSchedule, block: str, cfg: ScheduleConfig) -> _Plan | str:
    """The plan that fits `block`, or why none does."""
    if not block_info(find_block(sch.func, block)).is_reduce:
        return "is not a reduction"
    loops = loops_of(sch.func, block)
    n_spatial, native = spatial_loops(sch, block), lanes_for(sch, block, cfg)
    if n_spatial < 1 or n_spatial == len(loops):
        return f"needs spatial loops then reduce loops, got {n_spatial} spatial of {len(loops)}"
    inner = loops[n_spatial - 1]
    extent = const_value(inner.extent)
    lanes = _strip_lanes(extent, native)
    if n_spatial >= 2 and lanes and extent is not None and contiguous_store(sch, block, inner):
        last_only, _ = _loads_in_last_index(sch, block, inner)
        if last_only:
            return _Plan("strip", lanes, extent, n_spatial)
    q = loops[-1]
    q_extent = const_value(q.extent)
    q_lanes = _strip_lanes(q_extent, native)
    if len(loops) - n_spatial < 2 or not q_lanes or q_extent is None or (lanes and extent is not None
                                                                          and extent >= native):
        return (f"has no vector strip: innermost spatial loop of extent {extent}, innermost reduce loop of "
                f"extent {q_extent} ({native} lanes)")
    last_only, moves = _loads_in_last_index(sch, block, q)
    if not (last_only and moves):
        return "reads across rows along its loops (the row tactic's)"
    return _Plan("rfactor", q_lanes, q_extent, n_spatial)


def window_misfit(sch: IRSchedule, block: str, cfg: ScheduleConfig) -> str | None:
    """Why neither window plan fits `block` (None: one does)."""
    plan = _plan(sch, block, cfg)
    return plan if isinstance(plan, str) else None


def _vectorize_last(sch: IRSchedule, stage: object, lanes: int) -> None:
    strip = sch.get_loops(stage)[-1]  # type: ignore[arg-type]
    sch.vectorize(sch.split(strip, [-1, lanes])[-1], lanes)


def _parallel_outer(sch: IRSchedule, stage: object, count: int, block: str, cfg: ScheduleConfig) -> bool:
    """Fuse the `count` outermost loops of `stage` and run them in parallel when worth it."""
    outer = sch.get_loops(stage)[:count]  # type: ignore[arg-type]
    if not outer:
        return False
    fused: LoopRV = outer[0] if len(outer) == 1 else sch.fuse(outer)
    if not parallel_worth(sch, fused, block, cfg):
        return False
    sch.parallel(fused)
    return True


def schedule_window_reduction(sch: IRSchedule, block: str, cfg: ScheduleConfig) -> str:
    """Apply the window plan that fits the reduction `block` (module docstring); raises
    TacticNotApplicable (nothing changed) when none does."""
    plan = _plan(sch, block, cfg)
    if isinstance(plan, str):
        raise _not_applicable(block, plan)
    if plan.kind == "strip":
        return _strip(sch, block, plan, cfg)
    return _rfactor(sch, block, plan, cfg)


def _strip(sch: IRSchedule, block: str, plan: _Plan, cfg: ScheduleConfig) -> str:
    handles = sch.get_loops(block)
    x, reduce = handles[plan.n_spatial - 1], handles[plan.n_spatial:]
    init = sch.decompose_reduction(block, x)
    sch.reorder([*reduce, x])
    sch.annotate(block, FP_CONTRACT_ATTR, True)
    for stage in (block, init):
        _vectorize_last(sch, stage, plan.lanes)
    note = ", parallel outer loops" if _parallel_outer(sch, block, plan.n_spatial - 1, block, cfg) else ""
    return (f"window reduction: {len(reduce)} reduce loop(s) outside vectorize[{plan.lanes}] strips of "
            f"{plan.extent}{note}")


def _taps(sch: IRSchedule, block: str, n_spatial: int) -> int:
    """How many trailing spatial loops of `block` (at least one left outside) span at most
    TAP_ROWS rows: a filter's taps, whose strips stay in L1 while the reduce loops run outside."""
    loops = loops_of(sch.func, block)[:n_spatial]
    count, rows = 0, 1
    for loop in reversed(loops[1:]):
        extent = const_value(loop.extent)
        if extent is None or rows * extent > TAP_ROWS:
            break
        rows, count = rows * extent, count + 1
    return count


def _rfactor(sch: IRSchedule, block: str, plan: _Plan, cfg: ScheduleConfig) -> str:
    axis = len(block_stores(find_block(sch.func, block))[0].indices)
    rf = sch.rfactor(sch.get_loops(block)[-1], axis).name
    init = f"{rf}__reduce_init"
    taps = _taps(sch, block, plan.n_spatial)
    if taps:  # the tap loops inside the reduce loops: each dy / x row read once for all taps
        handles = sch.get_loops(rf)
        sch.reorder([*handles[plan.n_spatial:-1], *handles[plan.n_spatial - taps:plan.n_spatial]])
    sch.annotate(rf, FP_CONTRACT_ATTR, True)
    for stage in (rf, init):
        _vectorize_last(sch, stage, plan.lanes)
    for stage, outer in ((init, plan.n_spatial), (rf, plan.n_spatial - taps), (block, plan.n_spatial)):
        _parallel_outer(sch, stage, outer, block, cfg)
    inner = f", {taps} tap loop(s) inside the reduce loops" if taps else ""
    return (f"window reduction: rfactor over the innermost reduce loop into '{rf}', vectorize[{plan.lanes}] "
            f"strips of {plan.extent}{inner}, then a sum over them")
