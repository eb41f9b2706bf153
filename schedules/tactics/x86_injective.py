"""x86 schedules of injective nests (elementwise, broadcast, gathers and transposes).

One nest, one block, every loop spatial (the group's lowering order: the store follows the
loops). What a performance engineer writes for each shape of nest:

* **contiguous rows** (the store moves along the innermost loop): the outer loops are fused into
  one row loop that runs on the thread pool, the innermost loop is vectorised with the target's
  native lanes (16 float32 with AVX-512; any extent: the backend adds a scalar tail). A short
  innermost loop (< 4 vectors) over a dense row-major nest whose loads index by loop variables
  is fused with the rows into one flat loop first, so that the vector loop is long; a flat loop is split into
  chunks of
  `lanes * 1024` (a task's slice stays a long vector loop). Few long rows (fewer than
  `MIN_TASKS` rows) are split into column chunks that are fused with the rows, so that every
  thread gets work.
* **transposes / gathers** (a load moves along the innermost loop in a non-last index): the
  innermost loop and the loop the load is contiguous along are tiled twice, `transpose_block` square
  cache blocks (the rows a block reads stay in L2 and their pages in the TLB) of `lanes x lanes`
  register tiles: the tile's rows unrolled, each a gather of the source and a contiguous vector
  store; the cache blocks are fused and run on the thread pool.
* **large write-once outputs** (at least half the last-level cache) of row / flat schedules: the
  block is annotated `x86_nontemporal`, so its vector stores stream past the caches (the x86
  backend peels scalar iterations until the stores are 64-byte aligned). Measured on relu and
  bias+gelu: 15-20% faster; tiled transposes are left out (slower with streaming stores).
"""

from __future__ import annotations

from cinn_py.ir import NONTEMPORAL_ATTR, For, IntImm, Load, Var, walk
from schedules.analysis.loops import block_stores, find_block
from schedules.analysis.regions import const_value
from schedules.schedule import IRSchedule
from schedules.state import LoopRV
from schedules.tactics.config import ScheduleConfig
from schedules.tactics.group import loops_of
from schedules.tactics.x86_nest import contiguous_store, gather_loop, lanes_for, parallel_worth

__all__ = ["schedule_injective", "stream_if_large", "vectorize_rows"]

SHORT_ROW_VECTORS = 4
MIN_TASKS = 16


def schedule_injective(sch: IRSchedule, block: str, cfg: ScheduleConfig) -> str:
    """Schedule the nest of `block`; returns what was done (for the report)."""
    loops = loops_of(sch.func, block)
    if not loops:
        return "no loops"
    lanes = lanes_for(sch, block, cfg)
    if lanes < 2 or not contiguous_store(sch, block, loops[-1]):
        return _parallel_outer(sch, block, cfg, "rows (store not contiguous in the innermost loop)")
    gather = gather_loop(sch, block, loops)
    if gather is not None and _tileable(loops, gather, lanes):
        # no streaming stores: a tile writes 16 rows' short segments, which the write-combining
        # buffers cannot merge into whole lines as fast as the cache does (measured 1.5x slower)
        return tile_transpose(sch, block, gather, lanes, cfg)
    return vectorize_rows(sch, block, lanes, cfg) + stream_if_large(sch, block, cfg)


def _parallel_outer(sch: IRSchedule, block: str, cfg: ScheduleConfig, note: str) -> str:
    loops = sch.get_loops(block)
    if len(loops) > 2:
        loops = [sch.fuse(loops[:-1]), loops[-1]]
    if parallel_worth(sch, loops[0], block, cfg):
        sch.parallel(loops[0])
        return f"parallel {note}"
    return f"serial {note}"


def _dense(sch: IRSchedule, block: str, loops: list[For]) -> bool:
    """The store writes `T[l0, ..., ln]` with the loops in order over T's full shape, so that
    the fused loop indexes T contiguously."""
    realize = find_block(sch.func, block)
    binding = dict(zip(realize.schedule_block.iter_vars, realize.iter_values))
    for store in block_stores(realize):
        if len(store.indices) != len(loops):
            return False
        for index, loop, dim in zip(store.indices, loops, store.tensor.shape):
            if not isinstance(index, Var) or binding.get(index) != loop.loop_var \
                    or const_value(dim) != const_value(loop.extent) \
                    or const_value(dim) is None:
                return False
    return True


def _plain_loads(sch: IRSchedule, block: str) -> bool:
    """Every load indexes its tensor by loop variables and constants (elementwise, broadcast,
    transpose). A computed index (an im2col's clamped window read) would be computed from the
    flat loop's divisions and remainders per lane: such nests keep their rows."""
    body = find_block(sch.func, block).schedule_block.body
    return all(isinstance(i, (Var, IntImm)) for n in walk(body) if isinstance(n, Load) for i in n.indices)


def vectorize_rows(sch: IRSchedule, block: str, lanes: int, cfg: ScheduleConfig) -> str:
    """Contiguous rows: parallel row loop, vectorised innermost loop (see the module docstring)."""
    loops = loops_of(sch.func, block)
    inner = const_value(loops[-1].extent)
    handles = sch.get_loops(block)
    if (len(handles) > 1 and inner is not None and inner < SHORT_ROW_VECTORS * lanes
            and _dense(sch, block, loops) and _plain_loads(sch, block)):
        handles = [sch.fuse(handles)]
    if len(handles) == 1:
        return _flat(sch, block, handles[0], lanes, cfg)
    if len(handles) > 2:
        handles = [sch.fuse(handles[:-1]), handles[-1]]
    rows, cols = handles
    n_rows, n_cols = (const_value(sch.get(h).extent) for h in handles)  # type: ignore[union-attr]
    chunk = cfg.chunk_vectors * lanes
    if n_rows is not None and n_rows < MIN_TASKS and (n_cols is None or n_cols >= 2 * chunk):
        outer, cols = sch.split(cols, [-1, chunk])
        rows = sch.fuse([rows, outer])
    sch.vectorize(cols, lanes)
    if parallel_worth(sch, rows, block, cfg):
        sch.parallel(rows)
        return f"parallel rows, vectorize[{lanes}] columns"
    return f"vectorize[{lanes}] columns"


def _flat(sch: IRSchedule, block: str, loop: LoopRV, lanes: int, cfg: ScheduleConfig) -> str:
    extent = const_value(sch.get(loop).extent)  # type: ignore[union-attr]
    chunk = cfg.chunk_vectors * lanes
    if extent is not None and extent < 2 * chunk:
        sch.vectorize(loop, lanes)
        return f"flat, vectorize[{lanes}]"
    outer, inner = sch.split(loop, [-1, chunk])
    sch.vectorize(inner, lanes)
    if parallel_worth(sch, outer, block, cfg):
        sch.parallel(outer)
    return f"flat, parallel chunks of {chunk}, vectorize[{lanes}]"


def _tileable(loops: list[For], gather: int, lanes: int) -> bool:
    """Both tiled loops have constant extents of at least two whole tiles (a split tail's guard
    would pin the tile loops in place: `reorder` cannot move a loop below a guard that uses it;
    such nests keep the row schedule with per-lane gathers)."""
    extents = [const_value(loops[gather].extent), const_value(loops[-1].extent)]
    return all(e is not None and e >= 2 * lanes and e % lanes == 0 for e in extents)


def _tile_factors(extent: int, lanes: int, block: int) -> list[int]:
    """`[blocks, tiles per block, lanes]`: the most tiles per block up to `block` elements
    (`ScheduleConfig.transpose_block`) that divide the extent's tiles (no guard)."""
    tiles = extent // lanes
    per_block = max(d for d in range(1, max(1, block // lanes) + 1) if tiles % d == 0)
    return [tiles // per_block, per_block, lanes]


def tile_transpose(sch: IRSchedule, block: str, gather: int, lanes: int, cfg: ScheduleConfig) -> str:
    """Two-level tiles over the gathered loop and the innermost loop (see the module docstring)."""
    loops = loops_of(sch.func, block)
    n_outer = gather
    ext_g, ext_c = const_value(loops[gather].extent), const_value(loops[-1].extent)
    handles = sch.get_loops(block)
    go, gm, gi = sch.split(handles[gather], _tile_factors(ext_g or 0, lanes, cfg.transpose_block))
    co, cm, ci = sch.split(sch.get_loops(block)[-1], _tile_factors(ext_c or 0, lanes, cfg.transpose_block))
    sch.reorder([go, co, gm, cm, gi, ci])
    handles = sch.get_loops(block)
    outer = sch.fuse(handles[:n_outer + 2])
    if cfg.unroll_tiles:
        sch.unroll(gi)
    sch.vectorize(ci, lanes)
    if parallel_worth(sch, outer, block, cfg):
        sch.parallel(outer)
    block_side = cfg.transpose_block
    return (f"tiled transpose {min(block_side, ext_g or 0)}x{min(block_side, ext_c or 0)} blocks of "
            f"{lanes}x{lanes}")


def stream_if_large(sch: IRSchedule, block: str, cfg: ScheduleConfig) -> str:
    """Annotate a group output larger than half the last-level cache for streaming stores."""
    stores = block_stores(find_block(sch.func, block))
    if not stores or stores[0].tensor.name not in {t.name for t in sch.func.outputs}:
        return ""
    size = 1
    for dim in stores[0].tensor.shape:
        extent = const_value(dim)
        if extent is None:
            return ""
        size *= extent
    if size * max(1, stores[0].tensor.dtype.bits // 8) < cfg.streaming_store_bytes:
        return ""
    sch.annotate(block, NONTEMPORAL_ATTR, True)
    return ", streaming stores"
