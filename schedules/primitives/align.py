"""align_iter_space: loop alignment of a fused group onto one `[spatial, reduce]` iteration space
(seed 003 §2.2 step (2); CINN's early `AlignIterSpaceTactic`).

The *master* block decides the space: the first reduction update block (spatial extents
`S1..Sn` = its loops outside the reduce loops, reduce extents `R1..Rm` = the reduce loops), else
the last block (all of its loops are spatial). Every top-level loop nest is then rebuilt as

    serial for (sp, 0, S1 * ... * Sn)          # pure spatial iter
      serial for (rb, 0, R1 * ... * Rm)        # only where the nest has the reduce loops
        ScheduleBlock(X) { vi, vj, vk = axis.bind((sp / S2), (sp % S2), rb) ... }

The leading perfectly nested loops of a nest must have the spatial extents (proved equal, so
symbolic dims work; unit loops, such as a `keepdim` reduction's `0:1` axis, are fused along
wherever they are); below them, a chain of loops with the reduce extents becomes `rb`. This is
how the seed aligns both kinds of non-reduce blocks: elementwise blocks over `[S1, S2]` get only
`sp`, and elementwise or broadcast blocks over `[S1, S2, R]` (`E[i, j, k] = D[i, j]`, whose
trailing axis is not a reduce axis but has the reduce extent) get `[sp, rb]`, so that they can
later share the reduction's tiled `rb` loops (seed step (6)). A nest whose loops match neither
form is an error naming the nest and both extent lists. Loop vars of the substituted loops
become `sp / (S_{k+1}...S_n) % S_k` (outermost without `%`, innermost without `/`).

Loops fused into `sp` / `rb` must be serial (`LoopKindError` otherwise: a bind axis or vector
factor chosen for one loop means nothing on the product); a chain of a single loop is only renamed
and keeps its uid and kind. Legality is syntactic and exact: fusing a perfectly nested chain
row-major keeps the execution order of every instance, so no dependence check is needed.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import (
    Block, Div, Expr, For, ForType, LoweredFunc, Mod, Mul, ScheduleBlockRealize, Stmt, Var, print_ir,
    substitute, walk,
)
from schedules.analysis.arith import prove_equal
from schedules.analysis.loops import all_blocks, index_of, root_block
from schedules.analysis.regions import const_value, int_like, simplify_index
from schedules.errors import LoopKindError, ScheduleError, schedule_error
from schedules.registry import primitive
from schedules.primitives._tree import replace

__all__ = ["align_iter_space", "AlignError", "group_space"]


class AlignError(ScheduleError):
    """A loop nest of the group does not have the master's spatial (and reduce) extents."""


def group_space(func: LoweredFunc) -> tuple[list[Expr], list[Expr]]:
    """(spatial extents, reduce extents) of the group's master block."""
    blocks = all_blocks(func)
    if not blocks:
        raise schedule_error(AlignError, "align_iter_space",
                             "the function must contain a block, but has none", func)
    index = index_of(func)
    masters = [b for b in blocks if any(v.is_reduce_axis for v in b.schedule_block.iter_vars)]
    master = masters[0] if masters else blocks[-1]
    loops = index.enclosing_loops(master)
    reduce_vars = {n for v, e in zip(master.schedule_block.iter_vars, master.iter_values) if v.is_reduce_axis
                   for n in walk(e) if isinstance(n, Var)}
    first_reduce = next((k for k, lp in enumerate(loops) if lp.loop_var in reduce_vars), len(loops))
    return [lp.extent for lp in loops[:first_reduce]], [lp.extent for lp in loops[first_reduce:]]


@primitive
def align_iter_space(func: LoweredFunc) -> LoweredFunc:
    """Rewrite every loop nest of `func` into the common `[sp, rb]` form (see the module docstring).

    Raises:
        AlignError: a nest's loops do not have the group's spatial/reduce extents.
    """
    spatial, reduce = group_space(func)
    root = root_block(func).schedule_block
    nests = root.body.stmts if isinstance(root.body, Block) else (root.body,)
    new_nests = tuple(_align_nest(func, nest, spatial, reduce) for nest in nests)
    body = Block(new_nests) if isinstance(root.body, Block) else new_nests[0]
    return replace(func, root, dataclasses.replace(root, body=body))


def _product(extents: list[Expr]) -> Expr:
    out = extents[0]
    for e in extents[1:]:
        out = Mul(out, e)
    return simplify_index(out)


def _significant(extents: list[Expr]) -> list[Expr]:
    """`extents` without the 1s (a keepdim reduction's unit axis), or `[1]` if all are 1."""
    kept = [e for e in extents if const_value(e) != 1]
    return kept or extents[:1]


def _is_unit(stmt: Stmt) -> bool:
    return isinstance(stmt, For) and const_value(stmt.min) == 0 and const_value(stmt.extent) == 1


def _next(loop: For) -> Stmt:
    body = loop.body.stmts
    return body[0] if len(body) == 1 else Block(())


def _chain(stmt: Stmt, extents: list[Expr], absorb_trailing: bool = False) -> list[For] | None:
    """The perfectly nested loops from `stmt` down with exactly `extents` (the last may hold
    several statements), or None. Unit loops (extent 1) in between are taken along (they fuse
    away: a `keepdim` reduction's `[i, 0:1]` nest aligns with an `[i, j]` one), and after the
    last extent too with `absorb_trailing`."""
    loops: list[For] = []
    current: Stmt = stmt
    for extent in extents:
        while const_value(extent) != 1 and _is_unit(current):
            loops.append(current)  # type: ignore[arg-type]
            current = _next(current)  # type: ignore[arg-type]
        if (not isinstance(current, For) or const_value(current.min) != 0
            or not prove_equal(current.extent, extent)):
            return None
        loops.append(current)
        current = _next(current)
    while absorb_trailing and _is_unit(current):
        loops.append(current)  # type: ignore[arg-type]
        current = _next(current)  # type: ignore[arg-type]
    return loops


def _decompose(var: Var, extents: list[Expr]) -> list[Expr]:
    """Values of n loop vars fused (row-major) into `var` over `extents`."""
    n = len(extents)
    out: list[Expr] = []
    for k in range(n):
        if const_value(extents[k]) == 1:
            out.append(int_like(0, var))  # a unit loop's var is 0 (not `(f / d) % 1`)
            continue
        value: Expr = var
        inner = _product(extents[k + 1:]) if extents[k + 1:] else None
        if inner is not None and const_value(inner) != 1:
            value = Div(value, inner)
        if k > 0 and any(const_value(e) != 1 for e in extents[:k]):
            value = Mod(value, extents[k])
        out.append(value)
    return out


def _fuse_chain(func: LoweredFunc, loops: list[For], name: str, extents: list[Expr], body: Block) -> For:
    var = Var(name, loops[0].loop_var.dtype)
    if len(loops) == 1:
        # Only renamed: the loop keeps its uid and its whole kind (bind axis, vector factor),
        # since it runs the same iterations.
        return dataclasses.replace(loops[0], loop_var=var, body=substitute(body, {loops[0].loop_var: var}))
    _require_serial(func, loops)
    mapping = dict(zip((lp.loop_var for lp in loops), _decompose(var, extents)))
    return For(var, int_like(0, loops[0].extent), _product(extents), substitute(body, mapping))


def _require_serial(func: LoweredFunc, loops: list[For]) -> None:
    """Loops that are fused into one must be serial: a bind axis, vector factor or parallel
    kind was chosen for one loop's extent and has no meaning on the product (align first,
    then bind, as the group tactics do)."""
    for lp in loops:
        if lp.for_type is not ForType.SERIAL:
            kind = lp.bind_axis or lp.for_type.value
            raise schedule_error(LoopKindError, "align_iter_space",
                                 f"loop '{lp.loop_var.name}' must be serial to be "
                                 f"fused into the aligned loop, but is {kind}", func, lp)


def _align_nest(func: LoweredFunc, nest: Stmt, spatial: list[Expr], reduce: list[Expr]) -> Stmt:
    if not spatial:
        raise schedule_error(AlignError, "align_iter_space", "the group has no spatial loops (a 0-d "
                             "reduction): there is no [sp] loop to align on; schedule its reduce loops "
                             "directly", func, nest)
    # trailing unit loops belong to the spatial chain unless the reduction itself is over unit loops
    unit_reduce = bool(reduce) and const_value(_significant(reduce)[0]) == 1
    sp_loops = _chain(nest, _significant(spatial), absorb_trailing=not unit_reduce)
    if sp_loops is None:
        raise schedule_error(AlignError, "align_iter_space", "every loop nest must start with loops of the "
                             f"spatial extents [{_show(spatial)}], but this one has "
                             f"[{_show(_extents(nest))}]",
                             func, nest)
    inner = tuple(_align_reduce(func, s, reduce) for s in sp_loops[-1].body.stmts)
    return _fuse_chain(func, sp_loops, "sp", [lp.extent for lp in sp_loops], Block(inner))


def _align_reduce(func: LoweredFunc, stmt: Stmt, reduce: list[Expr]) -> Stmt:
    if isinstance(stmt, ScheduleBlockRealize):
        return stmt
    rb_loops = _chain(stmt, _significant(reduce), absorb_trailing=True) if reduce else None
    if rb_loops is None or any(isinstance(s, For) for s in rb_loops[-1].body.stmts):
        raise schedule_error(AlignError, "align_iter_space", "below the spatial loops a nest may only hold "
                             f"blocks or loops of the reduce extents [{_show(reduce)}], but has "
                             f"[{_show(_extents(stmt))}]", func, stmt)
    return _fuse_chain(func, rb_loops, "rb", [lp.extent for lp in rb_loops], rb_loops[-1].body)


def _extents(stmt: Stmt) -> list[Expr]:
    out: list[Expr] = []
    while isinstance(stmt, For):
        out.append(stmt.extent)
        stmt = stmt.body.stmts[0] if len(stmt.body.stmts) == 1 else Block(())
    return out


def _show(extents: list[Expr]) -> str:
    return ", ".join(print_ir(e) for e in extents)
