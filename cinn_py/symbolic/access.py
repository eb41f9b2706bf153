"""`Access`: one load or store of a tensor, the record every access analysis shares.

The schedule primitives' region and dependence checks, the islpy sites and bounds checks, and the
GPU buffer passes each collect the accesses of some statements; they record them the same way,
filling what their walk knows (the guards on the way, the enclosing block, the store a load feeds,
the enclosing loops and branches in program order).
"""

from __future__ import annotations

from dataclasses import dataclass

from cinn_py.ir import Expr, ScheduleBlockRealize, Store, Tensor

__all__ = ["Access", "Condition"]

Condition = tuple[Expr, bool]
"""A condition on the way to an access and the branch taken (`if` guards, `select` arms)."""


@dataclass(frozen=True)
class Access:
    """One load (`is_write` False) or store of `tensor`, with `indices` in terms of loop vars
    (block iter vars replaced by their bound values) unless the collector says otherwise."""

    tensor: Tensor
    indices: tuple[Expr, ...]
    is_write: bool
    guards: tuple[Condition, ...] = ()
    """Conditions that hold where the access runs (outermost first)."""
    block: ScheduleBlockRealize | None = None
    """The schedule block the access is in (None outside blocks or when not recorded)."""
    store: Store | None = None
    """The store whose value or indices hold this load (a store: itself)."""
    accumulates: bool = False
    """A reduction update block's access to the buffer it accumulates into."""
    context: tuple[object, ...] = ()
    """Enclosing statements in program order, outermost first: a `For`, or `(IfThenElse, branch)`."""

    @property
    def buffer(self) -> str:
        return self.tensor.buffer.name
