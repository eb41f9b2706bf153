"""Schedule handles: `LoopRV` and `BlockRV` (CINN's loop / block `Expr`s held by a schedule).

A handle stores the statement `uid` of the node it names. Statement uids survive the path-copy
rebuilds that primitives do on unrelated parts of the tree, so a handle stays valid until a
primitive replaces or removes its node; then resolving it raises `StaleHandleError` naming the
primitive (and trace step) that invalidated it. Differs from CINN, where handles are node
pointers and every primitive that copies a node invalidates them.

A `BlockRV` also keeps the block name: when its uid is gone but a block of that name exists
(primitives that rebuild a block keep its name), it resolves by name, as CINN's `GetBlock` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cinn_py.ir import For, for_header

if TYPE_CHECKING:
    from schedules.schedule import IRSchedule

__all__ = ["LoopRV", "BlockRV", "Handle"]


class _RV:
    """Common part of the handles: the owning schedule, the node uid and the trace name."""

    __slots__ = ("_sch", "uid", "rv_name")

    def __init__(self, sch: IRSchedule, uid: int) -> None:
        self._sch = sch
        self.uid = uid
        self.rv_name: str | None = None
        """Name of the trace output that produced this handle (`e3`); None for handles that
        come from nested, unrecorded calls."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._sch is self._sch and other.uid == self.uid  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.uid))


class LoopRV(_RV):
    """A loop of an `IRSchedule` (what `get_loops`, `split`, `fuse` return)."""

    __slots__ = ("var_name",)

    def __init__(self, sch: IRSchedule, uid: int, var_name: str) -> None:
        super().__init__(sch, uid)
        self.var_name = var_name

    def __str__(self) -> str:
        loop = self._sch._lookup(self.uid)
        if not isinstance(loop, For):
            return f"<stale loop '{self.var_name}'>"
        return f"{for_header(loop)}{loop.loop_var.name}, {loop.min}, {loop.extent})"

    def __repr__(self) -> str:
        return f"LoopRV({self.rv_name or '?'}: {self})"


class BlockRV(_RV):
    """A schedule block of an `IRSchedule` (what `get_block`, `get_all_blocks` return)."""

    __slots__ = ("name",)

    def __init__(self, sch: IRSchedule, uid: int, name: str) -> None:
        super().__init__(sch, uid)
        self.name = name

    def __str__(self) -> str:
        return f"ScheduleBlock({self.name})"

    def __repr__(self) -> str:
        return f"BlockRV({self.rv_name or '?'}: {self.name})"


Handle = LoopRV | BlockRV


def is_handle(value: Any) -> bool:
    return isinstance(value, _RV)
