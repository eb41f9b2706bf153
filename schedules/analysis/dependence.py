"""Dependences for the schedule primitives: producer/consumer queries and the same-iteration
criterion of the block-level primitives, and loop-carried dependences of the loop-level ones.

## Moving blocks (compute_at, simple_compute_at, reverse_compute_at, compute_inline)

Blocks depend on each other through buffers (a reduction `C` and its `C__reduce_init` share `_C`),
so every query keys accesses by buffer name.

Legality of moving a block (compute_at, simple_compute_at, reverse_compute_at) is decided with a
*same-iteration* argument: after the move the block shares loops L1..Lm with another block; if for
every buffer both touch (one of them writing) the accessed element determines the shared
iteration uniquely and identically for both (the two access index tuples are the same function of
the shared loop vars, use no other loop var, and that function is injective), then every pair of
dependent instances runs in the same shared iteration, where the original statement order is
kept. Injectivity is proved syntactically: `(e / d, e % d)` pairs recover `e`, and a mixed-radix
sum `c1*v1 + c2*v2 + ...` (each coefficient above the span of the smaller terms) recovers each
`v`. This decides the aligned, tiled nests of the seed (`sp / S2`, `sp % S2` with a symbolic
`S2`), which islpy cannot: division by a parameter is not quasi-affine.

## Loop-carried dependences (parallel, vectorize, bind, reorder)

A loop `L` carries a dependence when two different iterations of `L` (same outer iteration) touch
the same element of a buffer and at least one of them writes it. `loop_carries_dependence`
answers in two tiers:

1. *Fast syntactic path* (decides the common cases without islpy): every conflicting pair of
   accesses under `L` (two accesses to one buffer, one a write) has the same index tuple (as
   expressions of loop vars, after substituting block iter values and simplifying) and some
   component of that tuple (after recovering `e` from an `(e / d, e % d)` pair) is linear in `L`
   and the loops under it, `c*L + sum c_k v_k + rest`, with either `sum |c_k| (extent_k - 1) < c`
   (L is the most significant digit) or `c (extent_L - 1) < gcd(c_k)` (L fits under the others).
   Then the element determines `L`'s value and no dependence crosses iterations. This path also
   decides symbolic divisors (`sp / S2`, `sp % S2`), which are not quasi-affine.
2. *Exact path* (`cinn_py.analysis`, islpy) when a pair is left undecided: the per-access conflict
   relations of the blocks under `L`, restricted to equal outer iterations and different
   iterations of `L`, must be empty. Non-quasi-affine accesses are over-approximated there, so
   the answer errs towards "carried": the primitives reject rather than risk a race.

With `allow_accumulation`, a reduction update block's read-modify-write of its own accumulator
(`T[s] = T[s] op body`: the store and the loads at the store's indices) is not counted when `L`
drives only reduce iter vars of that block: every iteration of `L` adds into the same element,
and the order of an associative, commutative accumulation is free (reorder) or becomes a
cross-thread reduction (`bind(threadIdx.*)`, CINN's `ReplaceCrossThreadReduction`). Every other
conflict still counts. So after `factorize_reduction` the rf loop may be bound to `threadIdx.x`
(the rf blocks index `T_rf` by it, so each thread writes its own slot; the write-back only
accumulates), while a block that reads the reduction's output inside the loop keeps it illegal.

The index algebra (linear forms, `(e / d, e % d)` recovery, the mixed-radix injectivity rule)
is `cinn_py.symbolic.linear`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cinn_py.ir import (
    Evaluate, Expr, For, IfThenElse, Let, Load, LoweredFunc, ScheduleBlockRealize, Stmt, Store,
    Var, substitute,
    walk,
)
from cinn_py.symbolic.linear import determines, is_injective, var_ranges
from schedules.analysis.arith import prove_equal, simplify_index
from schedules.analysis.loops import all_blocks, collect_stmts, stmt_children
from cinn_py.symbolic.access import Access
from schedules.analysis.regions import accesses, block_buffers_read, block_buffers_written
from schedules.errors import IllegalDependenceError, schedule_error

__all__ = [
    "argument_buffers", "blocks_between", "buffer_conflicts", "check_permutation_legal",
    "consumers", "drives_only_reduce_vars", "is_reduce_loop", "loop_accesses", "loop_carries_dependence",
    "producers", "readers_of", "same_iteration", "writers_of",
]


def writers_of(func: LoweredFunc, buffer: str) -> list[ScheduleBlockRealize]:
    return [b for b in all_blocks(func) if buffer in block_buffers_written(b)]


def readers_of(func: LoweredFunc, buffer: str) -> list[ScheduleBlockRealize]:
    return [b for b in all_blocks(func) if buffer in block_buffers_read(b)]


def argument_buffers(func: LoweredFunc) -> set[str]:
    """Buffers of the function's tensor arguments (their final contents are observable)."""
    return {a.tensor.buffer.name for a in func.args if a.tensor is not None}


def producers(func: LoweredFunc, block: ScheduleBlockRealize) -> list[ScheduleBlockRealize]:
    """Blocks before `block` that write a buffer `block` reads (program order)."""
    blocks = all_blocks(func)
    pos = _position(blocks, block)
    reads = block_buffers_read(block)
    return [b for b in blocks[:pos] if block_buffers_written(b) & reads]


def consumers(func: LoweredFunc, block: ScheduleBlockRealize) -> list[ScheduleBlockRealize]:
    """Blocks after `block` that read a buffer `block` writes (program order)."""
    blocks = all_blocks(func)
    pos = _position(blocks, block)
    writes = block_buffers_written(block)
    return [b for b in blocks[pos + 1:] if block_buffers_read(b) & writes]


def blocks_between(func: LoweredFunc, first: ScheduleBlockRealize,
                   second: ScheduleBlockRealize) -> list[ScheduleBlockRealize]:
    """Blocks strictly between two blocks in program order (in either argument order)."""
    blocks = all_blocks(func)
    a, b = sorted((_position(blocks, first), _position(blocks, second)))
    return blocks[a + 1:b]


def _position(blocks: list[ScheduleBlockRealize], block: ScheduleBlockRealize) -> int:
    for k, b in enumerate(blocks):
        if b is block:
            return k
    raise ValueError(f"block '{block.name}' is not in the function")


def buffer_conflicts(a: ScheduleBlockRealize, b: ScheduleBlockRealize) -> list[tuple[Access, Access]]:
    """Pairs of accesses of `a` and `b` to one buffer where at least one writes."""
    acc_b = accesses(b)
    return [(x, y) for x in accesses(a) for y in acc_b
            if x.buffer == y.buffer and (x.is_write or y.is_write)]


# ----------------------------------------------------------------------------------------------
# The same-iteration criterion
# ----------------------------------------------------------------------------------------------
def same_iteration(x: Access, y: Access, shared: list[For], x_loops: list[For], y_loops: list[For],
                   y_to_x: dict[Var, Expr]) -> bool:
    """True when every element accessed by both `x` and `y` is accessed in the same iteration
    of the `shared` loops: the index components free of the other loops' vars are the same
    function of the shared loop vars in both, and that function is injective (so an element
    determines the shared iteration). `y_to_x` renames y's vars into x's where they differ."""
    x_idx = tuple(simplify_index(e) for e in x.indices)
    y_idx = tuple(simplify_index(substitute(e, y_to_x)) for e in y.indices)
    if len(x_idx) != len(y_idx):
        return False
    shared_vars = {loop.loop_var for loop in shared}
    private = {loop.loop_var for loop in x_loops + y_loops} - shared_vars

    def free(e: Expr) -> bool:
        return not any(isinstance(n, Var) and n in private for n in walk(e))

    common = tuple(a for a, b in zip(x_idx, y_idx) if free(a) and free(b) and prove_equal(a, b))
    return is_injective(common, var_ranges(shared))



def loop_accesses(node: Stmt) -> list[Access]:
    """Every access under `node`, with block iter vars replaced by their bound values, indices
    simplified, and `accumulates` set on a reduction update block's accesses to its buffer."""
    return list(_accesses(node, {}, None, None))


def _accesses(node: Any, mapping: dict[Var, Expr], block: ScheduleBlockRealize | None,
              red_buffer: str | None) -> Iterator[Access]:
    if isinstance(node, ScheduleBlockRealize):
        sb = node.schedule_block
        values = [substitute(v, mapping) for v in node.iter_values]
        inner = {**mapping, **dict(zip(sb.iter_vars, values))}
        is_reduce = any(v.is_reduce_axis for v in sb.iter_vars)
        stores = [s for s in collect_stmts(sb.body, Store)]
        red = stores[0].tensor.buffer.name if is_reduce and stores else None
        yield from _accesses(sb.body, inner, node, red)
        return
    if isinstance(node, Store):
        idx = tuple(simplify_index(substitute(e, mapping)) for e in node.indices)
        yield Access(node.tensor, idx, True, block=block, accumulates=node.tensor.buffer.name == red_buffer)
        yield from _loads((node.value, *node.indices), mapping, block, red_buffer)
        return
    if isinstance(node, For):
        yield from _loads((node.min, node.extent), mapping, block, red_buffer)
    elif isinstance(node, IfThenElse):
        yield from _loads((node.condition,), mapping, block, red_buffer)
    elif isinstance(node, (Evaluate, Let)):
        yield from _loads((node.value if isinstance(node, Evaluate) else node.body,), mapping,
                          block, red_buffer)
    for child in stmt_children(node):
        yield from _accesses(child, mapping, block, red_buffer)


def _loads(exprs: tuple[Any, ...], mapping: dict[Var, Expr], block: ScheduleBlockRealize | None,
           red: str | None) -> Iterator[Access]:
    for e in exprs:
        if e is None:
            continue
        for n in walk(e):
            if isinstance(n, Load):
                idx = tuple(simplify_index(substitute(i, mapping)) for i in n.indices)
                yield Access(n.tensor, idx, False, block=block, accumulates=n.tensor.buffer.name == red)


def is_reduce_loop(loop: For) -> bool:
    """True when every block under `loop` binds its var only into reduce iter vars (and at least
    one does): the loop is a reduction axis of every block below (vectorize rejects these)."""
    blocks = collect_stmts(loop.body, ScheduleBlockRealize)
    used = [b for b in blocks if _uses(b, loop.loop_var)]
    return bool(used) and all(drives_only_reduce_vars(b, loop.loop_var) for b in used)


def drives_only_reduce_vars(realize: ScheduleBlockRealize, var: Var) -> bool:
    """`var` is used by `realize`'s iter values, and only by its reduce iter vars."""
    uses = [v.is_reduce_axis for v, e in zip(realize.schedule_block.iter_vars, realize.iter_values)
            if any(isinstance(n, Var) and n == var for n in walk(e))]
    return bool(uses) and all(uses)


def _uses(realize: ScheduleBlockRealize, var: Var) -> bool:
    return any(isinstance(n, Var) and n == var for e in realize.iter_values for n in walk(e))


def loop_carries_dependence(func: LoweredFunc, loop: For, allow_accumulation: bool = False) -> bool:
    """True unless no two different iterations of `loop` conflict (see the module docstring)."""
    inner = {lp.loop_var: lp for lp in collect_stmts(loop.body, For)}
    accesses = loop_accesses(loop.body)
    accumulating = _accumulating_blocks(loop) if allow_accumulation else set()
    undecided = [(w, other) for w in accesses if w.is_write for other in accesses
                 if other.buffer == w.buffer and not _independent(w, other, loop, inner, accumulating)]
    if not undecided:
        return False
    if any(a.block is None or b.block is None for a, b in undecided):
        return True  # loads in guards/bounds outside blocks: not modelled by the islpy analysis
    return _isl_carried(func, loop, allow_accumulation)


def _accumulating_blocks(loop: For) -> set[int]:
    """uids of the reduction blocks under `loop` that it drives only through reduce iter vars."""
    return {b.uid for b in collect_stmts(loop.body, ScheduleBlockRealize)
            if any(v.is_reduce_axis for v in b.schedule_block.iter_vars)
            and drives_only_reduce_vars(b, loop.loop_var)}


def _independent(w: Access, other: Access, loop: For, inner: dict[Var, For], accumulating: set[int]) -> bool:
    if w.block is not None and w.block.uid in accumulating and other.block is w.block and w.accumulates \
            and other.accumulates and other.indices == w.indices:
        return True
    return (other.indices == w.indices
            and determines(w.indices, loop.loop_var, var_ranges((loop, *inner.values()))))


# --------------------------------------------------------------------------------------------
# Exact path: cinn_py.analysis (islpy)
# --------------------------------------------------------------------------------------------
def _isl_carried(func: LoweredFunc, loop: For, allow_accumulation: bool) -> bool:
    from cinn_py import analysis as isl_analysis  # noqa: PLC0415 (islpy is heavy; only when needed)

    try:
        if not allow_accumulation:
            return isl_analysis.loop_carries_dependence(func, loop)
        return _isl_carried_except_accumulation(isl_analysis.PolyContext(func), loop)
    except isl_analysis.AnalysisError:
        return True


def _isl_carried_except_accumulation(ctx: Any, loop: For) -> bool:
    """`cinn_py.analysis.loop_carries_dependence`, per access pair, skipping the accumulator
    pair of the reduction blocks that `loop` drives only through reduce iter vars."""
    import islpy as isl  # noqa: PLC0415

    sites = ctx.sites_under(loop)
    if any(collect_stmts(s.realize.schedule_block.body, For) for s in sites):
        return True  # a loop inside a block body is a parameter of the analysis: not exact
    accumulating = _accumulating_blocks(loop)
    rels = {id(s): [ctx.access_relation(s, a) for a in s.accesses()] for s in sites}
    for first in sites:
        skip = _accumulator_accesses(first) if first.realize.uid in accumulating else []
        for second in sites:
            different = _different_iterations(ctx, loop, first, second)
            for x in rels[id(first)]:
                for y in rels[id(second)]:
                    if not (x.access.is_write or y.access.is_write) \
                            or x.access.tensor.buffer.name != y.access.tensor.buffer.name:
                        continue
                    if first is second and x.access in skip and y.access in skip:
                        continue
                    conflict = isl.UnionMap.from_map(x.relation).apply_range(
                        isl.UnionMap.from_map(y.relation).reverse())
                    if not conflict.intersect(different).is_empty():
                        return True
    return False


def _different_iterations(ctx: Any, loop: For, first: Any, second: Any) -> Any:
    """`first[a] -> second[b]` with equal loops outside `loop` and different `loop` values."""
    import islpy as isl  # noqa: PLC0415

    depth = next(k for k, lp in enumerate(first.loops) if lp is loop)
    ins = [f"a{k}" for k in range(len(first.loops))]
    outs = [f"b{k}" for k in range(len(second.loops))]
    cond = " and ".join([f"a{k} = b{k}" for k in range(depth)] + [f"a{depth} != b{depth}"])
    params = ctx.params(ctx.free_params([], set()))
    prefix = "[" + ", ".join(ctx.names.name(p) for p in params) + "] -> "
    head = f"{ctx.stmt_names[id(first)]}[{', '.join(ins)}] -> {ctx.stmt_names[id(second)]}[{', '.join(outs)}]"
    return isl.UnionMap(f"{prefix}{{ {head} : {cond} }}")


def _accumulator_accesses(site: Any) -> list[Any]:
    """The store of a reduction update block and its loads at the same indices."""
    accesses = site.accesses()
    writes = [a for a in accesses if a.is_write]
    if len(writes) != 1:
        return []
    store = writes[0]
    return ([a for a in accesses if a.tensor.buffer.name == store.tensor.buffer.name and a.indices
             == store.indices])



def check_permutation_legal(func: LoweredFunc, chain: list[Stmt], new_chain: list[Stmt],
                            primitive: str) -> None:
    """Raise IllegalDependenceError unless every loop that changes position carries no
    dependence (reduction accumulation ignored): then every pair of dependent instances keeps
    its relative order, which the loops that stay in place decide."""
    for old, new in zip(chain, new_chain):
        if old is new or not isinstance(old, For):
            continue
        if loop_carries_dependence(func, old, allow_accumulation=True):
            raise schedule_error(IllegalDependenceError, primitive, f"loop '{old.loop_var.name}' carries a "
                                 "dependence (an element written in one iteration is accessed in another), "
                                 "so "
                                 "moving it could reverse that order", func, old)
