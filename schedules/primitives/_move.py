"""Handle checks and order legality shared by the primitives that move a block under another
loop (`compute_at.py`: compute_at, simple_compute_at; `reverse_compute_at.py`).

The order check is syntactic first (`check_order`: every conflicting access pair stays in the
same iteration of the shared loops, in the original order); where that fails, islpy
(`isl_ordered`) decides exactly for quasi-affine accesses.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import Expr, For, LoweredFunc, Max, Min, ScheduleBlockRealize, Var, unique_name
from schedules.analysis.arith import prove_equal
from schedules.analysis.dependence import buffer_conflicts, same_iteration
from schedules.analysis.loops import StmtIndex, all_blocks, index_of, is_ancestor
from schedules.analysis.regions import simplify_index
from schedules.errors import (
    IllegalDependenceError, LoopNotFoundError, ScheduleError, StaleHandleError, schedule_error,
)
from schedules.primitives._tree import program_order

__all__ = [
    "RegionError", "check_order", "check_order_exact", "current_loop", "fresh_loop_var", "isl_ordered",
    "names_in_scope", "range_union", "resolve_handles", "same_block",
]


class RegionError(ScheduleError):
    """compute_at / reverse_compute_at: the region to compute cannot be bounded or derived, a
    consumer is outside the loop, or the consumer reads nothing the loop produces."""


def resolve_handles(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, loop: For) -> StmtIndex:
    """The index of `func` once `block` and `loop` are checked to be current handles of it, with
    `loop` not enclosing `block`."""
    index = index_of(func)
    if not isinstance(block, ScheduleBlockRealize) or not index.contains(block) or not block.iter_values:
        raise schedule_error(StaleHandleError, prim,
                             f"block '{getattr(block, 'name', block)}' is not a block of "
                             "the current function (stale handle)", func)
    if not isinstance(loop, For) or not index.contains(loop):
        raise schedule_error(StaleHandleError, prim, "the target loop is not a loop of the current function "
                             "(stale handle)", func)
    if is_ancestor(loop, block):
        raise schedule_error(LoopNotFoundError, prim, f"loop '{loop.loop_var.name}' must not enclose block "
                             f"'{block.name}', but it does", func, loop, block)
    return index


def check_order(prim: str, old: LoweredFunc, new: LoweredFunc, moved_old: ScheduleBlockRealize,
                moved_new: ScheduleBlockRealize, covered: frozenset[str] = frozenset()) -> None:
    """Every conflicting access pair keeps its order (see the module docstring). For buffers in
    `covered` (the producer's output under compute_at, whose per-iteration region is built to
    cover the reads) only the statement order is checked."""
    pos_old, pos_new = program_order(old), program_order(new)
    index_new = index_of(new)
    b_loops = index_new.enclosing_loops(moved_new)
    for other in all_blocks(new):
        if other is moved_new:
            continue
        pairs = buffer_conflicts(moved_new, other)
        if not pairs:
            continue
        other_old = same_block(old, other)
        before_old = other_old is not None and pos_old[id(other_old)] < pos_old[id(moved_old)]
        before_new = pos_new[id(other)] < pos_new[id(moved_new)]
        o_loops = index_new.enclosing_loops(other)
        shared = [a for a, b in zip(b_loops, o_loops) if a is b]
        ok = before_old == before_new and (not shared or all(
            x.buffer in covered or same_iteration(x, y, shared, b_loops, o_loops, {}) for x, y in pairs))
        if not ok:
            buf = pairs[0][0].tensor.name
            raise schedule_error(IllegalDependenceError, prim, f"moving '{moved_old.name}' would reorder its "
                                 f"accesses to '{buf}' with block '{other.name}' (expected every dependent "
                                 "pair "
                                 "in the same iteration of the shared loops, in the original order)",
                                 old, moved_old)


def same_block(func: LoweredFunc, block: ScheduleBlockRealize) -> ScheduleBlockRealize | None:
    """`block` as rebuilt in `func` (same uid), None when it is not there."""
    return next((b for b in all_blocks(func) if b.uid == block.uid), None)


def check_order_exact(prim: str, old: LoweredFunc, new: LoweredFunc, moved_old: ScheduleBlockRealize,
                      moved_new: ScheduleBlockRealize, covered: frozenset[str] = frozenset()) -> None:
    """`check_order` (syntactic same-iteration test); where it fails, the buffers islpy proves
    dependence-free in the right order (`isl_ordered`) are accepted and the test is re-run."""
    try:
        check_order(prim, old, new, moved_old, moved_new, covered)
    except IllegalDependenceError:
        proven = isl_ordered(old, new, moved_old, moved_new)
        if not proven:
            raise
        check_order(prim, old, new, moved_old, moved_new, covered | proven)


def isl_ordered(old: LoweredFunc, new: LoweredFunc, moved_old: ScheduleBlockRealize,
                moved_new: ScheduleBlockRealize) -> frozenset[str]:
    """Buffers on which islpy proves that no instance of the moved block now runs before a
    conflicting instance of a block that ran entirely before it (or after one that ran entirely
    after it). The syntactic same-iteration test cannot see that `B[i*3 + ax0]` and
    `B[i*3 + i_0]` meet in the same iteration of `i`; the polyhedral check does."""
    from cinn_py.analysis import AnalysisError, dependences  # noqa: PLC0415 (islpy is heavy)

    pos = program_order(old)
    old_loops = set(map(id, index_of(old).enclosing_loops(moved_old)))
    index_old = index_of(old)
    proven: set[str] = set()
    refuted: set[str] = set()
    for other in all_blocks(new):
        pairs = buffer_conflicts(moved_new, other) if other is not moved_new else []
        buffers = {x.buffer for x, _ in pairs}
        other_old = same_block(old, other)
        if not buffers or other_old is None:
            refuted |= buffers
            continue
        if old_loops & set(map(id, index_old.enclosing_loops(other_old))):
            refuted |= buffers  # interleaved before the move: left to the same-iteration test
            continue
        before = pos[id(other_old)] < pos[id(moved_old)]
        try:
            deps = dependences(new, moved_new, other) if before else dependences(new, other, moved_new)
        except AnalysisError:
            refuted |= buffers
            continue
        # Over-approximated accesses only add pairs, so an empty answer is a proof.
        (proven if deps.is_empty() else refuted).update(buffers)
    return frozenset(proven - refuted)


def current_loop(func: LoweredFunc, loop: For) -> For:
    """`loop` as rebuilt in `func` (same uid)."""
    found = index_of(func).by_uid.get(loop.uid)
    assert isinstance(found, For)  # the removal never drops the target loop (it is not an ancestor)
    return found


def names_in_scope(func: LoweredFunc, target: list[For]) -> set[str]:
    """Names a loop inserted under the innermost of `target` (a loop and its enclosing loops) must
    not take: the target loop vars and the function's scalar arguments (symbolic dims).

    Loop vars compare by name, so a new loop named like one of these would capture its uses
    (`for j { for j { B[i, j] } }` reads the inner `j` where the outer one was meant)."""
    return {lp.loop_var.name for lp in target} | {v.name for v in func.scalar_args}


def fresh_loop_var(var: Var, taken: set[str]) -> Var:
    """`var` itself when its name is not in `taken`, else a copy named `<name>_<n>` that is; the
    chosen name is added to `taken` (so sibling new loops get distinct names)."""
    name = var.name
    while name in taken:
        name = unique_name(var.name)
    taken.add(name)
    return var if name == var.name else dataclasses.replace(var, name=name)


def range_union(a: tuple[Expr, Expr], b: tuple[Expr, Expr]) -> tuple[Expr, Expr]:
    """The inclusive range covering both `a` and `b` (min of the mins, max of the maxes)."""
    lo = a[0] if prove_equal(a[0], b[0]) else simplify_index(Min(a[0], b[0]))
    hi = a[1] if prove_equal(a[1], b[1]) else simplify_index(Max(a[1], b[1]))
    return lo, hi
