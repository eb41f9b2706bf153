"""Where each schedule block sits: enclosing loops, guards, execution-order positions.

`collect_sites(func)` walks a LoweredFunc once and records, for every ScheduleBlockRealize other
than the root, its enclosing `For`s (outermost first), the `IfThenElse` guards on the way (with
polarity: the else branch holds `not cond`), the 2d+1 execution-order vector (statement
positions interleaved with loop vars), and the substitution of block iter vars by their bound
values (so indices are expressions of loop vars and symbolic dims only).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cinn_py.ir import (
    Block, Expr, For, IfThenElse, Load, LoweredFunc, ScheduleBlockRealize, Stmt, Store, Var,
    substitute, walk,
)
from cinn_py.symbolic.access import Access

SchedItem = int | For


@dataclass(frozen=True)
class BlockSite:
    realize: ScheduleBlockRealize
    loops: tuple[For, ...]
    guards: tuple[tuple[Expr, bool], ...]
    schedule: tuple[SchedItem, ...]
    iter_map: dict[Var, Expr] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.realize.name

    def accesses(self) -> list[Access]:
        """Loads and stores of this block's own body (nested blocks are their own sites)."""
        out: list[Access] = []
        _collect_accesses(self.realize.schedule_block.body, self.iter_map, (), out)
        return out


def collect_sites(func: LoweredFunc) -> list[BlockSite]:
    """Every non-root block of `func`, in program order."""
    sites: list[BlockSite] = []
    _walk(func.body, (), (), (), {}, sites)
    return sites


def _walk(stmt: Stmt, loops: tuple[For, ...], guards: tuple[tuple[Expr, bool], ...],
          sched: tuple[SchedItem, ...], iter_map: dict[Var, Expr], out: list[BlockSite]) -> None:
    if isinstance(stmt, Block):
        for k, child in enumerate(stmt.stmts):
            _walk(child, loops, guards, sched + (k,), iter_map, out)
    elif isinstance(stmt, For):
        _walk(stmt.body, loops + (stmt,), guards, sched + (stmt,), iter_map, out)
    elif isinstance(stmt, IfThenElse):
        cond = substitute(stmt.condition, iter_map)
        _walk(stmt.true_case, loops, guards + ((cond, True),), sched + (0,), iter_map, out)
        if stmt.false_case is not None:
            _walk(stmt.false_case, loops, guards + ((cond, False),), sched + (1,), iter_map, out)
    elif isinstance(stmt, ScheduleBlockRealize):
        block = stmt.schedule_block
        inner_map = dict(iter_map)
        for var, value in zip(block.iter_vars, stmt.iter_values):
            inner_map[var] = substitute(value, iter_map)
        if block.iter_vars or block.name != "root":
            out.append(BlockSite(stmt, loops, guards, sched, inner_map))
        _walk(block.body, loops, guards, sched + (0,), inner_map, out)


def _collect_accesses(stmt: Stmt, iter_map: dict[Var, Expr],
                      guards: tuple[tuple[Expr, bool], ...], out: list[Access]) -> None:
    if isinstance(stmt, ScheduleBlockRealize):
        return
    if isinstance(stmt, Block):
        for child in stmt.stmts:
            _collect_accesses(child, iter_map, guards, out)
        return
    if isinstance(stmt, IfThenElse):
        cond = substitute(stmt.condition, iter_map)
        _add_loads(stmt.condition, iter_map, guards, out)
        _collect_accesses(stmt.true_case, iter_map, guards + ((cond, True),), out)
        if stmt.false_case is not None:
            _collect_accesses(stmt.false_case, iter_map, guards + ((cond, False),), out)
        return
    if isinstance(stmt, Store):
        _add_loads(stmt.value, iter_map, guards, out)
        for index in stmt.indices:
            _add_loads(index, iter_map, guards, out)
        indices = tuple(substitute(i, iter_map) for i in stmt.indices)
        out.append(Access(stmt.tensor, indices, True, guards))
        return
    if isinstance(stmt, For):
        # A loop inside a block body: its var is unbound here, so accesses using it are
        # over-approximated by the caller (the var is not affine-known).
        _collect_accesses(stmt.body, iter_map, guards, out)
        return
    _add_loads(stmt, iter_map, guards, out)  # Let, Evaluate, Alloc: their loads


def _add_loads(expr: Expr | Stmt, iter_map: dict[Var, Expr], guards: tuple[tuple[Expr, bool], ...],
               out: list[Access]) -> None:
    for node in walk(expr):
        if isinstance(node, Load):
            indices = tuple(substitute(i, iter_map) for i in node.indices)
            out.append(Access(node.tensor, indices, False, guards))
