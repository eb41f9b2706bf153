"""What `compute_at` (`compute_at.py`) recomputes and where: the stage it moves (one pure block,
or a reduction's init and update blocks), the checks that its inputs are not written between
its old and new position, the region of its tensor the consumers under the target loop read
(per iteration), and the loops and guard that cover exactly that region.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import (
    Add, And, Block, DType, Expr, For, IfThenElse, LT, Load, LoweredFunc, ScheduleBlockRealize, Stmt, Store,
    Sub, Tensor, Var, print_ir, substitute, walk,
)
from schedules.analysis.arith import prove_equal
from schedules.analysis.loops import StmtIndex, all_blocks, block_stores, is_ancestor
from schedules.analysis.regions import (
    block_buffers_read, block_buffers_written, const_value, index_bounds, int_like, loop_ranges,
    simplify_index,
)
from schedules.errors import IllegalDependenceError, ScheduleError, schedule_error
from schedules.primitives._move import RegionError, fresh_loop_var, range_union
from schedules.primitives._tree import program_order


class ComputeAtBlockError(ScheduleError):
    """compute_at: the block is neither a pure producer (single Store at its iter vars) nor a
    reduction whose init block and reduce loops can move with it."""


@dataclasses.dataclass(frozen=True)
class _Stage:
    """What compute_at moves: one pure block, or a reduction's init and update blocks."""

    store: Store
    """The producer's store (the update's, for a reduction)."""
    init: ScheduleBlockRealize | None
    update: ScheduleBlockRealize
    spatial_loops: tuple[For, ...]
    """A reduction's loops around its init block (the update's outer loops)."""

    @property
    def blocks(self) -> list[ScheduleBlockRealize]:
        return [self.update] if self.init is None else [self.init, self.update]


def _stage(prim: str, func: LoweredFunc, index: StmtIndex, block: ScheduleBlockRealize) -> _Stage:
    if not any(v.is_reduce_axis for v in block.schedule_block.iter_vars):
        return _Stage(_pure_store(prim, func, block), None, block, ())
    return _reduction_stage(prim, func, index, block)


def _reduction_stage(prim: str, func: LoweredFunc, index: StmtIndex, block: ScheduleBlockRealize) -> _Stage:
    """The reduction `block` (`T[s] = T[s] op body`, s its spatial iter vars in order) with its
    init block (`T[s] = identity` over the same buffer, beside the reduce loops), where the
    loops around the init drive only the spatial iter vars, the loops below only reduce ones,
    and no guard sits above the reduce loops (the region guard replaces those)."""
    sb = block.schedule_block
    spatial = tuple(v for v in sb.iter_vars if not v.is_reduce_axis)
    stores = block_stores(block)
    store = stores[0] if len(stores) == 1 and sb.body is stores[0] else None

    def refuse(rule: str) -> ScheduleError:
        return schedule_error(ComputeAtBlockError, prim,
                              f"block '{block.name}' is a reduction; compute_at moves "
                              f"a reduction with its init block and reduce loops, which needs {rule}",
                              func, block)

    if store is None or tuple(store.indices) != spatial \
            or any(sb.iter_vars.index(v) != k for k, v in enumerate(spatial)):
        raise refuse("a single store 'T[s] = T[s] op ...' at its spatial iter vars, listed first")
    own = index.enclosing_loops(block)
    inits = [b for b in all_blocks(func) if b is not block
             and _inits(b, store.tensor.buffer.name, len(spatial))
             and all(lp is o for lp, o in zip(index.enclosing_loops(b), own))]
    if len(inits) != 1:
        raise refuse(f"exactly one init block writing '{store.tensor.buffer.name}' in its nest "
                     f"(found {len(inits)})")
    init = inits[0]
    spatial_loops = tuple(index.enclosing_loops(init))
    reduce_loops = own[len(spatial_loops):]
    spatial_vars = {lp.loop_var for lp in spatial_loops}
    values = block.iter_values[:len(spatial)]
    if not reduce_loops or list(init.iter_values) != list(values) \
            or any(_uses(e, {lp.loop_var for lp in reduce_loops}) for e in values) \
            or any(_uses(e, spatial_vars) for e in block.iter_values[len(spatial):]):
        raise refuse("its init at the update's spatial iter values, loops around the init driving only the "
                     "spatial iter vars and the loops below it only the reduce ones")
    if any(isinstance(a, IfThenElse) for a in index.ancestors(init)):
        raise refuse("no guard around its init block (compute_at adds the bounds guard of the region)")
    return _Stage(store, init, block, spatial_loops)


def _inits(block: ScheduleBlockRealize, buffer: str, rank: int) -> bool:
    stores = block_stores(block)
    sb = block.schedule_block
    return len(stores) == 1 and sb.body is stores[0] and stores[0].tensor.buffer.name == buffer \
        and len(sb.iter_vars) == rank and not any(v.is_reduce_axis for v in sb.iter_vars) \
        and tuple(stores[0].indices) == tuple(sb.iter_vars) and buffer not in block_buffers_read(block)


def _uses(e: Expr, names: set[Var]) -> bool:
    return any(isinstance(n, Var) and n in names for n in walk(e))


def _reduce_nest(index: StmtIndex, update: ScheduleBlockRealize, moved: ScheduleBlockRealize, keep_from: int,
                 taken: set[str]) -> Stmt:
    """`moved` (the update at its new iter values) inside copies of the update's reduce loops
    and the guards among them (renamed where `taken` binds the name)."""
    loops_seen = 0
    wrappers: list[Stmt] = []
    for anc in index.ancestors(update):
        if isinstance(anc, For):
            loops_seen += 1
            if loops_seen > keep_from:
                wrappers.append(anc)
        elif isinstance(anc, IfThenElse) and loops_seen > keep_from:
            wrappers.append(anc)
    stmt: Stmt = moved
    renames: dict[Var, Expr] = {}
    for wrap in wrappers:
        if isinstance(wrap, For):
            var = fresh_loop_var(wrap.loop_var, taken)
            if var != wrap.loop_var:
                renames[wrap.loop_var] = var
    for wrap in reversed(wrappers):
        if isinstance(wrap, For):
            var = renames.get(wrap.loop_var, wrap.loop_var)
            stmt = For(var, wrap.min, wrap.extent, Block((stmt,)), wrap.for_type,  # type: ignore[arg-type]
                       wrap.bind_offset, wrap.vectorize_factor)
        else:
            stmt = IfThenElse(wrap.condition, Block((stmt,)))  # type: ignore[union-attr]
    return substitute(stmt, renames)


def _pure_store(prim: str, func: LoweredFunc, block: ScheduleBlockRealize) -> Store:
    stores = block_stores(block)
    iter_vars = block.schedule_block.iter_vars
    store = stores[0] if len(stores) == 1 and block.schedule_block.body is stores[0] else None
    if store is None or any(v.is_reduce_axis for v in iter_vars) \
            or store.tensor.buffer.name in block_buffers_read(block) \
            or tuple(store.indices) != tuple(iter_vars):
        raise schedule_error(ComputeAtBlockError, prim, f"block '{block.name}' must be a single Store "
                             "'T[v0, v1, ...] = f(...)' at its own iter vars (or a reduction with its init "
                             "block)", func, block)
    return store


def _check_inputs_stable(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, loop: For,
                         readers: list[ScheduleBlockRealize]) -> None:
    """What the producer reads must not change between its old place and its recomputations."""
    reads = block_buffers_read(block)
    order = program_order(func)
    inside = [b for b in all_blocks(func) if is_ancestor(loop, b)]
    between = [b for b in all_blocks(func) if order[id(block)] < order[id(b)] < order[id(loop)]]
    for other in inside + between:
        clobbered = block_buffers_written(other) & reads
        if clobbered:
            raise schedule_error(IllegalDependenceError, prim, f"block '{other.name}' writes "
                                 f"{', '.join(sorted(clobbered))}, which '{block.name}' reads; recomputing "
                                 f"'{block.name}' inside loop '{loop.loop_var.name}' would see new values",
                                 func, other)


Region = list[tuple[Expr, Expr]]


def _required_region(prim: str, func: LoweredFunc, index: StmtIndex, loop: For,
                     readers: list[ScheduleBlockRealize], tensor: Tensor) -> Region:
    """Per dimension (lo, hi) inclusive of `tensor` read in one iteration of `loop`."""
    region: list[tuple[Expr, Expr] | None] = [None] * len(tensor.shape)
    for reader in readers:
        loops = index.enclosing_loops(reader)
        at = next(k for k, lp in enumerate(loops) if lp is loop) + 1
        ranges, known = loop_ranges(loops[at:]), loop_ranges(loops[:at])
        binding = dict(zip(reader.schedule_block.iter_vars, reader.iter_values))
        for load in (n for n in walk(reader.schedule_block.body) if isinstance(n, Load)):
            if load.tensor.buffer.name != tensor.buffer.name:
                continue
            for k, idx in enumerate(load.indices):
                bounds = index_bounds(substitute(idx, binding), ranges, known)
                if bounds is None:
                    raise schedule_error(RegionError, prim,
                                         f"the index {print_ir(idx)} of '{tensor.name}' in "
                                         f"'{reader.name}' cannot be bounded over the loops inside "
                                         f"'{loop.loop_var.name}'", func, reader)
                region[k] = bounds if region[k] is None else range_union(region[k], bounds)  # type: ignore[arg-type]
    return [r for r in region if r is not None]


def _region_loops(region: Region, keep_unit_loops: bool, taken: set[str],
                  idt: DType) -> tuple[list[Expr], list[tuple[Var, Expr]]]:
    """The producer's new spatial iter values over `region` and its new loops `ax0, ...`
    (renamed where `taken`, the target's loops, already binds the name: the region is in those
    vars; chosen names are added to `taken`)."""
    values: list[Expr] = []
    extra: list[tuple[Var, Expr]] = []
    for lo, hi in region:
        extent = simplify_index(Add(Sub(hi, lo), int_like(1, hi)))
        if const_value(extent) == 1 and not keep_unit_loops:
            values.append(lo)
            continue
        var = fresh_loop_var(Var(f"ax{len(extra)}", idt), taken)
        extra.append((var, extent))
        values.append(var if const_value(lo) == 0 else simplify_index(Add(lo, var)))
    return values, extra


def _at_region(block: ScheduleBlockRealize, values: list[Expr],
               extra: list[tuple[Var, Expr]]) -> ScheduleBlockRealize:
    """`block` with its spatial iter values (the first ones) set to `values`, marked with the
    `compute_at_extra_var` attr."""
    names = ",".join(v.name for v, _ in extra)
    attrs = tuple(sorted(dict(block.schedule_block.attrs, compute_at_extra_var=names).items()))
    new_sb = dataclasses.replace(block.schedule_block, attrs=attrs)
    iter_values = tuple(values) + block.iter_values[len(values):]
    return dataclasses.replace(block, iter_values=iter_values, schedule_block=new_sb)


def _region_guard(block: ScheduleBlockRealize, region: Region, shape: tuple[Expr, ...],
                  outer: list[For]) -> Expr | None:
    """`v_k < shape_k` for each dimension where the region may leave the tensor (interval bounds
    over-approximate), None when the whole region is provably inside. The region is in the vars
    of `outer` (the target loop and the loops around it): syntactic check first, then islpy."""
    cond: Expr | None = None
    for (_, hi), dim, value in zip(region, shape, block.iter_values):
        if _within(hi, dim) or _always_below(hi, dim, outer):
            continue
        term = LT(value, dim)
        cond = term if cond is None else And(cond, term)
    return cond


def _always_below(hi: Expr, dim: Expr, outer: list[For]) -> bool:
    """`hi < dim` for every iteration of the `outer` loops (exact for affine bounds)."""
    from cinn_py.analysis import is_always_true  # noqa: PLC0415 (islpy is heavy)

    return is_always_true(LT(hi, dim), loops=outer)


def _within(hi: Expr, dim: Expr) -> bool:
    value = const_value(simplify_index(Sub(dim, hi)))
    if value is not None:
        return value >= 1
    return prove_equal(hi, simplify_index(Sub(dim, int_like(1, dim))))
