"""Schedule errors shared by several primitives, and the message format all of them use.

Every precondition a primitive checks has its own `ScheduleError` subclass (defined in the
primitive's module when only it uses the rule, here when several do). Messages read:

    split: loop 'i' must start at 0, but starts at 4
    <the function's IR with the offending loop underlined by ^^^^>

so the primitive, the rule, expected vs actual and the IR location are all in one place.
Classes that describe a bad argument value (not a property of the IR) also derive from
`ValueError`, so `except ValueError` keeps working for callers that validate input.
"""

from __future__ import annotations

from typing import Any, TypeVar

from cinn_py.diagnostics import ScheduleError
from cinn_py.ir import print_ir_marked

ErrorT = TypeVar("ErrorT", bound=ScheduleError)

__all__ = [
    "ScheduleError", "schedule_error", "StaleHandleError", "BlockNotFoundError", "LoopNotFoundError",
    "IllegalDependenceError", "InvalidArgumentError", "LoopStartError", "LoopKindError",
    "NonConstantExtentError", "NotPerfectlyNestedError", "NotAChainError", "ExtentMismatchError",
    "BindLimitError", "BufferError",
]


def schedule_error(cls: type[ErrorT], primitive: str, message: str, root: Any = None, *nodes: Any) -> ErrorT:
    """Build `cls` with the message `"<primitive>: <message>"` and the IR excerpt of `root`
    with `nodes` marked (when given)."""
    detail = print_ir_marked(root, *nodes) if root is not None else None
    return cls(f"{primitive}: {message}", detail, primitive=primitive)


class StaleHandleError(ScheduleError):
    """A loop/block handle refers to a node that an earlier primitive replaced or removed."""


class BlockNotFoundError(ScheduleError):
    """No schedule block with the requested name (or more than one)."""


class LoopNotFoundError(ScheduleError):
    """The loop is not in the current IR, or not where the primitive needs it."""


class IllegalDependenceError(ScheduleError):
    """The transformation would violate a data dependence (decided with islpy)."""


class InvalidArgumentError(ScheduleError, ValueError):
    """An argument value is out of the primitive's domain (factor 0, two -1 factors, unknown
    axis or memory scope, a handle of another schedule, ...)."""


class LoopStartError(ScheduleError):
    """The loop must start at 0 (split, fuse, bind and flatten work on normalised loops)."""


class LoopKindError(ScheduleError):
    """The loop's for-kind does not allow the primitive (e.g. binding a loop that is already
    parallel, fusing a vectorized loop)."""


class NonConstantExtentError(ScheduleError):
    """The primitive needs a compile-time constant extent (vectorize, unroll, thread binds)."""


class NotPerfectlyNestedError(ScheduleError):
    """Loops must be adjacent: each loop body is exactly the next loop (fuse, flatten)."""


class NotAChainError(ScheduleError):
    """Loops must lie on one chain of nested loops (reorder)."""


class ExtentMismatchError(ScheduleError):
    """Factors or extents that must match do not (split factors vs extent, ...)."""


class BindLimitError(ScheduleError):
    """A GPU bind exceeds the target's grid / block limits or reuses an axis."""


class BufferError(ScheduleError):
    """A buffer cannot be re-scoped (function argument, no Store in the block, ...)."""
