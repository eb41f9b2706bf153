"""Hand-built ScheduleBlock loop nests: the vocabulary of the fused-attention kernel templates.

The compute DSL is functional: a tensor is a function of its indices. A flash-attention kernel
is not: its running max, running sum and output accumulator are updated once per key block (the
online softmax), a loop-carried state that no compute expresses. The attention templates
(`forward`, `backward`) therefore build their nests directly, in the lowered form the compute
DSL would produce: serial loops around ScheduleBlocks whose iter vars are bound to the loop vars
(reduce iter vars flagged), one store per block. The interpreter runs them as they are; the
schedule step turns them into fast code.

Loops carry a *role* in their name's suffix (`ROLE_SUFFIXES`): what the template means the loop
to become. `schedules.tactics.attention` maps roles to the target's loop kinds (x86: the
outermost head loop parallel, register-tile loops unrolled, lane loops vectorised), the way the
matmul tactic maps its tile loops, so the template states the tiling once for every target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cinn_py.ir import (
    Block, Expr, For, IntImm, ScheduleBlock, ScheduleBlockRealize, Stmt, Store, Tensor, Var,
    int32, substitute,
    unique_name,
)

__all__ = ["PARALLEL", "ROLE_SUFFIXES", "SERIAL", "UNROLL", "VECTOR", "Loop", "block", "nest", "role_of"]

PARALLEL = "par"
"""The head loop: one task per (batch, head) pair (no loop-carried state crosses heads)."""
UNROLL = "unr"
"""A register-tile loop (rows and vector columns of a micro-kernel): unrolled."""
VECTOR = "vec"
"""A lane loop: vectorised at its extent."""
SERIAL = "ser"
ROLE_SUFFIXES = (PARALLEL, UNROLL, VECTOR)


def role_of(loop_name: str) -> str:
    """The role a template gave a loop (its name's `_<role>` suffix, before the `_<n>` that makes
    a repeated name unique), SERIAL if none."""
    parts = loop_name.split("_")
    if len(parts) > 2 and parts[-1].isdigit():
        parts.pop()
    return parts[-1] if len(parts) > 1 and parts[-1] in ROLE_SUFFIXES else SERIAL


@dataclass(frozen=True)
class Loop:
    """One loop of a nest: `for (var, start, extent)`; `reduce` marks it a reduction loop of the
    blocks under it (their iter var bound to it is a reduce axis)."""

    var: Var
    extent: Expr
    start: Expr
    reduce: bool = False

    @staticmethod
    def new(hint: str, extent: int | Expr, role: str = SERIAL, start: int | Expr = 0,
            reduce: bool = False) -> Loop:
        name = unique_name(hint if role == SERIAL else f"{hint}_{role}")
        return Loop(Var(name, int32), _expr(extent), _expr(start), reduce)


def _expr(value: int | Expr) -> Expr:
    return IntImm(int32, value) if isinstance(value, int) else value


def nest(loops: Sequence[Loop], body: Sequence[Stmt]) -> Stmt:
    """`for loops[0] { for loops[1] { ... body } }` (no loops: the body as one statement)."""
    stmt: Stmt = body[0] if len(body) == 1 else Block(tuple(body))
    for lp in reversed(loops):
        inner = stmt if isinstance(stmt, Block) else Block((stmt,))
        stmt = For(lp.var, lp.start, lp.extent, inner)
    return stmt


def block(name: str, loops: Sequence[Loop], tensor: Tensor, indices: Sequence[Expr], value: Expr,
          attrs: tuple[tuple[str, bool | int | float | str], ...] = ()) -> ScheduleBlockRealize:
    """`ScheduleBlock(name) { iter vars = axis.bind(loops); tensor[indices] = value }`, written over
    the loop vars of `loops` (the enclosing loops the block depends on) and rebound to its own
    iter vars, as the lowering binds them."""
    ivars = [_iter_var(k, lp) for k, lp in enumerate(loops)]
    mapping: dict[Var, Expr] = {lp.var: iv for lp, iv in zip(loops, ivars)}
    store = Store(tensor, substitute(value, mapping), tuple(substitute(i, mapping) for i in indices))
    return ScheduleBlockRealize(tuple(lp.var for lp in loops),
                                ScheduleBlock(name, tuple(ivars), store, attrs=attrs))


def _iter_var(k: int, lp: Loop) -> Var:
    """The iter var bound to `lp`: bounded when the loop's range is constant (a causal nest's
    range depends on an outer loop, which a bound cannot say)."""
    name = unique_name(f"i{k}")
    if isinstance(lp.start, IntImm) and isinstance(lp.extent, IntImm):
        return Var(name, int32, lower_bound=lp.start,
                   upper_bound=IntImm(int32, lp.start.value + lp.extent.value),
                   is_reduce_axis=lp.reduce)
    return Var(name, int32, is_reduce_axis=lp.reduce)
