"""Tile configurations and shape buckets (CINN `group_schedule/config/group_tile_config.cc`).

`ScheduleConfig` pairs a `BucketInfo` (the range of spatial and reduce numels it is meant for)
with a `TileConfig` (`warp_num`, `tree_reduce_num`, `spatial_inner_num`, `reduce_method`).
`build_schedule_config` applies CINN's 2024 static-shape rules; `bucket_configs` gives one config
per shape bucket when a size is symbolic (static-S/dynamic-R: three R buckets; dynamic-S/static-R
or no reduction: three S buckets; both dynamic: one bucket, 8 warps, block reduce).

The derived launch shape follows TileFirstGeneralTactic: `sp_thread = warp_num * 32 /
tree_reduce_num` threads on the spatial axis (threadIdx.y, or threadIdx.x without reduction),
`rd_thread = tree_reduce_num` threads on the reduce axis (threadIdx.x), and `sp_loop =
spatial_inner_num` serial spatial iterations per thread.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cinn_py.ir import ReduceMethod
from schedules.tactics.group import GroupInfo

__all__ = [
    "MAX_NUMEL", "BucketInfo", "Dimension", "ScheduleConfig", "TileConfig", "bucket_configs",
    "build_schedule_config", "next_pow2",
]

MAX_NUMEL = 2**31 - 1
"""CINN's `kMaxNumel`: an upper bound that is left out of bucket predicates."""
MAX_THREADS = 1024


def next_pow2(n: int) -> int:
    """Smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Dimension:
    """One axis of a bucket: `S(lo - hi)` or `R(lo - hi)`."""

    lower_bound: int
    upper_bound: int
    iter_type: str
    """"S" (spatial numel) or "R" (reduce numel)."""
    is_dynamic: bool

    def __str__(self) -> str:
        return f"{self.iter_type}({self.lower_bound} - {self.upper_bound})"


@dataclass(frozen=True)
class BucketInfo:
    """The shape range a config is for, printed as CINN does: `BucketInfo: [S(1 - 2147483647), ]`."""

    space: tuple[Dimension, ...]

    def __str__(self) -> str:
        return "BucketInfo: [" + "".join(f"{d}, " for d in self.space) + "]"


@dataclass(frozen=True)
class TileConfig:
    """CINN `TileConfig`."""

    warp_num: int
    tree_reduce_num: int
    spatial_inner_num: int
    reduce_method: ReduceMethod

    def __post_init__(self) -> None:
        if self.warp_num < 1 or self.tree_reduce_num < 1 or self.spatial_inner_num < 1:
            raise ValueError("TileConfig: warp_num, tree_reduce_num and spatial_inner_num must be >= 1, got "
                             f"{self}")
        if self.warp_num * 32 > MAX_THREADS:
            raise ValueError(f"TileConfig: warp_num {self.warp_num} gives more than {MAX_THREADS} threads "
                             "per block")
        if self.tree_reduce_num > self.warp_num * 32:
            raise ValueError(f"TileConfig: tree_reduce_num {self.tree_reduce_num} exceeds the block's "
                             f"{self.warp_num * 32} threads")

    @property
    def sp_thread(self) -> int:
        """Threads along the spatial axis."""
        return max(1, self.warp_num * 32 // self.tree_reduce_num)

    @property
    def rd_thread(self) -> int:
        """Threads along the reduce axis."""
        return self.tree_reduce_num

    @property
    def sp_loop(self) -> int:
        """Serial spatial iterations per thread."""
        return self.spatial_inner_num


@dataclass(frozen=True)
class ScheduleConfig:
    """CINN `ScheduleConfig`: the bucket and the tile config for it, plus the x86 knobs."""

    bucket: BucketInfo
    tile: TileConfig
    vector_width_bits: int = 256
    """x86: SIMD register width the vectorised loops fill (AVX2)."""
    min_parallel_work: int = 4096
    """x86: a nest with fewer (static) iterations is not worth a thread-pool dispatch."""
    streaming_store_bytes: int = 16 << 20
    """x86: group outputs of at least this many bytes get streaming (non-temporal) stores
    (`auto_schedule` sets it to half the target's last-level cache when the OS reports it)."""
    reduce_vectors: int = 0
    """x86 reduction strategy: vector registers of partial results per rfactor-vectorised
    reduction (0: the tactic's rule, `x86_reduce.accumulators`)."""
    fuse_reduce_producers: bool = False
    """x86 reduction strategy: compute an elementwise stage that a row reduction reads inside the
    reduction's vector loop (softmax's exp pass summed as it is produced). Off by default:
    measured on softmax [4096, 1024], one thread, CPU time: 0.96 ms fused vs 0.92 ms unfused
    (the row stays in L1 either way; the fused loop holds two exp polynomials' registers)."""
    chunk_vectors: int = 1024
    """x86 injective nests: vectors per task of a flat (fused) loop, and the column chunk that
    few long rows are split into (the split factor of the parallel loop: task granularity)."""
    transpose_block: int = 256
    """x86 transposes / gathers: elements per side of a cache block (the outer tile split)."""
    unroll_tiles: bool = True
    """x86 transposes: unroll the rows of a register tile (each a gather + a vector store)."""
    column_tasks: int = 8
    """x86 column reductions: parallel slices of the reduce loop (the rfactor split)."""
    rows_per_pass: int = 4
    """x86 column reductions: reduce rows per pass over a strip of partial sums (unrolled)."""

    def with_tile(self, **changes: object) -> ScheduleConfig:
        """A copy with some TileConfig fields changed (`cfg.with_tile(warp_num=4)`)."""
        return replace(self, tile=replace(self.tile, **changes))  # type: ignore[arg-type]


def _bucket(info: GroupInfo, s: tuple[int, int] | None = None,
            r: tuple[int, int] | None = None) -> BucketInfo:
    sp, rd = info.static_spatial, info.static_reduce
    dims = [Dimension(*(s or (sp or 1, sp or MAX_NUMEL)), "S", sp is None)]
    if info.has_reduce:
        dims.append(Dimension(*(r or (rd or 1, rd or MAX_NUMEL)), "R", rd is None))
    return BucketInfo(tuple(dims))


def _no_reduce_tile(s: int) -> TileConfig:
    # CINN: threads = min(next_pow2(S), 1024), warp_num = threads / 128 (>= 1), 4 inner iterations
    # (clamped here so that a small group does not launch mostly idle threads).
    threads = min(next_pow2(s), MAX_THREADS)
    warp_num = max(1, threads // 128)
    inner = 4 if s >= 4 * warp_num * 32 else 1
    return TileConfig(warp_num, 1, inner, ReduceMethod.NONE)


def _reduce_all_tile(r: int) -> TileConfig:
    if r <= 256:
        # CINN uses tree_reduce_num = R; rounded up to whole warps here because the block
        # reduce helper needs blockDim.x to be a multiple of 32 (extra threads add the identity).
        # (at least one warp: a reduction over no elements, R = 0, yields its identity)
        warps = max(1, _ceil_div(r, 32))
        return TileConfig(warps, warps * 32, 1, ReduceMethod.BLOCK)
    if r <= 2048:
        return TileConfig(8, 256, 1, ReduceMethod.BLOCK)
    return TileConfig(32, 1024, 1, ReduceMethod.BLOCK)


def _reduce_tile(r: int, s: int | None) -> TileConfig:
    if r < 32:
        # Differs from CINN (a warp reduce over 32 threads, which cannot split a shorter row):
        # one thread per row reduces it serially, 256 rows per block.
        return TileConfig(8, 1, 1, ReduceMethod.NONE)
    if r <= 256:
        inner = max(1, 256 // next_pow2(r))
        if s is not None:
            inner = max(1, min(inner, s))
        return TileConfig(8, 32, inner, ReduceMethod.WARP)
    if r <= 2048:
        reduce_block = _ceil_div(r, 256) * 256
        return TileConfig(reduce_block // 256, reduce_block // 8, 1, ReduceMethod.BLOCK)
    return TileConfig(32, 1024, 1, ReduceMethod.BLOCK)


def build_schedule_config(info: GroupInfo) -> ScheduleConfig:
    """The static-shape config (CINN v2024 rules; see cinn.md §3.2). Symbolic sizes are treated
    as large; use `bucket_configs` for one config per bucket."""
    s, r = info.static_spatial, info.static_reduce
    if not info.has_reduce:
        return ScheduleConfig(_bucket(info), _no_reduce_tile(s if s is not None else MAX_NUMEL))
    if not info.continuous:
        return ScheduleConfig(_bucket(info), TileConfig(16, 32, 1, ReduceMethod.DISCRETE))
    if r is None:
        return ScheduleConfig(_bucket(info), TileConfig(8, 256, 1, ReduceMethod.BLOCK))
    if s == 1:
        # Reduce-all: R <= 256 -> one block reduce over ceil(R / 32) warps; R <= 2048 -> 8 warps,
        # tree 256; else 32 warps, tree 1024.
        return ScheduleConfig(_bucket(info), _reduce_all_tile(r))
    return ScheduleConfig(_bucket(info), _reduce_tile(r, s))


def bucket_configs(info: GroupInfo) -> list[ScheduleConfig]:
    """One config per shape bucket (CINN `ScheduleConfigManager::ExtractConfigs`), in predicate
    order. A fully static group has a single bucket."""
    s, r = info.static_spatial, info.static_reduce
    if s is not None and (r is not None or not info.has_reduce):
        return [build_schedule_config(info)]
    if not info.has_reduce or (r is not None and info.continuous):
        ranges = [(1, 1023), (1024, 1024 * 1024 - 1), (1024 * 1024, MAX_NUMEL)]
        base = build_schedule_config(info)
        tiles = ([TileConfig(4, 1, 1, ReduceMethod.NONE), TileConfig(8, 1, 1, ReduceMethod.NONE),
                  TileConfig(8, 1, 4, ReduceMethod.NONE)] if not info.has_reduce else
                 [_reduce_tile(r, lo) for lo, _ in ranges])  # type: ignore[arg-type]
        return [replace(base, bucket=_bucket(info, s=rng), tile=t) for rng, t in zip(ranges, tiles)]
    if s is not None and info.continuous:
        # Static S, dynamic R: warp reduce up to 256, block reduce with 128 / 256 threads above.
        ranges = [(1, 256), (257, 2048), (2049, MAX_NUMEL)]
        tiles = [TileConfig(8, 32, 1, ReduceMethod.WARP), TileConfig(4, 128, 1, ReduceMethod.BLOCK),
                 TileConfig(8, 256, 1, ReduceMethod.BLOCK)]
        return [ScheduleConfig(_bucket(info, r=rng), t) for rng, t in zip(ranges, tiles)]
    # Both dynamic (or a dynamic discrete reduction): one bucket, 8 warps, block reduce.
    return [build_schedule_config(info)]
