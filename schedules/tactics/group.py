"""Group analysis the tactics share: which blocks there are, which are reductions, outputs, the
master's `[spatial, reduce]` space and whether the reduction is over the contiguous last axis.

This is the Python counterpart of the parts of CINN's `GroupTileInfo` / `BaseInfo`
(`group_schedule/config/group_tile_config.h`) that the tactics read: `reduce_axis`,
`spatial_numel`, `reduce_numel`, `is_reduce_all`, `has_dynamic_{spatial,reduce}`,
`direct_output_var_names`, and the layout (continuous "SR" vs discrete "RS" reductions).
Everything here is read-only: it inspects the schedule's current function.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce as _fold

from cinn_py.ir import (
    DType, Expr, For, IfThenElse, IntImm, Load, LoweredFunc, Mul, ScheduleBlockRealize, Store, Var, int32,
    int64, walk,
)
from schedules.analysis.loops import all_blocks, block_stores, enclosing_loops, find_block
from schedules.analysis.regions import const_value, simplify_index
from schedules.primitives.align import group_space

__all__ = ["BlockInfo", "GroupInfo", "analyze_group", "block_info", "is_continuous",
           "is_init_name", "loops_of"]

INIT_SUFFIX = "__reduce_init"


def is_init_name(name: str) -> bool:
    """A reduction's init block (`T__reduce_init`, `T_rf__reduce_init`, `rf_T__reduce_init`)."""
    return name.endswith(INIT_SUFFIX)


@dataclass(frozen=True)
class BlockInfo:
    """One (non-root) schedule block of the group."""

    name: str
    written: tuple[str, ...]
    """Tensor names the block stores to (one for a well-formed compute block)."""
    read: frozenset[str]
    """Tensor names the block loads (its own tensor excluded)."""
    is_reduce: bool
    """It has reduce iter vars (a reduction update block)."""
    is_init: bool
    has_if: bool
    """Its body holds an IfThenElse (CINN never inlines such a block)."""
    realize: ScheduleBlockRealize


def block_info(realize: ScheduleBlockRealize) -> BlockInfo:
    """Reads, writes and kind of one block."""
    block = realize.schedule_block
    stores = block_stores(realize)
    written = tuple(dict.fromkeys(s.tensor.name for s in stores))
    read = frozenset(n.tensor.name for n in walk(block.body) if isinstance(n, Load)) - set(written)
    return BlockInfo(
        name=block.name, written=written, read=read,
        is_reduce=any(v.is_reduce_axis for v in block.iter_vars), is_init=is_init_name(block.name),
        has_if=any(isinstance(n, IfThenElse) for n in walk(block.body)), realize=realize)


@dataclass(frozen=True)
class GroupInfo:
    """What the tactics need to know about a group (one LoweredFunc)."""

    blocks: tuple[BlockInfo, ...]
    """Every block, in document order."""
    outputs: frozenset[str]
    """Names of the function's output tensors (CINN `direct_output_var_names`): never inlined,
    never moved to local/shared memory."""
    spatial: tuple[Expr, ...]
    """Extents of the master's spatial loops (outside its reduce loops)."""
    reduce: tuple[Expr, ...]
    """Extents of the master's reduce loops (empty for a group without reduction)."""
    continuous: bool
    """The reduction runs over the contiguous last axis of what it reads (CINN "SR" layout);
    False for a discrete "RS" reduction such as a column sum."""
    index_dtype: DType

    @property
    def has_reduce(self) -> bool:
        return any(b.is_reduce for b in self.blocks)

    @property
    def reduce_blocks(self) -> tuple[BlockInfo, ...]:
        return tuple(b for b in self.blocks if b.is_reduce)

    @property
    def spatial_numel(self) -> Expr:
        """Product of the spatial extents (1 for a reduce-all)."""
        return _product(self.spatial, self.index_dtype)

    @property
    def reduce_numel(self) -> Expr:
        """Product of the reduce extents (1 without reduction)."""
        return _product(self.reduce, self.index_dtype)

    @property
    def static_spatial(self) -> int | None:
        """The spatial numel when it is a constant, else None (a symbolic dim is involved)."""
        return const_value(self.spatial_numel)

    @property
    def static_reduce(self) -> int | None:
        return const_value(self.reduce_numel)

    @property
    def is_reduce_all(self) -> bool:
        return self.has_reduce and self.static_spatial == 1

    def producers_of(self, tensor: str) -> list[BlockInfo]:
        return [b for b in self.blocks if tensor in b.written]

    def consumers_of(self, tensor: str) -> list[BlockInfo]:
        return [b for b in self.blocks if tensor in b.read]


def _product(extents: tuple[Expr, ...], dtype: DType) -> Expr:
    if not extents:
        return IntImm(dtype, 1)
    return simplify_index(_fold(Mul, extents))


def _index_dtype(func: LoweredFunc) -> DType:
    # Dynamic-shape functions index in int64 (cinn_py IR convention), static ones in int32.
    return int64 if func.scalar_args else int32


def is_continuous(master: ScheduleBlockRealize) -> bool:
    """CINN's continuous-reduce test: some load of the reduction body indexes its last
    (contiguous) dimension with a reduce iter var."""
    block = master.schedule_block
    reduce_vars = {v for v in block.iter_vars if v.is_reduce_axis}
    own = {s.tensor.name for s in block_stores(master)}
    loads = [n for n in walk(block.body) if isinstance(n, Load) and n.indices and n.tensor.name not in own]
    if not loads:
        return True
    return any(any(isinstance(v, Var) and v in reduce_vars for v in walk(ld.indices[-1])) for ld in loads)


def analyze_group(func: LoweredFunc) -> GroupInfo:
    """Analyse the current function of a schedule (before or after alignment)."""
    realizes = all_blocks(func)
    blocks = tuple(block_info(r) for r in realizes)
    spatial, reduce_ = group_space(func) if realizes else ([], [])  # 0-d blocks only: no loops
    master = next((b.realize for b in blocks if b.is_reduce), None)
    return GroupInfo(
        blocks=blocks, outputs=frozenset(t.name for t in func.outputs), spatial=tuple(spatial),
        reduce=tuple(reduce_), continuous=True if master is None else is_continuous(master),
        index_dtype=_index_dtype(func))


def stores_of(info: BlockInfo) -> list[Store]:
    """The Stores of a block (for callers that need index patterns)."""
    return block_stores(info.realize)


def loops_of(func: LoweredFunc, name: str) -> list[For]:
    """The loops enclosing block `name` in `func`, outer -> inner (read-only: unlike
    `IRSchedule.get_loops` it never adds a unit loop and records nothing)."""
    realize = find_block(func, name)
    return enclosing_loops(func, realize)
