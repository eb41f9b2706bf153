"""Cross-thread reduction (CINN `optim::ReplaceCrossThreadReduction`).

After scheduling, a reduce update block `T[s] = T[s] OP x` may sit inside loops bound to
`threadIdx.*` that iterate over reduce axes: every thread then holds one partial value and the
threads must combine them. This pass rewrites the update into a call of a device runtime helper
(`codegen/cuda/cinn_cuda_runtime.cuh`) that reduces across those threads:

- reduce loop bound to `threadIdx.x`: `cinn_block_reduce_<op>_<t>(x, shm, false)` (block method,
  or more than 32 threads on x), `cinn_block_reduce_<op>_<t>(x, shm, true)` (WarpReduceMethod:
  CINN's warp form), or `cinn_warp_reduce_<op>_<t>(x)` (no method, blockDim.x <= 32);
- reduce loop bound to `threadIdx.y` (DiscreteReduceMethod, or no method): the tree
  `cinn_discrete_reduce_<op>_<t>(x, shm)`.

`shm` is the shared buffer `shm32__<t>_reduce` (CINN's name) of 32 elements per
(threadIdx.y, threadIdx.z) row for the block reduce, or one element per thread for the discrete
reduce; float16/bfloat16 reduce in a float scratch, bool in an int scratch. Differs from CINN:
the buffer is passed as a handle-typed variable named like the buffer (CINN prints
`_Buffer_<...>(name)`), and it is listed in `temp_bufs` for the codegen to declare.

Combination with the init value: when the reduce tensor is initialised to the reduction's identity
(its `__reduce_init` block) and no serial loop over a reduce axis encloses the update, the update
becomes `T[s] = helper(x)` as in CINN. Otherwise the old value is read into a local *before* the
helper (whose barriers order that read before any thread's write) and combined:
`v = T[s]; T[s] = (v OP helper(x))`.

A thread-bound reduce loop shorter than the launch dim is widened to the launch dim and the
value of the extra threads is the identity (`select(k < extent, x, identity)`): every thread must
reach the helper's barriers. For the same reason the update must not sit under a guard or loop
that depends on a thread index; that raises `CompileError`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cinn_py.diagnostics import CompileError
from cinn_py.frontend.compute import identity
from cinn_py.ir import (
    Add, And, Block, Buffer, Call, CudaAxisInfo, DType, Expr, FloatImm, For, ForType, IfThenElse, IntImm, LT,
    Let, Load, LoweredFunc, Max, MemoryType, Min, Mul, Mutator, Or, ReduceMethod, ReduceType, ScheduleBlock,
    ScheduleBlockRealize, Select, Stmt, Store, UIntImm, Var, const, float32, handle, int32, print_ir_marked,
    unique_name, walk,
)
from cinn_py.passes.gpu_bind import compute_axis_info, interval

# dtype -> helper suffix (CINN's `CrossThreadReduceExternalFuncName` suffixes).
SUFFIXES = {"float32": "fp32", "float64": "fp64", "float16": "fp16", "bfloat16": "bf16",
            "int32": "int32", "int64": "int64", "bool": "bool"}
# IR update operator -> (reduce type, helper op name).
_OPS: dict[type, tuple[ReduceType, str]] = {
    Add: (ReduceType.SUM, "sum"), Mul: (ReduceType.MUL, "prod"), Max: (ReduceType.MAX, "max"),
    Min: (ReduceType.MIN, "min"), And: (ReduceType.ALL, "all"), Or: (ReduceType.ANY, "any"),
}
MAX_THREADS = 1024


@dataclass(frozen=True)
class _Update:
    store: Store
    op: type
    value: Expr
    """The new contribution `x` of `T[s] = T[s] OP x`."""


def _as_update(body: Stmt) -> _Update | None:
    if isinstance(body, Block) and len(body.stmts) == 1:
        body = body.stmts[0]
    if not isinstance(body, Store) or type(body.value) not in _OPS:
        return None
    value = body.value
    old = value.a  # type: ignore[attr-defined]
    if not (isinstance(old, Load) and old.tensor.buffer.name == body.tensor.buffer.name
            and old.indices == body.indices):
        return None
    return _Update(body, type(value), value.b)  # type: ignore[attr-defined]


def scratch_dtype(dtype: DType) -> DType:
    """Element type of the shared scratch: half types reduce in float, bool in int."""
    if dtype.bits == 16 and dtype.kind in ("float", "bfloat"):
        return float32
    if dtype.is_bool:
        return int32
    return dtype


def _const(e: Expr) -> int | None:
    rng = interval(e, {})
    return rng[0] if rng is not None and rng[0] == rng[1] else None


class _Rewriter(Mutator):
    def __init__(self, func: LoweredFunc, info: CudaAxisInfo) -> None:
        self.func = func
        self.info = info
        self.loops: list[For] = []
        self.guards: list[IfThenElse] = []
        self.widen: dict[int, Expr] = {}
        self.scratch: dict[str, Buffer] = {}
        self.init_identity: set[str] = self._identity_inits()

    def _identity_inits(self) -> set[str]:
        """Buffers whose `__reduce_init` block stores a constant (the identity, from lowering)."""
        names: set[str] = set()
        for node in walk(self.func.body):
            if isinstance(node, ScheduleBlock) and node.name.endswith("__reduce_init"):
                store = node.body.stmts[0] if isinstance(node.body, Block) and node.body.stmts else node.body
                if isinstance(store, Store) and isinstance(store.value, (IntImm, UIntImm, FloatImm)):
                    names.add(f"{store.tensor.buffer.name}:{store.value!r}")
        return names

    # -- traversal -------------------------------------------------------------------------------
    def visit_for(self, node: For) -> Stmt:
        self.loops.append(node)
        new = self.generic_visit(node)
        self.loops.pop()
        extent = self.widen.pop(node.uid, None)
        return new if extent is None else dataclasses.replace(new, extent=extent)

    def visit_if_then_else(self, node: IfThenElse) -> Stmt:
        self.guards.append(node)
        new = self.generic_visit(node)
        self.guards.pop()
        return new

    def visit_schedule_block_realize(self, node: ScheduleBlockRealize) -> Stmt:
        block = node.schedule_block
        update = _as_update(block.body)
        if not node.iter_values or update is None:
            return self.generic_visit(node)
        reduce_loop_vars = set()
        spatial_loop_vars = set()
        for var, value in zip(block.iter_vars, node.iter_values):
            names = {n.name for n in walk(value) if isinstance(n, Var)}
            (reduce_loop_vars if var.is_reduce_axis else spatial_loop_vars).update(names)
        # A thread loop that also indexes a spatial axis gives each thread its own output
        # element (e.g. the rf axis of a factorized reduction): not a cross-thread reduction.
        thread_loops = [lp for lp in self.loops
                        if lp.for_type is ForType.GPU_THREAD and lp.loop_var.name in reduce_loop_vars
                        and lp.loop_var.name not in spatial_loop_vars]
        if not thread_loops:
            return node
        new_body = self._rewrite(node, update, thread_loops, reduce_loop_vars, spatial_loop_vars)
        return dataclasses.replace(node, schedule_block=dataclasses.replace(block, body=new_body))

    # -- the rewrite -----------------------------------------------------------------------------
    def _fail(self, node: Stmt, rule: str) -> CompileError:
        return CompileError(f"cross_thread_reduce: block '{node.name}': {rule}",  # type: ignore[attr-defined]
                            print_ir_marked(self.func, node))

    def _rewrite(self, realize: ScheduleBlockRealize, update: _Update, thread_loops: list[For],
                 reduce_vars: set[str], spatial_vars: set[str]) -> Stmt:
        block = realize.schedule_block
        if len(thread_loops) > 1:
            raise self._fail(realize, "reduce axes bound to several thread axes "
                             f"({', '.join(str(lp.bind_axis) for lp in thread_loops)}); fuse them into one "
                             "loop first")
        loop = thread_loops[0]
        dtype = update.store.tensor.dtype
        suffix = SUFFIXES.get(dtype.scalar_name())
        if suffix is None or dtype.lanes != 1:
            raise self._fail(realize, f"no cross-thread reduce helper for dtype {dtype}")
        reduce_type, op_name = _OPS[update.op]
        if (op_name in ("all", "any")) != dtype.is_bool:
            raise self._fail(realize, f"'{op_name}' reduction over dtype {dtype} has no runtime helper")
        dims = [_const(d) for d in self.info.block_dims]
        if any(d is None for d in dims):
            raise self._fail(realize, "cross-thread reduction needs constant block dims, got "
                             f"({', '.join(str(d) for d in self.info.block_dims)})")
        bx, by, bz = (int(d) for d in dims)  # type: ignore[arg-type]
        if self.loops[-1] is not loop:
            raise self._fail(realize,
                             f"the thread-bound reduce loop '{loop.loop_var.name}' must directly contain "
                             "the reduce block (CINN: thread-bound reduce loops are innermost)")
        ident = identity(reduce_type, dtype)
        value = self._padded_value(update.value, loop, dims[loop.bind_offset], ident)  # type: ignore[arg-type]
        call = self._helper_call(realize, block.reduce_method, loop, op_name, suffix, dtype, value,
                                 (bx, by, bz))
        self._check_uniform(realize, loop, dims, barriers=not call.name.startswith("cinn_warp_reduce"))  # type: ignore[arg-type]
        serial_reduce = any(lp.loop_var.name in reduce_vars and lp.for_type is not ForType.GPU_THREAD
                            for lp in self.loops)
        store = update.store
        if not serial_reduce and f"{store.tensor.buffer.name}:{ident!r}" in self.init_identity:
            return dataclasses.replace(store, value=call)
        old = Var(unique_name(f"{store.tensor.name}_old"), dtype)
        combined = update.op(old, call)
        load = Load(store.tensor, store.indices)
        return Block((Let(old, load), dataclasses.replace(store, value=combined)))

    def _check_uniform(self, realize: ScheduleBlockRealize, loop: For, dims: list[int],
                       barriers: bool) -> None:
        """Every thread that shares the helper's barriers (the block) or shuffles (the row of a
        warp reduce, i.e. threadIdx.x) must reach the call."""
        thread_vars = {lp.loop_var.name for lp in self.loops if lp.for_type is ForType.GPU_THREAD
                       and (barriers or lp.bind_offset == 0)}
        for guard in self.guards:
            if any(isinstance(n, Var) and n.name in thread_vars for n in walk(guard.condition)):
                raise self._fail(realize, "the reduction sits under a guard that depends on a thread index "
                                 f"({guard.condition}); every thread must reach the helper's barriers")
        for lp in self.loops:
            if lp is loop or lp.for_type is not ForType.GPU_THREAD or lp.loop_var.name not in thread_vars:
                continue
            if _const(lp.extent) != dims[lp.bind_offset]:
                raise self._fail(realize,
                                 f"loop '{lp.loop_var.name}' bound to {lp.bind_axis} has extent {lp.extent} "
                                 f"< block dim {dims[lp.bind_offset]}, so some threads would skip the "
                                 "reduction")

    def _padded_value(self, value: Expr, loop: For, dim: int, ident: Expr) -> Expr:
        extent = _const(loop.extent)
        if extent == dim:
            return value
        if len(loop.body.stmts) != 1:
            raise CompileError(
                f"cross_thread_reduce: loop '{loop.loop_var.name}' ({loop.extent} < block dim {dim}) holds "
                "more "
                "than the reduce block, so it cannot be widened to the block dim",
                print_ir_marked(self.func, loop))
        self.widen[loop.uid] = IntImm(loop.extent.dtype, dim) if loop.extent.dtype.is_int else loop.extent
        bound = loop.extent
        return Select(LT(loop.loop_var, bound), value, ident)

    def _helper_call(self, realize: ScheduleBlockRealize, method: ReduceMethod, loop: For, op: str,
                     suffix: str, dtype: DType, value: Expr, dims: tuple[int, int, int]) -> Expr:
        bx, by, bz = dims
        axis = loop.bind_offset
        if axis == 1 and method in (ReduceMethod.NONE, ReduceMethod.DISCRETE):
            shm = self._scratch(suffix, dtype, bx * by * bz)
            return Call(f"cinn_discrete_reduce_{op}_{suffix}", (value, shm), dtype)
        if axis != 0 or method is ReduceMethod.DISCRETE:
            raise self._fail(realize,
                             f"{method.value} over a loop bound to {loop.bind_axis} is not supported "
                             "(block/warp reduce use threadIdx.x, discrete reduce threadIdx.y)")
        if not (bx in (1, 2, 4, 8, 16, 32) or (bx % 32 == 0 and bx <= MAX_THREADS)):
            raise self._fail(realize,
                             f"blockDim.x = {bx}: a threadIdx.x reduction needs a power of two <= 32 "
                             "or a multiple of 32")
        if method is ReduceMethod.WARP:
            if bx > 32:
                raise self._fail(realize, f"WarpReduceMethod with blockDim.x = {bx} > 32 reduce threads")
            shm = self._scratch(suffix, dtype, 32 * by * bz)
            return Call(f"cinn_block_reduce_{op}_{suffix}", (value, shm, const(True)), dtype)
        if method is ReduceMethod.NONE and bx <= 32:
            return Call(f"cinn_warp_reduce_{op}_{suffix}", (value,), dtype)
        shm = self._scratch(suffix, dtype, 32 * by * bz)
        return Call(f"cinn_block_reduce_{op}_{suffix}", (value, shm, const(False)), dtype)

    def _scratch(self, suffix: str, dtype: DType, size: int) -> Var:
        name = f"shm32__{suffix}_reduce"
        known = self.scratch.get(name)
        if known is None or _const(known.shape[0]) < size:  # type: ignore[operator]
            self.scratch[name] = Buffer(name, (IntImm(int32, size),), scratch_dtype(dtype),
                                        MemoryType.GPU_SHARED)
        return Var(name, handle)


def cross_thread_reduce(func: LoweredFunc) -> LoweredFunc:
    """Rewrite thread-bound reductions of `func` into runtime helper calls (see module doc).

    Raises:
        CompileError: a thread-bound reduction cannot be realised safely (message names the rule).
    """
    info = compute_axis_info(func)
    rewriter = _Rewriter(func, info)
    body = rewriter.visit(func.body)
    if body is func.body:
        return func
    known = {b.name for b in func.temp_bufs}
    extra = tuple(b for name, b in rewriter.scratch.items() if name not in known)
    return dataclasses.replace(func, body=body, temp_bufs=func.temp_bufs + extra)
