"""The automatic group scheduler's entry points (CINN `GroupScheduler` / `DynamicShapeGroupScheduler`,
cinn.md §3.1).

`auto_schedule(func, target)` applies the tactics in CINN's "tiling first" order:

    CUDA: AlignIterSpace -> ComputeInline -> TileFirstGeneral -> ComputeAtReduction -> storage
    x86:  AlignIterSpace -> ComputeInline -> parallel / vectorize / rfactor

and returns the `IRSchedule`, whose trace records every primitive the tactics called (so the
result replays on a fresh lowering like a hand-written schedule). `auto_schedule_buckets(func)`
makes one schedule per shape bucket for groups with symbolic dims, each behind a predicate over
the product of the master's spatial extents and of its reduce extents, in the form
`codegen.cuda.BucketDispatch` takes (`[(pred, sch.func) for pred, sch in buckets]`).

Differs from CINN's 2025 order (Align -> TileBroadcast -> TileFirstGeneral -> ComputeInline ->
ComputeAtReduction): inlining runs before tiling, as in the late-2023 order, so the tiling never
has to tile a nest that is about to disappear; and when alignment fails because of a lower-rank
intermediate, it is retried after inlining.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from cinn_py.diagnostics import CompileError
from cinn_py.ir import And, Expr, GE, IntImm, LE, LoweredFunc, const
from cinn_py.passes.cross_thread_reduce import cross_thread_reduce
from cinn_py.passes.gpu_bind import gpu_bind
from cinn_py.passes.gpu_sync import MissingBarrierError
from cinn_py.target import KINDS, Target, TargetLike
from schedules.errors import ScheduleError, schedule_error
from schedules.schedule import IRSchedule
from schedules.tactics.align import align_iter_space_tactic
from schedules.tactics.attention import attention_cuda_tactic, attention_x86_tactic, is_attention_kernel
from schedules.tactics.compute_at import compute_at_reduction_tactic
from schedules.tactics.compute_inline import compute_inline_tactic
from schedules.tactics.config import MAX_NUMEL, ScheduleConfig, bucket_configs, build_schedule_config
from schedules.tactics.cuda_fallback import single_block_schedule
from schedules.tactics.cuda_matmul import CudaMatmulParams, cuda_matmul_tactic
from schedules.tactics.group import GroupInfo, analyze_group
from schedules.tactics.matmul import (
    MatmulParams, default_matmul_params, match_matmul, matmul_x86_tactic,
)
from schedules.tactics.storage import assign_storage, sync_between_nests
from schedules.tactics.tile_first import tile_first_general_tactic
from schedules.tactics.x86 import x86_schedule

__all__ = ["AutoScheduleError", "AutoScheduleReport", "auto_schedule", "auto_schedule_buckets",
           "bucket_predicate"]

TARGETS = KINDS


class AutoScheduleError(ScheduleError):
    """The group cannot be scheduled automatically for the target (e.g. its nests cannot be
    aligned onto one iteration space, which a single CUDA kernel needs)."""


@dataclass
class AutoScheduleReport:
    """What the tactics decided (the returned schedule's `sch.report`)."""

    target: str
    config: ScheduleConfig
    aligned: bool = False
    inlined: list[str] = field(default_factory=list)
    strategy: str = ""
    fused: list[str] = field(default_factory=list)
    local: list[str] = field(default_factory=list)
    nests: dict[str, str] = field(default_factory=dict)
    """x86: what was done to each nest (by its main block; "*" for a whole-group fused loop)."""
    fallbacks: list[str] = field(default_factory=list)
    """Why a better tactic did not apply (each entry names the tactic and the rule), in order."""
    notes: list[str] = field(default_factory=list)
    """Why the tactics chose what they did (matmul tile, tuned parameters, fallbacks)."""


def _check_args(func: LoweredFunc, target: TargetLike, config: ScheduleConfig | None) -> Target:
    if not isinstance(func, LoweredFunc):
        raise TypeError(f"auto_schedule: expected a LoweredFunc, got {type(func).__name__}")
    try:
        tgt = Target.parse(target)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"auto_schedule: {exc}") from None
    if config is not None and not isinstance(config, ScheduleConfig):
        raise TypeError(f"auto_schedule: config must be a ScheduleConfig, got {type(config).__name__}")
    return tgt


def _align_and_inline(sch: IRSchedule, report: AutoScheduleReport) -> None:
    report.aligned = align_iter_space_tactic(sch)
    report.inlined = compute_inline_tactic(sch)
    if not report.aligned:
        report.aligned = align_iter_space_tactic(sch)


def _require_aligned(sch: IRSchedule, info: GroupInfo, report: AutoScheduleReport) -> None:
    nests = [b for b in info.blocks if not b.is_init]
    if report.aligned or not info.spatial or len(nests) <= 1:
        return
    raise schedule_error(AutoScheduleError, "auto_schedule",
                         "a CUDA group needs every loop nest on the master's "
                         f"[spatial, reduce] iteration space, but the nests of '{sch.func.name}' cannot be "
                         "aligned "
                         "(schedule it by hand, or split the group)", sch.func)


def _try_matmul_x86(func: LoweredFunc, target: Target, params: MatmulParams | None,
                    report: AutoScheduleReport) -> IRSchedule | None:
    """The matmul tactic when the group (after inlining its epilogue's intermediates) is a
    matmul; None otherwise. Parameters: `params`, else the tuning database's entry for this
    group, else the defaults."""
    if not any(block.is_reduce for block in analyze_group(func).blocks):
        return None  # no reduction, no matmul: skip the inlining (its cost grows with the group)
    sch = IRSchedule(func)
    inlined = compute_inline_tactic(sch)
    info = match_matmul(sch.func)
    if info is None:
        return None
    if params is None:
        params, source = tuned_matmul_params(info, target)
    else:
        source = "given"
    try:
        notes = matmul_x86_tactic(sch, info, params)
    except ScheduleError as err:  # never fail: the generic tactics schedule it instead
        report.fallbacks.append(f"matmul tactic ({source} parameters) did not apply: {type(err).__name__}: "
                                f"{str(err).splitlines()[0]}")
        return None
    report.inlined = inlined
    report.notes = [f"matmul parameters: {source}"] + notes
    report.strategy = "x86-matmul"
    return sch


def _try_matmul_cuda(func: LoweredFunc, target: Target, report: AutoScheduleReport) -> IRSchedule | None:
    """The tiled shared-memory matmul schedule when the group (after inlining) is a matmul with
    elementwise epilogues; None otherwise, or when a primitive or the GPU passes' checks refuse
    it (the reason goes to `report.fallbacks`)."""
    sch = IRSchedule(func)
    inlined = compute_inline_tactic(sch)
    info = match_matmul(sch.func)
    if info is None:
        return None
    try:
        notes = cuda_matmul_tactic(sch, info, CudaMatmulParams(), target.gpu)
        gpu_bind(cross_thread_reduce(sch.func))  # the race checks: both barriers in place
    except (ScheduleError, CompileError) as err:
        report.fallbacks.append(f"cuda matmul tactic did not apply: {type(err).__name__}: "
                                f"{str(err).splitlines()[0]}")
        return None
    report.inlined, report.notes, report.strategy = inlined, notes, "cuda-matmul"
    return sch


def tuned_matmul_params(info: object, target: Target) -> tuple[MatmulParams, str]:
    """The tuning database's parameters for this matmul group, else the defaults for the
    target's native vector width."""
    from schedules.tactics.tuning_db import lookup_matmul

    found = lookup_matmul(info, target.name)  # type: ignore[arg-type]
    if found is not None:
        return found, "tuning database"
    return default_matmul_params(info, target.cpu.vector_bits), "defaults"  # type: ignore[arg-type]


def target_config(func: LoweredFunc, target: Target, cfg: ScheduleConfig,
                  use_db: bool = True) -> ScheduleConfig:
    """`cfg` for a CPU target: its native vector width (16 float32 lanes with AVX-512), then
    (with `use_db`) the tuning database's parameters for this group, when it has a record. The
    tuner's default candidate is this config without the database."""
    if target.is_gpu:
        return cfg
    from schedules.tactics.tuning_db import lookup_group

    cfg = dataclasses.replace(cfg, vector_width_bits=target.cpu.vector_bits)
    llc = _last_level_cache(target)
    if llc is not None:  # outputs of half the last-level cache or more would evict it: stream them
        cfg = dataclasses.replace(cfg, streaming_store_bytes=llc // 2)
    params = (lookup_group(func, target.name) if use_db else None) or {}
    known = {k: v for k, v in params.items() if k in {f.name for f in dataclasses.fields(cfg)}}
    return dataclasses.replace(cfg, **known) if known else cfg


def _last_level_cache(target: Target) -> int | None:
    """Bytes of the CPU's last-level cache, when the OS tells it."""
    for level in ("L3", "L2"):
        size = target.cpu.cache(level)
        if size:
            return size
    return None


def auto_schedule(func: LoweredFunc, target: TargetLike = "cuda", config: ScheduleConfig | None = None,
                  matmul: MatmulParams | None = None) -> IRSchedule:
    """Schedule `func` automatically for `target` (a `Target`, "cuda" or "x86").

    Args:
        func: an unscheduled lowered group (as `cinn_py.lower` returns it).
        target: "cuda" (tile + bind, cross-thread reductions) or "x86" (parallel + vectorize).
        config: the tile config to use; default: CINN's static-shape rules for the group's sizes
            (symbolic sizes count as large; see `auto_schedule_buckets`).
        matmul: x86 matmul tile parameters (default: the tuning database's, else the defaults).

    Returns:
        The IRSchedule (its `.func` is the scheduled function, its `.trace` the primitives
        applied; `.report` says what the tactics decided).

    Never fails on a valid group: when the CUDA tiling tactics do not apply (nests that cannot
    share one `[spatial, reduce]` space, ...), the group gets the single-block schedule of
    `cuda_fallback`; the x86 scheduler falls back plan by plan. `report.fallbacks` says why.
    """
    tgt = _check_args(func, target, config)
    if is_attention_kernel(func):
        return _attention(func, tgt, config)
    cfg = config or target_config(func, tgt, build_schedule_config(analyze_group(func)))
    report = AutoScheduleReport(tgt.name, cfg)
    if not tgt.is_gpu:
        mm = _try_matmul_x86(func, tgt, matmul, report)
        if mm is not None:
            mm.report = report
            return mm
        sch, result = x86_schedule(lambda: IRSchedule(func), cfg)
        report.strategy, report.inlined = f"x86-{result.plan}", result.inlined
        report.nests, report.fallbacks = result.nests, report.fallbacks + result.fallbacks
        sch.report = report
        return sch
    mm_cuda = _try_matmul_cuda(func, tgt, report)
    if mm_cuda is not None:
        mm_cuda.report = report
        return mm_cuda
    sch = IRSchedule(func)
    try:
        _align_and_inline(sch, report)
        _require_aligned(sch, analyze_group(sch.func), report)
        tile = tile_first_general_tactic(sch, cfg)
        report.strategy = tile.strategy
        report.fused = compute_at_reduction_tactic(sch, tile.spatial_depth)
        report.local = assign_storage(sch, tile.rf_blocks, report.fused)
        # the backend's race checks (strict: what is not proven race-free counts as a race): a
        # nest reading what other threads of its block wrote gets barriers; a tiling that needs a
        # barrier across blocks is not kept
        try:
            gpu_bind(cross_thread_reduce(sch.func), strict=True)
        except MissingBarrierError as err:
            barriers = sync_between_nests(sch)
            if not barriers:
                raise
            gpu_bind(cross_thread_reduce(sch.func), strict=True)
            report.notes.append(f"{barriers} __syncthreads() between the nests: {err.message}")
    except (ScheduleError, CompileError) as err:
        sch = _cuda_fallback(func, report, err)
    sch.report = report
    return sch


def _attention(func: LoweredFunc, target: Target, config: ScheduleConfig | None) -> IRSchedule:
    """A fused attention kernel (already tiled by its template): its loop roles as the target's
    loop kinds (`schedules.tactics.attention`)."""
    sch = IRSchedule(func)
    report = AutoScheduleReport(target.name, config or build_schedule_config(analyze_group(func)))
    if target.is_gpu:
        report.notes, report.strategy = attention_cuda_tactic(sch), "cuda-attention"
    else:
        report.notes, report.strategy = attention_x86_tactic(sch), "x86-attention"
    sch.report = report
    return sch


def _cuda_fallback(func: LoweredFunc, report: AutoScheduleReport,
                   err: ScheduleError | CompileError) -> IRSchedule:
    """The tiling tactics did not apply: one thread block, nests separated by barriers
    (`cuda_fallback`), after CINN's inlining; the report keeps the reason."""
    report.fallbacks.append(f"tiling: {type(err).__name__}: {err.message}")
    report.aligned, report.fused, report.local = False, [], []
    sch = IRSchedule(func)
    report.inlined = compute_inline_tactic(sch)
    report.nests = {"*": single_block_schedule(sch)}
    report.strategy = "single-block"
    return sch


def _range_pred(value: Expr, lo: int, hi: int) -> Expr | None:
    terms: list[Expr] = []
    if lo > 1:
        terms.append(GE(value, IntImm(value.dtype, lo)))
    if hi < MAX_NUMEL:
        terms.append(LE(value, IntImm(value.dtype, hi)))
    out: Expr | None = None
    for term in terms:
        out = term if out is None else And(out, term)
    return out


def bucket_predicate(info: GroupInfo, config: ScheduleConfig) -> Expr:
    """CINN's `SymbolicPredicate` for a bucket: `lo <= sp_numel <= hi` (and the same for the reduce
    numel) over its dynamic dimensions; bounds of 1 and `MAX_NUMEL` are left out, so the
    predicate of an unbounded bucket is `true`."""
    pred: Expr | None = None
    for dim in config.bucket.space:
        if not dim.is_dynamic:
            continue
        value = info.spatial_numel if dim.iter_type == "S" else info.reduce_numel
        term = _range_pred(value, dim.lower_bound, dim.upper_bound)
        if term is not None:
            pred = term if pred is None else And(pred, term)
    return pred if pred is not None else const(True)


def auto_schedule_buckets(func: LoweredFunc, target: TargetLike = "cuda") -> list[tuple[Expr, IRSchedule]]:
    """One schedule per shape bucket: `[(predicate, IRSchedule)]`, predicates in dispatch order
    (the first that holds wins; together they cover every shape). A static group, or the x86
    target (whose schedule does not depend on sizes), gives a single bucket with predicate `true`.

    Feed the CUDA host dispatch with
    `BucketDispatch([(pred, sch.func) for pred, sch in auto_schedule_buckets(func)])`.
    """
    tgt = _check_args(func, target, None)
    info = analyze_group(func)
    if not tgt.is_gpu:
        return [(const(True), auto_schedule(func, tgt))]
    return [(bucket_predicate(info, cfg), auto_schedule(func, tgt, cfg)) for cfg in bucket_configs(info)]
