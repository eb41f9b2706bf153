"""`fuse(loops)` (CINN `Fuse`): merge adjacent, perfectly nested loops into one.

`for (i, 0, 32) { for (j, 0, 64) { body } }` becomes `for (i_j_fused, 0, 2048) { body }` with
`i -> i_j_fused / 64` and `j -> i_j_fused % 64`. Rules: at least two distinct loops, listed
outer -> inner; each loop's body is exactly the next loop ("adjacent"); every loop starts at 0;
the inner loops are serial and the outermost is serial, parallel or unrolled (its kind carries
over, as in CINN). Fusing never changes the execution order, so it needs no dependence check.

Legality: every rule is syntactic and exact (adjacency, starts, kinds); no islpy query is needed
because a row-major fuse of a perfect nest is an order-preserving bijection.
"""

from __future__ import annotations

from collections.abc import Sequence

from cinn_py.ir import (
    Expr, For, ForType, LoweredFunc, Var, const, is_const_int, current_context, replace_stmt,
)
from schedules.analysis.arith import product, simplify_index
from schedules.analysis.loops import single_child
from schedules.primitives._tree import substitute_loop_vars
from schedules.errors import (
    InvalidArgumentError, LoopKindError, LoopStartError, NotPerfectlyNestedError, schedule_error,
)
from schedules.registry import primitive

__all__ = ["fuse", "check_fusable", "fused_substitution"]


def check_fusable(func: LoweredFunc, loops: Sequence[For], primitive: str) -> None:
    """Raise unless `loops` are >= 2 distinct, adjacent, perfectly nested, 0-based loops."""
    if len(loops) < 2:
        raise schedule_error(InvalidArgumentError, primitive,
                             f"needs at least 2 loops, got {len(loops)}", func,
                             *loops)
    if len({id(lp) for lp in loops}) != len(loops):
        raise schedule_error(InvalidArgumentError, primitive, "the same loop is listed twice", func, *loops)
    for outer, inner in zip(loops, loops[1:]):
        if single_child(outer) is not inner:
            count = len(outer.body.stmts)
            what = f"{count} statements" if count != 1 else "a different statement"
            raise schedule_error(NotPerfectlyNestedError, primitive,
                                 f"loops must be adjacent: the body of '{outer.loop_var.name}' must be "
                                 "exactly loop "
                                 f"'{inner.loop_var.name}', but it holds {what}", func, outer, inner)
    for loop in loops:
        if not is_const_int(loop.min, 0):
            raise schedule_error(LoopStartError, primitive,
                                 f"loop '{loop.loop_var.name}' must start at 0, but starts "
                                 f"at {loop.min}", func, loop)
    for loop in loops[1:]:
        if loop.for_type is not ForType.SERIAL:
            raise schedule_error(LoopKindError, primitive,
                                 f"inner loop '{loop.loop_var.name}' must be serial, but is "
                                 f"{loop.for_type.value}", func, loop)
    if loops[0].for_type not in (ForType.SERIAL, ForType.PARALLEL, ForType.UNROLLED):
        raise schedule_error(LoopKindError, primitive,
                             f"outer loop '{loops[0].loop_var.name}' must be serial, "
                             f"parallel or unrolled, but is {loops[0].for_type.value}", func, loops[0])
    _check_fused_extent_fits(func, loops, primitive)


def _check_fused_extent_fits(func: LoweredFunc, loops: Sequence[For], primitive: str) -> None:
    """The fused loop variable keeps the outer loop's dtype, so a constant fused extent must fit
    it (an int32 counter over 2^32 iterations would wrap and run no iterations at all)."""
    idt = loops[0].loop_var.dtype
    extents = [lp.extent for lp in loops]
    if idt.bits >= 64 or not all(is_const_int(e) for e in extents):
        return
    total = 1
    for e in extents:
        total *= e.value  # type: ignore[attr-defined]
    if total > 2 ** (idt.bits - 1) - 1:
        raise schedule_error(InvalidArgumentError, primitive,
                             f"the fused extent {total} does not fit the {idt} loop variable (max "
                             f"{2 ** (idt.bits - 1) - 1}); fuse fewer loops or lower with int64 indices",
                             func, *loops)


def fused_substitution(loops: Sequence[For], fused: Var) -> dict[Var, Expr]:
    """Old loop var -> expression of the fused var (`/` by the inner extents, `%` by its own)."""
    mapping: dict[Var, Expr] = {}
    idt = fused.dtype
    for k, loop in enumerate(loops):
        inner = product([lp.extent for lp in loops[k + 1:]], idt)
        value: Expr = fused if is_const_int(inner, 1) else fused / inner
        if k > 0:
            value = value % loop.extent
        mapping[loop.loop_var] = simplify_index(value)
    return mapping


@primitive
def fuse(func: LoweredFunc, loops: Sequence[For]) -> tuple[LoweredFunc, For]:
    """Fuse `loops` (outer -> inner); returns the new function and the fused loop."""
    check_fusable(func, loops, "fuse")
    outer = loops[0]
    idt = outer.loop_var.dtype
    # CINN names the fused loop without its UniqName counters, so a later split of it gives
    # `i_j_fused`, `i_j_fused_0` as for a lowered loop (it gave `i_j_fused_0`, `i_j_fused_1`).
    fused = Var(current_context().names.new_loop("_".join(lp.loop_var.name for lp in loops) + "_fused"), idt)
    body = substitute_loop_vars(loops[-1].body, fused_substitution(loops, fused))
    new = For(fused, const(0, idt), product([lp.extent for lp in loops], idt), body, outer.for_type)
    return replace_stmt(func, outer, new), new
