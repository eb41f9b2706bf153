"""rfactor (CINN `Rfactor`): factor the reduction over one pure reduce loop `R` into separate
nests: an init nest for `rf_T`, the original nest computing `rf_T` (R anywhere among the reduce
loops), and a final nest `T__reduce_init; for rf_<R>: T[s] = T[s] op rf_T[s, rf_<R>]`. The nest
must contain only the reduction and its init block. The reduction analysis, legality checks and
naming it shares with `factorize_reduction` are in `reduction.py`, whose docstring describes
both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from cinn_py.ir import (
    Block, Expr, For, Load, LoweredFunc, Mutator, ScheduleBlock, ScheduleBlockRealize, Stmt, Store, Tensor,
    Var, default_axis_name, int32, unique_name,
)
from schedules.analysis.loops import block_stores, child_blocks
from schedules.analysis.regions import int_like
from schedules.errors import schedule_error
from schedules.primitives._tree import replace_many, replace_with_seq
from schedules.primitives.reduction import (
    ReductionBlockError, _Reduction, _add_temp, _analyse, _identity, _insert, _rf_blocks, _rf_tensor,
)
from schedules.registry import primitive

__all__ = ["rfactor"]


@primitive
def rfactor(func: LoweredFunc, loop: For, rf_axis: int) -> tuple[LoweredFunc, Tensor]:
    """Factor the reduction over `loop` into a separate partial-reduction stage `rf_<T>`.

    Returns the new function and the tensor `rf_<T>`.

    Raises:
        ReductionBlockError, RfLoopError, RfAxisError, StaleHandleError.
    """
    prim = "rfactor"
    red = _analyse(prim, func, loop, rf_axis)
    nest = red.loops[0]
    t = red.store.tensor
    others = [b for b in child_blocks(nest) if b is not red.block]
    inits = [b for b in others if b.name == f"{red.block.name}__reduce_init"]
    if len(others) != len(inits) or len(inits) > 1:
        raise schedule_error(ReductionBlockError, prim,
                             f"the loop nest of '{red.block.name}' must contain only "
                             f"the reduction and its init block, but also holds "
                             f"{', '.join(b.name for b in others if b not in inits)}", func, nest)
    rf = _rf_tensor(func, red, loop, rf_axis, f"rf_{t.name}")
    init_nest = _init_nest(red, rf)
    _, update = _rf_blocks(red, rf, rf_axis, loop.loop_var)
    rf_nest = replace_many(nest, {id(red.block): update, **({id(inits[0]): Block(())} if inits else {})})
    final = _final_nest(red, rf, rf_axis, loop, inits[0] if inits else None)
    return _add_temp(replace_with_seq(func, nest, (init_nest, _drop_empty(rf_nest), final)), rf), rf


def _loop_nest(extents: tuple[Expr, ...], make_body: Callable[[list[Var]], Stmt]) -> Stmt:
    idt = extents[0].dtype if extents else int32
    loop_vars = [Var(unique_name(default_axis_name(k)), idt) for k in range(len(extents))]
    stmt: Stmt = make_body(loop_vars)
    for var, extent in reversed(list(zip(loop_vars, extents))):
        stmt = For(var, int_like(0, extent), extent, stmt if isinstance(stmt, Block) else Block((stmt,)))
    return stmt


def _init_nest(red: _Reduction, rf: Tensor) -> Stmt:
    view = Tensor(f"{rf.name}__reduce_init", rf.shape, rf.dtype, rf.buffer)

    def body(loop_vars: list[Var]) -> Stmt:
        iters = [Var(unique_name(f"i{k}"), v.dtype) for k, v in enumerate(loop_vars)]
        return ScheduleBlockRealize(tuple(loop_vars), ScheduleBlock(
            view.name, tuple(iters), Store(view, _identity(red.op, rf.dtype), tuple(iters))))

    return _loop_nest(rf.shape, body)


def _final_nest(red: _Reduction, rf: Tensor, rf_axis: int, loop: For,
                init: ScheduleBlockRealize | None) -> Stmt:
    t = red.store.tensor

    def body(loop_vars: list[Var]) -> Stmt:
        rf_loop_var = Var(unique_name(f"rf_{loop.loop_var.name}"), loop.loop_var.dtype)
        iters = [Var(unique_name(f"i{k}"), v.dtype) for k, v in enumerate(loop_vars)]
        r = Var(unique_name(f"i{len(iters)}"), rf_loop_var.dtype, is_reduce_axis=True)
        value = red.op(Load(t, tuple(iters)), Load(rf, _insert(tuple(iters), rf_axis, r)))
        new_block = dataclasses.replace(red.block.schedule_block, iter_vars=tuple(iters) + (r,),
                                        body=Store(t, value, tuple(iters)), read_buffers=(), write_buffers=())
        update = dataclasses.replace(red.block, iter_values=tuple(loop_vars) + (rf_loop_var,),
                                     schedule_block=new_block)
        stmts: list[Stmt] = [For(rf_loop_var, int_like(0, loop.extent), loop.extent, Block((update,)))]
        if init is not None:
            init_iters = [Var(unique_name(f"i{k}"), v.dtype) for k, v in enumerate(loop_vars)]
            init_store = block_stores(init)[0]
            new_init = ScheduleBlockRealize(tuple(loop_vars), dataclasses.replace(
                init.schedule_block, iter_vars=tuple(init_iters),
                body=Store(init_store.tensor, init_store.value, tuple(init_iters))))
            stmts.insert(0, new_init)
        return Block(tuple(stmts))

    return _loop_nest(t.shape, body)


def _drop_empty(stmt: Stmt) -> Stmt:
    """Remove the empty Blocks left where the init block was."""

    class _Drop(Mutator):
        def visit_block(self, node: Block) -> Block:
            stmts = tuple(self.visit(s) for s in node.stmts)
            kept = tuple(s for s in stmts if not (isinstance(s, Block) and not s.stmts))
            if len(kept) == len(node.stmts) and all(a is b for a, b in zip(kept, node.stmts)):
                return node
            return dataclasses.replace(node, stmts=kept)

    return _Drop().visit(stmt)
