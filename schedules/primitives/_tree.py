"""Path-copy tree edits shared by the block-level primitives (compute_at, inline, cache,
reduction, align): remove a leaf and the loops it leaves empty, insert a statement into a loop
body, replace a statement. Nothing is mutated; untouched-but-rebuilt statements keep their uids
(`cinn_py.ir.replace_stmt`), so schedule handles on them stay valid.
"""

from __future__ import annotations

import dataclasses

from typing import Any, TypeVar

from collections.abc import Mapping

from cinn_py.ir import (
    Block, Expr, For, IfThenElse, LoweredFunc, Mutator, ScheduleBlock, ScheduleBlockRealize, Stmt, Var,
    replace_stmt, substitute,
)
from schedules.analysis.arith import simplify_index
from schedules.analysis.loops import index_of

RootT = TypeVar("RootT", bound=LoweredFunc | Stmt)
"""What the path-copying helpers rewrite: a whole function or one statement subtree."""

__all__ = ["replace_with_seq", "remove_stmt", "insert_in_loop", "replace", "replace_many", "program_order",
           "substitute_loop_vars"]


def replace(func: RootT, old: Stmt, new: Stmt) -> RootT:
    """`func` (a function or a statement) with the statement object `old` replaced by `new`
    (path copy)."""
    return replace_stmt(func, old, new)


class _ManyReplacer(Mutator):
    def __init__(self, mapping: dict[int, Stmt]) -> None:
        self.mapping = mapping

    def visit(self, node: Any) -> Any:
        new = self.mapping.get(id(node))
        if new is not None:
            return new
        return super().visit(node)


def replace_many(func: RootT, mapping: dict[int, Stmt]) -> RootT:
    """Replace several statements at once (`id(old) -> new`) in one path-copying walk."""
    return _ManyReplacer(mapping).visit(func)


def replace_with_seq(func: LoweredFunc, old: Stmt, new: tuple[Stmt, ...]) -> LoweredFunc:
    """Replace `old` by the statements `new`, spliced into the enclosing Block when there is one."""
    parent = index_of(func).parent_of(old)
    if isinstance(parent, Block):
        stmts: list[Stmt] = []
        for s in parent.stmts:
            stmts.extend(new if s is old else (s,))
        return replace(func, parent, dataclasses.replace(parent, stmts=tuple(stmts)))
    return replace(func, old, Block(new))


def remove_stmt(func: LoweredFunc, stmt: Stmt) -> LoweredFunc:
    """`func` without `stmt`; loops and guards left with an empty body are removed too
    (CINN `LeafBlockRemovalPlan`)."""
    index = index_of(func)
    target: Stmt = stmt
    while True:
        parent = index.parent_of(target)
        if isinstance(parent, Block):
            grand = index.parent_of(parent)
            if len(parent.stmts) == 1 and isinstance(grand, (For, IfThenElse)):
                target = grand
                continue
            new_parent = dataclasses.replace(parent, stmts=tuple(s for s in parent.stmts if s is not target))
            return replace(func, parent, new_parent)
        if isinstance(parent, ScheduleBlock):
            return replace(func, parent, dataclasses.replace(parent, body=Block(())))
        if isinstance(parent, (For, IfThenElse)):
            target = parent
            continue
        raise ValueError(f"cannot remove a {type(target).__name__} whose parent is {type(parent).__name__}")


def insert_in_loop(func: LoweredFunc, loop: For, stmt: Stmt, at_end: bool) -> LoweredFunc:
    """`func` with `stmt` added at the start (or end) of `loop`'s body."""
    stmts = loop.body.stmts + (stmt,) if at_end else (stmt,) + loop.body.stmts
    new_loop = dataclasses.replace(loop, body=dataclasses.replace(loop.body, stmts=stmts))
    return replace(func, loop, new_loop)


def program_order(func: LoweredFunc) -> dict[int, int]:
    """id(stmt) -> pre-order position, for 'is A before B' questions."""
    return {id(s): k for k, s in enumerate(index_of(func).order)}


class _BindingSimplifier(Mutator):
    def visit_schedule_block_realize(self, node: ScheduleBlockRealize) -> ScheduleBlockRealize:
        node = self.generic_visit(node)
        values = tuple(simplify_index(v) for v in node.iter_values)
        if all(a is b for a, b in zip(values, node.iter_values)):
            return node
        return dataclasses.replace(node, iter_values=values)


def substitute_loop_vars(body: RootT, mapping: Mapping[Var, Expr]) -> RootT:
    """`body` with loop vars replaced by expressions of new loops (split, fuse), its blocks'
    bindings simplified: fusing the loops of a split gives `((x / 256) * 256) + (x % 256)`,
    which binds as `x` (CINN simplifies bindings too)."""
    return _BindingSimplifier().visit(substitute(body, mapping))
