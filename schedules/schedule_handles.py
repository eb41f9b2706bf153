"""The handle bookkeeping of `IRSchedule` (its base class): resolving `LoopRV` / `BlockRV` handles
and block names to the *current* nodes of the scheduled functions (through a per-function
`StmtIndex`), telling a stale handle which primitive removed its node, committing a rebuilt
function, and encoding a call's arguments as a trace step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.ir import For, LoweredFunc, Module, ScheduleBlockRealize, Stmt
from schedules.analysis.loops import StmtIndex, block_names, is_root_block
from schedules.errors import BlockNotFoundError, InvalidArgumentError, StaleHandleError, schedule_error
from schedules.state import BlockRV, LoopRV, is_handle
from schedules.trace import Step, Trace, encode_value


class ScheduleHandles:
    """The state a schedule resolves handles against (`IRSchedule.__init__` sets it) and the
    lookups over it."""

    _funcs: list[LoweredFunc]
    _module_name: str | None
    trace: Trace
    _killed: dict[int, str]
    """uid of a removed node -> the trace step that removed it."""
    _indices: dict[int, StmtIndex]
    _current_step: str

    @property
    def mod(self) -> Module:
        """The scheduled functions as a Module."""
        return Module(self._module_name or self._funcs[0].name, tuple(self._funcs))

    def _index(self, k: int) -> StmtIndex:
        func = self._funcs[k]
        index = self._indices.get(id(func))
        if index is None or index.root is not func:
            index = StmtIndex(func)
            self._indices = {id(func): index,
                             **{i: x for i, x in self._indices.items() if x.root in self._funcs}}
        return index

    def _locate(self, uid: int) -> tuple[int, Stmt] | None:
        for k in range(len(self._funcs)):
            node = self._index(k).by_uid.get(uid)
            if node is not None:
                return k, node
        return None

    def _lookup(self, uid: int) -> Stmt | None:
        found = self._locate(uid)
        return found[1] if found else None

    def _func_of(self, node: Stmt) -> int:
        for k in range(len(self._funcs)):
            if self._index(k).contains(node):
                return k
        raise LookupError("node is not in the schedule")  # unreachable: nodes come from _locate

    def _check_owner(self, handle: Any, primitive: str) -> None:
        if handle._sch is not self:
            raise schedule_error(InvalidArgumentError, primitive, f"{handle!r} belongs to another IRSchedule")

    def _stale(self, handle: LoopRV | BlockRV, primitive: str) -> StaleHandleError:
        what = f"loop '{handle.var_name}'" if isinstance(handle, LoopRV) else f"block '{handle.name}'"
        cause = self._killed.get(handle.uid)
        reason = f"it was replaced or removed by {cause}" if cause else "it is no longer in the IR"
        label = f" ({handle.rv_name})" if handle.rv_name else ""
        return schedule_error(StaleHandleError, primitive,
                              f"handle to {what}{label} is stale: {reason}; re-fetch it with "
                              "get_loops/get_block",
                              self._funcs[0] if len(self._funcs) == 1 else self.mod)

    def _loop(self, handle: Any, primitive: str) -> tuple[int, For]:
        if not isinstance(handle, LoopRV):
            raise TypeError(f"{primitive}: expected a loop handle (from get_loops/split/fuse), got "
                            f"{handle!r}")
        self._check_owner(handle, primitive)
        found = self._locate(handle.uid)
        if found is None or not isinstance(found[1], For):
            raise self._stale(handle, primitive)
        return found  # type: ignore[return-value]

    def _loops(self, handles: Any, primitive: str) -> tuple[int, list[For]]:
        if isinstance(handles, LoopRV) or not isinstance(handles, (list, tuple)):
            raise TypeError(f"{primitive}: expected a list of loop handles, got {handles!r}")
        resolved = [self._loop(h, primitive) for h in handles]
        funcs = {k for k, _ in resolved}
        if len(funcs) > 1:
            raise schedule_error(InvalidArgumentError, primitive,
                                 "loops come from different functions", self.mod)
        return (resolved[0][0] if resolved else 0), [loop for _, loop in resolved]

    def _block(self, block: Any, primitive: str) -> tuple[int, ScheduleBlockRealize]:
        if isinstance(block, str):
            return self._block_by_name(block, primitive)
        if not isinstance(block, BlockRV):
            raise TypeError(f"{primitive}: expected a block name or block handle, got {block!r}")
        self._check_owner(block, primitive)
        found = self._locate(block.uid)
        if found is not None and isinstance(found[1], ScheduleBlockRealize):
            return found  # type: ignore[return-value]
        if any(block.name in block_names(f) for f in self._funcs):
            return self._block_by_name(block.name, primitive)
        raise self._stale(block, primitive)

    def _block_by_name(self, name: str, primitive: str) -> tuple[int, ScheduleBlockRealize]:
        hits = [(k, b) for k in range(len(self._funcs)) for b in self._index(k).order
                if isinstance(b, ScheduleBlockRealize) and b.name == name
                and (b.iter_values or is_root_block(b))]
        if len(hits) == 1:
            return hits[0]
        names = [n for f in self._funcs for n in block_names(f)]
        if not hits:
            raise schedule_error(BlockNotFoundError, primitive,
                                 f"no block named '{name}' (blocks: {', '.join(names) or 'none'})")
        raise schedule_error(BlockNotFoundError, primitive,
                             f"{len(hits)} blocks are named '{name}'; block names must be unique",
                             self._funcs[hits[0][0]], *[b for _, b in hits])

    def _node(self, node: Any, primitive: str) -> tuple[int, Stmt]:
        if isinstance(node, LoopRV):
            return self._loop(node, primitive)
        return self._block(node, primitive)

    def _commit(self, k: int, new_func: LoweredFunc) -> None:
        before = set(self._index(k).by_uid)
        self._funcs[k] = new_func
        for uid in before - set(self._index(k).by_uid):
            self._killed.setdefault(uid, self._current_step)

    def _encode_step(self, kind: str, params: Sequence[str], args: dict[str, Any]) -> Step:
        step = Step(kind)
        for param in params:
            value = args.get(param)
            if is_handle(value):
                step.inputs[param] = self._ref(value, kind)
            elif isinstance(value, (list, tuple)) and any(is_handle(v) for v in value):
                if not all(is_handle(v) for v in value):
                    raise InvalidArgumentError(f"{kind}: '{param}' mixes handles and other values")
                step.inputs[param] = [self._ref(v, kind) for v in value]
            else:
                try:
                    step.attrs[param] = encode_value(value)
                except TypeError as exc:
                    raise TypeError(f"{kind}: {exc}") from None
        return step

    def _ref(self, handle: Any, primitive: str) -> str:
        self._check_owner(handle, primitive)
        if handle.rv_name is None:
            raise InvalidArgumentError(f"{primitive}: {handle!r} was not returned by a recorded schedule "
                                       "call")
        return handle.rv_name
