"""Queries: get_block, get_loops, get_all_blocks, get_child_blocks, get_root_block
(CINN `GetBlock`, `GetLoops`, `GetAllBlocks`, `GetChildBlocks`, `GetRootBlock`)."""

from __future__ import annotations

from cinn_py.ir import For, LoweredFunc, ScheduleBlockRealize, Stmt
from schedules.analysis.loops import (
    all_blocks, block_names, child_blocks, find_block_or_none, index_of, root_block,
)
from schedules.errors import BlockNotFoundError, schedule_error

__all__ = ["get_block", "get_loops", "get_all_blocks", "get_child_blocks", "get_root_block"]


def get_block(func: LoweredFunc, name: str) -> ScheduleBlockRealize:
    """The unique block called `name`."""
    try:
        block = find_block_or_none(func, name)
    except ValueError as exc:
        raise schedule_error(BlockNotFoundError, "get_block", str(exc), func) from None
    if block is None:
        known = ", ".join(block_names(func)) or "none"
        raise schedule_error(BlockNotFoundError, "get_block",
                             f"no block named '{name}' (blocks: {known})", func)
    return block


def get_loops(func: LoweredFunc, block: ScheduleBlockRealize) -> list[For]:
    """Loops enclosing `block`, outer -> inner (empty when it has none)."""
    return index_of(func).enclosing_loops(block)


def get_all_blocks(func: LoweredFunc) -> list[ScheduleBlockRealize]:
    """Every block except the root, pre-order; does not descend into a collected block."""
    return all_blocks(func)


def get_child_blocks(func: LoweredFunc, node: Stmt) -> list[ScheduleBlockRealize]:
    """Outermost blocks nested inside `node` (a loop or a block)."""
    return child_blocks(node)


def get_root_block(func: LoweredFunc) -> ScheduleBlockRealize:
    """The root block of `func`."""
    return root_block(func)
