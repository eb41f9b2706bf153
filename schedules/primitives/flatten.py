"""flatten_loops and add_unit_loop (CINN `FlattenLoops`, `AddUnitLoop`).

`flatten_loops(loops)` fuses a perfectly nested chain (the rules of `fuse`) and then collapses
the iteration space of every block directly inside whose iter vars are bound one-to-one to the
flattened loops (`i0, i1 = axis.bind(i, j)` becomes `i0 = axis.bind(i_j_fused)` with the old iter
vars rewritten by `/` and `%`), so each such block is one-dimensional. Differs from CINN: tensor
indices keep their rank (the backends linearise addresses anyway); CINN rewrites them into flat
offsets of reshaped tensors.

`add_unit_loop(block)` wraps a block in `for (ix, 0, 1)` (what `get_loops` does for a block
without loops).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cinn_py.ir import (
    Block, Expr, For, LoweredFunc, ScheduleBlockRealize, Var, const, int32, int64, replace_stmt, substitute,
    unique_name,
)
from schedules.analysis.loops import collect_stmts
from schedules.primitives.fuse import check_fusable, fused_substitution
from schedules.registry import primitive

__all__ = ["flatten_loops", "add_unit_loop"]


@primitive
def flatten_loops(func: LoweredFunc, loops: Sequence[For]) -> tuple[LoweredFunc, For]:
    """Flatten `loops` into one loop; returns the new function and the loop."""
    check_fusable(func, loops, "flatten_loops")
    outer = loops[0]
    idt = outer.loop_var.dtype
    fused = Var(unique_name("_".join(lp.loop_var.name for lp in loops) + "_fused"), idt)
    mapping = fused_substitution(loops, fused)
    body = loops[-1].body
    replacements = {id(b): _collapse(b, loops, fused, mapping) for b
                    in collect_stmts(body, ScheduleBlockRealize)
                    if _binds_exactly(b, loops)}
    for old_id, new in replacements.items():
        old = next(b for b in collect_stmts(body, ScheduleBlockRealize) if id(b) == old_id)
        body = replace_stmt(body, old, new)
    body = substitute(body, mapping)
    extent: Expr = const(1, idt)
    for lp in loops:
        extent = extent * lp.extent
    from schedules.analysis.arith import simplify_index  # noqa: PLC0415

    new = For(fused, const(0, idt), simplify_index(extent), body, outer.for_type)
    return replace_stmt(func, outer, new), new


def _binds_exactly(block: ScheduleBlockRealize, loops: Sequence[For]) -> bool:
    values = block.iter_values
    return len(values) == len(loops) and all(v == lp.loop_var for v, lp in zip(values, loops)) \
        and not any(v.is_reduce_axis for v in block.schedule_block.iter_vars)


def _collapse(block: ScheduleBlockRealize, loops: Sequence[For], fused: Var,
              mapping: dict[Var, Expr]) -> ScheduleBlockRealize:
    sb = block.schedule_block
    first = sb.iter_vars[0]
    flat = Var(unique_name(first.name), first.dtype)
    per_iter = {iv: substitute(mapping[lp.loop_var], {fused: flat}) for iv, lp in zip(sb.iter_vars, loops)}
    new_sb = dataclasses.replace(sb, iter_vars=(flat,), body=substitute(sb.body, per_iter))
    return dataclasses.replace(block, iter_values=(fused,), schedule_block=new_sb)


@primitive
def add_unit_loop(func: LoweredFunc, block: ScheduleBlockRealize) -> tuple[LoweredFunc, For]:
    """Wrap `block` in a unit loop `for (ix, 0, 1)`."""
    idt = block.iter_values[0].dtype if block.iter_values else (
        int64 if func.scalar_args else int32)
    loop = For(Var(unique_name("ix"), idt), const(0, idt), const(1, idt), Block((block,)))
    return replace_stmt(func, block, loop), loop
