"""The automatic group scheduler (CINN `ir/group_schedule/`, "tiling first" pipeline; cinn.md §3).

    auto_schedule(func, target="cuda" | "x86", config=None) -> IRSchedule
    auto_schedule_buckets(func, target="cuda") -> [(predicate Expr, IRSchedule)]

One module per tactic: `align` (AlignIterSpace + loop reorder alignment), `compute_inline`,
`tile_first` (TileFirstGeneral: tile, factorize_reduction, bind), `compute_at`
(ComputeAtReduction), `storage` (local buffers), `x86` (parallel / vectorize / rfactor);
`config` holds CINN's tile configs and shape buckets, `group` the group analysis, `auto` the
driver. See docs/auto_schedule.md.
"""

from schedules.tactics.auto import (
    AutoScheduleError, AutoScheduleReport, auto_schedule, auto_schedule_buckets, bucket_predicate,
)
from schedules.tactics.config import (
    BucketInfo, Dimension, ScheduleConfig, TileConfig, bucket_configs, build_schedule_config,
)
from schedules.tactics.group import GroupInfo, analyze_group

__all__ = [
    "AutoScheduleError", "AutoScheduleReport", "BucketInfo", "Dimension", "GroupInfo", "ScheduleConfig",
    "TileConfig", "analyze_group", "auto_schedule", "auto_schedule_buckets", "bucket_configs",
    "bucket_predicate", "build_schedule_config",
]
