"""`reorder(loops)` (CINN `Reorder`): permute loops of one nest.

The listed loops must lie on one chain: each is inside the next-shallower one and every level
between the shallowest and the deepest is a single statement (a loop, or an `if` guard without
else). Loops that are not listed keep their positions; the listed ones are permuted into the
positions they occupy, in the order given; guards stay at their depth, as in CINN. Rejected when
a guard, extent or min would use a loop var that moves below it, or when the permutation could
reverse a dependence (`schedules.analysis.deps`). Loops keep their uids, so their handles stay
valid (Differs from CINN, where reorder invalidates loop handles).

Legality: the chain, guard and bound rules are syntactic and exact. The dependence rule (every
moved loop carries no dependence other than a reduction's own accumulation) is decided
syntactically when each conflicting access pair has one index tuple that determines the loop,
and exactly with islpy (`cinn_py.analysis`) otherwise; non-affine indices count as conflicts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cinn_py.ir import Block, For, IfThenElse, LoweredFunc, Stmt, replace_stmt
from schedules.analysis.deps import check_permutation_legal
from schedules.analysis.loops import StmtIndex, vars_in
from schedules.errors import InvalidArgumentError, NotAChainError, schedule_error

__all__ = ["reorder"]


def reorder(func: LoweredFunc, loops: Sequence[For]) -> LoweredFunc:
    """Reorder `loops` of one chain into the listed order."""
    if len({id(lp) for lp in loops}) != len(loops):
        raise schedule_error(InvalidArgumentError, "reorder", "the same loop is listed twice", func, *loops)
    if len(loops) <= 1:
        return func
    index = StmtIndex(func)
    chain = _chain(func, index, loops)
    listed = {id(lp) for lp in loops}
    order = iter(loops)
    new_chain = [next(order) if id(node) in listed else node for node in chain]
    _check_scoping(func, new_chain)
    check_permutation_legal(func, chain, new_chain, "reorder")
    body: Stmt = chain[-1].body  # type: ignore[union-attr]
    for node in reversed(new_chain):
        if isinstance(node, For):
            body = dataclasses.replace(node, body=body if isinstance(body, Block) else Block((body,)))
        else:
            body = dataclasses.replace(node, true_case=body if isinstance(body, Block) else Block((body,)))
    return replace_stmt(func, chain[0], body)


def _chain(func: LoweredFunc, index: StmtIndex, loops: Sequence[For]) -> list[Stmt]:
    """Loops and guards from the shallowest to the deepest listed loop."""
    depth = {id(lp): len(index.ancestors(lp)) for lp in loops}
    ordered = sorted(loops, key=lambda lp: depth[id(lp)])
    top, bottom = ordered[0], ordered[-1]
    path = index.ancestors(bottom) + [bottom]
    start = next((k for k, node in enumerate(path) if node is top), None)
    on_path = {id(node) for node in path}
    if start is None or any(id(lp) not in on_path for lp in loops):
        outside = next(lp for lp in loops if id(lp) not in on_path) if start is not None else top
        raise schedule_error(NotAChainError, "reorder", f"loops are not a chain: '{outside.loop_var.name}' does not "
                             f"enclose '{bottom.loop_var.name}'", func, outside, bottom)
    chain: list[Stmt] = []
    for node in path[start:]:
        if isinstance(node, Block):
            if len(node.stmts) != 1:
                raise schedule_error(NotAChainError, "reorder", f"loops are not a chain: a level between "
                                     f"'{top.loop_var.name}' and '{bottom.loop_var.name}' holds {len(node.stmts)} "
                                     "statements", func, node.stmts[0])
            continue
        if isinstance(node, IfThenElse) and node.false_case is None or isinstance(node, For):
            chain.append(node)
            continue
        raise schedule_error(NotAChainError, "reorder", f"loops are not a chain: {type(node).__name__} between "
                             f"'{top.loop_var.name}' and '{bottom.loop_var.name}'", func, node)
    return chain


def _check_scoping(func: LoweredFunc, new_chain: list[Stmt]) -> None:
    """Every guard / extent / min may only use loop vars bound above it in the new order."""
    chain_vars = {n.loop_var for n in new_chain if isinstance(n, For)}
    bound: set = set()
    for node in new_chain:
        used = vars_in(node.condition) if isinstance(node, IfThenElse) else vars_in((node.min, node.extent))  # type: ignore[union-attr]
        late = sorted(v.name for v in (used & chain_vars) - bound)
        if late:
            what = "guard" if isinstance(node, IfThenElse) else f"loop '{node.loop_var.name}'"  # type: ignore[union-attr]
            raise schedule_error(NotAChainError, "reorder", f"the {what} uses {', '.join(late)}, which the new order "
                                 "would bind below it", func, node)
        if isinstance(node, For):
            bound.add(node.loop_var)
