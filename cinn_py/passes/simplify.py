"""The `simplify` pass: simplify every expression of a LoweredFunc under its loops' ranges.

Each expression is simplified with the ranges of the loops that enclose it (`{i: (min,
extent)}`) and, inside a schedule block, of its iter vars (derived from the bound values:
`i0 = axis.bind(((i * 8) + j))` gives `i0` the bounds of `((i * 8) + j)`). Guards that become
`true` are removed (their body is spliced in place) and `false` guards keep only their else
branch, as CINN's `Simplify` does after `RemoveGpuForloopsAxis`. Loops are kept, even of extent
1: schedule handles refer to them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cinn_py.ir import (
    Block, BufferRange, Expr, For, IfThenElse, IntImm, LoweredFunc, Mutator, ScheduleBlock,
    ScheduleBlockRealize, Stmt, UIntImm, Var,
)
from cinn_py.symbolic.analyzer import Analyzer
from cinn_py.symbolic.poly import is_index_dtype

__all__ = ["simplify_func", "simplify_stmt"]


class _SimplifyMutator(Mutator):
    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer

    def visit(self, node: Any) -> Any:
        if isinstance(node, Expr):
            return self.an.simplify(node)
        return super().visit(node)

    def visit_for(self, node: For) -> Stmt:
        lo = self.an.simplify(node.min)
        extent = self.an.simplify(node.extent)
        with self.an.scope(node.loop_var, lo, extent):
            body = self.visit(node.body)
        if lo is node.min and extent is node.extent and body is node.body:
            return node
        return dataclasses.replace(node, min=lo, extent=extent, body=body)

    def visit_schedule_block_realize(self, node: ScheduleBlockRealize) -> Stmt:
        values = tuple(self.an.simplify(v) for v in node.iter_values)
        block = node.schedule_block
        bound = [(var, value) for var, value in zip(block.iter_vars, values) if is_index_dtype(value.dtype)]
        new_block = self._visit_block_under(block, bound)
        if new_block is block and all(a is b for a, b in zip(values, node.iter_values)):
            return node
        return dataclasses.replace(node, iter_values=values, schedule_block=new_block)

    def _visit_block_under(self, block: ScheduleBlock, bound: list[tuple[Var, Expr]]) -> ScheduleBlock:
        if not bound:
            return self.visit(block)
        var, value = bound[0]
        lo, hi = self.an.bounds.interval(self.an.poly(value))
        if lo is None or hi is None:
            return self._visit_block_under(block, bound[1:])
        lo_e = self.an.simplify(lo.to_expr(var.dtype))
        extent = self.an.simplify((hi - lo).to_expr(var.dtype) + IntImm(var.dtype, 1))
        with self.an.scope(var, lo_e, extent):
            return self._visit_block_under(block, bound[1:])

    def visit_buffer_range(self, node: BufferRange) -> BufferRange:
        ranges = tuple((self.an.simplify(lo), self.an.simplify(ext)) for lo, ext in node.ranges)
        return node if ranges == node.ranges else dataclasses.replace(node, ranges=ranges)

    def visit_block(self, node: Block) -> Block:
        stmts: list[Stmt] = []
        changed = False
        for stmt in node.stmts:
            new = self.visit(stmt)
            changed |= new is not stmt
            if isinstance(new, Block) and isinstance(stmt, IfThenElse):
                stmts.extend(new.stmts)  # a decided guard: splice its branch in place
            else:
                stmts.append(new)
        return dataclasses.replace(node, stmts=tuple(stmts)) if changed else node

    def visit_if_then_else(self, node: IfThenElse) -> Stmt:
        cond = self.an.simplify(node.condition)
        if isinstance(cond, UIntImm) and cond.dtype.is_bool:
            if cond.value:
                return self.visit(node.true_case)
            return self.visit(node.false_case) if node.false_case is not None else Block(())
        true_case = self.visit(node.true_case)
        false_case = self.visit(node.false_case) if node.false_case is not None else None
        if cond is node.condition and true_case is node.true_case and false_case is node.false_case:
            return node
        return dataclasses.replace(node, condition=cond, true_case=true_case, false_case=false_case)


def simplify_stmt(stmt: Stmt, analyzer: Analyzer | None = None) -> Stmt:
    """Simplify every expression under `stmt` (ranges of loops outside `stmt` via `analyzer`)."""
    return _SimplifyMutator(analyzer or Analyzer()).visit(stmt)


def simplify_func(func: LoweredFunc) -> LoweredFunc:
    """The `simplify` pass: `func` with every expression simplified (statement uids kept)."""
    if not isinstance(func, LoweredFunc):
        raise TypeError(f"simplify_func: expected a LoweredFunc, got {type(func).__name__}")
    body = simplify_stmt(func.body)
    return func if body is func.body else dataclasses.replace(func, body=body)
