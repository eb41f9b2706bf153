"""`inline_schedule_blocks`: every `ScheduleBlockRealize` replaced by its body, the block's iter
vars substituted by their bound values. Both backends need it before emitting code (C and LLVM IR
have no notion of a schedule block; CINN replaces the blocks before codegen as well): the GPU
`gpu_bind` pass runs it, and the x86 target pass `inline_blocks_x86` with a per-block rewrite
(blocks carrying x86 attributes stay as attribute scopes).
"""

from __future__ import annotations

from collections.abc import Callable

from cinn_py.ir import Mutator, ScheduleBlock, ScheduleBlockRealize, Stmt, substitute

# What a backend may do to a block's (already inlined) body before the iter vars are substituted.
BlockRewrite = Callable[[ScheduleBlock, Stmt], Stmt]


class _BlockInliner(Mutator):
    def __init__(self, rewrite: BlockRewrite | None) -> None:
        self.rewrite = rewrite

    def visit_schedule_block_realize(self, node: ScheduleBlockRealize) -> Stmt:
        block = node.schedule_block
        body = self.visit(block.body)
        if self.rewrite is not None:
            body = self.rewrite(block, body)
        mapping = dict(zip(block.iter_vars, (self.visit(v) for v in node.iter_values)))
        return substitute(body, mapping)


def inline_schedule_blocks(stmt: Stmt, rewrite: BlockRewrite | None = None) -> Stmt:
    """`stmt` with every schedule block replaced by its body (iter vars substituted); `rewrite`,
    when given, rewrites each block's body first (inner blocks are inlined before outer ones)."""
    return _BlockInliner(rewrite).visit(stmt)


__all__ = ["BlockRewrite", "inline_schedule_blocks"]
