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
from typing import TYPE_CHECKING, Any, TypeVar, overload

from cinn_py.ir import (
    AttrValue, Expr, For, LoweredFunc, Module, NameGenerator, ScheduleBlockRealize, Stmt, Tensor, names_in,
    nesting_room, print_ir, using_names,
)
from cinn_py.target import GpuLimits
from schedules.analysis.loops import StmtIndex, block_names, is_root_block
from schedules.errors import (
    BlockNotFoundError, InvalidArgumentError, StaleHandleError, schedule_error,
)
from schedules.primitives import get as queries  # the package imports (so registers) every primitive
from schedules.registry import PRIMITIVES, Primitive, StepKind, register
from schedules.state import BlockRV, LoopRV, is_handle
from schedules.trace import Step, Trace, encode_value

if TYPE_CHECKING:
    from schedules.tactics.auto import AutoScheduleReport

__all__ = ["IRSchedule"]

F = TypeVar("F", bound=Callable[..., Any])
BlockLike = BlockRV | str
NodeLike = BlockRV | LoopRV | str


def recorded(method: F) -> F:
    """Record calls of a hand-written (query) method as trace steps; the step kind is the
    method's name, parameters and returned handles (`list[...]`, one handle, or `None`)."""
    signature = inspect.signature(method)
    returns = str(signature.return_annotation)
    kind = register(StepKind(method.__name__, tuple(signature.parameters)[1:],
                             "none" if returns == "None" else "list" if returns.startswith("list[")
                             else "one"))
    return _recording(kind, signature, method, method)


def generated(method: F) -> F:
    """Give a declared `IRSchedule` method (signature and docstring only) the body of the primitive
    registered under its name: resolve the handles to the current nodes, run the pure function,
    commit the rebuilt function, return the new nodes as handles, record a trace step."""
    prim = PRIMITIVES.get(method.__name__)
    if prim is None:
        raise TypeError(f"IRSchedule.{method.__name__}: no @primitive of that name is registered")
    signature = inspect.signature(method)
    _check_declaration(prim, signature)

    def body(self: IRSchedule, **params: Any) -> Any:
        return self._apply(PRIMITIVES[prim.name], params)  # looked up per call: tests may swap one in

    return _recording(prim.step, signature, body, method)


def _check_declaration(prim: Primitive, signature: inspect.Signature) -> None:
    """The declared method takes the primitive's recorded parameters, in order, with its defaults."""
    declared = list(signature.parameters.values())[1:]
    if tuple(p.name for p in declared) != prim.step.params:
        raise TypeError(f"IRSchedule.{prim.name} declares ({', '.join(p.name for p in declared)}) but the "
                        f"primitive takes ({', '.join(prim.step.params)})")
    defaults = {p.name: p.default for p in prim.params}
    for p in declared:
        if defaults[p.name] is not inspect.Parameter.empty and p.default != defaults[p.name]:
            raise TypeError(f"IRSchedule.{prim.name}: '{p.name}' defaults to {p.default!r}, the primitive's "
                            f"default is {defaults[p.name]!r}")


def _recording(kind: StepKind, signature: inspect.Signature, body: Callable[..., Any], declared: F) -> F:
    """`body` called with the bound arguments; outermost calls only are recorded (a primitive
    that uses another one internally records one step)."""

    @functools.wraps(declared)
    def wrapper(self: IRSchedule, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{kind.name}: {exc}") from None
        bound.apply_defaults()
        params = dict(list(bound.arguments.items())[1:])
        if self._depth:
            return body(self, **params)
        step = self._encode_step(kind.name, kind.params, params)
        self._current_step = f"{kind.name} (trace step {len(self.trace)})"
        self._depth += 1
        try:
            with using_names(self._names):
                result = body(self, **params)
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
    def mod(self) -> Module:
        """The scheduled functions as a Module."""
        return Module(self._module_name or self._funcs[0].name, tuple(self._funcs))

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

    # -- internals: lookup, handles, commits -------------------------------------------------------
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
            raise InvalidArgumentError(f"{primitive}: {handle!r} was not returned by a recorded schedule "
                                       "call")
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
