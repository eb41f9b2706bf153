"""Loop metadata of the x86 codegen: which loops LLVM may fully unroll.

A function with many loops of small constant trip count (a compute body deeper than
MAX_EXPR_DEPTH is split into one loop nest per part: `B_part_0`, `B_part_1`, ...) had every loop
fully unrolled and its temporaries promoted to registers, so LLVM optimised one straight-line
block of size proportional to the expression depth, with passes superlinear in a block's size
(InstCombine, the loop vectorizer's cost model, the machine scheduler): compile time grew
quadratically with depth (500 levels: 7.9 s, 2000: 64.5 s). Above MANY_LOOPS loops, each loop
latch carries `llvm.loop.unroll.disable`: LLVM still vectorizes the loops, and the function stays
one block per loop, so compile time stays linear in its size. Ordinary kernels have far fewer
loops and are unrolled as before.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from cinn_py.ir import For, walk

MANY_LOOPS = 32


def has_many_loops(body: Any) -> bool:
    """True when `body` holds more than MANY_LOOPS loops (counting stops there)."""
    count = 0
    for node in walk(body):
        if isinstance(node, For):
            count += 1
            if count > MANY_LOOPS:
                return True
    return False


def no_unroll_loop_id(module: ir.Module) -> ir.MDValue:
    """A fresh loop ID `!N = !{!N, !{!"llvm.loop.unroll.disable"}}` (self-referential, as LLVM
    requires of a loop ID; one per loop, since passes rewrite a loop's ID)."""
    disable = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    loop_id = ir.values.MDValue(module, [disable], name=str(len(module.metadata)))
    loop_id.operands = (loop_id, disable)
    return loop_id
