"""Schedule errors shared by several primitives, and the message format all of them use.

Every precondition a primitive checks has its own `ScheduleError` subclass (defined in the
primitive's module when only it uses the rule, here when several do). Messages read:

    split: loop 'i' must start at 0, but starts at 4
    <the function's IR with the offending loop underlined by ^^^^>

so the primitive, the rule, expected vs actual and the IR location are all in one place.
"""

from __future__ import annotations

from typing import Any

from cinn_py.diagnostics import ScheduleError
from cinn_py.ir.printer import print_ir_marked

__all__ = ["ScheduleError", "schedule_error", "StaleHandleError", "BlockNotFoundError",
           "LoopNotFoundError", "IllegalDependenceError"]


def schedule_error(cls: type[ScheduleError], primitive: str, message: str, root: Any = None,
                   *nodes: Any) -> ScheduleError:
    """Build `cls` with the message `"<primitive>: <message>"` and the IR excerpt of `root`
    with `nodes` marked (when given)."""
    detail = print_ir_marked(root, *nodes) if root is not None else None
    err = cls(f"{primitive}: {message}", detail)
    err.primitive = primitive  # type: ignore[attr-defined]
    return err


class StaleHandleError(ScheduleError):
    """A loop/block handle refers to a node that an earlier primitive replaced or removed."""


class BlockNotFoundError(ScheduleError):
    """No schedule block with the requested name (or more than one)."""


class LoopNotFoundError(ScheduleError):
    """The loop is not in the current IR, or not where the primitive needs it."""


class IllegalDependenceError(ScheduleError):
    """The transformation would violate a data dependence (decided with islpy)."""
