"""rfactor and factorize_reduction: split one reduction into partial reductions over one loop.
This module holds factorize_reduction and the analysis both share; rfactor is `rfactor.py`.

Both take a *pure reduce loop* `R` of a reduction update block `T[s] = T[s] op body` (op
associative and commutative: + * max min and or) and introduce a tensor with R's extent inserted
at `rf_axis`, holding one partial result per value of R's loop var:

* `factorize_reduction(func, R, rf_axis)` (CINN `FactorizeReduction`, the GPU two-step reduce of
  seed 003 §2.2 step 5) rewrites in place, inside R:

      for R:                       # R is now a spatial loop of the partial reduction
        T_rf__reduce_init[s, r] = identity
        for <inner reduce loops>: T_rf[s, r] = T_rf[s, r] op body
        T[s] = T[s] op T_rf[s, r]  # write-back block (keeps T's block name and handle)

  so that binding R to `threadIdx.x` gives a cross-thread reduction of the write-back. When
  other reduce loops of the block enclose R (R is the inner loop of a split reduction), R is
  first moved above them with `reorder` (legal: only the accumulation's order changes), so the
  partial results are indexed by R's values, as TVM's `rfactor` on an inner loop does
  (`B_rf[i, k_1] += A[i, k_0 * 4 + k_1]`). The original `T__reduce_init` stays where it is.

* `rfactor(func, R, rf_axis)` (CINN `Rfactor`) produces separate nests: an init nest for `rf_T`,
  the original nest computing `rf_T` (R anywhere among the reduce loops), and a final nest
  `T__reduce_init; for rf_<R>: T[s] = T[s] op rf_T[s, rf_<R>]`. The nest must contain only the
  reduction and its init block.

Names follow CINN (`<T>_rf`, `<T>_rf__reduce_init`, `rf_<T>`, loop `rf_<loopvar>`), made unique
through the name generator when the same reduction is factored again (`rf_B_0`).

Legality is syntactic and exact: the update must match `T[s] = T[s] op body` with `op`
associative and commutative and `body` not reading `T`, the loop must drive only reduce iter
vars, and (rfactor) the nest may hold nothing but the reduction and its init. Then the only
dependence the loop carries is the accumulation, whose order the rewrite may change, and the new
`rf` tensor is fresh, so no islpy query is needed.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from cinn_py.ir import (
    Add, And, Block, DType, Expr, For, Load, LoweredFunc, Max, Min, Mul, Or, ScheduleBlock,
    ScheduleBlockRealize, Stmt, Store, Tensor, Var, const, make_tensor, print_ir, substitute, unique_name,
    walk,
)
from schedules.analysis.loops import block_stores, child_blocks, index_of
from schedules.analysis.regions import const_value
from schedules.errors import ScheduleError, StaleHandleError, schedule_error
from schedules.primitives._tree import replace
from schedules.primitives.reorder import reorder
from schedules.registry import primitive

__all__ = ["factorize_reduction", "ReductionBlockError", "RfLoopError", "RfAxisError"]


class ReductionBlockError(ScheduleError):
    """The loop does not hold exactly one reduction update block of the form
    `T[s] = T[s] op body` with an associative, commutative op."""


class RfLoopError(ScheduleError):
    """The loop is not a pure reduce loop of the block (it drives a spatial index, starts
    elsewhere than 0, or is not where the primitive needs it)."""


class RfAxisError(ScheduleError):
    """rf_axis is outside [0, rank of the reduced tensor]."""


_OPS: dict[type, str] = {Add: "sum", Mul: "prod", Max: "max", Min: "min", And: "all", Or: "any"}


def _identity(op: type, dtype: DType) -> Expr:
    """The reduce identity (what `__reduce_init` stores)."""
    if op is Add:
        return const(0, dtype)
    if op is Mul:
        return const(1, dtype)
    if op in (And, Or):
        return const(op is And, dtype)
    if dtype.is_float:
        return const(-math.inf if op is Max else math.inf, dtype)
    bits = dtype.bits - (0 if dtype.is_uint else 1)
    low = 0 if dtype.is_uint else -(1 << bits)
    return const(low if op is Max else (1 << bits) - 1, dtype)


@dataclass(frozen=True)
class _Reduction:
    block: ScheduleBlockRealize
    store: Store
    op: type
    body: Expr
    """The reduced term (the operand that is not `T[s]`)."""
    loops: list[For]
    """Loops enclosing the block, outer -> inner."""
    rf_pos: int


def _analyse(prim: str, func: LoweredFunc, loop: For, rf_axis: int) -> _Reduction:
    index = index_of(func)
    if not isinstance(loop, For) or not index.contains(loop):
        raise schedule_error(StaleHandleError, prim, "the rf loop is not a loop of the current function "
                             "(stale handle)", func)
    blocks = child_blocks(loop)
    if len(blocks) != 1:
        raise schedule_error(ReductionBlockError, prim,
                             f"loop '{loop.loop_var.name}' must contain exactly one "
                             f"schedule block, but contains {len(blocks)}", func, loop)
    block = blocks[0]
    red = _match_update(prim, func, block)
    loops = index.enclosing_loops(block)
    rf_pos = next(k for k, lp in enumerate(loops) if lp is loop)
    _check_pure_reduce_loop(prim, func, block, loop)
    if not 0 <= rf_axis <= len(red[0].indices):
        raise schedule_error(RfAxisError, prim, f"rf_axis must be in [0, {len(red[0].indices)}] for tensor "
                             f"'{red[0].tensor.name}', but is {rf_axis}", func, block)
    return _Reduction(block, red[0], red[1], red[2], loops, rf_pos)


def _match_update(prim: str, func: LoweredFunc, block: ScheduleBlockRealize) -> tuple[Store, type, Expr]:
    stores = block_stores(block)
    store = stores[0] if len(stores) == 1 and block.schedule_block.body is stores[0] else None
    value = store.value if store is not None else None
    if store is not None and type(value) in _OPS:
        own = Load(store.tensor, store.indices)
        for mine, other in ((value.a, value.b), (value.b, value.a)):  # type: ignore[union-attr]
            if mine == own and not _reads_buffer(other, store.tensor):
                reduce_vars = {v for v in block.schedule_block.iter_vars if v.is_reduce_axis}
                if reduce_vars and not any(isinstance(n, Var) and n in reduce_vars for i in store.indices
                                           for n in walk(i)):
                    return store, type(value), other
    raise schedule_error(ReductionBlockError, prim, f"block '{block.name}' must be a reduction update "
                         "'T[s] = T[s] op body' (op one of + * max min and or, reduce iter vars not in s)",
                         func, block)


def _reads_buffer(e: Expr, tensor: Tensor) -> bool:
    return any(isinstance(n, Load) and n.tensor.buffer.name == tensor.buffer.name for n in walk(e))


def _check_pure_reduce_loop(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, loop: For) -> None:
    var = loop.loop_var
    spatial_uses = [v.name for v, e in zip(block.schedule_block.iter_vars, block.iter_values)
                    if not v.is_reduce_axis and any(n == var for n in walk(e) if isinstance(n, Var))]
    reduce_uses = [v.name for v, e in zip(block.schedule_block.iter_vars, block.iter_values)
                   if v.is_reduce_axis and any(n == var for n in walk(e) if isinstance(n, Var))]
    if spatial_uses or not reduce_uses:
        detail = f"it drives spatial iter var(s) {', '.join(spatial_uses)}" if spatial_uses \
            else "no reduce iter var uses it"
        raise schedule_error(RfLoopError, prim, f"loop '{var.name}' must be a pure reduce loop of block "
                             f"'{block.name}', but {detail}", func, loop)
    if const_value(loop.min) != 0:
        raise schedule_error(RfLoopError, prim, f"loop '{var.name}' must start at 0, but starts at "
                             f"{print_ir(loop.min)}", func, loop)


def _base(name: str) -> str:
    """`i0_12` -> `i0` (fresh copies of iter vars are numbered from the base name)."""
    return re.sub(r"(_\d+)+$", "", name) or name


def _fresh(var: Var, reduce: bool | None = None) -> Var:
    return dataclasses.replace(var, name=unique_name(_base(var.name)),
                               is_reduce_axis=var.is_reduce_axis if reduce is None else reduce)


def _insert(seq: tuple[Expr, ...], pos: int, item: Expr) -> tuple[Expr, ...]:
    return seq[:pos] + (item,) + seq[pos:]


def _rf_tensor(func: LoweredFunc, red: _Reduction, loop: For, rf_axis: int, hint: str) -> Tensor:
    t = red.store.tensor
    shape = _insert(t.shape, rf_axis, loop.extent)
    return make_tensor(_fresh_tensor_name(func, hint), shape, t.dtype)


def _fresh_tensor_name(func: LoweredFunc, hint: str) -> str:
    """`hint` through the name generator (`B_rf`, then `B_rf_0` when the reduction is factored
    again), skipping names whose buffer the function already has."""
    taken = ({b.name for b in func.temp_bufs}
             | {a.tensor.buffer.name for a in func.args if a.tensor is not None})
    taken |= {n.tensor.buffer.name for n in walk(func.body) if isinstance(n, (Load, Store))}
    name = unique_name(hint)
    while f"_{name}" in taken:
        name = unique_name(hint)
    return name


def _rf_blocks(red: _Reduction, rf: Tensor, rf_axis: int, rf_value: Expr) -> tuple[ScheduleBlockRealize,
                                                                                    ScheduleBlockRealize]:
    """The init and update blocks of the partial reduction; `rf_value` indexes the rf dim."""
    block = red.block.schedule_block
    spatial = [(v, e) for v, e in zip(block.iter_vars, red.block.iter_values) if not v.is_reduce_axis]
    idt = rf_value.dtype
    rf_var = Var(unique_name(f"i{len(red.store.indices)}"), idt)
    # init: fresh spatial iter vars + the rf var.
    init_vars = [_fresh(v) for v, _ in spatial]
    init_map = {v: nv for (v, _), nv in zip(spatial, init_vars)}
    init_idx = _insert(tuple(substitute(i, init_map) for i in red.store.indices), rf_axis, rf_var)
    init_view = Tensor(f"{rf.name}__reduce_init", rf.shape, rf.dtype, rf.buffer)
    init = ScheduleBlockRealize(tuple(e for _, e in spatial) + (rf_value,), ScheduleBlock(
        init_view.name, tuple(init_vars) + (rf_var,),
        Store(init_view, _identity(red.op, rf.dtype), init_idx)))
    # update: fresh copies of every iter var + a fresh rf var.
    upd_vars = [_fresh(v) for v in block.iter_vars]
    upd_map = dict(zip(block.iter_vars, upd_vars))
    upd_rf = Var(unique_name(f"i{len(red.store.indices)}"), idt)
    upd_idx = _insert(tuple(substitute(i, upd_map) for i in red.store.indices), rf_axis, upd_rf)
    value = red.op(Load(rf, upd_idx), substitute(red.body, upd_map))
    update = ScheduleBlockRealize(red.block.iter_values + (rf_value,), ScheduleBlock(
        rf.name, tuple(upd_vars) + (upd_rf,), Store(rf, value, upd_idx)))
    return init, update


def _write_back(red: _Reduction, rf: Tensor, rf_axis: int, rf_value: Expr) -> ScheduleBlockRealize:
    """`T[s] = T[s] op rf[s, r]` with r a reduce iter var bound to `rf_value` (keeps T's handle)."""
    block = red.block.schedule_block
    spatial = [(v, e) for v, e in zip(block.iter_vars, red.block.iter_values) if not v.is_reduce_axis]
    new_vars = [_fresh(v) for v, _ in spatial]
    mapping = {v: nv for (v, _), nv in zip(spatial, new_vars)}
    r = Var(unique_name(f"i{len(red.store.indices)}"), rf_value.dtype, is_reduce_axis=True)
    idx = tuple(substitute(i, mapping) for i in red.store.indices)
    t = red.store.tensor
    value = red.op(Load(t, idx), Load(rf, _insert(idx, rf_axis, r)))
    new_block = dataclasses.replace(block, iter_vars=tuple(new_vars) + (r,), body=Store(t, value, idx),
                                    read_buffers=(), write_buffers=())
    return dataclasses.replace(red.block, iter_values=tuple(e for _, e in spatial) + (rf_value,),
                               schedule_block=new_block)


def _add_temp(func: LoweredFunc, tensor: Tensor) -> LoweredFunc:
    return dataclasses.replace(func, temp_bufs=func.temp_bufs + (tensor.buffer,))


@primitive
def factorize_reduction(func: LoweredFunc, loop: For, rf_axis: int) -> tuple[LoweredFunc, Tensor]:
    """Two-step reduction over the pure reduce loop `loop` (see the module docstring).

    Returns the new function and the partial-result tensor `<T>_rf`.

    Raises:
        ReductionBlockError, RfLoopError, RfAxisError, StaleHandleError.
    """
    prim = "factorize_reduction"
    red = _analyse(prim, func, loop, rf_axis)
    drivers = [lp for lp in red.loops[:red.rf_pos] if _drives_reduction(red.block, lp)]
    if drivers:
        func, loop = _hoist_rf_loop(prim, func, loop, drivers)
        red = _analyse(prim, func, loop, rf_axis)
    spatial_inner = _spatial_loops_inside(prim, func, red)
    rf = _rf_tensor(func, red, loop, rf_axis, f"{red.store.tensor.name}_rf")
    init, update = _rf_blocks(red, rf, rf_axis, loop.loop_var)
    write_back = _write_back(red, rf, rf_axis, loop.loop_var)
    body = replace(loop.body, red.block, update)
    new_loop = dataclasses.replace(loop, body=dataclasses.replace(
        body, stmts=(_wrap(init, spatial_inner),) + body.stmts + (_wrap(write_back, spatial_inner),)))
    return _add_temp(replace(func, loop, new_loop), rf), rf


def _spatial_loops_inside(prim: str, func: LoweredFunc, red: _Reduction) -> list[For]:
    """The loops between the rf loop and the block that drive spatial iter vars (the rf loop
    outside the spatial loops, e.g. after `reorder(k, i)`): the init and write-back blocks
    placed directly under the rf loop need their own copies of them."""
    inner = red.loops[red.rf_pos + 1:]
    spatial = [lp for lp in inner if _drives(red.block, lp, reduce=False)]
    mixed = [lp for lp in spatial if _drives(red.block, lp, reduce=True)]
    if mixed:
        raise schedule_error(RfLoopError, prim,
                             f"loop '{mixed[0].loop_var.name}' inside the rf loop drives both "
                             "spatial and reduce iter vars (a fused loop); the partial results cannot be "
                             "initialised and written back per spatial point", func, mixed[0])
    return spatial


def _wrap(block: ScheduleBlockRealize, loops: list[For]) -> Stmt:
    """`block` inside fresh copies of `loops` (outer -> inner), its iter values renamed to them."""
    mapping = {lp.loop_var: Var(unique_name(_base(lp.loop_var.name)), lp.loop_var.dtype) for lp in loops}
    stmt: Stmt = dataclasses.replace(block,
                                     iter_values=tuple(substitute(e, mapping) for e in block.iter_values))
    for lp in reversed(loops):
        stmt = For(mapping[lp.loop_var], substitute(lp.min, mapping), substitute(lp.extent, mapping),
                   Block((stmt,)), lp.for_type, lp.bind_offset, lp.vectorize_factor)  # a new loop: a new uid
    return stmt


def _drives(block: ScheduleBlockRealize, loop: For, reduce: bool) -> bool:
    """Whether `loop`'s var appears in the value of a reduce (`reduce`) or spatial iter var."""
    return any(isinstance(n, Var) and n == loop.loop_var
               for v,
               e in zip(block.schedule_block.iter_vars, block.iter_values) if v.is_reduce_axis == reduce
               for n in walk(e))


def _drives_reduction(block: ScheduleBlockRealize, loop: For) -> bool:
    return _drives(block, loop, reduce=True)


def _hoist_rf_loop(prim: str, func: LoweredFunc, loop: For, drivers: list[For]) -> tuple[LoweredFunc, For]:
    """Move `loop` above the reduce loops `drivers` (outer -> inner) that enclose it, as TVM's
    rfactor on an inner loop indexes the partial results by it: a reorder, whose checks
    decide legality (the accumulation's order is free; anything else must not move)."""
    try:
        moved = reorder(func, [loop, *drivers])
    except ScheduleError as exc:
        raise schedule_error(RfLoopError, prim, f"loop '{loop.loop_var.name}' is inside loop(s) "
                             f"{', '.join(d.loop_var.name for d in drivers)} that also drive the reduction, "
                             "and "
                             f"it cannot be moved above them: {exc.message}", func, loop) from exc
    return moved, index_of(moved).by_uid[loop.uid]  # type: ignore[return-value]
