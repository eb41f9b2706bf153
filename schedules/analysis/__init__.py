"""Analyses shared by schedule primitives: structural loop/block queries (`loops`) and, in
`cinn_py.analysis`, exact dependences with islpy."""

from schedules.analysis.loops import (
    StmtIndex, all_blocks, block_names, block_stores, blocks_reading, blocks_writing, child_blocks,
    collect_stmts, const_extent, enclosing_loops, find_block, find_block_or_none, first_store,
    is_ancestor, is_root_block, loads_of, loop_chain_below, loops_between, root_block, root_body,
    single_child, stmt_children, stores_to, tensors_read, tensors_written, vars_in,
)

__all__ = [
    "StmtIndex", "all_blocks", "block_names", "block_stores", "blocks_reading", "blocks_writing",
    "child_blocks", "collect_stmts", "const_extent", "enclosing_loops", "find_block",
    "find_block_or_none", "first_store", "is_ancestor", "is_root_block", "loads_of",
    "loop_chain_below", "loops_between", "root_block", "root_body", "single_child", "stmt_children",
    "stores_to", "tensors_read", "tensors_written", "vars_in",
]
