"""compute_at, simple_compute_at, reverse_compute_at: move a block under another nest's loop.

* `simple_compute_at(func, block, loop)` (CINN `SimpleComputeAt`, what the group tactics use for
  loop fusion): the loops from the root down to `loop` are matched 1:1 with the block's outer
  loops (extents proved equal), the block's loop vars are replaced by the target's, and the block
  (with its remaining inner loops and any guards around it) goes to the end of `loop`'s body when
  it came after the target nest, to the start when it came before.
* `compute_at(func, block, loop, keep_unit_loops=False)` (CINN `ComputeAt`): the producer `block`
  is recomputed at the start of each iteration of `loop`, over the region of its tensor that the
  consumers inside `loop` read in that iteration (new loops `ax0, ax1, ...`, attr
  `compute_at_extra_var`).
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
(`cinn_py.analysis.dependences`, `_isl_ordered`) decides exactly for quasi-affine accesses.
compute_at's region comes from interval bounds over the inner loops, and its bounds guard is
dropped only when syntactically or islpy-provably (`is_always_true`) redundant. The reader and
input-clobbering rules are syntactic (by buffer) and conservative.
"""

from __future__ import annotations

import dataclasses

from cinn_py import ir
from cinn_py.ir import Block, Expr, For, IfThenElse, LoweredFunc, ScheduleBlockRealize, Stmt, Var
from schedules.analysis.dependence import (
    _equal, argument_buffers, buffer_conflicts, is_injective, readers_of, same_iteration,
)
from schedules.analysis.loops import StmtIndex, all_blocks, block_stores, is_ancestor
from schedules.analysis.regions import (
    accesses, block_buffers_read, block_buffers_written, const_value, index_bounds, int_like, loop_ranges,
    simplify_index,
)
from schedules.errors import (
    IllegalDependenceError, LoopNotFoundError, ScheduleError, StaleHandleError, schedule_error,
)
from schedules.primitives._tree import insert_in_loop, program_order, remove_stmt

__all__ = [
    "simple_compute_at", "compute_at", "reverse_compute_at", "LoopMismatchError", "ComputeAtBlockError",
    "RegionError",
]


class LoopMismatchError(ScheduleError):
    """simple_compute_at: the target's loops do not match the block's outer loops 1:1."""


class ComputeAtBlockError(ScheduleError):
    """compute_at: the block is not a pure producer (single Store at its iter vars, no reduction)."""


class RegionError(ScheduleError):
    """compute_at / reverse_compute_at: the region to compute cannot be bounded or derived, a
    consumer is outside the loop, or the consumer reads nothing the loop produces."""


def _resolve(prim: str, func: LoweredFunc, block: ScheduleBlockRealize, loop: For) -> StmtIndex:
    index = StmtIndex(func)
    if not isinstance(block, ScheduleBlockRealize) or not index.contains(block) or not block.iter_values:
        raise schedule_error(StaleHandleError, prim, f"block '{getattr(block, 'name', block)}' is not a block of "
                             "the current function (stale handle)", func)
    if not isinstance(loop, For) or not index.contains(loop):
        raise schedule_error(StaleHandleError, prim, "the target loop is not a loop of the current function "
                             "(stale handle)", func)
    if is_ancestor(loop, block):
        raise schedule_error(LoopNotFoundError, prim, f"loop '{loop.loop_var.name}' must not enclose block "
                             f"'{block.name}', but it does", func, loop, block)
    return index


def _moved_stmt(index: StmtIndex, block: ScheduleBlockRealize, keep_from: int,
                mapping: dict[Var, Expr]) -> Stmt:
    """The block with its loops below `keep_from` and every guard around it, rebuilt (new loops)
    with `mapping` applied; loops above `keep_from` are dropped."""
    loops_seen = 0
    wrappers: list[Stmt] = []
    for anc in index.ancestors(block):
        if isinstance(anc, For):
            loops_seen += 1
            if loops_seen > keep_from:
                wrappers.append(anc)
        elif isinstance(anc, IfThenElse):
            wrappers.append(anc)
    stmt: Stmt = block
    for wrap in reversed(wrappers):
        if isinstance(wrap, For):
            stmt = For(wrap.loop_var, wrap.min, wrap.extent, Block((stmt,)), wrap.for_type, wrap.bind_offset,
                       wrap.vectorize_factor)
        else:
            stmt = IfThenElse(wrap.condition, Block((stmt,)))  # type: ignore[union-attr]
    return ir.substitute(stmt, mapping)


def _check_order(prim: str, old: LoweredFunc, new: LoweredFunc, moved_old: ScheduleBlockRealize,
                 moved_new: ScheduleBlockRealize, covered: frozenset[str] = frozenset()) -> None:
    """Every conflicting access pair keeps its order (see the module docstring). For buffers in
    `covered` (the producer's output under compute_at, whose per-iteration region is built to
    cover the reads) only the statement order is checked."""
    pos_old, pos_new = program_order(old), program_order(new)
    index_new = StmtIndex(new)
    b_loops = index_new.enclosing_loops(moved_new)
    for other in all_blocks(new):
        if other is moved_new:
            continue
        pairs = buffer_conflicts(moved_new, other)
        if not pairs:
            continue
        other_old = _same_block(old, other)
        before_old = other_old is not None and pos_old[id(other_old)] < pos_old[id(moved_old)]
        before_new = pos_new[id(other)] < pos_new[id(moved_new)]
        o_loops = index_new.enclosing_loops(other)
        shared = [a for a, b in zip(b_loops, o_loops) if a is b]
        ok = before_old == before_new and (not shared or all(
            x.buffer in covered or same_iteration(x, y, shared, b_loops, o_loops, {}) for x, y in pairs))
        if not ok:
            buf = pairs[0][0].tensor.name
            raise schedule_error(IllegalDependenceError, prim, f"moving '{moved_old.name}' would reorder its "
                                 f"accesses to '{buf}' with block '{other.name}' (expected every dependent pair "
                                 "in the same iteration of the shared loops, in the original order)",
                                 old, moved_old)


def _same_block(func: LoweredFunc, block: ScheduleBlockRealize) -> ScheduleBlockRealize | None:
    return next((b for b in all_blocks(func) if b.uid == block.uid), None)


# ----------------------------------------------------------------------------------------------
# simple_compute_at
# ----------------------------------------------------------------------------------------------
def simple_compute_at(func: LoweredFunc, block: ScheduleBlockRealize, loop: For) -> LoweredFunc:
    """Fuse `block` into the nest of `loop` by 1:1 loop matching (see the module docstring).

    Raises:
        LoopMismatchError, IllegalDependenceError, LoopNotFoundError, StaleHandleError.
    """
    prim = "simple_compute_at"
    index = _resolve(prim, func, block, loop)
    target = index.enclosing_loops(loop) + [loop]
    own = index.enclosing_loops(block)
    if len(own) < len(target):
        raise schedule_error(LoopMismatchError, prim, f"block '{block.name}' must have at least {len(target)} "
                             f"loops to match, but has {len(own)}", func, block, loop)
    for t, b in zip(target, own):
        if not (_equal(t.min, b.min) and _equal(t.extent, b.extent)):
            raise schedule_error(LoopMismatchError, prim, f"extent of loop '{b.loop_var.name}' should equal that "
                                 f"of '{t.loop_var.name}': expected {ir.print_ir(t.extent)}, got "
                                 f"{ir.print_ir(b.extent)}", func, b, t)
    mapping = {b.loop_var: t.loop_var for t, b in zip(target, own) if b.loop_var != t.loop_var}
    moved = _moved_stmt(index, block, len(target), mapping)
    new_block = next(s for s in _stmts(moved) if isinstance(s, ScheduleBlockRealize))
    after = program_order(func)[id(block)] > program_order(func)[id(loop)]
    new = insert_in_loop(remove_stmt(func, block), _current(remove_stmt(func, block), loop), moved, at_end=after)
    _check_order_exact(prim, func, new, block, new_block)
    return new


def _check_order_exact(prim: str, old: LoweredFunc, new: LoweredFunc, moved_old: ScheduleBlockRealize,
                       moved_new: ScheduleBlockRealize, covered: frozenset[str] = frozenset()) -> None:
    """`_check_order` (syntactic same-iteration test); where it fails, the buffers islpy proves
    dependence-free in the right order (`_isl_ordered`) are accepted and the test is re-run."""
    try:
        _check_order(prim, old, new, moved_old, moved_new, covered)
    except IllegalDependenceError:
        proven = _isl_ordered(old, new, moved_old, moved_new)
        if not proven:
            raise
        _check_order(prim, old, new, moved_old, moved_new, covered | proven)


def _stmts(stmt: Stmt) -> list[Stmt]:
    return StmtIndex(stmt).order


def _current(func: LoweredFunc, loop: For) -> For:
    """`loop` as rebuilt in `func` (same uid)."""
    found = StmtIndex(func).by_uid.get(loop.uid)
    assert isinstance(found, For)  # the removal never drops the target loop (it is not an ancestor)
    return found


# ----------------------------------------------------------------------------------------------
# compute_at
# ----------------------------------------------------------------------------------------------
def compute_at(func: LoweredFunc, block: ScheduleBlockRealize, loop: For,
               keep_unit_loops: bool = False) -> LoweredFunc:
    """Recompute the producer `block` inside `loop` over the region its consumers there need.

    Raises:
        ComputeAtBlockError, RegionError, IllegalDependenceError, LoopNotFoundError,
        StaleHandleError.
    """
    prim = "compute_at"
    index = _resolve(prim, func, block, loop)
    store = _pure_store(prim, func, block)
    tensor = store.tensor
    readers = readers_of(func, tensor.buffer.name)
    outside = [r for r in readers if not is_ancestor(loop, r)]
    if outside or tensor.buffer.name in argument_buffers(func):
        why = f"block(s) {', '.join(r.name for r in outside)} outside it read" if outside else \
            "it is a function argument, whose every element is observable; compute_at would write"
        raise schedule_error(RegionError, prim, f"every reader of '{tensor.name}' must be inside loop "
                             f"'{loop.loop_var.name}', but {why} '{tensor.name}'", func, loop, *outside)
    _check_inputs_stable(prim, func, block, loop, readers)
    region = _required_region(prim, func, index, loop, readers, tensor)
    new_block, extra = _recompute_block(block, store, region, keep_unit_loops)
    stmt: Stmt = new_block
    guard = _region_guard(new_block, region, tensor.shape, index.enclosing_loops(loop) + [loop])
    if guard is not None:
        stmt = IfThenElse(guard, Block((stmt,)))
    for var, extent in reversed(extra):
        stmt = For(var, int_like(0, extent), extent, Block((stmt,)))
    removed = remove_stmt(func, block)
    new = insert_in_loop(removed, _current(removed, loop), stmt, at_end=False)
    _check_order_exact(prim, func, new, block, _same_block(new, new_block) or new_block,
                       frozenset({tensor.buffer.name}))
    return new


def _pure_store(prim: str, func: LoweredFunc, block: ScheduleBlockRealize) -> ir.Store:
    stores = block_stores(block)
    iter_vars = block.schedule_block.iter_vars
    store = stores[0] if len(stores) == 1 and block.schedule_block.body is stores[0] else None
    if store is None or any(v.is_reduce_axis for v in iter_vars) \
            or store.tensor.buffer.name in block_buffers_read(block) \
            or tuple(store.indices) != tuple(iter_vars):
        raise schedule_error(ComputeAtBlockError, prim, f"block '{block.name}' must be a single Store "
                             "'T[v0, v1, ...] = f(...)' at its own iter vars, without reduction", func, block)
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
                     readers: list[ScheduleBlockRealize], tensor: ir.Tensor) -> Region:
    """Per dimension (lo, hi) inclusive of `tensor` read in one iteration of `loop`."""
    region: list[tuple[Expr, Expr] | None] = [None] * len(tensor.shape)
    for reader in readers:
        loops = index.enclosing_loops(reader)
        inner = loops[next(k for k, lp in enumerate(loops) if lp is loop) + 1:]
        ranges = loop_ranges(inner)
        binding = dict(zip(reader.schedule_block.iter_vars, reader.iter_values))
        for load in (n for n in ir.walk(reader.schedule_block.body) if isinstance(n, ir.Load)):
            if load.tensor.buffer.name != tensor.buffer.name:
                continue
            for k, idx in enumerate(load.indices):
                bounds = index_bounds(ir.substitute(idx, binding), ranges)
                if bounds is None:
                    raise schedule_error(RegionError, prim, f"the index {ir.print_ir(idx)} of '{tensor.name}' in "
                                         f"'{reader.name}' cannot be bounded over the loops inside "
                                         f"'{loop.loop_var.name}'", func, reader)
                region[k] = bounds if region[k] is None else _union(region[k], bounds)  # type: ignore[arg-type]
    return [r for r in region if r is not None]


def _union(a: tuple[Expr, Expr], b: tuple[Expr, Expr]) -> tuple[Expr, Expr]:
    lo = a[0] if _equal(a[0], b[0]) else simplify_index(ir.Min(a[0], b[0]))
    hi = a[1] if _equal(a[1], b[1]) else simplify_index(ir.Max(a[1], b[1]))
    return lo, hi


def _recompute_block(block: ScheduleBlockRealize, store: ir.Store, region: Region,
                     keep_unit_loops: bool) -> tuple[ScheduleBlockRealize, list[tuple[Var, Expr]]]:
    values: list[Expr] = []
    extra: list[tuple[Var, Expr]] = []
    idt = block.iter_values[0].dtype
    for lo, hi in region:
        extent = simplify_index(ir.Add(ir.Sub(hi, lo), int_like(1, hi)))
        if const_value(extent) == 1 and not keep_unit_loops:
            values.append(lo)
            continue
        var = Var(f"ax{len(extra)}", idt)
        extra.append((var, extent))
        values.append(var if const_value(lo) == 0 else simplify_index(ir.Add(lo, var)))
    names = ",".join(v.name for v, _ in extra)
    attrs = tuple(sorted(dict(block.schedule_block.attrs, compute_at_extra_var=names).items()))
    new_sb = dataclasses.replace(block.schedule_block, attrs=attrs)
    return dataclasses.replace(block, iter_values=tuple(values), schedule_block=new_sb), extra


def _region_guard(block: ScheduleBlockRealize, region: Region, shape: tuple[Expr, ...],
                  outer: list[For]) -> Expr | None:
    """`v_k < shape_k` for each dimension where the region may leave the tensor (interval bounds
    over-approximate), None when the whole region is provably inside. The region is in the vars
    of `outer` (the target loop and the loops around it): syntactic check first, then islpy."""
    cond: Expr | None = None
    for (_, hi), dim, value in zip(region, shape, block.iter_values):
        if _within(hi, dim) or _always_below(hi, dim, outer):
            continue
        term = ir.LT(value, dim)
        cond = term if cond is None else ir.And(cond, term)
    return cond


def _always_below(hi: Expr, dim: Expr, outer: list[For]) -> bool:
    """`hi < dim` for every iteration of the `outer` loops (exact for affine bounds)."""
    from cinn_py.analysis import is_always_true  # noqa: PLC0415 (islpy is heavy)

    return is_always_true(ir.LT(hi, dim), loops=outer)


def _within(hi: Expr, dim: Expr) -> bool:
    value = const_value(simplify_index(ir.Sub(dim, hi)))
    if value is not None:
        return value >= 1
    return _equal(hi, simplify_index(ir.Sub(dim, int_like(1, dim))))


# ----------------------------------------------------------------------------------------------
# reverse_compute_at
# ----------------------------------------------------------------------------------------------
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
    index = _resolve(prim, func, block, loop)
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
    values, extra = _consumer_values(block, domain, produced, keep_unit_loops, loop.loop_var.dtype)
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
    new = insert_in_loop(removed, _current(removed, loop), stmt, at_end=True)
    moved = _same_block(new, new_block) or new_block
    _check_order(prim, func, new, block, moved, _isl_ordered(func, new, block, moved))
    return new


def _isl_ordered(old: LoweredFunc, new: LoweredFunc, moved_old: ScheduleBlockRealize,
                 moved_new: ScheduleBlockRealize) -> frozenset[str]:
    """Buffers on which islpy proves that no instance of the moved block now runs before a
    conflicting instance of a block that ran entirely before it (or after one that ran entirely
    after it). The syntactic same-iteration test cannot see that `B[i*3 + ax0]` and
    `B[i*3 + i_0]` meet in the same iteration of `i`; the polyhedral check does."""
    from cinn_py.analysis import AnalysisError, dependences  # noqa: PLC0415 (islpy is heavy)

    pos = program_order(old)
    old_loops = set(map(id, StmtIndex(old).enclosing_loops(moved_old)))
    index_old = StmtIndex(old)
    proven: set[str] = set()
    refuted: set[str] = set()
    for other in all_blocks(new):
        pairs = buffer_conflicts(moved_new, other) if other is not moved_new else []
        buffers = {x.buffer for x, _ in pairs}
        other_old = _same_block(old, other)
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
        mentioned = {n for n in ir.walk(value) if isinstance(n, Var) and n in by_var}
        if not mentioned:
            continue
        if not isinstance(value, Var) or value in used:
            raise schedule_error(RegionError, prim, f"iter var '{var.name}' of block '{block.name}' is "
                                 f"bound to {ir.print_ir(value)}; expected a loop var of its own nest, each "
                                 "used once (apply reverse_compute_at before splitting or fusing the "
                                 "consumer)", func, block)
        used.add(value)
        lp = by_var[value]
        domain[var] = (lp.min, simplify_index(ir.Sub(ir.Add(lp.min, lp.extent), int_like(1, lp.extent))))
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
                None if a is None or b is None else _union(a, b) for a, b in zip(old, bounds)]
    if not produced:
        raise schedule_error(RegionError, prim, f"block '{block.name}' reads nothing that the blocks under "
                             f"loop '{loop.loop_var.name}' write (expected a consumer of that loop's "
                             "producers)",
                             func, loop, block)
    return produced


def _consumer_values(block: ScheduleBlockRealize, domain: Domain,
                     produced: dict[str, list[tuple[Expr, Expr] | None]], keep_unit_loops: bool,
                     idt: ir.DType) -> tuple[list[Expr], list[tuple[Var, Expr]]]:
    """New iter values: produced-region ranges for iter vars that index a produced tensor
    directly, the full box range for the others; and the new loops `(var, extent)`."""
    ranges: dict[Var, tuple[Expr, Expr]] = {}
    for load in (n for n in ir.walk(block.schedule_block.body) if isinstance(n, ir.Load)):
        region = produced.get(load.tensor.buffer.name)
        for k, idx in enumerate(load.indices if region is not None else ()):
            if isinstance(idx, Var) and idx in domain and idx not in ranges and region[k] is not None:
                ranges[idx] = region[k]  # type: ignore[assignment]
    values: list[Expr] = []
    extra: list[tuple[Var, Expr]] = []
    for var, value in zip(block.schedule_block.iter_vars, block.iter_values):
        if var not in domain:
            values.append(value)
            continue
        lo, hi = ranges.get(var, domain[var])
        extent = simplify_index(ir.Add(ir.Sub(hi, lo), int_like(1, hi)))
        if const_value(extent) == 1 and not keep_unit_loops:
            values.append(lo)
            continue
        ax = Var(ir.unique_name(f"ax{len(extra)}"), idt)
        extra.append((ax, extent))
        values.append(ax if const_value(lo) == 0 else simplify_index(ir.Add(lo, ax)))
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
                                 f"{ir.print_ir(value)}, expected every value in "
                                 f"[{ir.print_ir(domain[var][0])}, {ir.print_ir(domain[var][1])}]",
                                 func, loop, block)
    # Unit loops take one value: fix them at their min so that equal coefficients of a unit
    # loop and another loop (`ax0 + i` under keep_unit_loops) do not hide injectivity.
    loops = target + [For(var, int_like(0, extent), extent, Block(())) for var, extent in extra]
    units = {lp.loop_var: lp.min for lp in loops if const_value(lp.extent) == 1}
    fixed = tuple(simplify_index(ir.substitute(v, units)) for v in values)
    if not is_injective(fixed, [lp for lp in loops if lp.loop_var not in units]):
        raise schedule_error(IllegalDependenceError, prim, f"under loop '{loop.loop_var.name}' block "
                             f"'{block.name}' would compute some instances more than once (its new iter "
                             f"values {', '.join(ir.print_ir(v) for v in values)} do not determine the "
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
        terms = [] if prove_ge(value, lo, ranges) else [ir.GE(value, lo)]
        if not prove_le(value, hi, ranges):
            terms.append(ir.LT(value, simplify_index(ir.Add(hi, int_like(1, hi)))))
        for term in terms:
            cond = term if cond is None else ir.And(cond, term)
    return cond
