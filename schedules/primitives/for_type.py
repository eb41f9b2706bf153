"""Loop kinds: parallel, vectorize, unroll, bind (CINN `MutateForType` and its callers).

All four need a *serial* loop ("loop is not serial" in CINN's static impl) and keep the loop's
uid (the loop is re-kinded, not replaced). Beyond CINN they check legality:

- `parallel`, `vectorize` and `bind(blockIdx.*)`: the loop must carry no dependence
  (`schedules.analysis.dependence.loop_carries_dependence`, reductions included: a parallel
  reduction loop would race).
- `bind(threadIdx.*)`: same, except that the accumulation of a reduction block that the loop
  drives only through reduce iter vars is allowed: the CUDA backend rewrites it into a
  cross-thread (warp / block) reduction, as CINN's `ReplaceCrossThreadReduction` does. This
  covers a plain reduce loop and the rf loop after `factorize_reduction` (CINN's
  TileFirstGeneralTactic factorizes first, then binds the rf loop to threadIdx.x: the `T_rf`
  blocks index by it, the write-back accumulates over it). Any other conflict under the loop
  (e.g. a block reading the reduction's result inside it) is still rejected.

The dependence check is syntactic first (same index tuple that determines the loop var; decides
the lowered and aligned nests, symbolic divisors included) and exact with islpy
(`cinn_py.analysis`) otherwise; non-affine accesses count as conflicts. The other checks
(kinds, extents, axes, limits) are syntactic and exact.
- `vectorize(factor)`: factor > 0, no reduce loop. The extent need not be a multiple of the
  factor, nor constant: as CINN's vectorizer tail-splits, the x86 backend emits a main loop of
  `factor`-lane vector steps and a scalar tail loop for the rest (a symbolic extent included);
  the CUDA printer uses vector types when the extent equals the factor and prints any other
  vectorised loop as a serial one (correct either way). An explicit `split` first is still the
  way to get vector steps without a tail.
- `unroll`: constant extent.
- `bind`: axis in `{blockIdx,threadIdx}.{x,y,z}`, loop starts at 0, the axis is not already
  bound by an enclosing or enclosed loop, thread extents are constants within the per-axis
  limits and their product over the nest stays within `max_threads_per_block`; block extents
  may be symbolic (dynamic grids), constant ones must fit the grid limits.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import For, ForType, LoweredFunc, is_const_int, replace_stmt
from cinn_py.target import GpuLimits  # the Target's limits (bind checks the thread/block ones)
from schedules.analysis.arith import as_int
from schedules.analysis.dependence import is_reduce_loop, loop_carries_dependence
from schedules.analysis.loops import collect_stmts, index_of
from schedules.errors import (
    BindLimitError, IllegalDependenceError, InvalidArgumentError, LoopKindError,
    LoopStartError, NonConstantExtentError, schedule_error,
)
from schedules.registry import primitive

__all__ = ["GpuLimits", "parallel", "vectorize", "unroll", "bind", "THREAD_AXES"]

THREAD_AXES = tuple(f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz")


def _require_serial(func: LoweredFunc, loop: For, primitive: str) -> None:
    if loop.for_type is not ForType.SERIAL:
        kind = loop.bind_axis or loop.for_type.value
        raise schedule_error(LoopKindError, primitive,
                             f"loop '{loop.loop_var.name}' must be serial, but is {kind}",
                             func, loop)


def _require_const(func: LoweredFunc, loop: For, primitive: str) -> int:
    extent = as_int(loop.extent)
    if extent is None:
        raise schedule_error(NonConstantExtentError, primitive,
                             f"loop '{loop.loop_var.name}' needs a constant "
                             f"extent, but its extent is {loop.extent}", func, loop)
    return extent


def _require_independent(func: LoweredFunc, loop: For, primitive: str,
                         allow_accumulation: bool = False) -> None:
    if loop_carries_dependence(func, loop, allow_accumulation=allow_accumulation):
        raise schedule_error(IllegalDependenceError, primitive,
                             f"loop '{loop.loop_var.name}' carries a dependence: "
                             "an element written in one iteration is accessed in another (or the analysis "
                             "cannot "
                             "prove otherwise)", func, loop)


def _retype(func: LoweredFunc, loop: For, **changes: object) -> LoweredFunc:
    return replace_stmt(func, loop, dataclasses.replace(loop, **changes))


@primitive
def parallel(func: LoweredFunc, loop: For) -> LoweredFunc:
    """Mark `loop` parallel (run on the CPU thread pool). Parallel loops do not nest: a loop
    inside (or around) another parallel loop is rejected here rather than by the x86 backend
    later (CINN only rejects it in codegen: "Nested parallel loop is not supported")."""
    _require_serial(func, loop, "parallel")
    _require_not_nested_parallel(func, loop)
    _require_independent(func, loop, "parallel")
    return _retype(func, loop, for_type=ForType.PARALLEL)


def _require_not_nested_parallel(func: LoweredFunc, loop: For) -> None:
    outer = [lp for lp in index_of(func).enclosing_loops(loop) if lp.for_type is ForType.PARALLEL]
    inner = [n for n in collect_stmts(loop.body, For) if n.for_type is ForType.PARALLEL]
    if outer or inner:
        other = (outer or inner)[0]
        where = "inside" if outer else "around"
        raise schedule_error(LoopKindError, "parallel",
                             f"loop '{loop.loop_var.name}' is {where} the parallel loop "
                             f"'{other.loop_var.name}'; parallel loops cannot nest (fuse them and "
                             "parallelize "
                             "the fused loop instead)", func, loop, other)


@primitive
def vectorize(func: LoweredFunc, loop: For, factor: int) -> LoweredFunc:
    """Mark `loop` `vectorize[factor]` (any extent: the x86 backend adds a scalar tail loop)."""
    if isinstance(factor, bool) or not isinstance(factor, int):
        raise TypeError(f"vectorize: factor must be an int, got {factor!r}")
    if factor <= 0:
        raise schedule_error(InvalidArgumentError, "vectorize",
                             f"factor must be positive, got {factor}", func, loop)
    _require_serial(func, loop, "vectorize")
    if is_reduce_loop(loop):
        raise schedule_error(IllegalDependenceError, "vectorize",
                             f"loop '{loop.loop_var.name}' is a reduction "
                             "axis; vectorize a spatial loop (or rfactor the reduction first)", func, loop)
    _require_independent(func, loop, "vectorize")
    return _retype(func, loop, for_type=ForType.VECTORIZED, vectorize_factor=factor)


@primitive
def unroll(func: LoweredFunc, loop: For) -> LoweredFunc:
    """Mark `loop` unrolled."""
    _require_serial(func, loop, "unroll")
    _require_const(func, loop, "unroll")
    return _retype(func, loop, for_type=ForType.UNROLLED)


@primitive(from_schedule={"limits": "gpu_limits"})
def bind(func: LoweredFunc, loop: For, thread_axis: str, limits: GpuLimits | None = None) -> LoweredFunc:
    """Bind `loop` to a CUDA grid (`blockIdx.*`) or block (`threadIdx.*`) axis."""
    limits = limits or GpuLimits()
    if not isinstance(thread_axis, str):
        raise TypeError(f"bind: thread_axis must be a string such as 'threadIdx.x', got {thread_axis!r}")
    if thread_axis not in THREAD_AXES:
        raise schedule_error(InvalidArgumentError, "bind", f"unknown axis '{thread_axis}'; expected one of "
                             f"{', '.join(THREAD_AXES)}", func, loop)
    name = loop.loop_var.name
    _require_serial(func, loop, "bind")
    if not is_const_int(loop.min, 0):
        raise schedule_error(LoopStartError, "bind",
                             f"loop '{name}' must start at 0, but starts at {loop.min}",
                             func, loop)
    is_thread = thread_axis.startswith("threadIdx")
    offset = "xyz".index(thread_axis[-1])
    _check_extent(func, loop, thread_axis, is_thread, offset, limits)
    nest = index_of(func).enclosing_loops(loop) + collect_stmts(loop.body, For)
    _check_axis_free(func, loop, thread_axis, nest)
    if is_thread:
        _check_thread_total(func, loop, nest, limits)
    # threadIdx: a reduction's accumulation over the loop becomes a cross-thread reduction.
    _require_independent(func, loop, "bind", allow_accumulation=is_thread)
    kind = ForType.GPU_THREAD if is_thread else ForType.GPU_BLOCK
    return _retype(func, loop, for_type=kind, bind_offset=offset)


def _check_extent(func: LoweredFunc, loop: For, axis: str, is_thread: bool, offset: int,
                  limits: GpuLimits) -> None:
    extent = as_int(loop.extent)
    if extent is None:
        if is_thread:
            raise schedule_error(NonConstantExtentError, "bind",
                                 f"loop '{loop.loop_var.name}' bound to {axis} needs "
                                 f"a constant extent (block dims are fixed at launch), but its extent is "
                                 f"{loop.extent}; split it by a constant first", func, loop)
        return
    limit = (limits.max_block_dims if is_thread else limits.max_grid_dims)[offset]
    if extent > limit:
        where = "block" if is_thread else "grid"
        raise schedule_error(BindLimitError, "bind",
                             f"extent {extent} of loop '{loop.loop_var.name}' exceeds the "
                             f"{where} limit {limit} of {axis}", func, loop)


def _check_axis_free(func: LoweredFunc, loop: For, axis: str, nest: list[For]) -> None:
    for other in nest:
        if other.bind_axis == axis:
            raise schedule_error(BindLimitError, "bind",
                                 f"{axis} is already bound by loop '{other.loop_var.name}' "
                                 f"in the same nest as '{loop.loop_var.name}'", func, other, loop)


def _check_thread_total(func: LoweredFunc, loop: For, nest: list[For], limits: GpuLimits) -> None:
    total = as_int(loop.extent) or 1
    for other in nest:
        if other.for_type is ForType.GPU_THREAD:
            total *= as_int(other.extent) or 1
    if total > limits.max_threads_per_block:
        raise schedule_error(BindLimitError, "bind",
                             f"binding '{loop.loop_var.name}' makes {total} threads per block; "
                             f"the limit is {limits.max_threads_per_block}", func, loop)
