"""set_buffer and sync_threads (CINN `SetBuffer`, `SyncThreads`).

`set_buffer(block, scope)`: the tensor `T` of the block's first Store (CINN takes the first one)
and every tensor sharing its buffer (`T__reduce_init`) move to a new buffer `_<T>_temp_buffer`
with memory type `global` / `shared` / `local`; every load and store is rebound, and the
function's temp buffer list follows. Differs from CINN: a function argument cannot be moved
(its buffer is the caller's memory), which CINN leaves to fail later in codegen.

`sync_threads(node, after)`: inserts the intrinsic call `__syncthreads()` right after (or
before) a loop or block in its enclosing statement list.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import (
    Block, Buffer, Call, CallType, Evaluate, LoweredFunc, MemoryType, Mutator, ScheduleBlock,
    ScheduleBlockRealize, Stmt, Tensor, int32, replace_stmt,
)
from schedules.analysis.loops import first_store, index_of
from schedules.errors import BufferError, InvalidArgumentError, schedule_error
from schedules.registry import primitive

__all__ = ["set_buffer", "sync_threads", "SYNC_THREADS"]

SYNC_THREADS = "__syncthreads"


class _Rebuffer(Mutator):
    def __init__(self, old: str, new: Buffer) -> None:
        self.old, self.new = old, new

    def visit_tensor(self, tensor: Tensor) -> Tensor:
        return tensor.with_buffer(self.new) if tensor.buffer.name == self.old else tensor


@primitive
def set_buffer(func: LoweredFunc, block: ScheduleBlockRealize, memory_type: str) -> LoweredFunc:
    """Move the tensor `block` writes to buffer `_<T>_temp_buffer` in `memory_type`."""
    if not isinstance(memory_type, str):
        raise TypeError(f"set_buffer: memory_type must be 'global', 'shared' or 'local', got {memory_type!r}")
    scope = {m.value: m for m
             in (MemoryType.HEAP, MemoryType.GPU_SHARED, MemoryType.GPU_LOCAL)}.get(memory_type)
    if scope is None:
        raise schedule_error(InvalidArgumentError, "set_buffer", f"memory_type must be 'global', 'shared' or "
                             f"'local', got '{memory_type}'", func, block)
    store = first_store(block)
    if store is None:
        raise schedule_error(BufferError, "set_buffer",
                             f"block '{block.name}' has no Store to take the tensor from",
                             func, block)
    tensor = store.tensor
    old = tensor.buffer
    if old.name in {a.tensor.buffer.name for a in func.args if a.tensor is not None}:
        raise schedule_error(BufferError, "set_buffer", f"tensor '{tensor.name}' lives in argument buffer "
                             f"'{old.name}'; only intermediate tensors can change buffers", func, block)
    base = tensor.name.removesuffix("__reduce_init")
    new = Buffer(f"_{base}_temp_buffer", old.shape, old.dtype, scope)
    new_func = _Rebuffer(old.name, new).visit(func)
    temps = tuple(b for b in new_func.temp_bufs if b.name not in (old.name, new.name)) + (new,)
    return dataclasses.replace(new_func, temp_bufs=temps)


@primitive
def sync_threads(func: LoweredFunc, node: Stmt, after: bool = True) -> LoweredFunc:
    """Insert `__syncthreads()` after (or before) `node` (a loop or a block)."""
    if not isinstance(after, bool):
        raise TypeError(f"sync_threads: after must be a bool, got {after!r}")
    if isinstance(node, ScheduleBlockRealize) and not node.iter_values:
        raise schedule_error(InvalidArgumentError, "sync_threads", "cannot synchronise around the root block",
                             func, node)
    sync = Evaluate(Call(SYNC_THREADS, (), int32, CallType.INTRINSIC))
    parent = index_of(func).parent_of(node)
    if isinstance(parent, Block):
        stmts = list(parent.stmts)
        pos = next(k for k, s in enumerate(stmts) if s is node)
        stmts.insert(pos + 1 if after else pos, sync)
        return replace_stmt(func, parent, dataclasses.replace(parent, stmts=tuple(stmts)))
    if isinstance(parent, ScheduleBlock):
        pair = (node, sync) if after else (sync, node)
        return replace_stmt(func, parent, dataclasses.replace(parent, body=Block(pair)))
    raise schedule_error(InvalidArgumentError, "sync_threads", f"the parent of the node is a "
                         f"{type(parent).__name__}, not a statement list", func, node)
