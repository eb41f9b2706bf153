"""Loop-carried dependences for the loop-level primitives (parallel, vectorize, bind, reorder).

A loop `L` carries a dependence when two different iterations of `L` touch the same element of a
buffer and at least one of them writes it. `loop_carries_dependence` answers soundly: False
only when it proves that every pair of conflicting accesses under `L` (two accesses to one
buffer, one a write) touches an element that *determines* `L`'s value:

- the two accesses have the same index tuple (as expressions of loop vars, after substituting
  block iter values and simplifying), and
- some component of that tuple (after recovering `e` from an `(e / d, e % d)` pair) is linear
  in `L` and the loops under it, `c*L + sum c_k v_k + rest`, with either
  `sum |c_k| (extent_k - 1) < c` (L is the most significant digit) or
  `c (extent_L - 1) < gcd(c_k)` (L fits under the others).

Anything else (different indices, non-linear or symbolic spans) counts as carried: primitives
reject rather than risk a race. With `ignore_reductions`, the read-modify-write of a reduction
update block on its own output (`B[i] = B[i] + ...`) is not counted: reordering reduction loops
only changes the accumulation order, which CINN (and this compiler) treat as free.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cinn_py import ir
from cinn_py.ir import Expr, For, Load, LoweredFunc, ScheduleBlockRealize, Stmt, Store, Var
from schedules.analysis.arith import as_int, simplify_index
from schedules.analysis.loops import collect_stmts, stmt_children
from schedules.errors import IllegalDependenceError, schedule_error

__all__ = ["Access", "loop_accesses", "loop_carries_dependence", "is_reduce_loop", "check_permutation_legal"]


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
        values = [ir.substitute(v, mapping) for v in node.iter_values]
        inner = {**mapping, **dict(zip(sb.iter_vars, values))}
        is_reduce = any(v.is_reduce_axis for v in sb.iter_vars)
        stores = [s for s in collect_stmts(sb.body, Store)]
        red = stores[0].tensor.buffer.name if is_reduce and stores else None
        yield from _accesses(sb.body, inner, node.uid, red)
        return
    if isinstance(node, Store):
        idx = tuple(simplify_index(ir.substitute(e, mapping)) for e in node.indices)
        buf = node.tensor.buffer.name
        yield Access(buf, idx, True, block, buf == red_buffer)
        yield from _loads((node.value, *node.indices), mapping, block, red_buffer)
        return
    if isinstance(node, For):
        yield from _loads((node.min, node.extent), mapping, block, red_buffer)
    elif isinstance(node, ir.IfThenElse):
        yield from _loads((node.condition,), mapping, block, red_buffer)
    elif isinstance(node, (ir.Evaluate, ir.Let)):
        yield from _loads((node.value if isinstance(node, ir.Evaluate) else node.body,), mapping, block, red_buffer)
    for child in stmt_children(node):
        yield from _accesses(child, mapping, block, red_buffer)


def _loads(exprs: tuple[Any, ...], mapping: dict[Var, Expr], block: int, red: str | None) -> Iterator[Access]:
    for e in exprs:
        if e is None:
            continue
        for n in ir.walk(e):
            if isinstance(n, Load):
                idx = tuple(simplify_index(ir.substitute(i, mapping)) for i in n.indices)
                buf = n.tensor.buffer.name
                yield Access(buf, idx, False, block, buf == red)


def is_reduce_loop(loop: For) -> bool:
    """True when every block under `loop` binds its var only into reduce iter vars (and at least
    one does): the loop is a reduction axis of the blocks below."""
    seen = False
    for realize in collect_stmts(loop.body, ScheduleBlockRealize):
        for var, value in zip(realize.schedule_block.iter_vars, realize.iter_values):
            if loop.loop_var in {n for n in ir.walk(value) if isinstance(n, Var)}:
                if not var.is_reduce_axis:
                    return False
                seen = True
    return seen


def loop_carries_dependence(func: LoweredFunc, loop: For, ignore_reductions: bool = False) -> bool:
    """True unless no two different iterations of `loop` conflict (see the module docstring)."""
    inner = {lp.loop_var: lp for lp in collect_stmts(loop.body, For)}
    accesses = loop_accesses(loop.body)
    writes = [a for a in accesses if a.is_write]
    for w in writes:
        for other in accesses:
            if other.buffer != w.buffer:
                continue
            if ignore_reductions and w.reduction_self and other.reduction_self and other.block == w.block:
                continue
            if other.indices == w.indices and _determines(w.indices, loop, inner):
                continue
            if _isl_no_conflict(w, other, loop, inner) is True:
                continue
            return True
    return False


# --------------------------------------------------------------------------------------------
# Exact check with islpy (quasi-affine indices: + - * by constants, / and % by constants)
# --------------------------------------------------------------------------------------------
class _NotAffine(Exception):
    pass


def _isl_no_conflict(x: Access, y: Access, loop: For, inner: dict[Var, For]) -> bool | None:
    """True when no element is accessed by `x` in one iteration of `loop` and by `y` in
    another (any iterations of the inner loops; outer vars and symbolic dims are parameters);
    None when the indices are not quasi-affine."""
    if len(x.indices) != len(y.indices):
        return None
    loops = [loop, *inner.values()]
    xs = {lp.loop_var: f"x{k}" for k, lp in enumerate(loops)}
    ys = {lp.loop_var: f"y{k}" for k, lp in enumerate(loops)}
    params: dict[Var, str] = {}
    try:
        cons = []
        for names in (xs, ys):
            for lp in loops:
                lo, ext = _isl(lp.min, names, params), _isl(lp.extent, names, params)
                cons.append(f"{lo} <= {names[lp.loop_var]} < {lo} + {ext}")
        for a, b in zip(x.indices, y.indices):
            cons.append(f"{_isl(a, xs, params)} = {_isl(b, ys, params)}")
    except _NotAffine:
        return None
    for var, name in params.items():
        lower = as_int(var.lower_bound) if var.lower_bound is not None else (1 if var.is_symbolic_constant else None)
        if lower is not None:
            cons.append(f"{name} >= {lower}")
    cons.append("(x0 < y0 or x0 > y0)")
    space = ", ".join(list(xs.values()) + list(ys.values()))
    text = f"[{', '.join(params.values())}] -> {{ [{space}] : {' and '.join(cons)} }}"
    try:
        import islpy as isl  # noqa: PLC0415

        return bool(isl.Set(text).is_empty())
    except Exception:  # islpy parse/feature errors: no exact answer, stay conservative
        return None


def _isl(e: Expr, names: dict[Var, str], params: dict[Var, str]) -> str:
    if isinstance(e, ir.IntImm):
        return str(e.value)
    if isinstance(e, Var):
        if e in names:
            return names[e]
        return params.setdefault(e, f"p{len(params)}")
    if isinstance(e, (ir.Add, ir.Sub)):
        return f"({_isl(e.a, names, params)} {'+' if isinstance(e, ir.Add) else '-'} {_isl(e.b, names, params)})"
    if isinstance(e, ir.Mul):
        for a, b in ((e.a, e.b), (e.b, e.a)):
            if as_int(b) is not None:
                return f"({as_int(b)} * {_isl(a, names, params)})"
        raise _NotAffine
    if isinstance(e, (ir.Div, ir.Mod)) and (d := as_int(e.b)) is not None and d > 0:
        # C truncation equals floor only for a non-negative dividend.
        if not _nonnegative(e.a):
            raise _NotAffine
        a = _isl(e.a, names, params)
        return f"floor({a} / {d})" if isinstance(e, ir.Div) else f"({a} mod {d})"
    raise _NotAffine


def _nonnegative(e: Expr) -> bool:
    """Sums/products/quotients of loop vars, symbolic dims and non-negative constants."""
    if isinstance(e, ir.IntImm):
        return e.value >= 0
    if isinstance(e, Var):
        return True  # loop vars start at >= 0 here (split/fuse/lowering), symbolic dims >= 1
    if isinstance(e, (ir.Add, ir.Mul, ir.Div, ir.Mod)):
        return _nonnegative(e.a) and _nonnegative(e.b)
    return False


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
    out = list(components)
    for d in [c for c in out if isinstance(c, ir.Div)]:
        for m in out:
            if isinstance(m, ir.Mod) and m.a == d.a and m.b == d.b:
                out.append(simplify_index(d.a))
    return out


def _linear(e: Expr, wanted: set[Var], key: Var) -> dict[Expr, int] | None:
    """Integer coefficients of `key` and of the atoms (inner loop vars, or non-linear subterms
    over them that do not use `key`) when `e` is linear in them, else None."""
    coefs: dict[Expr, int] = {}

    def visit(node: Expr, scale: int) -> bool:
        used = {n for n in ir.walk(node) if isinstance(n, Var) and n in wanted}
        if not used:
            return True
        if isinstance(node, Var):
            coefs[node] = coefs.get(node, 0) + scale
            return True
        if isinstance(node, ir.Add):
            return visit(node.a, scale) and visit(node.b, scale)
        if isinstance(node, ir.Sub):
            return visit(node.a, scale) and visit(node.b, -scale)
        if isinstance(node, ir.Mul):
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
        if loop_carries_dependence(func, old, ignore_reductions=True):
            raise schedule_error(IllegalDependenceError, primitive, f"loop '{old.loop_var.name}' carries a "
                                 "dependence (an element written in one iteration is accessed in another), so "
                                 "moving it could reverse that order", func, old)
