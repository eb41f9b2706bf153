"""The x86 group scheduler: per group, the schedule a performance engineer would write, with
fallbacks so that every valid group gets a correct schedule.

Plans, tried in order on a fresh schedule each (a plan that raises `ScheduleError` part-way
leaves nothing behind; the next one starts from the unscheduled function and the report says
why the better one did not apply):

1. **tuned** — inline (keeping a producer that has several consumers and calls a
   transcendental: a softmax's `exp` is computed once per element), then
   * a group of continuous (last-axis) reductions over common rows: one fused, parallel row
     loop with rfactor-vectorised reductions (`x86_reduce.schedule_rows`);
   * otherwise nest by nest: column reductions task-split and vectorised over the columns
     (`x86_reduce.schedule_column_reduction`), continuous reductions as a row loop of their own,
     injective nests vectorised / tiled / streamed (`x86_injective.schedule_injective`).
2. **simple** — inline as CINN does, then per nest: parallel outer loop (fused spatial loops)
   and the innermost loop vectorised when the store is contiguous in it.
3. **serial** — inline only (always legal).

Vector lanes come from `ScheduleConfig.vector_width_bits` (the target's native width).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cinn_py.ir import Call, walk
from schedules.analysis.loops import find_block
from schedules.errors import ScheduleError
from schedules.schedule import IRSchedule
from schedules.tactics.compute_inline import compute_inline_tactic
from schedules.tactics.config import ScheduleConfig
from schedules.tactics.group import BlockInfo, GroupInfo, analyze_group, is_continuous, is_init_name, loops_of
from schedules.tactics.x86_injective import schedule_injective
from schedules.tactics.x86_nest import contiguous_store, lanes_for, parallel_worth
from schedules.tactics.x86_reduce import (
    nests, schedule_column_reduction, schedule_reduce_all, schedule_rows, spatial_loops,
)
from schedules.tactics.x86_window import schedule_window_reduction, window_misfit

__all__ = ["X86Result", "x86_schedule"]

EXPENSIVE_CALLS = frozenset({"exp", "expf", "tanh", "erf", "log", "log1p", "expm1", "pow", "sin",
                             "cos", "sigmoid"})


@dataclass
class X86Result:
    """What the x86 scheduler decided: the plan that applied, per-nest notes, and why better
    plans did not apply."""

    plan: str = ""
    inlined: list[str] = field(default_factory=list)
    nests: dict[str, str] = field(default_factory=dict)
    fallbacks: list[str] = field(default_factory=list)


def _expensive_shared(info: GroupInfo, block: BlockInfo) -> bool:
    """Keep (do not inline) a value that several blocks read and that calls a transcendental."""
    if len(block.written) != 1 or len(info.consumers_of(block.written[0])) < 2:
        return False
    return any(isinstance(n, Call) and n.name in EXPENSIVE_CALLS for n
               in walk(block.realize.schedule_block.body))


def _tuned(sch: IRSchedule, cfg: ScheduleConfig, result: X86Result) -> None:
    result.inlined = compute_inline_tactic(sch, keep=_expensive_shared)
    info = analyze_group(sch.func)
    if info.has_reduce and info.continuous and info.spatial and not _any_window(sch, cfg):
        try:
            trial = sch.fork()
            note = schedule_rows(trial, cfg)
        except ScheduleError as err:
            result.fallbacks.append(f"fused rows: {err.message}")
        else:
            sch.adopt(trial)
            result.nests["*"] = note
            return
    for names in nests(sch):
        _schedule_nest(sch, names, cfg, result)


def _main_block(names: list[str]) -> str | None:
    """The block a nest is scheduled through: its last non-init block (None: no block)."""
    mains = [n for n in names if not is_init_name(n)]
    return mains[-1] if mains else None


def _schedule_nest(sch: IRSchedule, names: list[str], cfg: ScheduleConfig, result: X86Result) -> None:
    main = _main_block(names)
    if main is None:
        return
    block = next(b for b in analyze_group(sch.func).blocks if b.name == main)
    if not block.is_reduce:
        result.nests[main] = schedule_injective(sch, main, cfg)
        return
    attempt = sch.fork()
    try:
        if _is_column(attempt, main):
            note = schedule_column_reduction(attempt, main, cfg)
        elif spatial_loops(attempt, main) == 0:
            note = schedule_reduce_all(attempt, main, cfg)
        elif window_misfit(attempt, main, cfg) is None:
            note = schedule_window_reduction(attempt, main, cfg)
        else:
            note = schedule_rows(attempt, cfg, names)
    except ScheduleError as err:
        result.fallbacks.append(f"{main}: {err.message}")
        result.nests[main] = _window_or_simple(sch, main, cfg, result)
        return
    sch.adopt(attempt)
    result.nests[main] = note


def _window_or_simple(sch: IRSchedule, main: str, cfg: ScheduleConfig, result: X86Result) -> str:
    """A reduction the column tactic refused: the window schedule (conv2d and its backward ops),
    else the simple nest."""
    attempt = sch.fork()
    try:
        note = schedule_window_reduction(attempt, main, cfg)
    except ScheduleError as err:
        result.fallbacks.append(f"{main}: {err.message}")
        return _simple_nest(sch, main, cfg)
    sch.adopt(attempt)
    return note


def _any_window(sch: IRSchedule, cfg: ScheduleConfig) -> bool:
    """A nest is a window reduction (conv2d and its backward ops): scheduled nest by nest."""
    return any(window_misfit(sch, main, cfg) is None for main in filter(None, map(_main_block, nests(sch))))


def _is_column(sch: IRSchedule, block: str) -> bool:
    """A reduction whose loads are not contiguous along its reduce loop (`C[j] = sum_k X[k, j]`)."""
    return len(loops_of(sch.func, block)) >= 2 and not is_continuous(find_block(sch.func, block))


def _simple(sch: IRSchedule, cfg: ScheduleConfig, result: X86Result) -> None:
    result.inlined = compute_inline_tactic(sch)
    for names in nests(sch):
        main = _main_block(names)
        if main is not None:
            result.nests[main] = _simple_nest(sch, main, cfg)


def _simple_nest(sch: IRSchedule, block: str, cfg: ScheduleConfig) -> str:
    """Parallel outermost spatial loop, innermost loop vectorised if spatial and contiguous."""
    info = next(b for b in analyze_group(sch.func).blocks if b.name == block)
    loops = loops_of(sch.func, block)
    notes = []
    lanes = lanes_for(sch, block, cfg)
    if len(loops) > 1 and not info.is_reduce and lanes >= 2 and contiguous_store(sch, block, loops[-1]):
        sch.vectorize(sch.get_loops(block)[-1], lanes)
        notes.append(f"vectorize[{lanes}]")
    handles = sch.get_loops(block)
    if handles and spatial_loops(sch, block) > 0 and parallel_worth(sch, handles[0], block, cfg):
        sch.parallel(handles[0])
        notes.append("parallel outer loop")
    return ", ".join(notes) or "serial"


def _serial(sch: IRSchedule, cfg: ScheduleConfig, result: X86Result) -> None:
    result.inlined = compute_inline_tactic(sch)


PLANS: tuple[tuple[str, Callable[[IRSchedule, ScheduleConfig, X86Result], None]], ...] = (
    ("tuned", _tuned), ("simple", _simple), ("serial", _serial))


def x86_schedule(sch_factory: Callable[[], IRSchedule], cfg: ScheduleConfig) -> tuple[IRSchedule, X86Result]:
    """Schedule a group for x86 with the first plan that applies (see the module docstring).
    `sch_factory()` gives a fresh schedule of the unscheduled group for each attempt."""
    fallbacks: list[str] = []
    for name, plan in PLANS:
        sch = sch_factory()
        result = X86Result(plan=name, fallbacks=fallbacks)
        try:
            plan(sch, cfg, result)
        except ScheduleError as err:
            fallbacks.append(f"plan '{name}' failed: {type(err).__name__}: {err.message}")
            continue
        return sch, result
    sch = sch_factory()
    return sch, X86Result(plan="none", fallbacks=fallbacks)
