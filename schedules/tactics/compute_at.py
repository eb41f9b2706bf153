"""ComputeAtReductionTactic: loop fusion of the group's nests (CINN `compute_at_reduction_tactic.cc`).

After TileFirstGeneralTactic every nest has the same spatial tiling, so the nests after the master
(the first reduction, else the first nest) are moved under the master's innermost spatial loop
with `simple_compute_at` (which matches the loops 1:1 by extent and checks that the move keeps
every dependence). `simple_compute_at` moves one block with its own loops, so every block of a
nest is moved, in document order: the `__reduce_init` first (as CINN does), then the `_rf` init
and update, then the write-back, each in its own copy of the reduce-thread loop (bound loops
disappear in the CUDA lowering, so one thread still runs them in this order). Fusion stops at the first nest
the primitive rejects, so the relative order of the
remaining nests is never changed.

Differs from CINN: CINN also fuses into the innermost *reduce* loop when the "control flow"
(loop kinds, extents and guards) of both nests is identical; here the fusion depth is the
spatial tiling only, which keeps the reduce-thread loops of different reductions separate (each
ends in its own cross-thread reduce).
"""

from __future__ import annotations

from cinn_py.ir import Block
from schedules.analysis.loops import all_blocks, root_body
from schedules.errors import ScheduleError
from schedules.schedule import IRSchedule
from schedules.tactics.group import analyze_group, is_init_name

__all__ = ["compute_at_reduction_tactic"]


def _nests(sch: IRSchedule) -> list[list[str]]:
    """Block names of each top-level nest, in document order."""
    body = root_body(sch.func)
    stmts = body.stmts if isinstance(body, Block) else (body,)
    return [[b.name for b in all_blocks(stmt)] for stmt in stmts]


def compute_at_reduction_tactic(sch: IRSchedule, spatial_depth: int) -> list[str]:
    """Fuse the nests after the master into its spatial loops; returns the names of the blocks
    that now share the master's loops (the master's own blocks first)."""
    if spatial_depth == 0:
        return []
    info = analyze_group(sch.func)
    reduce_names = {b.name for b in info.blocks if b.is_reduce}
    nests = [n for n in _nests(sch) if n]
    if not nests:
        return []
    master_index = next((k for k, n in enumerate(nests) if reduce_names & set(n)), 0)
    master = next(b for b in nests[master_index] if not is_init_name(b))
    fused = list(nests[master_index])
    for nest in nests[master_index + 1:]:
        for name in nest:  # init, rf init, rf, write-back: each keeps its place in the order
            try:
                sch.simple_compute_at(name, sch.get_loops(master)[spatial_depth - 1])
            except ScheduleError:
                return fused
            fused.append(name)
    return fused
