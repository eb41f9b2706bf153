"""`reorder(loops)` (CINN `Reorder`): permute loops of one nest.

The listed loops must lie on one path: each is inside the next-shallower one. Loops that are not
listed keep their positions; the listed ones are permuted into the positions they occupy, in the
order given. Loops keep their uids, so their handles stay valid (Differs from CINN, where reorder
invalidates loop handles).

What lies between the shallowest and the deepest listed loop:
- `if` guards without else (e.g. a non-dividing split's `if ((i * 8) + i_0 < 30)`) move with the
  loops they test, as CINN moves them: a guard stays at its depth unless a loop its condition
  uses moves below it, and then it goes right under the deepest such loop. A guard is
  independent of the loops it passes, so this changes nothing but where the test runs.
- a level that holds other statements next to the path (a reduction's `T__reduce_init` block
  beside its reduce loop) is first distributed: the loops from the shallowest listed one down to
  that level are copied around those statements, which run before (or after) the nest that holds
  the path, as they did in every iteration. Legal when none of the copied loops carries a
  dependence (then no element one statement touches in one iteration is touched by the other in
  another), decided like the permutation below. The original loops keep their uids on the nest
  that holds the path.

Rejected when an extent or min would use a loop var that moves below it, or when the permutation
could reverse a dependence (`schedules.analysis.dependence`): every moved loop must carry no dependence
other than a reduction's own accumulation, decided syntactically when each conflicting access
pair has one index tuple that determines the loop, and exactly with islpy (`cinn_py.analysis`)
otherwise; non-affine indices count as conflicts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cinn_py.ir import Block, For, IfThenElse, LoweredFunc, Stmt, new_uid, replace_stmt
from schedules.analysis.dependence import check_permutation_legal, loop_carries_dependence
from schedules.analysis.loops import StmtIndex, index_of, vars_in
from schedules.errors import InvalidArgumentError, NotAChainError, schedule_error
from schedules.primitives._tree import replace_with_seq
from schedules.registry import primitive

__all__ = ["reorder"]


@primitive
def reorder(func: LoweredFunc, loops: Sequence[For]) -> LoweredFunc:
    """Reorder `loops` of one chain into the listed order."""
    if len({id(lp) for lp in loops}) != len(loops):
        raise schedule_error(InvalidArgumentError, "reorder", "the same loop is listed twice", func, *loops)
    if len(loops) <= 1:
        return func
    func, loops = _distribute(func, loops)
    chain = _chain(func, index_of(func), loops)
    old_loops = [node for node in chain if isinstance(node, For)]
    listed = {id(lp) for lp in loops}
    order = iter(loops)
    new_loops = [next(order) if id(lp) in listed else lp for lp in old_loops]
    _check_scoping(func, new_loops)
    check_permutation_legal(func, old_loops, new_loops, "reorder")  # type: ignore[arg-type]
    body: Stmt = chain[-1].body  # type: ignore[union-attr]
    for node in reversed(_place_guards(chain, new_loops)):
        if isinstance(node, For):
            body = dataclasses.replace(node, body=body if isinstance(body, Block) else Block((body,)))
        else:
            body = dataclasses.replace(node, true_case=body if isinstance(body, Block) else Block((body,)))
    return replace_stmt(func, chain[0], body)


def _path(func: LoweredFunc, index: StmtIndex, loops: Sequence[For]) -> tuple[list[Stmt], For, For]:
    """The nodes from the shallowest to the deepest listed loop (Blocks included)."""
    depth = {id(lp): len(index.ancestors(lp)) for lp in loops}
    ordered = sorted(loops, key=lambda lp: depth[id(lp)])
    top, bottom = ordered[0], ordered[-1]
    path = index.ancestors(bottom) + [bottom]
    start = next((k for k, node in enumerate(path) if node is top), None)
    on_path = {id(node) for node in path}
    if start is None or any(id(lp) not in on_path for lp in loops):
        outside = next(lp for lp in loops if id(lp) not in on_path) if start is not None else top
        raise schedule_error(NotAChainError, "reorder",
                             f"loops are not a chain: '{outside.loop_var.name}' does not "
                             f"enclose '{bottom.loop_var.name}'", func, outside, bottom)
    return path[start:], top, bottom


def _distribute(func: LoweredFunc, loops: Sequence[For]) -> tuple[LoweredFunc, list[For]]:
    """Distribute the loops above every level of the path that holds other statements too
    (see the module docstring); returns the new function and the listed loops in it."""
    while True:
        path, top, bottom = _path(func, index_of(func), loops)
        level = next((k for k, node in enumerate(path) if isinstance(node, Block) and len(node.stmts) > 1),
                     None)
        if level is None:
            return func, list(loops)
        above = path[:level]
        block: Block = path[level]  # type: ignore[assignment]
        keep = path[level + 1]
        for loop in (n for n in above if isinstance(n, For)):
            if loop_carries_dependence(func, loop, allow_accumulation=True):
                raise schedule_error(NotAChainError, "reorder", f"a level between '{top.loop_var.name}' and "
                                     f"'{bottom.loop_var.name}' holds {len(block.stmts)} statements, and "
                                     "they "
                                     f"cannot be distributed: loop '{loop.loop_var.name}' carries a "
                                     "dependence",
                                     func, loop)
        at = block.stmts.index(keep)
        groups = [block.stmts[:at], (keep,), block.stmts[at + 1:]]
        nests = tuple(_copy_path(above, block, group, fresh=group[0] is not keep) for group
                      in groups if group)
        func = replace_with_seq(func, top, nests)
        by_uid = index_of(func).by_uid
        loops = [by_uid[lp.uid] for lp in loops]  # type: ignore[misc]


def _copy_path(above: list[Stmt], block: Block, stmts: tuple[Stmt, ...], fresh: bool) -> Stmt:
    """The nodes `above` (top first) around `stmts` in place of `block`; `fresh`: new uids (a
    copy), else the originals' (the nest that keeps the path and its handles)."""
    uid = {"uid": new_uid()} if fresh else {}
    node: Stmt = dataclasses.replace(block, stmts=stmts, **uid)
    for parent in reversed(above):
        uid = {"uid": new_uid()} if fresh else {}
        if isinstance(parent, For):
            node = dataclasses.replace(parent,
                                       body=node if isinstance(node, Block) else Block((node,)), **uid)
        elif isinstance(parent, IfThenElse):
            node = dataclasses.replace(parent,
                                       true_case=node if isinstance(node, Block) else Block((node,)), **uid)
        else:  # a single-statement Block between them
            node = dataclasses.replace(parent, stmts=(node,), **uid)
    return node


def _chain(func: LoweredFunc, index: StmtIndex, loops: Sequence[For]) -> list[Stmt]:
    """Loops and guards from the shallowest to the deepest listed loop."""
    path, top, bottom = _path(func, index, loops)
    chain: list[Stmt] = []
    for node in path:
        if isinstance(node, Block):
            continue
        if isinstance(node, IfThenElse) and node.false_case is None or isinstance(node, For):
            chain.append(node)
            continue
        raise schedule_error(NotAChainError, "reorder",
                             f"loops are not a chain: {type(node).__name__} between "
                             f"'{top.loop_var.name}' and '{bottom.loop_var.name}'", func, node)
    return chain


def _place_guards(chain: list[Stmt], new_loops: list[For]) -> list[Stmt]:
    """The new chain: `new_loops` with each guard at its old depth (loops above it), or right
    under the deepest loop its condition uses when that loop moved below it."""
    position = {lp.loop_var: k for k, lp in enumerate(new_loops)}
    at: dict[int, list[Stmt]] = {}
    depth = 0
    for node in chain:
        if isinstance(node, For):
            depth += 1
            continue
        needed = max((position[v] + 1 for v in vars_in(node.condition) if v in position), default=0)  # type: ignore[union-attr]
        at.setdefault(max(depth, needed), []).append(node)
    out: list[Stmt] = []
    for k in range(len(new_loops) + 1):
        out.extend(at.get(k, ()))
        if k < len(new_loops):
            out.append(new_loops[k])
    return out


def _check_scoping(func: LoweredFunc, new_loops: list[For]) -> None:
    """Every extent / min may only use loop vars bound above it in the new order."""
    chain_vars = {n.loop_var for n in new_loops}
    bound: set = set()
    for node in new_loops:
        late = sorted(v.name for v in (vars_in((node.min, node.extent)) & chain_vars) - bound)
        if late:
            raise schedule_error(NotAChainError, "reorder", f"the loop '{node.loop_var.name}' uses "
                                 f"{', '.join(late)}, which the new order would bind below it", func, node)
        bound.add(node.loop_var)
