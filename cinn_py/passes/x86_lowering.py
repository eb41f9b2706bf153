"""The x86 target's post-lowering passes (`Target.x86().passes`), run in this order by the
pipeline's `target_passes` step; the LLVM backend then only prints and loads what they produce.

- `check_x86_loops`: rejects what x86 cannot run, naming the loop: a GPU-bound loop, or a
  parallel loop inside another (CINN: "Nested parallel loop is not supported"). Returns the
  function unchanged.
- `inline_blocks_x86`: every schedule block replaced by its body with the iter vars substituted
  (`inline_blocks.inline_schedule_blocks`, as the GPU lowering does). A block carrying an
  attribute the x86 printer acts on (`X86_BLOCK_ATTRS`: `fp_contract` contracts `a * b + c` into an
  FMA, `fast_math` selects the polynomial exp/log/..., `x86_nontemporal` streams the stores)
  stays as an attribute scope: a block without iter vars around its inlined body, so that the
  printer still knows which statements the attribute covers (TVM keeps such hints as `AttrStmt`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    FAST_MATH_ATTR, FP_CONTRACT_ATTR, NONTEMPORAL_ATTR, Block, For, ForType, IfThenElse, LoweredFunc,
    ScheduleBlock, ScheduleBlockRealize, Stmt, print_ir_marked,
)
from cinn_py.passes.inline_blocks import inline_schedule_blocks

X86_BLOCK_ATTRS = (FAST_MATH_ATTR, FP_CONTRACT_ATTR, NONTEMPORAL_ATTR)
"""Block attributes the x86 printer reads; `inline_blocks_x86` keeps them as attribute scopes."""


def check_x86_loops(func: LoweredFunc) -> LoweredFunc:
    """`func` unchanged, or a CompileError for a GPU-bound loop or a nested parallel loop."""
    _check(func, func.body, inside_parallel=None)
    return func


def _check(func: LoweredFunc, node: Any, inside_parallel: For | None) -> None:
    if isinstance(node, For):
        if node.for_type in (ForType.GPU_BLOCK, ForType.GPU_THREAD):
            raise CompileError(f"x86 codegen: loop '{node.loop_var.name}' is bound to {node.bind_axis}; "
                               "GPU-bound loops cannot be compiled for x86 (use parallel/vectorize, or "
                               "target='cuda')", print_ir_marked(func, node))
        if node.for_type is ForType.PARALLEL:
            if inside_parallel is not None:
                raise CompileError(
                    f"x86 codegen: Nested parallel loop is not supported, try to fuse them instead "
                    f"(loop '{node.loop_var.name}' is inside parallel loop "
                    f"'{inside_parallel.loop_var.name}')", print_ir_marked(func, node))
            inside_parallel = node
        _check(func, node.body, inside_parallel)
    elif isinstance(node, Block):
        for child in node.stmts:
            _check(func, child, inside_parallel)
    elif isinstance(node, IfThenElse):
        _check(func, node.true_case, inside_parallel)
        if node.false_case is not None:
            _check(func, node.false_case, inside_parallel)
    elif isinstance(node, ScheduleBlockRealize):
        _check(func, node.schedule_block.body, inside_parallel)


def inline_blocks_x86(func: LoweredFunc) -> LoweredFunc:
    """`func` with its schedule blocks inlined; the blocks with x86 attributes become attribute
    scopes (no iter vars) around their inlined bodies."""
    return dataclasses.replace(func, body=inline_schedule_blocks(func.body, _attribute_scope))


def _attribute_scope(block: ScheduleBlock, body: Stmt) -> Stmt:
    attrs = tuple((key, value) for key, value in block.attrs if key in X86_BLOCK_ATTRS and value)
    if not attrs:
        return body
    return ScheduleBlockRealize((), ScheduleBlock(block.name, (), body, attrs=attrs))


__all__ = ["X86_BLOCK_ATTRS", "check_x86_loops", "inline_blocks_x86"]
