"""`IRSchedule`: CINN's schedule API in snake_case over an immutable IR.

The schedule holds the current functions (one, or all of a Module) and a `Trace`. Each public
method resolves its handles to the *current* nodes, calls the pure primitive function in
`schedules.primitives`, and on success swaps in the rebuilt function and records a trace step.
A primitive that raises leaves the schedule untouched (nothing is assigned before it returns).

Handles (`LoopRV`, `BlockRV`) name nodes by statement uid; see `schedules.state`. Blocks may
also be given by name. Nodes a primitive removed are remembered with the step that removed
them, so a stale handle says which primitive invalidated it (the base class
`schedule_handles.ScheduleHandles` resolves handles; `recording` turns methods into trace steps).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from cinn_py.ir import (
    AttrValue, Expr, For, LoweredFunc, Module, NameGenerator, ScheduleBlockRealize, Tensor, names_in,
    nesting_room, print_ir,
)
from cinn_py.target import GpuLimits
from schedules.analysis.loops import StmtIndex
from schedules.errors import InvalidArgumentError, schedule_error
from schedules.primitives import get as queries  # the package imports (so registers) every primitive
from schedules.recording import generated, recorded
from schedules.registry import Primitive
from schedules.schedule_handles import ScheduleHandles
from schedules.state import BlockRV, LoopRV
from schedules.trace import Trace

if TYPE_CHECKING:
    from schedules.tactics.auto import AutoScheduleReport

__all__ = ["IRSchedule"]

BlockLike = BlockRV | str
NodeLike = BlockRV | LoopRV | str


class IRSchedule(ScheduleHandles):
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
        self.report: AutoScheduleReport | None = None
        """What the tactics decided, on a schedule `auto_schedule` made (None otherwise)."""
        self._killed: dict[int, str] = {}
        self._indices: dict[int, StmtIndex] = {}
        self._depth = 0
        self._current_step = ""
        # Generated names are per schedule, clear of every name its functions use, so scheduling
        # the same IR twice gives the same names. `initial_names` is the state before any
        # primitive ran (`schedules.testing` replays from it).
        self._names = NameGenerator.seeded(names_in(*self._funcs, loop_vars=False),
                                           names_in(*self._funcs) - names_in(*self._funcs, loop_vars=False))
        self.initial_names = copy.deepcopy(self._names)

    # -- the IR ----------------------------------------------------------------------------------
    @property
    def func(self) -> LoweredFunc:
        """The scheduled function (the only one; use `.mod` for multi-function modules)."""
        if len(self._funcs) != 1:
            raise ValueError(f"IRSchedule holds {len(self._funcs)} functions; use .mod")
        return self._funcs[0]

    @property
    def auto_report(self) -> AutoScheduleReport:
        """`report` under its earlier name (AttributeError on a schedule the tactics did not make)."""
        if self.report is None:
            raise AttributeError("this IRSchedule was not made by auto_schedule: it has no report")
        return self.report

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
        self._funcs, self.trace = list(fork._funcs), fork.trace
        self._killed, self._indices = dict(fork._killed), {}

    # -- handles of this schedule --------------------------------------------------------------------
    def _loop_rv(self, loop: For) -> LoopRV:
        return LoopRV(self, loop.uid, loop.loop_var.name)

    def _block_rv(self, block: ScheduleBlockRealize) -> BlockRV:
        return BlockRV(self, block.uid, block.name)

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

    @recorded
    def get_block(self, name: str) -> BlockRV:
        """The block called `name` (BlockNotFoundError when absent or ambiguous)."""
        if not isinstance(name, str):
            raise TypeError(f"get_block: expected a block name, got {name!r}")
        return self._block_rv(self._block_by_name(name, "get_block")[1])

    @recorded
    def get_loops(self, block: BlockLike) -> list[LoopRV]:
        """Loops enclosing `block`, outer -> inner. A block without loops first gets a unit loop
        `for (ix, 0, 1)` (CINN `GetLoops` calls `AddUnitLoop`), so the result is never empty."""
        k, realize = self._block(block, "get_loops")
        loops = queries.get_loops(self._funcs[k], realize)
        if not loops:
            return [self.add_unit_loop(self._block_rv(realize))]
        return [self._loop_rv(loop) for loop in loops]

    @recorded
    def get_all_blocks(self) -> list[BlockRV]:
        """Every block (root excluded), pre-order, not descending into collected blocks."""
        return [self._block_rv(b) for f in self._funcs for b in queries.get_all_blocks(f)]

    @recorded
    def get_child_blocks(self, node: NodeLike) -> list[BlockRV]:
        """Blocks nested inside a loop or block (pre-order, outermost ones)."""
        k, stmt = self._node(node, "get_child_blocks")
        return [self._block_rv(b) for b in queries.get_child_blocks(self._funcs[k], stmt)]

    @recorded
    def get_root_block(self, node: NodeLike | None = None) -> BlockRV:
        """The root block of the function holding `node` (of the only function when omitted)."""
        k = self._node(node, "get_root_block")[0] if node is not None else self._single("get_root_block")
        return self._block_rv(queries.get_root_block(self._funcs[k]))

    def _single(self, primitive: str) -> int:
        if len(self._funcs) != 1:
            raise schedule_error(InvalidArgumentError, primitive,
                                 f"the schedule holds {len(self._funcs)} functions; pass a node")
        return 0

    # -- primitives: declared here, implemented by the @primitive functions in schedules.primitives --
    def _apply(self, prim: Primitive, args: dict[str, Any]) -> Any:
        with nesting_room():  # no wrapper frame: the primitives' warnings count their stacklevel from here
            values = {p.name: args[p.name] for p in prim.params if p.kind == "value"}
            values.update({name: getattr(self, attr) for name, attr in prim.from_schedule.items()})
            if not prim.handle_params:
                rebuilt = [prim.fn(f, **values) for f in self._funcs]  # all checked before any commit
                for k, new_func in enumerate(rebuilt):
                    self._commit(k, new_func)
                return None
            k, nodes = self._resolve(prim, args)
            out = prim.fn(self._funcs[k], **nodes, **values)
            if prim.result == "none":
                self._commit(k, out)
                return None
            new_func, result = out
            self._commit(k, new_func)
            if prim.result == "loop":
                return self._loop_rv(result)
            if prim.result == "loops":
                return [self._loop_rv(loop) for loop in result]
            if prim.result == "block":
                return self._block_rv(result)
            return result

    def _resolve(self, prim: Primitive, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The function all handle arguments live in, and the nodes they name (in parameter order,
        so the first bad argument is the one reported)."""
        resolvers = {"loop": self._loop, "loops": self._loops, "block": self._block, "node": self._node}
        found = {p.name: resolvers[p.kind](args[p.name], prim.name) for p in prim.handle_params}
        funcs = {k for k, _ in found.values()}
        if len(funcs) > 1:
            raise schedule_error(InvalidArgumentError, prim.name,
                                 f"the {' and the '.join(found)} are in different functions", self.mod)
        return funcs.pop(), {name: node for name, (_, node) in found.items()}

    # -- loop transformations -----------------------------------------------------------------------
    @generated
    def split(self, loop: LoopRV, factors: Sequence[int | Expr]) -> list[LoopRV]:
        """Split `loop` into len(factors) nested loops (one factor may be -1: inferred)."""
        ...

    @generated
    def fuse(self, loops: Sequence[LoopRV]) -> LoopRV:
        """Fuse adjacent, perfectly nested loops into one (`i_j_fused`)."""
        ...

    @generated
    def reorder(self, loops: Sequence[LoopRV]) -> None:
        """Permute loops of one nest into the listed order (unlisted loops stay put; guards move
        under the loops they test; statements beside the path are distributed out first)."""
        ...

    @generated
    def flatten_loops(self, loops: Sequence[LoopRV]) -> LoopRV:
        """Fuse a perfectly nested chain and collapse the iteration spaces of its blocks."""
        ...

    @generated
    def add_unit_loop(self, block: BlockLike) -> LoopRV:
        """Wrap `block` in `for (ix, 0, 1)` and return the new loop."""
        ...

    # -- loop kinds ------------------------------------------------------------------------------------
    @generated
    def parallel(self, loop: LoopRV) -> None:
        """Mark a serial loop parallel (CPU thread pool); rejected when it carries a dependence."""
        ...

    @generated
    def vectorize(self, loop: LoopRV, factor: int) -> None:
        """Mark a serial loop `vectorize[factor]` (any extent: x86 adds a scalar tail loop)."""
        ...

    @generated
    def unroll(self, loop: LoopRV) -> None:
        """Mark a serial loop with a constant extent `unroll`."""
        ...

    @generated
    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind a serial loop to `blockIdx.{x,y,z}` or `threadIdx.{x,y,z}`."""
        ...

    # -- block attributes and storage --------------------------------------------------------------
    @generated
    def annotate(self, block: BlockLike, key: str, value: AttrValue) -> None:
        """Set `attrs[key] = value` on a block (int, float, bool or str)."""
        ...

    @generated
    def unannotate(self, block: BlockLike, key: str) -> None:
        """Remove `attrs[key]` from a block (a missing key only warns, as in CINN)."""
        ...

    @generated
    def set_buffer(self, block: BlockLike, memory_type: str) -> None:
        """Move the tensor a block writes to a `global`/`shared`/`local` buffer `_<T>_temp_buffer`."""
        ...

    @generated
    def sync_threads(self, node: NodeLike, after: bool = True) -> None:
        """Insert `__syncthreads()` after (or before) a loop or block."""
        ...

    # -- block-level primitives (compute_at / compute_inline / reduction / align) ------------------
    @generated
    def compute_at(self, block: BlockLike, loop: LoopRV, keep_unit_loops: bool = False) -> None:
        """Recompute producer `block` (a pure block, or a reduction with its init) under `loop`
        over the region its consumers there need."""
        ...

    @generated
    def simple_compute_at(self, block: BlockLike, loop: LoopRV) -> None:
        """Move `block` under `loop`, matching its outer loops 1:1 by extent (no region analysis)."""
        ...

    @generated
    def compute_inline(self, block: BlockLike) -> None:
        """Inline producer `block` into every load of its tensor."""
        ...

    @generated
    def reverse_compute_inline(self, block: BlockLike) -> None:
        """Inline consumer `block` into its unique producer."""
        ...

    @generated
    def rfactor(self, loop: LoopRV, rf_axis: int) -> Tensor:
        """Factor the reduction over `loop` into a stage `rf_<T>`; returns that tensor."""
        ...

    @generated
    def factorize_reduction(self, loop: LoopRV, rf_axis: int) -> Tensor:
        """Two-step reduction over `loop` (moved above the reduction's other loops when inside
        them) through `<T>_rf`; returns that tensor."""
        ...

    @generated
    def decompose_reduction(self, block: BlockLike, loop: LoopRV) -> BlockRV:
        """Move reduction `block`'s init block out of its nest to just before `loop` (which must
        enclose both); the update nest below `loop` becomes perfect. Returns the init block."""
        ...

    @generated
    def align_iter_space(self) -> None:
        """Align every loop nest of each function onto its group's `[spatial, reduce]` space."""
        ...

    # -- reverse_compute_at and caches -----------------------------------------------------------------
    @generated
    def reverse_compute_at(self, block: BlockLike, loop: LoopRV, keep_unit_loops: bool = False) -> None:
        """Compute consumer `block` at the end of each iteration of its producer's `loop`."""
        ...

    @generated
    def cache_read(self, block: BlockLike, read_idx: int, memory_type: str) -> BlockRV:
        """Read the `read_idx`-th tensor of `block` through a `<T>_<scope>_temp_buffer` copy;
        returns the copy block."""
        ...

    @generated
    def cache_write(self, block: BlockLike, write_idx: int, memory_type: str) -> BlockRV:
        """Write the `write_idx`-th tensor of `block` into a `<T>_<scope>_temp_buffer` copied back
        to `T` after its nest; returns the copy-back block (named `T`; `block` is renamed)."""
        ...
