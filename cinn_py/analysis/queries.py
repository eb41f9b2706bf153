"""The questions schedule primitives ask, answered with islpy (see `polyhedral` for the model).

- `iteration_domain(func, block)`, `access_relations(func, block)`;
- `dependences(func, src, dst)`: RAW / WAR / WAW instance pairs in execution order;
- `loop_carries_dependence(func, loop)`: parallel / vectorize / bind legality;
- `required_region(func, consumers, tensor, under_loop)`: what compute_at must produce;
- `is_always_true(cond, var_ranges)`: guards a primitive may drop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import islpy as isl

from cinn_py.analysis.isl_convert import IslNames, condition_text, pw_aff_to_expr
from cinn_py.analysis.polyhedral import (
    AnalysisError, BlockAccesses, BlockRef, Dependences, PolyContext,
)
from cinn_py.analysis.sites import BlockSite
from cinn_py.ir import (
    Add, Expr, For, IntImm, LoweredFunc, Max, Min, Sub, Tensor, UIntImm, Var, as_expr, print_ir_marked, walk,
)
from cinn_py.symbolic.analyzer import Analyzer, VarRanges
from cinn_py.symbolic.linear import var_ranges as loop_ranges

Region = tuple[tuple[Expr, Expr], ...]


def iteration_domain(func: LoweredFunc, block: BlockRef) -> isl.Set:
    """The instances of `block` (tuples of its enclosing loop vars) under loops and guards."""
    ctx = PolyContext(func)
    return ctx.domain(ctx.site(block))[0]


def access_relations(func: LoweredFunc, block: BlockRef) -> BlockAccesses:
    """Reads and writes of `block` as `instance -> buffer element` maps (`exact` flags inside)."""
    ctx = PolyContext(func)
    return ctx.accesses(ctx.site(block))


def dependences(func: LoweredFunc, src_block: BlockRef, dst_block: BlockRef) -> Dependences:
    """Instance pairs (src before dst in the current loop nest) touching one buffer element."""
    ctx = PolyContext(func)
    src, dst = ctx.site(src_block), ctx.site(dst_block)
    a, b = ctx.accesses(src), ctx.accesses(dst)
    order = isl.UnionMap.from_map(ctx.schedule(src).lex_lt_map(ctx.schedule(dst)))

    def pairs(first: isl.UnionMap, second: isl.UnionMap) -> isl.UnionMap:
        return first.apply_range(second.reverse()).intersect(order).coalesce()

    return Dependences(raw=pairs(a.write_map(), b.read_map()), war=pairs(a.read_map(), b.write_map()),
                       waw=pairs(a.write_map(), b.write_map()), exact=a.exact and b.exact)


def loop_carries_dependence(func: LoweredFunc, loop: For) -> bool:
    """True when two different iterations of `loop` (same outer iteration) touch one buffer
    element and at least one writes it: then the loop may not be parallel, vectorized or bound.
    Over-approximated accesses count as conflicts (the answer errs towards True)."""
    ctx = PolyContext(func)
    sites = ctx.sites_under(loop)
    accesses = {id(s): ctx.accesses(s) for s in sites}
    for first in sites:
        for second in sites:
            if _carried(ctx, loop, first, second, accesses[id(first)], accesses[id(second)]):
                return True
    return False


def _carried(ctx: PolyContext, loop: For, first: BlockSite, second: BlockSite,
             a: BlockAccesses, b: BlockAccesses) -> bool:
    conflict = (a.write_map().apply_range(b.read_map().reverse())
                .union(a.write_map().apply_range(b.write_map().reverse()))
                .union(a.read_map().apply_range(b.write_map().reverse())))
    if conflict.is_empty():
        return False
    depth = next(k for k, lp in enumerate(first.loops) if lp is loop)
    ins = [f"a{k}" for k in range(len(first.loops))]
    outs = [f"b{k}" for k in range(len(second.loops))]
    same = [f"a{k} = b{k}" for k in range(depth)]
    params = ctx.params(ctx.free_params([], set()))
    prefix = "[" + ", ".join(ctx.names.name(p) for p in params) + "] -> "
    head = f"{ctx.stmt_names[id(first)]}[{', '.join(ins)}] -> {ctx.stmt_names[id(second)]}[{', '.join(outs)}]"
    cond = " and ".join(same + [f"a{depth} != b{depth}"])
    different = isl.UnionMap(f"{prefix}{{ {head} : {cond} }}")
    return not conflict.intersect(different).is_empty()


def required_region(func: LoweredFunc, consumer_blocks: Sequence[BlockRef], tensor: Tensor | str,
                    under_loop: For) -> Region | None:
    """Per dimension `(min, extent)` of the part of `tensor`'s buffer that the consumer instances
    under one iteration of `under_loop` read; the Exprs use the vars of `under_loop` and the
    loops outside it (and symbolic dims). None when the consumers read nothing of it there.

    Exact islpy answer when the accesses are quasi-affine; a single-piece `dim_min`/`dim_max` is
    converted back, otherwise the symbolic interval analysis gives a (sound) enclosing box.
    """
    ctx = PolyContext(func)
    buffer_name = tensor.buffer.name if isinstance(tensor, Tensor) else _buffer_of(func, tensor)
    sites = [ctx.site(b) for b in consumer_blocks]
    reads = []
    for site in sites:
        depth = next((k for k, lp in enumerate(site.loops) if lp is under_loop), None)
        if depth is None:
            raise AnalysisError(
                f"required_region: block '{site.name}' is not under loop '{under_loop.loop_var.name}'",
                print_ir_marked(func, site.realize, under_loop))
        for acc in site.accesses():
            if not acc.is_write and acc.tensor.buffer.name == buffer_name:
                reads.append((site, depth, acc))
    if not reads:
        return None
    rank = len(reads[0][2].indices)
    exact_box = _isl_region(ctx, reads, rank)
    return exact_box if exact_box is not None else _interval_region(reads, rank)


def _isl_region(ctx: PolyContext, reads: list, rank: int) -> Region | None:
    region_set: isl.Set | None = None
    outer_loops: list[For] = []
    for site, depth, acc in reads:
        rel = ctx.access_relation(site, acc, as_params=depth + 1)
        elems = rel.relation.range()
        region_set = elems if region_set is None else region_set.union(elems)
        outer_loops = list(site.loops[: depth + 1])
    assert region_set is not None
    an = Analyzer(loop_ranges(outer_loops))
    context = _param_context(ctx, outer_loops)
    dtype = outer_loops[-1].loop_var.dtype
    out: list[tuple[Expr, Expr]] = []
    for k in range(rank):
        lo = pw_aff_to_expr(region_set.dim_min(k), ctx.names, dtype, an, context)
        hi = pw_aff_to_expr(region_set.dim_max(k), ctx.names, dtype, an, context)
        if lo is None or hi is None:
            return None
        out.append((lo, an.simplify(Add(Sub(hi, lo), IntImm(dtype, 1)))))
    return tuple(out)


def _param_context(ctx: PolyContext, loops: list[For]) -> isl.Set:
    """Parameter constraints: symbolic dims' lower bounds and the outer loops' ranges."""
    from cinn_py.analysis.isl_convert import affine_text  # noqa: PLC0415

    params = ctx.params([lp.loop_var for lp in loops])
    constraints = ctx.param_constraints(params)
    known = set(params)
    for k, lp in enumerate(loops):
        an = Analyzer(loop_ranges(loops[:k]))
        lo = affine_text(lp.min, ctx.names, known, an)
        hi = affine_text(Add(lp.min, lp.extent), ctx.names, known, an)
        v = ctx.names.name(lp.loop_var)
        constraints += [f"{v} >= {lo}"] if lo is not None else []
        constraints += [f"{v} < {hi}"] if hi is not None else []
    text = "[" + ", ".join(ctx.names.name(p) for p in params) + "] -> { : "
    return isl.Set(text + (" and ".join(constraints) or "true") + " }")


def _interval_region(reads: list, rank: int) -> Region | None:
    """Fallback: union of per-access symbolic intervals over the inner loops."""
    out: list[tuple[Expr, Expr]] = []
    for k in range(rank):
        lo_all: Expr | None = None
        hi_all: Expr | None = None
        an = Analyzer()
        for site, depth, acc in reads:
            inner = Analyzer(loop_ranges(site.loops[depth + 1:]))
            lo, hi = inner.bounds.interval(inner.poly(acc.indices[k]))
            if lo is None or hi is None:
                return None
            dtype = acc.indices[k].dtype
            lo_e, hi_e = lo.to_expr(dtype), hi.to_expr(dtype)
            lo_all = lo_e if lo_all is None else Min(lo_all, lo_e)
            hi_all = hi_e if hi_all is None else Max(hi_all, hi_e)
        assert lo_all is not None and hi_all is not None
        lo_s = an.simplify(lo_all)
        out.append((lo_s, an.simplify(Add(Sub(hi_all, lo_s), IntImm(lo_s.dtype, 1)))))
    return tuple(out)


def _buffer_of(func: LoweredFunc, name: str) -> str:
    for node in walk(func.body):
        tensor = getattr(node, "tensor", None)
        if isinstance(tensor, Tensor) and tensor.name == name:
            return tensor.buffer.name
    raise AnalysisError(f"required_region: no tensor named '{name}' in function '{func.name}'")


def is_always_true(cond: Expr, var_ranges: VarRanges | None = None,
                   loops: Sequence[For] = ()) -> bool:
    """True when `cond` holds for every value of the vars in their ranges (`{v: (min, extent)}`
    and/or the given enclosing loops); False means "not proven". Exact for affine guards."""
    ranges: dict[Var, tuple[Expr | int, Expr | int]] = dict(var_ranges or {})
    ranges.update(loop_ranges(loops))
    an = Analyzer(ranges)
    simplified = an.simplify(cond)
    if isinstance(simplified, UIntImm) and simplified.dtype.is_bool:
        return bool(simplified.value)
    names = IslNames()
    free = [n for n in walk(cond) if isinstance(n, Var) and n not in ranges]
    ranged = list(ranges)
    known = set(free) | set(ranged)
    text = condition_text(cond, names, known, an)
    if text is None:
        return False
    domain = _ranges_domain(names, ranged, free, ranges, known, an)
    if domain is None:
        return False
    dims = ", ".join(names.name(v) for v in ranged)
    params = "[" + ", ".join(dict.fromkeys(names.name(v) for v in free)) + "] -> "
    holds = isl.Set(f"{params}{{ [{dims}] : {text} }}")
    return domain.is_subset(holds)


def _ranges_domain(names: IslNames, ranged: list[Var], free: list[Var],
                   ranges: Mapping[Var, tuple[Expr | int, Expr | int]], known: set[Var],
                   an: Analyzer) -> isl.Set | None:
    from cinn_py.analysis.isl_convert import affine_text  # noqa: PLC0415

    constraints = []
    for v in dict.fromkeys(free):
        if v.is_symbolic_constant:
            lb = v.lower_bound.value if isinstance(v.lower_bound, IntImm) else 1
            constraints.append(f"{names.name(v)} >= {lb}")
    for v in ranged:
        lo_e = as_expr(ranges[v][0], v.dtype)
        ext_e = as_expr(ranges[v][1], v.dtype)
        lo = affine_text(lo_e, names, known, an)
        hi = affine_text(Add(lo_e, ext_e), names, known, an)
        if lo is None or hi is None:
            return None
        constraints += [f"{names.name(v)} >= {lo}", f"{names.name(v)} < {hi}"]
    dims = ", ".join(names.name(v) for v in ranged)
    params = "[" + ", ".join(dict.fromkeys(names.name(v) for v in free)) + "] -> "
    return isl.Set(f"{params}{{ [{dims}] : {' and '.join(constraints) or 'true'} }}")


__all__ = [
    "AnalysisError", "BlockAccesses", "Dependences", "access_relations", "dependences", "is_always_true",
    "iteration_domain", "loop_carries_dependence", "required_region",
]
