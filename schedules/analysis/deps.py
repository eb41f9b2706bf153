"""Loop-carried dependences for the loop-level primitives (parallel, vectorize, bind, reorder).

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
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cinn_py.ir import (
    Add, Div, Evaluate, Expr, For, IfThenElse, Let, Load, LoweredFunc, Mod, Mul, ScheduleBlockRealize, Stmt,
    Store, Sub, Var, substitute, walk,
)
from schedules.analysis.arith import as_int, simplify_index
from schedules.analysis.loops import collect_stmts, stmt_children
from schedules.errors import IllegalDependenceError, schedule_error

__all__ = [
    "Access", "loop_accesses", "loop_carries_dependence", "is_reduce_loop", "drives_only_reduce_vars",
    "check_permutation_legal",
]


@dataclass(frozen=True)
class Access:
    """One load or store under a loop, indices in terms of loop vars."""

    buffer: str
    indices: tuple[Expr, ...]
    is_write: bool
    block: int
    """uid of the enclosing block realize (0 outside blocks)."""
    reduction_self: bool
    """A reduction update block's access to the buffer it accumulates into."""


def loop_accesses(node: Stmt) -> list[Access]:
    """Every access under `node`, with block iter vars replaced by their bound values."""
    return list(_accesses(node, {}, 0, None))


def _accesses(node: Any, mapping: dict[Var, Expr], block: int, red_buffer: str | None) -> Iterator[Access]:
    if isinstance(node, ScheduleBlockRealize):
        sb = node.schedule_block
        values = [substitute(v, mapping) for v in node.iter_values]
        inner = {**mapping, **dict(zip(sb.iter_vars, values))}
        is_reduce = any(v.is_reduce_axis for v in sb.iter_vars)
        stores = [s for s in collect_stmts(sb.body, Store)]
        red = stores[0].tensor.buffer.name if is_reduce and stores else None
        yield from _accesses(sb.body, inner, node.uid, red)
        return
    if isinstance(node, Store):
        idx = tuple(simplify_index(substitute(e, mapping)) for e in node.indices)
        buf = node.tensor.buffer.name
        yield Access(buf, idx, True, block, buf == red_buffer)
        yield from _loads((node.value, *node.indices), mapping, block, red_buffer)
        return
    if isinstance(node, For):
        yield from _loads((node.min, node.extent), mapping, block, red_buffer)
    elif isinstance(node, IfThenElse):
        yield from _loads((node.condition,), mapping, block, red_buffer)
    elif isinstance(node, (Evaluate, Let)):
        yield from _loads((node.value if isinstance(node, Evaluate) else node.body,), mapping, block, red_buffer)
    for child in stmt_children(node):
        yield from _accesses(child, mapping, block, red_buffer)


def _loads(exprs: tuple[Any, ...], mapping: dict[Var, Expr], block: int, red: str | None) -> Iterator[Access]:
    for e in exprs:
        if e is None:
            continue
        for n in walk(e):
            if isinstance(n, Load):
                idx = tuple(simplify_index(substitute(i, mapping)) for i in n.indices)
                buf = n.tensor.buffer.name
                yield Access(buf, idx, False, block, buf == red)


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
    if any(a.block == 0 or b.block == 0 for a, b in undecided):
        return True  # loads in guards/bounds outside blocks: not modelled by the islpy analysis
    return _isl_carried(func, loop, allow_accumulation)


def _accumulating_blocks(loop: For) -> set[int]:
    """uids of the reduction blocks under `loop` that it drives only through reduce iter vars."""
    return {b.uid for b in collect_stmts(loop.body, ScheduleBlockRealize)
            if any(v.is_reduce_axis for v in b.schedule_block.iter_vars) and drives_only_reduce_vars(b, loop.loop_var)}


def _independent(w: Access, other: Access, loop: For, inner: dict[Var, For], accumulating: set[int]) -> bool:
    if w.block in accumulating and other.block == w.block and w.reduction_self and other.reduction_self \
            and other.indices == w.indices:
        return True
    return other.indices == w.indices and _determines(w.indices, loop, inner)


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
    return [a for a in accesses if a.tensor.buffer.name == store.tensor.buffer.name and a.indices == store.indices]




def _determines(indices: tuple[Expr, ...], loop: For, inner: dict[Var, For]) -> bool:
    ranges = {lp.loop_var: (lp.min, lp.extent) for lp in (loop, *inner.values())}
    wanted = {loop.loop_var, *inner}
    for comp in _recover_div_mod(list(indices)):
        terms = _linear(comp, wanted, loop.loop_var)
        if terms is None or terms.get(loop.loop_var, 0) == 0:
            continue
        c = abs(terms.pop(loop.loop_var))
        spans = [(abs(k), _span(atom, ranges)) for atom, k in terms.items() if k]
        if all(s is not None for _, s in spans) and sum(k * s for k, s in spans) < c:  # type: ignore[operator]
            return True
        own = _span(loop.loop_var, ranges)
        if spans and own is not None and c * own < math.gcd(*(k for k, _ in spans)):
            return True
    return False


def _span(atom: Expr, ranges: dict[Var, tuple[Expr, Expr]]) -> int | None:
    """max - min of `atom` over the loop ranges, when constant."""
    if isinstance(atom, Var) and atom in ranges:
        extent = as_int(ranges[atom][1])
        return None if extent is None else extent - 1
    try:
        from cinn_py.symbolic import const_bounds  # noqa: PLC0415
    except ImportError:
        return None
    bounds = const_bounds(atom, ranges)
    return None if bounds is None else bounds[1] - bounds[0]


def _recover_div_mod(components: list[Expr]) -> list[Expr]:
    """`components` plus every `e` that a pair `(e / d, e % d)` among them determines, to a fixed
    point. A divisor that is a product is also read as nested divisions, `e / (a * b)` ==
    `(e / b) / a` (non-negative indices): a fused 3-d nest indexes `(f / (S0 * S1), (f / S1) % S0,
    f % S1)`, which recovers `f / S1` and then `f`."""
    out = list(components)
    changed = True
    while changed:
        changed = False
        for d in [c for c in out if isinstance(c, Div)]:
            for form in _div_forms(d):
                recovered = simplify_index(form.a)
                if recovered not in out and any(isinstance(m, Mod) and m.a == form.a and m.b == form.b
                                                for m in out):
                    out.append(recovered)
                    changed = True
    return out


def _div_forms(d: Div) -> list[Div]:
    """`d` and, for a product divisor `a * b`, its nested forms `(e / b) / a` and `(e / a) / b`."""
    forms = [d]
    if isinstance(d.b, Mul):
        a, b = d.b.a, d.b.b
        forms += [Div(Div(d.a, b), a), Div(Div(d.a, a), b)]
    return forms


def _linear(e: Expr, wanted: set[Var], key: Var) -> dict[Expr, int] | None:
    """Integer coefficients of `key` and of the atoms (inner loop vars, or non-linear subterms
    over them that do not use `key`) when `e` is linear in them, else None."""
    coefs: dict[Expr, int] = {}

    def visit(node: Expr, scale: int) -> bool:
        used = {n for n in walk(node) if isinstance(n, Var) and n in wanted}
        if not used:
            return True
        if isinstance(node, Var):
            coefs[node] = coefs.get(node, 0) + scale
            return True
        if isinstance(node, Add):
            return visit(node.a, scale) and visit(node.b, scale)
        if isinstance(node, Sub):
            return visit(node.a, scale) and visit(node.b, -scale)
        if isinstance(node, Mul):
            for x, y in ((node.a, node.b), (node.b, node.a)):
                if as_int(y) is not None:
                    return visit(x, scale * as_int(y))  # type: ignore[operator]
        if key in used:
            return False
        coefs[node] = coefs.get(node, 0) + scale
        return True

    return coefs if visit(e, 1) else None


def check_permutation_legal(func: LoweredFunc, chain: list[Stmt], new_chain: list[Stmt], primitive: str) -> None:
    """Raise IllegalDependenceError unless every loop that changes position carries no
    dependence (reduction accumulation ignored): then every pair of dependent instances keeps
    its relative order, which the loops that stay in place decide."""
    for old, new in zip(chain, new_chain):
        if old is new or not isinstance(old, For):
            continue
        if loop_carries_dependence(func, old, allow_accumulation=True):
            raise schedule_error(IllegalDependenceError, primitive, f"loop '{old.loop_var.name}' carries a "
                                 "dependence (an element written in one iteration is accessed in another), so "
                                 "moving it could reverse that order", func, old)
