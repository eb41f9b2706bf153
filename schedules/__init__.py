"""Schedules: `IRSchedule` with CINN's primitives, legality analysis, trace record/replay, tactics."""

from schedules.errors import (
    BindLimitError, BlockNotFoundError, BufferError, ExtentMismatchError, IllegalDependenceError,
    InvalidArgumentError, LoopKindError, LoopNotFoundError, LoopStartError, NonConstantExtentError,
    NotAChainError, NotPerfectlyNestedError, ScheduleError, StaleHandleError,
)
from schedules.schedule import IRSchedule
from schedules.state import BlockRV, LoopRV
from schedules.trace import Step, Trace, replay

__all__ = [
    "BindLimitError", "BlockNotFoundError", "BlockRV", "BufferError", "ExtentMismatchError",
    "IRSchedule", "IllegalDependenceError", "InvalidArgumentError", "LoopKindError",
    "LoopNotFoundError", "LoopRV", "LoopStartError", "NonConstantExtentError", "NotAChainError",
    "NotPerfectlyNestedError", "ScheduleError", "StaleHandleError", "Step", "Trace", "replay",
]
