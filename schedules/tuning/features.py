"""Loop-nest features of a scheduled group: what the learned cost model sees.

One fixed-length vector per scheduled function, computed from the IR alone (no compilation), so
that the search can rank many candidates before measuring a few. Every quantity a performance
engineer reads off a loop nest, per block and summed (or maxed) over the group:

* work: iterations, arithmetic operations and transcendental calls (log2 of the totals);
* memory: bytes loaded / stored in total, bytes touched by one iteration of each of the four
  innermost loop levels ("bytes per level": what must stay in registers, L1, L2), bytes of
  local (private) buffers, arithmetic intensity (ops per byte);
* vector use: the fraction of iterations in vector loops and the widest vector;
* parallel work: the parallel loop's extent, the work of one task, iterations outside any
  parallel loop (serial work);
* loop structure: unrolled iterations, innermost extent, deepest nest, blocks, nests, streaming
  stores.

Symbolic extents count as `SYMBOLIC_EXTENT` (the tuner measures a specialised bucket; the
features only rank candidates of one group against each other and across similar groups).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cinn_py.ir import (
    NONTEMPORAL_ATTR, BinaryOp, Block, Call, For, ForType, Load, LoweredFunc, MemoryType,
    ScheduleBlockRealize, Stmt, Store, child_nodes, walk,
)
from schedules.analysis.loops import root_body
from schedules.analysis.regions import const_value

__all__ = ["FEATURE_NAMES", "SYMBOLIC_EXTENT", "loop_features"]

SYMBOLIC_EXTENT = 1024
LEVELS = 4

FEATURE_NAMES: tuple[str, ...] = (
    "log_iterations", "log_ops", "log_calls", "log_bytes_loaded", "log_bytes_stored",
    *(f"log_bytes_level{i}" for i in range(LEVELS)), "log_local_bytes", "arith_intensity",
    "vector_fraction", "max_lanes", "log_parallel_extent", "log_work_per_task", "log_serial_iterations",
    "log_unrolled", "log_innermost_extent", "max_depth", "blocks", "nests", "streaming_stores",
)


@dataclass
class _Totals:
    iterations: float = 0.0
    ops: float = 0.0
    calls: float = 0.0
    loaded: float = 0.0
    stored: float = 0.0
    levels: list[float] = field(default_factory=lambda: [0.0] * LEVELS)
    local_bytes: float = 0.0
    vector_iterations: float = 0.0
    max_lanes: int = 1
    parallel_extent: float = 1.0
    work_per_task: float = 0.0
    serial_iterations: float = 0.0
    unrolled: float = 1.0
    innermost: float = 0.0
    depth: int = 0
    blocks: int = 0
    streaming: int = 0


def _extent(loop: For) -> int:
    value = const_value(loop.extent)
    return SYMBOLIC_EXTENT if value is None else max(1, value)


def _bytes(node: Load | Store) -> int:
    return max(1, node.tensor.dtype.bits // 8)


def _visit(stmt: Stmt, loops: list[For], acc: _Totals) -> None:
    if isinstance(stmt, ScheduleBlockRealize) and not _holds_blocks(stmt):
        _block(stmt, loops, acc)
        return
    inner = loops + [stmt] if isinstance(stmt, For) else loops
    for child in child_nodes(stmt):
        if isinstance(child, Stmt):
            _visit(child, inner, acc)


def _holds_blocks(realize: ScheduleBlockRealize) -> bool:
    """The root block (and any block around others) is a container, not a computation."""
    return any(isinstance(n, ScheduleBlockRealize) for n in walk(realize.schedule_block.body))


def _block(realize: ScheduleBlockRealize, loops: list[For], acc: _Totals) -> None:
    extents = [_extent(lp) for lp in loops]
    iterations = float(math.prod(extents))
    body = realize.schedule_block.body
    nodes = list(walk(body))
    load_bytes = sum(_bytes(n) for n in nodes if isinstance(n, Load))
    store_bytes = sum(_bytes(n) for n in nodes if isinstance(n, Store))
    acc.blocks += 1
    acc.iterations += iterations
    acc.ops += iterations * sum(1 for n in nodes if isinstance(n, BinaryOp))
    acc.calls += iterations * sum(1 for n in nodes if isinstance(n, Call))
    acc.loaded += iterations * load_bytes
    acc.stored += iterations * store_bytes
    for level in range(LEVELS):  # bytes touched by one iteration of the loop `level` from inside
        inside = extents[len(extents) - level:] if level else []
        acc.levels[level] = max(acc.levels[level], float(math.prod(inside)) * (load_bytes + store_bytes))
    acc.local_bytes += sum(_bytes(n) * iterations for n in nodes if isinstance(n, Store)
                           and n.tensor.buffer.memory_type is not MemoryType.HEAP)
    vector = [lp for lp in loops if lp.for_type is ForType.VECTORIZED]
    if vector:
        acc.vector_iterations += iterations
        acc.max_lanes = max(acc.max_lanes, max(lp.vectorize_factor for lp in vector))
    parallel = [i for i, lp in enumerate(loops) if lp.for_type is ForType.PARALLEL]
    if parallel:
        outer = float(math.prod(extents[:parallel[0] + 1]))
        acc.parallel_extent = max(acc.parallel_extent, float(extents[parallel[0]]))
        acc.work_per_task = max(acc.work_per_task, iterations / outer)
    else:
        acc.serial_iterations += iterations
    unrolled = [e for lp, e in zip(loops, extents) if lp.for_type is ForType.UNROLLED]
    if unrolled:
        acc.unrolled = max(acc.unrolled, float(math.prod(unrolled)))
    if extents:
        acc.innermost = max(acc.innermost, float(extents[-1]))
    acc.depth = max(acc.depth, len(loops))
    if realize.schedule_block.attr(NONTEMPORAL_ATTR):
        acc.streaming += 1


def _log(x: float) -> float:
    return math.log2(1.0 + x)


def loop_features(func: LoweredFunc) -> list[float]:
    """The feature vector of a scheduled `func` (names: `FEATURE_NAMES`)."""
    acc = _Totals()
    _visit(func.body, [], acc)
    moved = acc.loaded + acc.stored
    body = root_body(func)
    nests = len(body.stmts) if isinstance(body, Block) else 1
    return [
        _log(acc.iterations), _log(acc.ops), _log(acc.calls), _log(acc.loaded), _log(acc.stored),
        *(_log(v) for v in acc.levels), _log(acc.local_bytes), acc.ops / moved if moved else 0.0,
        acc.vector_iterations / acc.iterations if acc.iterations else 0.0, float(acc.max_lanes),
        _log(acc.parallel_extent), _log(acc.work_per_task), _log(acc.serial_iterations),
        _log(acc.unrolled), _log(acc.innermost), float(acc.depth), float(acc.blocks), float(nests),
        float(acc.streaming),
    ]
