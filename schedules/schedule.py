"""`IRSchedule`: CINN's schedule API in snake_case over an immutable IR.

The schedule holds the current functions (one, or all of a Module) and a `Trace`. Each public
method resolves its handles to the *current* nodes, calls the pure primitive function in
`schedules.primitives`, and on success swaps in the rebuilt function and records a trace step.
A primitive that raises leaves the schedule untouched (nothing is assigned before it returns).

Handles (`LoopRV`, `BlockRV`) name nodes by statement uid; see `schedules.state`. Blocks may
also be given by name. Nodes a primitive removed are remembered with the step that removed
them, so a stale handle says which primitive invalidated it.
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

from cinn_py.ir import (
    AttrValue, Expr, For, LoweredFunc, Module, NameGenerator, ScheduleBlockRealize, Stmt, Tensor, names_in,
    print_ir, using_names,
)
from schedules import primitives as P
from schedules.analysis.loops import StmtIndex, block_names, is_root_block
from schedules.errors import (
    BlockNotFoundError, InvalidArgumentError, StaleHandleError, schedule_error,
)
from schedules.primitives.cache import cache_read as _cache_read
from schedules.primitives.cache import cache_write as _cache_write
from schedules.primitives.for_type import GpuLimits
from schedules.primitives.reverse_compute_at import reverse_compute_at as _reverse_compute_at
from schedules.registry import step_kind
from schedules.state import BlockRV, LoopRV, is_handle
from schedules.trace import Step, Trace, encode_value

__all__ = ["IRSchedule"]

F = TypeVar("F", bound=Callable[..., Any])
BlockLike = BlockRV | str
NodeLike = BlockRV | LoopRV | str


def recorded(kind_name: str) -> Callable[[F], F]:
    """Record calls of the decorated method as trace steps of kind `kind_name` (outermost
    calls only: a primitive that uses another one internally records one step)."""
    kind = step_kind(kind_name)

    def decorate(method: F) -> F:
        signature = inspect.signature(method)

        @functools.wraps(method)
        def wrapper(self: IRSchedule, *args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind(self, *args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{kind_name}: {exc}") from None
            bound.apply_defaults()
            params = dict(list(bound.arguments.items())[1:])
            if self._depth:
                return method(self, **params)
            step = self._encode_step(kind.name, kind.params, params)
            self._current_step = f"{kind_name} (trace step {len(self.trace)})"
            self._depth += 1
            try:
                with using_names(self._names):
                    result = method(self, **params)
            finally:
                self._depth -= 1
            outputs = [] if result is None else list(result) if isinstance(result, list) else [result]
            for out in outputs:
                if is_handle(out):
                    out.rv_name = self.trace.new_name()
                    step.outputs.append(out.rv_name)
            self.trace.append(step)
            return result

        return wrapper  # type: ignore[return-value]

    return decorate


class IRSchedule:
    """Schedule a `LoweredFunc` (or every function of a `Module`) with CINN's primitives.

    Args:
        func_or_module: the lowered IR to transform (never mutated).
        gpu_limits: device limits `bind` checks against (default: CUDA compute capability >= 7).
    """

    def __init__(self, func_or_module: LoweredFunc | Module, gpu_limits: GpuLimits | None = None) -> None:
        if isinstance(func_or_module, LoweredFunc):
            self._funcs, self._module_name = [func_or_module], None
        elif isinstance(func_or_module, Module):
            if not func_or_module.functions:
                raise ValueError(f"IRSchedule: module '{func_or_module.name}' has no functions")
            self._funcs, self._module_name = list(func_or_module.functions), func_or_module.name
        else:
            raise TypeError(f"IRSchedule needs a LoweredFunc or Module, got {type(func_or_module).__name__}")
        self.gpu_limits = gpu_limits or GpuLimits()
        self.trace = Trace()
        self._killed: dict[int, str] = {}
        self._indices: dict[int, StmtIndex] = {}
        self._depth = 0
        self._current_step = ""
        # Generated names are per schedule, clear of every name its functions use, so scheduling
        # the same IR twice gives the same names. `initial_names` is the state before any
        # primitive ran (`schedules.testing` replays from it).
        self._names = NameGenerator.seeded(names_in(*self._funcs, loop_vars=False))
        self.initial_names = copy.deepcopy(self._names)

    # -- the IR ----------------------------------------------------------------------------------
    @property
    def func(self) -> LoweredFunc:
        """The scheduled function (the only one; use `.mod` for multi-function modules)."""
        if len(self._funcs) != 1:
            raise ValueError(f"IRSchedule holds {len(self._funcs)} functions; use .mod")
        return self._funcs[0]

    @property
    def mod(self) -> Module:
        """The scheduled functions as a Module."""
        return Module(self._module_name or self._funcs[0].name, tuple(self._funcs))

    def __str__(self) -> str:
        return print_ir(self._funcs[0]) if len(self._funcs) == 1 else print_ir(self.mod)

    def fork(self) -> IRSchedule:
        """An independent copy to try a sequence of primitives on (tactics fall back when one
        does not apply): the IR is immutable and shared, the trace and handle bookkeeping are
        copied. Handles of this schedule do not work on the copy; `adopt` takes it back."""
        other = copy.copy(self)
        other._funcs = list(self._funcs)
        other.trace = copy.deepcopy(self.trace)
        other._killed = dict(self._killed)
        other._indices = {}
        return other

    def adopt(self, fork: IRSchedule) -> None:
        """Take over the IR and trace of `fork` (a `fork()` of this schedule that succeeded).
        Handles of this schedule to nodes that survived stay valid."""
        if not isinstance(fork, IRSchedule):
            raise TypeError(f"adopt: expected an IRSchedule, got {type(fork).__name__}")
        self._funcs, self.trace, self._killed, self._indices = list(fork._funcs), fork.trace, dict(fork._killed), {}

    # -- internals: lookup, handles, commits -------------------------------------------------------
    def _index(self, k: int) -> StmtIndex:
        func = self._funcs[k]
        index = self._indices.get(id(func))
        if index is None or index.root is not func:
            index = StmtIndex(func)
            self._indices = {id(func): index, **{i: x for i, x in self._indices.items() if x.root in self._funcs}}
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
                              f"handle to {what}{label} is stale: {reason}; re-fetch it with get_loops/get_block",
                              self._funcs[0] if len(self._funcs) == 1 else self.mod)

    def _loop(self, handle: Any, primitive: str) -> tuple[int, For]:
        if not isinstance(handle, LoopRV):
            raise TypeError(f"{primitive}: expected a loop handle (from get_loops/split/fuse), got {handle!r}")
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
            raise schedule_error(InvalidArgumentError, primitive, "loops come from different functions", self.mod)
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
                if isinstance(b, ScheduleBlockRealize) and b.name == name and (b.iter_values or is_root_block(b))]
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

    def _loop_rv(self, loop: For) -> LoopRV:
        return LoopRV(self, loop.uid, loop.loop_var.name)

    def _block_rv(self, block: ScheduleBlockRealize) -> BlockRV:
        return BlockRV(self, block.uid, block.name)

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
            raise InvalidArgumentError(f"{primitive}: {handle!r} was not returned by a recorded schedule call")
        return handle.rv_name

    # -- queries -------------------------------------------------------------------------------------
    @overload
    def get(self, handle: LoopRV) -> For: ...

    @overload
    def get(self, handle: BlockRV | str) -> ScheduleBlockRealize: ...

    def get(self, handle: LoopRV | BlockRV | str) -> For | ScheduleBlockRealize:
        """The current IR node a handle (or block name) refers to, for inspection: its
        `loop_var`, `extent`, `for_type`, `iter_values`, ... (TVM `Schedule.get`). Not recorded
        in the trace: it changes nothing. StaleHandleError if the node no longer exists."""
        if isinstance(handle, LoopRV):
            return self._loop(handle, "get")[1]
        return self._block(handle, "get")[1]

    @recorded("get_block")
    def get_block(self, name: str) -> BlockRV:
        """The block called `name` (BlockNotFoundError when absent or ambiguous)."""
        if not isinstance(name, str):
            raise TypeError(f"get_block: expected a block name, got {name!r}")
        return self._block_rv(self._block_by_name(name, "get_block")[1])

    @recorded("get_loops")
    def get_loops(self, block: BlockLike) -> list[LoopRV]:
        """Loops enclosing `block`, outer -> inner. A block without loops first gets a unit loop
        `for (ix, 0, 1)` (CINN `GetLoops` calls `AddUnitLoop`), so the result is never empty."""
        k, realize = self._block(block, "get_loops")
        loops = P.get_loops(self._funcs[k], realize)
        if not loops:
            return [self.add_unit_loop(self._block_rv(realize))]
        return [self._loop_rv(loop) for loop in loops]

    @recorded("get_all_blocks")
    def get_all_blocks(self) -> list[BlockRV]:
        """Every block (root excluded), pre-order, not descending into collected blocks."""
        return [self._block_rv(b) for f in self._funcs for b in P.get_all_blocks(f)]

    @recorded("get_child_blocks")
    def get_child_blocks(self, node: NodeLike) -> list[BlockRV]:
        """Blocks nested inside a loop or block (pre-order, outermost ones)."""
        k, stmt = self._node(node, "get_child_blocks")
        return [self._block_rv(b) for b in P.get_child_blocks(self._funcs[k], stmt)]

    @recorded("get_root_block")
    def get_root_block(self, node: NodeLike | None = None) -> BlockRV:
        """The root block of the function holding `node` (of the only function when omitted)."""
        k = self._node(node, "get_root_block")[0] if node is not None else self._single("get_root_block")
        return self._block_rv(P.get_root_block(self._funcs[k]))

    def _single(self, primitive: str) -> int:
        if len(self._funcs) != 1:
            raise schedule_error(InvalidArgumentError, primitive,
                                 f"the schedule holds {len(self._funcs)} functions; pass a node")
        return 0

    # -- loop transformations -----------------------------------------------------------------------
    @recorded("split")
    def split(self, loop: LoopRV, factors: Sequence[int | Expr]) -> list[LoopRV]:
        """Split `loop` into len(factors) nested loops (one factor may be -1: inferred)."""
        k, node = self._loop(loop, "split")
        new_func, loops = P.split(self._funcs[k], node, factors)
        self._commit(k, new_func)
        return [self._loop_rv(lp) for lp in loops]

    @recorded("fuse")
    def fuse(self, loops: Sequence[LoopRV]) -> LoopRV:
        """Fuse adjacent, perfectly nested loops into one (`i_j_fused`)."""
        k, nodes = self._loops(loops, "fuse")
        new_func, fused = P.fuse(self._funcs[k], nodes)
        self._commit(k, new_func)
        return self._loop_rv(fused)

    @recorded("reorder")
    def reorder(self, loops: Sequence[LoopRV]) -> None:
        """Permute loops of one nest into the listed order (unlisted loops stay put; guards move
        under the loops they test; statements beside the path are distributed out first)."""
        k, nodes = self._loops(loops, "reorder")
        self._commit(k, P.reorder(self._funcs[k], nodes))

    @recorded("flatten_loops")
    def flatten_loops(self, loops: Sequence[LoopRV]) -> LoopRV:
        """Fuse a perfectly nested chain and collapse the iteration spaces of its blocks."""
        k, nodes = self._loops(loops, "flatten_loops")
        new_func, loop = P.flatten_loops(self._funcs[k], nodes)
        self._commit(k, new_func)
        return self._loop_rv(loop)

    @recorded("add_unit_loop")
    def add_unit_loop(self, block: BlockLike) -> LoopRV:
        """Wrap `block` in `for (ix, 0, 1)` and return the new loop."""
        k, realize = self._block(block, "add_unit_loop")
        new_func, loop = P.add_unit_loop(self._funcs[k], realize)
        self._commit(k, new_func)
        return self._loop_rv(loop)

    # -- loop kinds ------------------------------------------------------------------------------------
    @recorded("parallel")
    def parallel(self, loop: LoopRV) -> None:
        """Mark a serial loop parallel (CPU thread pool); rejected when it carries a dependence."""
        k, node = self._loop(loop, "parallel")
        self._commit(k, P.parallel(self._funcs[k], node))

    @recorded("vectorize")
    def vectorize(self, loop: LoopRV, factor: int) -> None:
        """Mark a serial loop `vectorize[factor]` (any extent: x86 adds a scalar tail loop)."""
        k, node = self._loop(loop, "vectorize")
        self._commit(k, P.vectorize(self._funcs[k], node, factor))

    @recorded("unroll")
    def unroll(self, loop: LoopRV) -> None:
        """Mark a serial loop with a constant extent `unroll`."""
        k, node = self._loop(loop, "unroll")
        self._commit(k, P.unroll(self._funcs[k], node))

    @recorded("bind")
    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind a serial loop to `blockIdx.{x,y,z}` or `threadIdx.{x,y,z}`."""
        k, node = self._loop(loop, "bind")
        self._commit(k, P.bind(self._funcs[k], node, thread_axis, self.gpu_limits))

    # -- block attributes and storage --------------------------------------------------------------
    @recorded("annotate")
    def annotate(self, block: BlockLike, key: str, value: AttrValue) -> None:
        """Set `attrs[key] = value` on a block (int, float, bool or str)."""
        k, realize = self._block(block, "annotate")
        self._commit(k, P.annotate(self._funcs[k], realize, key, value))

    @recorded("unannotate")
    def unannotate(self, block: BlockLike, key: str) -> None:
        """Remove `attrs[key]` from a block (a missing key only warns, as in CINN)."""
        k, realize = self._block(block, "unannotate")
        self._commit(k, P.unannotate(self._funcs[k], realize, key))

    @recorded("set_buffer")
    def set_buffer(self, block: BlockLike, memory_type: str) -> None:
        """Move the tensor a block writes to a `global`/`shared`/`local` buffer `_<T>_temp_buffer`."""
        k, realize = self._block(block, "set_buffer")
        self._commit(k, P.set_buffer(self._funcs[k], realize, memory_type))

    @recorded("sync_threads")
    def sync_threads(self, node: NodeLike, after: bool = True) -> None:
        """Insert `__syncthreads()` after (or before) a loop or block."""
        k, stmt = self._node(node, "sync_threads")
        self._commit(k, P.sync_threads(self._funcs[k], stmt, after))

    # -- block-level primitives (schedules.primitives.compute_at / compute_inline / reduction / align) --
    def _on_block_and_loop(self, primitive: str, block: BlockLike, loop: LoopRV) -> tuple[int, Any, For]:
        kb, realize = self._block(block, primitive)
        kl, node = self._loop(loop, primitive)
        if kb != kl:
            raise schedule_error(InvalidArgumentError, primitive, "the block and the loop are in different functions",
                                 self.mod)
        return kb, realize, node

    @recorded("compute_at")
    def compute_at(self, block: BlockLike, loop: LoopRV, keep_unit_loops: bool = False) -> None:
        """Recompute producer `block` (a pure block, or a reduction with its init) under `loop`
        over the region its consumers there need."""
        k, realize, node = self._on_block_and_loop("compute_at", block, loop)
        self._commit(k, P.compute_at(self._funcs[k], realize, node, keep_unit_loops))

    @recorded("simple_compute_at")
    def simple_compute_at(self, block: BlockLike, loop: LoopRV) -> None:
        """Move `block` under `loop`, matching its outer loops 1:1 by extent (no region analysis)."""
        k, realize, node = self._on_block_and_loop("simple_compute_at", block, loop)
        self._commit(k, P.simple_compute_at(self._funcs[k], realize, node))

    @recorded("compute_inline")
    def compute_inline(self, block: BlockLike) -> None:
        """Inline producer `block` into every load of its tensor."""
        k, realize = self._block(block, "compute_inline")
        self._commit(k, P.compute_inline(self._funcs[k], realize))

    @recorded("reverse_compute_inline")
    def reverse_compute_inline(self, block: BlockLike) -> None:
        """Inline consumer `block` into its unique producer."""
        k, realize = self._block(block, "reverse_compute_inline")
        self._commit(k, P.reverse_compute_inline(self._funcs[k], realize))

    @recorded("rfactor")
    def rfactor(self, loop: LoopRV, rf_axis: int) -> Tensor:
        """Factor the reduction over `loop` into a stage `rf_<T>`; returns that tensor."""
        k, node = self._loop(loop, "rfactor")
        new_func, tensor = P.rfactor(self._funcs[k], node, rf_axis)
        self._commit(k, new_func)
        return tensor

    @recorded("factorize_reduction")
    def factorize_reduction(self, loop: LoopRV, rf_axis: int) -> Tensor:
        """Two-step reduction over `loop` (moved above the reduction's other loops when inside
        them) through `<T>_rf`; returns that tensor."""
        k, node = self._loop(loop, "factorize_reduction")
        new_func, tensor = P.factorize_reduction(self._funcs[k], node, rf_axis)
        self._commit(k, new_func)
        return tensor

    @recorded("decompose_reduction")
    def decompose_reduction(self, block: BlockLike, loop: LoopRV) -> BlockRV:
        """Move reduction `block`'s init block out of its nest to just before `loop` (which must
        enclose both); the update nest below `loop` becomes perfect. Returns the init block."""
        k, realize, node = self._on_block_and_loop("decompose_reduction", block, loop)
        new_func, init = P.decompose_reduction(self._funcs[k], realize, node)
        self._commit(k, new_func)
        return self._block_rv(init)

    @recorded("align_iter_space")
    def align_iter_space(self) -> None:
        """Align every loop nest of each function onto its group's `[spatial, reduce]` space."""
        aligned = [P.align_iter_space(f) for f in self._funcs]  # all checked before any commit
        for k, new_func in enumerate(aligned):
            self._commit(k, new_func)

    # -- reverse_compute_at and caches (schedules.primitives.reverse_compute_at / cache) -------------
    @recorded("reverse_compute_at")
    def reverse_compute_at(self, block: BlockLike, loop: LoopRV, keep_unit_loops: bool = False) -> None:
        """Compute consumer `block` at the end of each iteration of its producer's `loop`."""
        k, realize, node = self._on_block_and_loop("reverse_compute_at", block, loop)
        self._commit(k, _reverse_compute_at(self._funcs[k], realize, node, keep_unit_loops))

    @recorded("cache_read")
    def cache_read(self, block: BlockLike, read_idx: int, memory_type: str) -> BlockRV:
        """Read the `read_idx`-th tensor of `block` through a `<T>_<scope>_temp_buffer` copy;
        returns the copy block."""
        k, realize = self._block(block, "cache_read")
        new_func, copy = _cache_read(self._funcs[k], realize, read_idx, memory_type)
        self._commit(k, new_func)
        return self._block_rv(copy)

    @recorded("cache_write")
    def cache_write(self, block: BlockLike, write_idx: int, memory_type: str) -> BlockRV:
        """Write the `write_idx`-th tensor of `block` into a `<T>_<scope>_temp_buffer` copied back
        to `T` after its nest; returns the copy-back block (named `T`; `block` is renamed)."""
        k, realize = self._block(block, "cache_write")
        new_func, copy = _cache_write(self._funcs[k], realize, write_idx, memory_type)
        self._commit(k, new_func)
        return self._block_rv(copy)
