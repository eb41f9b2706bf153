"""compute_at, simple_compute_at, reverse_compute_at: move a block under another nest's loop.

This module holds compute_at and simple_compute_at; reverse_compute_at is in
`reverse_compute_at.py`, the handle and order checks the three share are in `_move.py`, and
compute_at's stage and region analysis is in `_compute_at_region.py`.

* `simple_compute_at(func, block, loop)` (CINN `SimpleComputeAt`, what the group tactics use for
  loop fusion): the loops from the root down to `loop` are matched 1:1 with the block's outer
  loops (extents proved equal), the block's loop vars are replaced by the target's, and the block
  (with its remaining inner loops and any guards around it) goes to the end of `loop`'s body when
  it came after the target nest, to the start when it came before.
* `compute_at(func, block, loop, keep_unit_loops=False)` (CINN `ComputeAt`): the producer `block`
  is recomputed at the start of each iteration of `loop`, over the region of its tensor that the
  consumers inside `loop` read in that iteration (new loops `ax0, ax1, ...`, attr
  `compute_at_extra_var`). A reduction producer (such as the stage `cache_write` leaves) moves
  with its init block and its reduce loops. The region's bounds use the signs of the loops
  around `loop`, so a fused-and-split consumer's `(f * 4 + f_1) / 8`, `% 8` indices are bounded.
* `reverse_compute_at(func, block, loop, keep_unit_loops=False)` (CINN `ReverseComputeAt`): the
  consumer `block` is computed at the end of each iteration of its producer's `loop`, over the
  instances whose reads of the produced tensors fall in the region the blocks under `loop` write
  in that iteration (new loops `ax0, ...`, attr `reverse_compute_at_extra_var`).

Legality is checked on the rebuilt function before it is returned (nothing is returned on
error): every pair of conflicting accesses between the moved block and another block keeps its
order (`schedules.analysis.dependence.same_iteration`); compute_at additionally needs every
reader of the producer's tensor inside `loop`, and nothing in `loop` or between the two places
may write what the producer reads. Differs from CINN: CINN checks only that the handles exist and
that `loop` is not an ancestor of the block.

Which check is which: the order check is syntactic first (same injective index function of the
shared loops, which also decides symbolic divisors such as `sp / S2`); where it fails, islpy
(`cinn_py.analysis.dependences`, `isl_ordered`) decides exactly for quasi-affine accesses.
compute_at's region comes from interval bounds over the inner loops, and its bounds guard is
dropped only when syntactically or islpy-provably (`is_always_true`) redundant. The reader and
input-clobbering rules are syntactic (by buffer) and conservative.
"""

from __future__ import annotations

from collections.abc import Mapping

from cinn_py.ir import (
    Block, Expr, For, IfThenElse, LoweredFunc, ScheduleBlockRealize, Stmt, Var, print_ir, substitute,
)
from schedules.analysis.arith import prove_equal
from schedules.analysis.dependence import argument_buffers, readers_of
from schedules.analysis.loops import StmtIndex, index_of, is_ancestor
from schedules.analysis.regions import int_like
from schedules.errors import ScheduleError, schedule_error
from schedules.primitives._compute_at_region import (
    ComputeAtBlockError, _at_region, _check_inputs_stable, _reduce_nest, _region_guard, _region_loops,
    _required_region, _stage,
)
from schedules.primitives._move import (
    RegionError, check_order_exact, current_loop, fresh_loop_var, names_in_scope, resolve_handles, same_block,
)
from schedules.primitives._tree import insert_in_loop, program_order, remove_stmt
from schedules.registry import primitive

__all__ = ["simple_compute_at", "compute_at", "LoopMismatchError", "ComputeAtBlockError", "RegionError"]


class LoopMismatchError(ScheduleError):
    """simple_compute_at: the target's loops do not match the block's outer loops 1:1."""


def _moved_stmt(index: StmtIndex, block: ScheduleBlockRealize, keep_from: int,
                mapping: Mapping[Var, Expr], scope: set[str]) -> Stmt:
    """The block with its loops below `keep_from` and every guard around it, rebuilt (new loops)
    with `mapping` applied; loops above `keep_from` are dropped. A kept loop whose var is named
    like one in `scope` (the target's loops) is renamed first: after `mapping` sends the block's
    outer loop vars to the target's, a kept `j` under a target `j` would capture those uses."""
    loops_seen = 0
    wrappers: list[Stmt] = []
    for anc in index.ancestors(block):
        if isinstance(anc, For):
            loops_seen += 1
            if loops_seen > keep_from:
                wrappers.append(anc)
        elif isinstance(anc, IfThenElse):
            wrappers.append(anc)
    taken = scope | {w.loop_var.name for w in wrappers if isinstance(w, For)}
    stmt: Stmt = block
    for wrap in reversed(wrappers):
        if isinstance(wrap, For):
            var = fresh_loop_var(wrap.loop_var, taken) if wrap.loop_var.name in scope else wrap.loop_var
            body = substitute(stmt, {wrap.loop_var: var}) if var != wrap.loop_var else stmt
            stmt = For(var, wrap.min, wrap.extent, Block((body,)), wrap.for_type, wrap.bind_offset,
                       wrap.vectorize_factor)
        else:
            stmt = IfThenElse(wrap.condition, Block((stmt,)))  # type: ignore[union-attr]
    return substitute(stmt, mapping)


# ----------------------------------------------------------------------------------------------
# simple_compute_at
# ----------------------------------------------------------------------------------------------
@primitive
def simple_compute_at(func: LoweredFunc, block: ScheduleBlockRealize, loop: For) -> LoweredFunc:
    """Fuse `block` into the nest of `loop` by 1:1 loop matching (see the module docstring).

    Raises:
        LoopMismatchError, IllegalDependenceError, LoopNotFoundError, StaleHandleError.
    """
    prim = "simple_compute_at"
    index = resolve_handles(prim, func, block, loop)
    target = index.enclosing_loops(loop) + [loop]
    own = index.enclosing_loops(block)
    if len(own) < len(target):
        raise schedule_error(LoopMismatchError, prim,
                             f"block '{block.name}' must have at least {len(target)} "
                             f"loops to match, but has {len(own)}", func, block, loop)
    for t, b in zip(target, own):
        if not (prove_equal(t.min, b.min) and prove_equal(t.extent, b.extent)):
            raise schedule_error(LoopMismatchError, prim,
                                 f"extent of loop '{b.loop_var.name}' should equal that "
                                 f"of '{t.loop_var.name}': expected {print_ir(t.extent)}, got "
                                 f"{print_ir(b.extent)}", func, b, t)
    mapping = {b.loop_var: t.loop_var for t, b in zip(target, own) if b.loop_var != t.loop_var}
    moved = _moved_stmt(index, block, len(target), mapping, names_in_scope(func, target))
    new_block = next(s for s in _stmts(moved) if isinstance(s, ScheduleBlockRealize))
    after = program_order(func)[id(block)] > program_order(func)[id(loop)]
    new = insert_in_loop(remove_stmt(func, block), current_loop(remove_stmt(func, block), loop), moved,
                         at_end=after)
    check_order_exact(prim, func, new, block, new_block)
    return new


def _stmts(stmt: Stmt) -> list[Stmt]:
    return index_of(stmt).order


# ----------------------------------------------------------------------------------------------
# compute_at
# ----------------------------------------------------------------------------------------------
@primitive
def compute_at(func: LoweredFunc, block: ScheduleBlockRealize, loop: For,
               keep_unit_loops: bool = False) -> LoweredFunc:
    """Recompute the producer `block` inside `loop` over the region its consumers there need.

    A reduction producer (e.g. the stage `cache_write` leaves behind: `T_local__reduce_init`
    plus `T_local[s] = T_local[s] + ...` under its reduce loops) moves with its init block and
    its reduce loops: for each element of the region, the init runs, then the whole reduction.

    Raises:
        ComputeAtBlockError, RegionError, IllegalDependenceError, LoopNotFoundError,
        StaleHandleError.
    """
    prim = "compute_at"
    index = resolve_handles(prim, func, block, loop)
    stage = _stage(prim, func, index, block)
    tensor = stage.store.tensor
    readers = [r for r in readers_of(func, tensor.buffer.name) if all(r is not b for b in stage.blocks)]
    outside = [r for r in readers if not is_ancestor(loop, r)]
    if outside or tensor.buffer.name in argument_buffers(func):
        why = f"block(s) {', '.join(r.name for r in outside)} outside it read" if outside else \
            "it is a function argument, whose every element is observable; compute_at would write"
        raise schedule_error(RegionError, prim, f"every reader of '{tensor.name}' must be inside loop "
                             f"'{loop.loop_var.name}', but {why} '{tensor.name}'", func, loop, *outside)
    for moved in stage.blocks:
        _check_inputs_stable(prim, func, moved, loop, readers)
    region = _required_region(prim, func, index, loop, readers, tensor)
    outer = index.enclosing_loops(loop) + [loop]
    taken = names_in_scope(func, outer)
    values, extra = _region_loops(region, keep_unit_loops, taken, block.iter_values[0].dtype)
    new_blocks = [_at_region(b, values, extra) for b in stage.blocks]
    stmt: Stmt = new_blocks[0] if stage.init is None else Block((new_blocks[0], _reduce_nest(
        index, block, new_blocks[1], len(stage.spatial_loops), taken)))
    guard = _region_guard(new_blocks[0], region, tensor.shape, outer)
    if guard is not None:
        stmt = IfThenElse(guard, stmt if isinstance(stmt, Block) else Block((stmt,)))
    for var, extent in reversed(extra):
        stmt = For(var, int_like(0, extent), extent, stmt if isinstance(stmt, Block) else Block((stmt,)))
    removed = func
    for old in reversed(stage.blocks):
        removed = remove_stmt(removed, same_block(removed, old) or old)
    new = removed
    for part in reversed(stmt.stmts if isinstance(stmt, Block) else (stmt,)):   # spliced, not a nested Block
        new = insert_in_loop(new, current_loop(new, loop), part, at_end=False)
    for old, moved in zip(stage.blocks, new_blocks):
        check_order_exact(prim, func, new, old, same_block(new, moved) or moved,
                          frozenset({tensor.buffer.name}))
    return new
