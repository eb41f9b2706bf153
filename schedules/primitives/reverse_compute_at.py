"""reverse_compute_at (CINN `ReverseComputeAt`): compute a consumer under its producer's loop.

`reverse_compute_at(func, block, loop, keep_unit_loops=False)`: the consumer `block` is computed
at the end of each iteration of its producer's `loop`, over the instances whose reads of the
produced tensors fall in the region the blocks under `loop` write in that iteration (new loops
`ax0, ...`, attr `reverse_compute_at_extra_var`). The family's shared handle and order checks
are in `_move.py`; see `compute_at.py` for the legality rules common to the family.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import (
    Add, And, Block, DType, Expr, For, GE, IfThenElse, LT, Load, LoweredFunc, ScheduleBlockRealize, Stmt, Sub,
    Var, print_ir, substitute, unique_name, walk,
)
from cinn_py.symbolic.linear import is_injective, var_ranges
from schedules.analysis.loops import StmtIndex, all_blocks, is_ancestor
from schedules.analysis.regions import (
    accesses, block_buffers_read, const_value, index_bounds, int_like, loop_ranges, simplify_index,
)
from schedules.errors import IllegalDependenceError, LoopNotFoundError, schedule_error
from schedules.primitives._move import (
    RegionError, check_order, current_loop, fresh_loop_var, isl_ordered, names_in_scope, range_union,
    resolve_handles, same_block,
)
from schedules.primitives._tree import insert_in_loop, program_order, remove_stmt
from schedules.registry import primitive

__all__ = ["reverse_compute_at", "RegionError"]


@primitive
def reverse_compute_at(func: LoweredFunc, block: ScheduleBlockRealize, loop: For,
                       keep_unit_loops: bool = False) -> LoweredFunc:
    """Compute the consumer `block` at the end of each iteration of its producer's `loop`.

    Each iter var of `block` that indexes a tensor produced under `loop` (a load `T[.., v, ..]`)
    ranges over the region of that dimension the producers write in one iteration of `loop`;
    the others keep their full range. Legality: `block`'s instances must form a box (its iter
    values are its own loop vars, no guard), the new nest must compute each of them exactly once
    (the new iter values are injective in the loops down to `loop` and the new `ax` loops, and
    cover the box; a guard cuts what lies outside), and every dependent access pair with another
    block keeps its order, in the same iteration of the shared loops (so whatever the consumer
    reads there has been completely produced).

    Raises:
        RegionError, IllegalDependenceError, LoopNotFoundError, StaleHandleError.
    """
    prim = "reverse_compute_at"
    index = resolve_handles(prim, func, block, loop)
    if not isinstance(keep_unit_loops, bool):
        raise TypeError(f"{prim}: keep_unit_loops must be a bool, got {keep_unit_loops!r}")
    order = program_order(func)
    if order[id(block)] < order[id(loop)]:
        raise schedule_error(LoopNotFoundError, prim, f"block '{block.name}' must come after loop "
                             f"'{loop.loop_var.name}' (a consumer moves under its producer's loop), but it "
                             "comes before it; use compute_at to move a producer", func, loop, block)
    target = index.enclosing_loops(loop) + [loop]
    domain = _consumer_domain(prim, func, index, block, target)
    produced = _produced_regions(prim, func, index, block, loop)
    values, extra = _consumer_values(block, domain, produced, keep_unit_loops, loop.loop_var.dtype,
                                     names_in_scope(func, target))
    _check_coverage(prim, func, block, loop, target, domain, values, extra)
    names = ",".join(v.name for v, _ in extra)
    attrs = tuple(sorted(dict(block.schedule_block.attrs, reverse_compute_at_extra_var=names).items()))
    new_block = dataclasses.replace(block, iter_values=tuple(values),
                                    schedule_block=dataclasses.replace(block.schedule_block, attrs=attrs))
    stmt: Stmt = new_block
    guard = _domain_guard(target, extra, domain, values, block)
    if guard is not None:
        stmt = IfThenElse(guard, Block((stmt,)))
    for var, extent in reversed(extra):
        stmt = For(var, int_like(0, extent), extent, Block((stmt,)))
    removed = remove_stmt(func, block)
    new = insert_in_loop(removed, current_loop(removed, loop), stmt, at_end=True)
    moved = same_block(new, new_block) or new_block
    check_order(prim, func, new, block, moved, isl_ordered(func, new, block, moved))
    return new


Domain = dict[Var, tuple[Expr, Expr]]
"""iter var -> inclusive (lo, hi) of the iter vars bound to the consumer's own loops."""


def _consumer_domain(prim: str, func: LoweredFunc, index: StmtIndex, block: ScheduleBlockRealize,
                     target: list[For]) -> Domain:
    """The box of `block`'s instances over the loops it does not share with `target`: each
    such iter value must be one of those loops' vars (each used once, unused ones of extent 1),
    with no guard between them and the block."""
    own = index.enclosing_loops(block)
    shared = 0
    while shared < min(len(own), len(target)) and own[shared] is target[shared]:
        shared += 1
    private = own[shared:]
    by_var = {lp.loop_var: lp for lp in private}
    guards = [a for a in index.ancestors(block) if isinstance(a, IfThenElse)
              and (not private or is_ancestor(private[0], a))]
    domain: Domain = {}
    used: set[Var] = set()
    for var, value in zip(block.schedule_block.iter_vars, block.iter_values):
        mentioned = {n for n in walk(value) if isinstance(n, Var) and n in by_var}
        if not mentioned:
            continue
        if not isinstance(value, Var) or value in used:
            raise schedule_error(RegionError, prim, f"iter var '{var.name}' of block '{block.name}' is "
                                 f"bound to {print_ir(value)}; expected a loop var of its own nest, each "
                                 "used once (apply reverse_compute_at before splitting or fusing the "
                                 "consumer)", func, block)
        used.add(value)
        lp = by_var[value]
        domain[var] = (lp.min, simplify_index(Sub(Add(lp.min, lp.extent), int_like(1, lp.extent))))
    unused = [lp for lp in private if lp.loop_var not in used and const_value(lp.extent) != 1]
    if guards or unused:
        what = "a guard encloses it" if guards else \
            f"loop '{unused[0].loop_var.name}' is not bound to an iter var"
        raise schedule_error(RegionError, prim, f"the instances of block '{block.name}' must form a box "
                             f"over its own loops, but {what}", func, *(guards[:1] or unused[:1]), block)
    return domain


def _produced_regions(prim: str, func: LoweredFunc, index: StmtIndex, block: ScheduleBlockRealize,
                      loop: For) -> dict[str, list[tuple[Expr, Expr] | None]]:
    """buffer -> per dimension, the (lo, hi) written under one iteration of `loop` (None where
    it cannot be bounded) for every buffer `block` reads that a block under `loop` writes."""
    reads = block_buffers_read(block)
    produced: dict[str, list[tuple[Expr, Expr] | None]] = {}
    for producer in (b for b in all_blocks(func) if is_ancestor(loop, b)):
        loops = index.enclosing_loops(producer)
        ranges = loop_ranges(loops[next(k for k, lp in enumerate(loops) if lp is loop) + 1:])
        for acc in accesses(producer):
            if not acc.is_write or acc.buffer not in reads:
                continue
            bounds = [index_bounds(idx, ranges) for idx in acc.indices]
            old = produced.get(acc.buffer)
            produced[acc.buffer] = bounds if old is None else [
                None if a is None or b is None else range_union(a, b) for a, b in zip(old, bounds)]
    if not produced:
        raise schedule_error(RegionError, prim, f"block '{block.name}' reads nothing that the blocks under "
                             f"loop '{loop.loop_var.name}' write (expected a consumer of that loop's "
                             "producers)",
                             func, loop, block)
    return produced


def _consumer_values(block: ScheduleBlockRealize, domain: Domain,
                     produced: dict[str, list[tuple[Expr, Expr] | None]], keep_unit_loops: bool,
                     idt: DType, scope: set[str]) -> tuple[list[Expr], list[tuple[Var, Expr]]]:
    """New iter values: produced-region ranges for iter vars that index a produced tensor
    directly, the full box range for the others; and the new loops `(var, extent)`, named apart
    from `scope` (the target's loop vars, in which the ranges are written)."""
    taken = set(scope)
    ranges: dict[Var, tuple[Expr, Expr]] = {}
    for load in (n for n in walk(block.schedule_block.body) if isinstance(n, Load)):
        region = produced.get(load.tensor.buffer.name)
        if region is None:
            continue
        for k, idx in enumerate(load.indices):
            rng = region[k]
            if isinstance(idx, Var) and idx in domain and idx not in ranges and rng is not None:
                ranges[idx] = rng
    values: list[Expr] = []
    extra: list[tuple[Var, Expr]] = []
    for var, value in zip(block.schedule_block.iter_vars, block.iter_values):
        if var not in domain:
            values.append(value)
            continue
        lo, hi = ranges.get(var, domain[var])
        extent = simplify_index(Add(Sub(hi, lo), int_like(1, hi)))
        if const_value(extent) == 1 and not keep_unit_loops:
            values.append(lo)
            continue
        ax = fresh_loop_var(Var(unique_name(f"ax{len(extra)}"), idt), taken)
        extra.append((ax, extent))
        values.append(ax if const_value(lo) == 0 else simplify_index(Add(lo, ax)))
    return values, extra


def _ranges_of(target: list[For], extra: list[tuple[Var, Expr]]) -> dict[Var, tuple[Expr, Expr]]:
    ranges = {lp.loop_var: (lp.min, lp.extent) for lp in target}
    ranges.update({var: (int_like(0, extent), extent) for var, extent in extra})
    return ranges


def _check_coverage(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, loop: For, target: list[For],
                    domain: Domain, values: list[Expr], extra: list[tuple[Var, Expr]]) -> None:
    """The new nest computes every instance of the box exactly once (guards cut the rest)."""
    from cinn_py.symbolic import prove_ge, prove_le, symbolic_bounds  # noqa: PLC0415

    ranges = _ranges_of(target, extra)
    for var, value in zip(block.schedule_block.iter_vars, values):
        if var not in domain:
            continue
        lo, hi = symbolic_bounds(value, ranges)
        if lo is None or hi is None or not (prove_le(lo, domain[var][0]) and prove_ge(hi, domain[var][1])):
            raise schedule_error(RegionError, prim, f"the region produced under loop '{loop.loop_var.name}' "
                                 f"does not cover iter var '{var.name}' of block '{block.name}': it takes "
                                 f"{print_ir(value)}, expected every value in "
                                 f"[{print_ir(domain[var][0])}, {print_ir(domain[var][1])}]",
                                 func, loop, block)
    # Unit loops take one value: fix them at their min so that equal coefficients of a unit
    # loop and another loop (`ax0 + i` under keep_unit_loops) do not hide injectivity.
    loops = target + [For(var, int_like(0, extent), extent, Block(())) for var, extent in extra]
    units = {lp.loop_var: lp.min for lp in loops if const_value(lp.extent) == 1}
    fixed = tuple(simplify_index(substitute(v, units)) for v in values)
    if not is_injective(fixed, var_ranges(lp for lp in loops if lp.loop_var not in units)):
        raise schedule_error(IllegalDependenceError, prim, f"under loop '{loop.loop_var.name}' block "
                             f"'{block.name}' would compute some instances more than once (its new iter "
                             f"values {', '.join(print_ir(v) for v in values)} do not determine the "
                             "iteration of every enclosing loop); expected a loop whose iterations produce "
                             "disjoint parts of what it reads", func, loop, block)


def _domain_guard(target: list[For], extra: list[tuple[Var, Expr]], domain: Domain, values: list[Expr],
                  block: ScheduleBlockRealize) -> Expr | None:
    """`lo <= v` / `v <= hi` wherever the new range may leave the consumer's box."""
    from cinn_py.symbolic import prove_ge, prove_le  # noqa: PLC0415

    ranges = _ranges_of(target, extra)
    cond: Expr | None = None
    for var, value in zip(block.schedule_block.iter_vars, values):
        if var not in domain:
            continue
        lo, hi = domain[var]
        terms: list[Expr] = [] if prove_ge(value, lo, ranges) else [GE(value, lo)]
        if not prove_le(value, hi, ranges):
            terms.append(LT(value, simplify_index(Add(hi, int_like(1, hi)))))
        for term in terms:
            cond = term if cond is None else And(cond, term)
    return cond
