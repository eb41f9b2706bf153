"""The registry of trace step kinds (CINN `ScheduleDesc` step registry, `schedule_desc.cc`).

Each public `IRSchedule` method is one kind: its parameters in call order, which of them may
hold handles (recorded as `inputs` referencing earlier outputs `e0, e1, ...`) and what it
returns (`none`, one handle, or a list of handles). Replay and the Python printer read this
table, so a kind's parameters are its keyword arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["StepKind", "STEP_KINDS", "register", "step_kind"]

Returns = Literal["none", "one", "list"]


@dataclass(frozen=True)
class StepKind:
    """One recordable primitive: name, ordered parameters, and result shape."""

    name: str
    params: tuple[str, ...]
    returns: Returns


STEP_KINDS: dict[str, StepKind] = {}


def register(name: str, params: tuple[str, ...], returns: Returns) -> StepKind:
    """Add (or re-declare identically) a step kind."""
    kind = StepKind(name, params, returns)
    existing = STEP_KINDS.get(name)
    if existing is not None and existing != kind:
        raise ValueError(f"step kind '{name}' is already registered as {existing}")
    STEP_KINDS[name] = kind
    return kind


def step_kind(name: str) -> StepKind:
    """The kind called `name`; ValueError listing the known kinds otherwise."""
    try:
        return STEP_KINDS[name]
    except KeyError:
        raise ValueError(f"unknown schedule step kind '{name}' (known: {', '.join(sorted(STEP_KINDS))})") from None


for _name, _params, _ret in (
    ("get_block", ("name",), "one"),
    ("get_loops", ("block",), "list"),
    ("get_all_blocks", (), "list"),
    ("get_child_blocks", ("node",), "list"),
    ("get_root_block", ("node",), "one"),
    ("split", ("loop", "factors"), "list"),
    ("fuse", ("loops",), "one"),
    ("reorder", ("loops",), "none"),
    ("parallel", ("loop",), "none"),
    ("vectorize", ("loop", "factor"), "none"),
    ("unroll", ("loop",), "none"),
    ("bind", ("loop", "thread_axis"), "none"),
    ("annotate", ("block", "key", "value"), "none"),
    ("unannotate", ("block", "key"), "none"),
    ("set_buffer", ("block", "memory_type"), "none"),
    ("sync_threads", ("node", "after"), "none"),
    ("flatten_loops", ("loops",), "one"),
    ("add_unit_loop", ("block",), "one"),
    ("compute_at", ("block", "loop", "keep_unit_loops"), "none"),
    ("simple_compute_at", ("block", "loop"), "none"),
    ("reverse_compute_at", ("block", "loop", "keep_unit_loops"), "none"),
    ("compute_inline", ("block",), "none"),
    ("reverse_compute_inline", ("block",), "none"),
    ("cache_read", ("block", "read_idx", "memory_type"), "one"),
    ("cache_write", ("block", "write_idx", "memory_type"), "one"),
    # rfactor / factorize_reduction return the partial-result Tensor (as CINN does), which is
    # not a handle: nothing is named in the trace.
    ("rfactor", ("loop", "rf_axis"), "none"),
    ("factorize_reduction", ("loop", "rf_axis"), "none"),
    ("decompose_reduction", ("block", "loop"), "one"),
    ("align_iter_space", (), "none"),
):
    register(_name, _params, _ret)  # type: ignore[arg-type]
