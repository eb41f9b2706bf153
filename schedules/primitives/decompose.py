"""`decompose_reduction(block, loop)` (TVM `decompose_reduction`; CINN has no such primitive):
move a reduction's init block `T__reduce_init` out of the update's nest to just before `loop`.

Lowering puts the init next to the reduce loops, inside the spatial loops they share:

    for i { for j { T__reduce_init[i, j] = 0; for k { T[i, j] += ... } } }

so the spatial loops under which it sits cannot be reordered below the reduce loop (`reorder`
needs a chain of single statements). After `decompose_reduction(T, loop)` the init gets its own
copy of the loops from `loop` down to it (fresh loop vars, same kinds; the split tail guards on
that path are copied too) placed right before `loop`, and the update nest from `loop` down holds
only the update — a perfect nest that `reorder` can permute freely (the matmul register tile
needs `k` outside the tile's `i, j` loops).

Checked before anything changes: `block` is a reduction with an init block in the same nest,
`loop` encloses both, every loop from `loop` down to the init indexes it (the init would
otherwise have run once per iteration of a loop it does not depend on) and no other block under
`loop` accesses the reduction's buffer (the init now runs before all of them).
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import (
    Block, For, IfThenElse, Load, LoweredFunc, ScheduleBlockRealize, Stmt, Store, Var,
    new_uid, substitute,
    walk,
)
from schedules.analysis.loops import StmtIndex, all_blocks, block_stores, index_of, vars_in
from schedules.errors import InvalidArgumentError, ScheduleError, schedule_error
from schedules.primitives._move import fresh_loop_var
from schedules.primitives._tree import remove_stmt, replace_with_seq
from schedules.registry import primitive

__all__ = ["DecomposeError", "decompose_reduction"]

INIT_SUFFIX = "__reduce_init"


class DecomposeError(ScheduleError):
    """decompose_reduction: the block has no init to move, `loop` does not enclose it, or the
    init cannot run before `loop` without changing results."""


def _init_of(func: LoweredFunc, index: StmtIndex, block: ScheduleBlockRealize) -> ScheduleBlockRealize:
    name = block.schedule_block.name
    if not any(v.is_reduce_axis for v in block.schedule_block.iter_vars):
        raise schedule_error(DecomposeError, "decompose_reduction",
                             f"block '{name}' is not a reduction (it has no "
                             "reduce iter var)", func, block)
    init = next((r for r in all_blocks(func) if r.schedule_block.name == name + INIT_SUFFIX), None)
    if init is None:
        raise schedule_error(DecomposeError, "decompose_reduction",
                             f"block '{name}' has no '{name}{INIT_SUFFIX}' "
                             "block (already decomposed, or its init was moved elsewhere)", func, block)
    return init


def _path(func: LoweredFunc, index: StmtIndex, loop: For, init: ScheduleBlockRealize,
          block: ScheduleBlockRealize) -> list[Stmt]:
    """The loops and guards from `loop` (inclusive) down to the init's parent."""
    ancestors = index.ancestors(init)
    if not any(a is loop for a in ancestors) or not any(a is loop for a in index.ancestors(block)):
        raise schedule_error(InvalidArgumentError, "decompose_reduction",
                             f"loop '{loop.loop_var.name}' must enclose "
                             f"both '{block.schedule_block.name}' and its init block", func, loop, init)
    path = ancestors[next(k for k, a in enumerate(ancestors) if a is loop):]
    used = vars_in(tuple(init.iter_values))
    for node in path:
        if isinstance(node, For) and node.loop_var not in used:
            raise schedule_error(DecomposeError, "decompose_reduction",
                                 f"the init block does not depend on loop "
                                 f"'{node.loop_var.name}' (it runs once per iteration of it); decompose at a "
                                 "loop "
                                 "below it", func, node, init)
        if isinstance(node, IfThenElse) and node.false_case is not None:
            raise schedule_error(DecomposeError, "decompose_reduction",
                                 "an if/else lies between the loop and the "
                                 "init block (only guards without else can be copied)", func, node)
    return [n for n in path if isinstance(n, (For, IfThenElse))]


def _check_no_other_access(func: LoweredFunc, index: StmtIndex, loop: For, init: ScheduleBlockRealize,
                           block: ScheduleBlockRealize) -> None:
    buf = block_stores(init)[0].tensor.buffer.name
    for other in all_blocks(func):
        if other is init or other is block or not any(a is loop for a in index.ancestors(other)):
            continue
        touched = ({n.tensor.buffer.name for n in walk(other.schedule_block.body)
                    if isinstance(n, (Load, Store))})
        if buf in touched:
            raise schedule_error(DecomposeError, "decompose_reduction",
                                 f"block '{other.schedule_block.name}' under "
                                 f"loop '{loop.loop_var.name}' also accesses buffer '{buf}', which the init "
                                 "would now "
                                 "write before it", func, other)


def _copy_nest(path: list[Stmt], init: ScheduleBlockRealize, taken: set[str]) -> Stmt:
    """The init under fresh copies of the loops and guards of `path` (outer -> inner)."""
    mapping: dict[Var, Var] = {}
    for node in path:
        if isinstance(node, For):
            mapping[node.loop_var] = fresh_loop_var(node.loop_var, taken)
    body: Stmt = dataclasses.replace(init,
                                     iter_values=tuple(substitute(v, mapping) for v in init.iter_values),
                                     uid=new_uid())
    for node in reversed(path):
        inner = Block((body,))
        if isinstance(node, For):
            body = For(mapping[node.loop_var], substitute(node.min, mapping),
                       substitute(node.extent, mapping),
                       inner, node.for_type, node.bind_offset, node.vectorize_factor)
        else:
            body = IfThenElse(substitute(node.condition, mapping), inner)  # type: ignore[union-attr]
    return body


@primitive
def decompose_reduction(func: LoweredFunc, block: ScheduleBlockRealize, loop: For) -> tuple[LoweredFunc,
                                                                                              ScheduleBlockRealize]:
    """Move `block`'s init out of its nest to just before `loop`; returns the new function and
    the moved init block."""
    index = index_of(func)
    init = _init_of(func, index, block)
    path = _path(func, index, loop, init, block)
    _check_no_other_access(func, index, loop, init, block)
    taken = ({n.loop_var.name for n in walk(func.body) if isinstance(n, For)}
             | {v.name for v in func.scalar_args})
    nest = _copy_nest(path, init, taken)
    without = remove_stmt(func, init)
    new_loop = next(n for n in walk(without.body) if isinstance(n, For) and n.uid == loop.uid)
    new_func = replace_with_seq(without, new_loop, (nest, new_loop))
    moved = next(r for r in all_blocks(new_func) if r.schedule_block.name == init.schedule_block.name)
    return new_func, moved
