"""Whether every tensor access of a function stays inside its tensor (`lower`'s bounds proof).

Each index of each Load and Store of each block gets one of three verdicts:

- IN_RANGE: `0 <= index < extent` holds for every instance (the rule-based analyzer proves the
  common case cheaply; otherwise islpy decides exactly over the block's loop domain, its
  `if` guards and the `select` conditions the access sits under);
- OUT_OF_RANGE: for *every* value of the symbolic dims some instance that executes the access
  reads or writes outside the tensor (`X[i + 1]` over `i < 4` on a length-4 `X`; `X[i + 1]` over
  `i < S` on a length-`S` `X`). Only affine indices under affine conditions can get it;
- UNKNOWN: not decidable at compile time: a gather `X[I[i]]`, a non-affine index, a
  condition isl cannot express, or an access that is out of range only for some symbolic dims
  (`X[2]` on a length-`S` `X`). These are what a `checked=True` build guards at run time.

A `select` branch counts as conditional (its access executes only when the branch is taken)
because every backend evaluates the chosen branch's loads only, or clamps the other's.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

import islpy as isl

from cinn_py.analysis.isl_convert import affine_text, condition_text
from cinn_py.analysis.polyhedral import PolyContext
from cinn_py.analysis.sites import BlockSite
from cinn_py.ir import (
    Block, Cast, Expr, FloatImm, For, IfThenElse, IntImm, Load, LoweredFunc, ScheduleBlockRealize, Select,
    Stmt, Store,
    StringImm, Tensor, UIntImm, Var, as_expr, child_fields, print_ir, substitute, walk,
)
from cinn_py.symbolic.access import Access
from cinn_py.symbolic.analyzer import Analyzer


class Verdict(enum.Enum):
    IN_RANGE = "in range"
    OUT_OF_RANGE = "out of range"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class IndexCheck:
    """The verdict on index `dim` of one access (`index` over the block's loop vars)."""

    block: str
    store: Store | None
    """The statement holding the access (for error excerpts)."""
    tensor: Tensor
    dim: int
    index: Expr
    is_write: bool
    verdict: Verdict
    lowest: Expr | None = None
    highest: Expr | None = None
    """Inclusive bounds of `index` over the block's loops (when the analyzer finds them)."""

    def describe(self) -> str:
        kind = "write to" if self.is_write else "read of"
        extent = self.tensor.shape[self.dim]
        span = ""
        if self.lowest is not None and self.highest is not None:
            span = f", which takes values in [{_text(self.lowest)}, {_text(self.highest)}]"
        return (f"the {kind} '{self.tensor.name}' in block '{self.block}' is out of bounds: index {self.dim} "
                f"is {_text(self.index)}{span}, but dimension {self.dim} of '{self.tensor.name}' has extent "
                f"{_text(extent)} (valid indices [0, {_text(extent)}))")


def _text(e: Expr) -> str:
    return print_ir(e)


def check_access_bounds(func: LoweredFunc) -> list[IndexCheck]:
    """The verdict on every index that is not proven in range, in program order."""
    ctx = PolyContext(func)
    out: list[IndexCheck] = []
    for site in ctx.sites:
        an = ctx.analyzer(site)
        for acc in _accesses(site):
            for k, index in enumerate(acc.indices):
                check = _check_index(ctx, site, an, acc, k, index)
                if check is not None:
                    out.append(check)
    return out


def _check_index(ctx: PolyContext, site: BlockSite, an: Analyzer, acc: Access, k: int,
                 index: Expr) -> IndexCheck | None:
    if k >= len(acc.tensor.shape) or index.dtype.lanes != 1:
        return None  # rank mismatches are the verifier's; vectors appear only after scheduling
    extent = acc.tensor.shape[k]
    if not acc.guards and an.prove_le(as_expr(0, index.dtype), index) and _prove_lt(an, index, extent):
        return None
    verdict = _isl_verdict(ctx, site, an, acc, index, extent)
    if verdict is Verdict.IN_RANGE:
        return None
    lowest = highest = None
    if verdict is Verdict.OUT_OF_RANGE:
        lo, hi = an.bounds.interval(an.poly(index))
        lowest = None if lo is None else an.simplify(lo.to_expr(index.dtype))
        highest = None if hi is None else an.simplify(hi.to_expr(index.dtype))
    return IndexCheck(site.name, acc.store, acc.tensor, k, index, acc.is_write, verdict, lowest, highest)


def _prove_lt(an: Analyzer, index: Expr, extent: Expr) -> bool:
    if extent.dtype != index.dtype:
        extent = (Cast(index.dtype, extent) if not isinstance(extent, IntImm)
                  else IntImm(index.dtype, extent.value))
    return an.prove_lt(index, extent)


def _isl_verdict(ctx: PolyContext, site: BlockSite, an: Analyzer, acc: Access, index: Expr,
                 extent: Expr) -> Verdict:
    params, dims, constraints, exact = ctx.domain_parts(site)
    known = set(params) | {lp.loop_var for lp in site.loops}
    for v in _free_vars((index, extent, *(c for c, _ in acc.guards))):
        if v not in known:
            return Verdict.UNKNOWN  # a var no loop binds and that is no parameter (a block-local loop)
    idx = affine_text(index, ctx.names, known, an)
    ext = affine_text(extent, ctx.names, known, an)
    if idx is None or ext is None:
        return Verdict.UNKNOWN
    for cond, taken in acc.guards:
        text = condition_text(cond, ctx.names, known, an)
        if text is None:
            exact = False
            continue
        constraints.append(text if taken else f"not ({text})")
    space = "[" + ", ".join(ctx.names.name(p) for p in params) + "] -> "
    where = " and ".join(f"({c})" for c in constraints) or "true"
    bad = isl.Set(f"{space}{{ [{', '.join(dims)}] : {where} and ({idx} < 0 or {idx} >= {ext}) }}")
    if bad.is_empty():  # a dropped condition only enlarges the set: empty is exact either way
        return Verdict.IN_RANGE
    if not exact:
        return Verdict.UNKNOWN
    context = isl.Set(f"{space}{{ : {' and '.join(ctx.param_constraints(params)) or 'true'} }}")
    return Verdict.OUT_OF_RANGE if context.is_subset(bad.params()) else Verdict.UNKNOWN


def _free_vars(exprs: tuple[Expr, ...]) -> Iterator[Var]:
    for e in exprs:
        for node in walk(e):
            if isinstance(node, Var):
                yield node


# ------------------------------------------------------------------------------------------------
# Accesses with their select / if conditions
# ------------------------------------------------------------------------------------------------
def _accesses(site: BlockSite) -> list[Access]:
    out: list[Access] = []
    # the site's own `if` guards are part of its domain (PolyContext.domain_parts)
    stack: list[tuple[Stmt, tuple[tuple[Expr, bool], ...]]] = [(site.realize.schedule_block.body, ())]
    while stack:
        stmt, guards = stack.pop()
        if isinstance(stmt, ScheduleBlockRealize):
            continue  # a nested block is its own site
        if isinstance(stmt, Block):
            stack.extend((child, guards) for child in reversed(stmt.stmts))
        elif isinstance(stmt, IfThenElse):
            _loads(stmt.condition, guards, site, None, out)
            cond = substitute(stmt.condition, site.iter_map)
            stack.append((stmt.true_case, guards + ((cond, True),)))
            if stmt.false_case is not None:
                stack.append((stmt.false_case, guards + ((cond, False),)))
        elif isinstance(stmt, Store):
            _loads(stmt.value, guards, site, stmt, out)
            for index in stmt.indices:
                _loads(index, guards, site, stmt, out)
            indices = tuple(substitute(i, site.iter_map) for i in stmt.indices)
            out.append(Access(stmt.tensor, indices, True, guards, store=stmt))
        elif isinstance(stmt, For):
            stack.append((stmt.body, guards))  # its var is block-local: such accesses end UNKNOWN
        else:
            for value in _stmt_exprs(stmt):
                _loads(value, guards, site, None, out)
    return out


def _stmt_exprs(stmt: Stmt) -> list[Expr]:
    return [v for _, v in child_fields(stmt) if isinstance(v, Expr)]


def _loads(expr: Expr, guards: tuple[tuple[Expr, bool], ...], site: BlockSite, store: Store | None,
           out: list[Access]) -> None:
    """Every Load under `expr` with the select branches above it (iterative: deep trees)."""
    stack: list[tuple[Expr, tuple[tuple[Expr, bool], ...]]] = [(expr, guards)]
    while stack:
        node, conds = stack.pop()
        if isinstance(node, Select):
            cond = substitute(node.condition, site.iter_map)
            stack.append((node.false_value, conds + ((cond, False),)))
            stack.append((node.true_value, conds + ((cond, True),)))
            stack.append((node.condition, conds))
            continue
        if isinstance(node, Load):
            indices = tuple(substitute(i, site.iter_map) for i in node.indices)
            out.append(Access(node.tensor, indices, False, conds, store=store))
            stack.extend((i, conds) for i in reversed(node.indices))
            continue
        if isinstance(node, (Var, IntImm, UIntImm, FloatImm, StringImm)):
            continue
        for _, value in reversed(list(child_fields(node))):
            if isinstance(value, Expr):
                stack.append((value, conds))
            elif isinstance(value, tuple):
                stack.extend((v, conds) for v in reversed(value) if isinstance(v, Expr))
