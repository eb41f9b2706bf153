"""What blocks read and write, and the regions of tensors a loop iteration touches.

Queries used by the block-level primitives (compute_at, compute_inline, cache, reduction,
align): the accesses of a block with its iter vars replaced by its iter values (so they are
functions of loop vars), and the bounds of such an index over a set of loop ranges (the region a
loop iteration needs). Tree navigation lives in `schedules.analysis.loops`.

Index arithmetic goes through `simplify_index` (re-exported from `schedules.analysis.arith`, the
one place the schedules simplify and prove), which keeps the generated extents readable
(`(i*16 + 15) - (i*16) + 1` prints as `16`).
"""

from __future__ import annotations

from cinn_py.ir import (
    Add, Div, Expr, For, IntImm, Load, Max, Min, Mod, Mul, ScheduleBlockRealize, Stmt, Sub, Var,
    int32, substitute, walk,
)
from cinn_py.symbolic.access import Access
from schedules.analysis.arith import simplify_index
from schedules.analysis.loops import block_stores

__all__ = [
    "Access", "accesses", "block_buffers_written", "block_buffers_read", "iter_binding",
    "is_reduce_iter", "reduce_iter_vars", "simplify_index", "index_bounds", "loop_ranges",
    "const_value", "loop_vars_in", "int_like", "Interval",
]


# ----------------------------------------------------------------------------------------------
# Accesses
# ----------------------------------------------------------------------------------------------
def _loads(node: Stmt | Expr) -> list[Load]:
    return [n for n in walk(node) if isinstance(n, Load)]


def iter_binding(block: ScheduleBlockRealize) -> dict[Var, Expr]:
    """iter var -> iter value of a block realize."""
    return dict(zip(block.schedule_block.iter_vars, block.iter_values))


def accesses(block: ScheduleBlockRealize) -> list[Access]:
    """Every store and load of `block` with the block's iter vars replaced by its iter values."""
    binding = iter_binding(block)
    out: list[Access] = []
    for store in block_stores(block):
        out.append(Access(store.tensor, tuple(substitute(i, binding) for i in store.indices), True,
                          block=block))
    for load in _loads(block.schedule_block.body):
        out.append(Access(load.tensor, tuple(substitute(i, binding) for i in load.indices), False,
                          block=block))
    return out


def block_buffers_written(block: ScheduleBlockRealize) -> set[str]:
    return {s.tensor.buffer.name for s in block_stores(block)}


def block_buffers_read(block: ScheduleBlockRealize) -> set[str]:
    return {ld.tensor.buffer.name for ld in _loads(block.schedule_block.body)}


def is_reduce_iter(var: Var) -> bool:
    return bool(var.is_reduce_axis)


def reduce_iter_vars(block: ScheduleBlockRealize) -> list[Var]:
    return [v for v in block.schedule_block.iter_vars if is_reduce_iter(v)]


def loop_vars_in(expr: Expr | Stmt, loops: list[For] | tuple[For, ...]) -> set[Var]:
    """The loop vars of `loops` that `expr` uses."""
    wanted = {loop.loop_var for loop in loops}
    return {n for n in walk(expr) if isinstance(n, Var) and n in wanted}


# ----------------------------------------------------------------------------------------------
# Index arithmetic (the switch point to cinn_py.symbolic)
# ----------------------------------------------------------------------------------------------
def int_like(value: int, like: Expr) -> Expr:
    """An integer immediate with the index dtype of `like` (int64 in dynamic-shape functions)."""
    dtype = like.dtype if like.dtype.is_int else int32
    return IntImm(dtype, value)


def const_value(e: Expr) -> int | None:
    """The value of an integer immediate (after simplification), else None."""
    e = simplify_index(e)
    return e.value if isinstance(e, IntImm) else None


# ----------------------------------------------------------------------------------------------
# Bounds of an index over loop ranges (interval arithmetic, sound over-approximation)
# ----------------------------------------------------------------------------------------------
Interval = tuple[Expr, Expr]
"""Inclusive (lo, hi)."""


def loop_ranges(loops: list[For] | tuple[For, ...]) -> dict[Var, Interval]:
    """Inclusive value range of each loop var: [min, min + extent - 1]."""
    out: dict[Var, Interval] = {}
    for loop in loops:
        hi = simplify_index(Sub(Add(loop.min, loop.extent), int_like(1, loop.extent)))
        out[loop.loop_var] = (loop.min, hi)
    return out


def _nonneg(e: Expr, ranges: dict[Var, Interval]) -> bool:
    """Conservatively true when `e >= 0` for every value of the vars in `ranges`."""
    if isinstance(e, IntImm):
        return e.value >= 0
    if isinstance(e, Var):
        if e in ranges:
            return _nonneg(ranges[e][0], {})
        if e.is_symbolic_constant:
            return True
        return e.lower_bound is not None and _nonneg(e.lower_bound, {})
    if isinstance(e, (Add, Mul, Div, Mod, Min, Max)):
        return _nonneg(e.a, ranges) and _nonneg(e.b, ranges)
    return False


def _positive(e: Expr) -> bool:
    if isinstance(e, IntImm):
        return e.value > 0
    if isinstance(e, Var) and e.is_symbolic_constant:
        lb = e.lower_bound
        return lb is None or (isinstance(lb, IntImm) and lb.value >= 1)
    if isinstance(e, Mul):
        return _positive(e.a) and _positive(e.b)
    return False


def index_bounds(e: Expr, ranges: dict[Var, Interval],
                 known: dict[Var, Interval] | None = None) -> Interval | None:
    """Inclusive bounds of `e` when the vars in `ranges` vary over them (others are fixed), or
    None when they cannot be bounded symbolically (e.g. a product of two varying vars).

    `known`: ranges of fixed vars (the loops around a compute_at target) used only to prove
    signs: `(o * 4 + ii) / 8` over `ii` is monotone because `o >= 0`, so a fused-and-split
    consumer's div/mod indices get bounds."""
    used = {n for n in walk(e) if isinstance(n, Var) and n in ranges}
    if not used:
        return e, e
    result = _bounds(e, ranges, {**(known or {}), **ranges})
    if result is None:
        return None
    return simplify_index(result[0]), simplify_index(result[1])


def _bounds(e: Expr, ranges: dict[Var, Interval], signs: dict[Var, Interval]) -> Interval | None:
    if isinstance(e, Var) and e in ranges:
        return ranges[e]
    if not any(isinstance(n, Var) and n in ranges for n in walk(e)):
        return e, e
    if isinstance(e, (Add, Sub)):
        a, b = _bounds(e.a, ranges, signs), _bounds(e.b, ranges, signs)
        if a is None or b is None:
            return None
        if isinstance(e, Add):
            return Add(a[0], b[0]), Add(a[1], b[1])
        return Sub(a[0], b[1]), Sub(a[1], b[0])
    if isinstance(e, Mul):
        return _mul_bounds(e, ranges, signs)
    if isinstance(e, Div) and _positive(e.b) and _nonneg(e.a, signs):
        a = _bounds(e.a, ranges, signs)
        # Truncating division by a positive divisor is monotone.
        return None if a is None else (Div(a[0], e.b), Div(a[1], e.b))
    if isinstance(e, Mod) and _positive(e.b) and _nonneg(e.a, signs):
        return int_like(0, e), simplify_index(Sub(e.b, int_like(1, e.b)))
    if isinstance(e, (Min, Max)):
        a, b = _bounds(e.a, ranges, signs), _bounds(e.b, ranges, signs)
        if a is None or b is None:
            return None
        op = type(e)
        return op(a[0], b[0]), op(a[1], b[1])
    return None


def _mul_bounds(e: Mul, ranges: dict[Var, Interval], signs: dict[Var, Interval]) -> Interval | None:
    a_fixed = not any(isinstance(n, Var) and n in ranges for n in walk(e.a))
    varying, fixed = (e.b, e.a) if a_fixed else (e.a, e.b)
    if any(isinstance(n, Var) and n in ranges for n in walk(fixed)):
        return None
    v = _bounds(varying, ranges, signs)
    if v is None:
        return None
    if isinstance(fixed, IntImm) and fixed.value < 0:
        return Mul(v[1], fixed), Mul(v[0], fixed)
    if not _nonneg(fixed, signs):
        return None
    return Mul(v[0], fixed), Mul(v[1], fixed)
