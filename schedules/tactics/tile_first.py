"""TileFirstGeneralTactic: tile, factorize and bind an aligned group for CUDA
(CINN `tile_first_general_tactic.cc`, the "tiling first" pipeline; cinn.md §3.3-3.4).

Input: every nest is `[sp]` or `[sp, rb]` (AlignIterSpaceTactic), or, for a reduce-all onto a
0-d tensor, only reduce loops. Every nest is tiled the same way, so that blocks of different
nests that touch the same row run in the same CUDA block and thread (which is what lets
ComputeAtReductionTactic fuse them and keeps intermediates in registers).

Continuous (last-axis) reductions and groups without reduction (`ApplyContinuousDataTile`):

1. the reduce loops are fused into one R loop, the spatial loops into one S loop;
2. S is split `[-1, sp_loop, sp_thread]` (factors of 1 are left out);
3. R is split `[-1, rd_thread]` and reordered so the thread loop is outside the serial one; a
   reduction block is then factorized over the thread loop (`factorize_reduction(.., 0)`), so
   every thread accumulates a strided (hence coalesced) slice into `<T>_rf` and the write-back
   `T = T + T_rf` becomes a cross-thread (warp/block) reduce in the CUDA passes;
4. bind: outer S loop -> blockIdx.x, spatial thread loop -> threadIdx.y (threadIdx.x without
   reduction), reduce thread loop -> threadIdx.x.

Discrete ("RS") reductions such as column sums (`ApplyDiscreteDataTile`): S is split
`[-1, 32]` (blockIdx.x, threadIdx.x: neighbouring threads read neighbouring columns) and R
`[16, -1]` with the 16 outer iterations factorized and bound to threadIdx.y (a
`cinn_discrete_reduce`). Differs from CINN: that tiling needs S to be a static multiple of 32,
because the helper's barriers must be reached by every thread and a guard on the spatial tail
would depend on threadIdx.x; otherwise (and for short reductions) each thread reduces its column
serially (S split `[-1, threads]` only), which is correct for every shape and still coalesced.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schedules.schedule import IRSchedule
from schedules.state import LoopRV
from schedules.tactics.config import ScheduleConfig
from schedules.tactics.group import GroupInfo, analyze_group

__all__ = ["TileResult", "tile_first_general_tactic"]

DISCRETE_SPATIAL_THREADS = 32
DISCRETE_REDUCE_THREADS = 16
MIN_DISCRETE_CROSS_THREAD = 64


@dataclass
class TileResult:
    """What later tactics need: how many loops of each nest are spatial after tiling, and the
    `_rf` tensors factorize_reduction created."""

    spatial_depth: int = 0
    rf_blocks: list[str] = field(default_factory=list)
    strategy: str = ""


def spatial_tiles(info: GroupInfo, cfg: ScheduleConfig) -> tuple[int, int]:
    """(sp_loop, sp_thread) for this group, clamped to a static S so that a small group does not
    launch idle threads. A block reduce (rd_thread > 32) gets one spatial thread unless S divides
    evenly: a guard on threadIdx.y would keep some threads from the reduce helper's barriers."""
    tile = cfg.tile
    sp_loop, sp_thread = tile.sp_loop, tile.sp_thread if info.has_reduce else tile.warp_num * 32
    s = info.static_spatial
    if s is not None:
        sp_thread = max(1, min(sp_thread, s))
        sp_loop = max(1, min(sp_loop, s // sp_thread))  # split needs the factors within S
    if info.has_reduce and tile.rd_thread > 32 and sp_thread > 1 and (s is None or s % (sp_loop * sp_thread)):
        sp_thread = 1
    return sp_loop, sp_thread


def discrete_cross_thread(info: GroupInfo) -> bool:
    """Whether a discrete reduction gets the 32 x 16 cross-thread tiling (see module docstring)."""
    s, r = info.static_spatial, info.static_reduce
    return (s is not None and s % DISCRETE_SPATIAL_THREADS == 0
            and (r is None or r >= MIN_DISCRETE_CROSS_THREAD))


def _nest_blocks(info: GroupInfo) -> list[tuple[str, bool]]:
    """(block name, is reduction) of the block each nest is tiled through (init blocks move with
    their update block)."""
    return [(b.name, b.is_reduce) for b in info.blocks if not b.is_init]


def _split_spatial(sch: IRSchedule, loop: LoopRV, factors: list[int]) -> list[LoopRV]:
    factors = [f for f in factors if f > 1]
    return sch.split(loop, [-1, *factors]) if factors else [loop]


def _fused(sch: IRSchedule, loops: list[LoopRV]) -> LoopRV:
    return sch.fuse(loops) if len(loops) > 1 else loops[0]


def _tile_continuous(sch: IRSchedule, name: str, is_reduce: bool, info: GroupInfo, cfg: ScheduleConfig,
                     result: TileResult) -> None:
    n_sp = 1 if info.spatial else 0
    loops = sch.get_loops(name) if (n_sp or is_reduce) else []
    sp_loop, sp_thread = spatial_tiles(info, cfg)
    depth = 0
    if n_sp:
        depth = len(_split_spatial(sch, loops[0], [sp_loop, sp_thread]))
        loops = sch.get_loops(name)
    rd = loops[depth:]
    rd_thread = cfg.tile.rd_thread
    if rd:
        r = _fused(sch, rd)
        if rd_thread > 1:
            r_serial, r_thread = sch.split(r, [-1, rd_thread])
            sch.reorder([r_thread, r_serial])
            if is_reduce:
                rf = sch.factorize_reduction(r_thread, 0)
                result.rf_blocks.append(rf.name)
    loops = sch.get_loops(name) if (depth or rd) else []
    if depth:
        sch.bind(loops[0], "blockIdx.x")
        if sp_thread > 1:
            sch.bind(loops[depth - 1], "threadIdx.y" if info.has_reduce else "threadIdx.x")
    if rd and rd_thread > 1:
        sch.bind(loops[depth], "threadIdx.x")
    result.spatial_depth = depth


def _tile_discrete(sch: IRSchedule, name: str, is_reduce: bool, info: GroupInfo, result: TileResult) -> None:
    loops = sch.get_loops(name)
    cross = discrete_cross_thread(info)
    s = info.static_spatial
    threads = DISCRETE_SPATIAL_THREADS if cross else min(256, s) if s is not None else 256
    outer, inner = sch.split(loops[0], [-1, threads])
    rd = sch.get_loops(name)[2:]
    if rd and cross:
        r_thread, _ = sch.split(_fused(sch, rd), [DISCRETE_REDUCE_THREADS, -1])
        if is_reduce:
            result.rf_blocks.append(sch.factorize_reduction(r_thread, 0).name)
    loops = sch.get_loops(name)
    sch.bind(loops[0], "blockIdx.x")
    sch.bind(loops[1], "threadIdx.x")
    if rd and cross:
        sch.bind(loops[2], "threadIdx.y")
    result.spatial_depth = 2


def tile_first_general_tactic(sch: IRSchedule, cfg: ScheduleConfig) -> TileResult:
    """Tile and bind every nest of an aligned group (see the module docstring)."""
    info = analyze_group(sch.func)
    result = TileResult()
    discrete = info.has_reduce and not info.continuous and bool(info.spatial)
    result.strategy = ("discrete-cross-thread" if discrete and discrete_cross_thread(info) else
                       "discrete-serial" if discrete else "continuous" if info.has_reduce else "elementwise")
    for name, is_reduce in _nest_blocks(info):
        if discrete:
            _tile_discrete(sch, name, is_reduce, info, result)
        else:
            _tile_continuous(sch, name, is_reduce, info, cfg, result)
    return result
