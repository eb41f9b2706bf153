"""Statements in LLVM IR: blocks, stores, lets, guards, loops of every kind (the function frame,
temp buffers and checks are `frame.py`).

Loop kinds:
- `serial` / `default`: a counted loop in the loop var's dtype.
- `unroll`: fully unrolled when min and extent are constant and extent <= 64, else serial.
- `vectorize[F]`: a main loop stepping by F whose body is emitted with the loop var as the vector
  `<F x iN>` ramp (see `emitter.py` for loads/stores), followed by a scalar tail loop for the
  `extent % F` remaining iterations (symbolic extents included). A body that cannot be
  vectorised (`analysis.vectorizable`) is emitted as a scalar loop.
- `parallel`: outlined into `<fn>__parallel_<k>(i64 task_id, i64 num_tasks, ptr closure)`; the
  closure struct holds the loop bounds, a status pointer and every captured var and buffer. The
  generated code calls `cinn_py_parallel_launch(task, closure, extent)` (CINN:
  `cinn_backend_parallel_launch`), the native thread pool of `native_pool` (see `parallel.py`).
  Task k runs iterations [k*ceil(n/T), min(n, (k+1)*ceil(n/T))).

Temporary buffers (function temp_bufs, `Alloc`ed buffers, any non-argument buffer) are allocated
once at function entry: on the stack (64-byte aligned alloca) when their size is a constant of at
most 32 KiB, otherwise with `aligned_alloc(64, ...)` and freed on exit. Buffers of `local` or
`shared` memory type are private per parallel task, so a parallel body gets its own copies.
A failed allocation makes the function return status 1 (the Kernel raises MemoryError); a heap
size that overflows int64 (symbolic dims) or is negative returns status -1 before any use (the Kernel
raises OverflowError naming the buffers and the symbol values).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeGuard

from llvmlite import ir

from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    LE, LT, Alloc, And, Block, Call, Evaluate, Expr, For, ForType, Free, IfThenElse, IntImm, Let, Load,
    ScheduleBlockRealize, Stmt, Store, UIntImm, Var, bool_, int64, is_const_int, print_ir, walk,
)
from codegen.llvm.loop_md import no_unroll_loop_id
from codegen.llvm import types as T
from codegen.llvm.analysis import LaneInfo, contract_block, lane_stride, varies, vectorizable
from codegen.llvm.analysis import flat_index
from codegen.llvm.frame import FunctionFrame
from codegen.llvm.frame import (  # noqa: F401 - re-exported (kernel.py, parallel.py)
    STATUS_NOMEM, STATUS_OK, STATUS_OUT_OF_BOUNDS, STATUS_SIZE_OVERFLOW,
)
from codegen.llvm.names import value_name as local_name

STREAM_ALIGN = 64  # bytes: a streaming vector store's address alignment (one cache line)
UNROLL_LIMIT = 64


class FunctionEmitter(FunctionFrame):
    """Emits the body of one LLVM function (the kernel or an outlined parallel task): statements and
    loops of every kind over the frame (`frame.FunctionFrame`: state, exits, temps, checks)."""

    # -- statements ------------------------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        if self.b.block.terminator is not None:  # after a failure exit: continue in a fresh block
            self.b.position_at_end(self.fn.append_basic_block("cont"))
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise CompileError(f"x86 codegen: cannot emit statement {type(s).__name__}:\n{print_ir(s)}")
        method(s)

    def s_Block(self, s: Block) -> None:
        saved = dict(self.env)
        for child in s.stmts:
            self.stmt(child)
        self.env = saved

    def s_Store(self, s: Store) -> None:
        self.store(s.tensor, s.indices, s.value)

    def s_Let(self, s: Let) -> None:
        if s.body is None:
            self.env[s.symbol] = T.constant(s.symbol.dtype, 0)
        else:
            self.env[s.symbol] = self.typed(s.body, s.symbol.dtype)

    def s_IfThenElse(self, s: IfThenElse) -> None:
        cond = self._lane(self.typed(s.condition, bool_), 0)
        if s.false_case is None:
            with self.b.if_then(cond):
                self.stmt(s.true_case)
            return
        with self.b.if_else(cond) as (on_true, on_false):
            with on_true:
                self.stmt(s.true_case)
            with on_false:
                self.stmt(s.false_case)

    def s_ScheduleBlockRealize(self, s: ScheduleBlockRealize) -> None:
        """An attribute scope the x86 target passes kept (no iter vars): its body, printed with the
        instructions its attributes select (`module._check_lowered` refused any other block)."""
        self.stmt(contract_block(s.schedule_block, s.schedule_block.body))

    def s_Evaluate(self, s: Evaluate) -> None:
        if isinstance(s.value, Call) and s.value.name == "__syncthreads":
            raise CompileError("x86 codegen: __syncthreads() has no meaning on x86 (GPU-only statement)")
        self.expr(s.value)

    def s_Alloc(self, s: Alloc) -> None:
        """Allocated at function entry (sizes may only depend on symbolic dims)."""

    def s_Free(self, s: Free) -> None:
        """Freed at function exit."""

    # -- loops -------------------------------------------------------------------------------------------
    def s_For(self, s: For) -> None:
        saved = self.ranges.get(s.loop_var)
        self.ranges[s.loop_var] = (s.min, s.extent)
        try:
            self._for(s)
        finally:
            if saved is None:
                del self.ranges[s.loop_var]
            else:
                self.ranges[s.loop_var] = saved

    def _for(self, s: For) -> None:
        kind = s.for_type
        if kind is ForType.PARALLEL and self.lane is None and not self.in_parallel:
            from codegen.llvm.parallel import emit_parallel

            emit_parallel(self, s)
        elif kind is ForType.VECTORIZED and self.lane is None:
            self.vector_loop(s)
        elif kind is ForType.UNROLLED and _small_const(s):
            self.unrolled_loop(s)
        elif is_const_int(s.extent, 1):
            self.single_iteration(s)
        else:
            lo, hi = self.bounds(s)
            self.counted_loop(s.loop_var, lo, hi, 1, lambda: self.stmt(s.body))

    def bounds(self, s: For) -> tuple[ir.Value, ir.Value]:
        """(min, min + extent) in the loop var's dtype."""
        lo = self._lane(self.typed(s.min, s.loop_var.dtype), 0)
        extent = self._lane(self.typed(s.extent, s.loop_var.dtype), 0)
        return lo, self.b.add(lo, extent)

    def counted_loop(self, var: Var, lo: ir.Value, hi: ir.Value, step: int, body: Callable[[], None],
                     bind: Callable[[ir.Value], ir.Value] | None = None) -> None:
        """for (var = lo; var < hi; var += step) body(); `bind` maps the counter to var's value."""
        pre = self.b.block
        name = local_name(var.name)
        header = self.fn.append_basic_block(f"{name}.header")
        loop = self.fn.append_basic_block(f"{name}.body")
        done = self.fn.append_basic_block(f"{name}.exit")
        self.b.branch(header)
        self.b.position_at_end(header)
        counter = self.b.phi(lo.type, name=name)
        counter.add_incoming(lo, pre)
        self.b.cbranch(self.b.icmp_signed("<", counter, hi), loop, done)
        self.b.position_at_end(loop)
        saved = self.env.get(var)
        self.env[var] = bind(counter) if bind is not None else counter
        body()
        if self.b.block.terminator is None:
            counter.add_incoming(self.b.add(counter, ir.Constant(lo.type, step), flags=["nsw"]), self.b.block)
            latch = self.b.branch(header)
            if self.unit.keep_loops:  # loop_md.py: a function of many loops is not fully unrolled
                latch.set_metadata("llvm.loop", no_unroll_loop_id(self.module))
        self._restore(var, saved)
        self.b.position_at_end(done)

    def _restore(self, var: Var, saved: ir.Value | None) -> None:
        if saved is None:
            self.env.pop(var, None)
        else:
            self.env[var] = saved

    def unrolled_loop(self, s: For) -> None:
        saved = self.env.get(s.loop_var)
        start = int(s.min.value)  # type: ignore[attr-defined]
        for k in range(int(s.extent.value)):  # type: ignore[attr-defined]
            self.env[s.loop_var] = T.constant(s.loop_var.dtype, start + k)
            self.stmt(s.body)
        self._restore(s.loop_var, saved)

    def single_iteration(self, s: For) -> None:
        """A loop of extent 1 is its body at `min`, without a loop: LLVM's loop passes take
        time superlinear in the nest depth (a 1,000-deep nest of unit loops from
        `split(i, [1] * 999 + [-1])` took them ~30 s)."""
        saved = self.env.get(s.loop_var)
        self.env[s.loop_var] = self._lane(self.typed(s.min, s.loop_var.dtype), 0)
        self.stmt(s.body)
        self._restore(s.loop_var, saved)

    def vector_loop(self, s: For) -> None:
        lanes = s.vectorize_factor
        info = LaneInfo(s.loop_var)
        lo, hi = self.bounds(s)
        body, hi = self.tail_guard_as_bound(s, lo, hi)
        if lanes == 1 or not vectorizable(body, info):
            self.counted_loop(s.loop_var, lo, hi, 1, lambda: self.stmt(body))
            return
        lo = self.peel_to_alignment(s, body, info, lo, hi)
        extent = self.b.sub(hi, lo)
        main_end = self.b.sub(hi, self.b.srem(extent, ir.Constant(extent.type, lanes)))
        steps = ir.Constant(ir.VectorType(lo.type, lanes), list(range(lanes)))

        def ramp(counter: ir.Value) -> ir.Value:
            return self.b.add(T.splat(self.b, counter, lanes), steps)

        def vector_body() -> None:
            self.lane = info
            try:
                self.stmt(body)
            finally:
                self.lane = None

        self.counted_loop(s.loop_var, lo, main_end, lanes, vector_body, bind=ramp)
        self.counted_loop(s.loop_var, main_end, hi, 1, lambda: self.stmt(body))

    def peel_to_alignment(self, s: For, body: Stmt, info: LaneInfo, lo: ir.Value, hi: ir.Value) -> ir.Value:
        """A vector loop with a streaming store runs scalar iterations first until that store's
        address is 64-byte aligned (`vmovntps` needs it; numpy's large arrays start 16 bytes
        past a page): returns the new start of the vector loop."""
        store = next((n for n in walk(body) if isinstance(n, Store) and n.tensor.buffer.name
                      in self.nontemporal
                      and not any(isinstance(v, Var) and v in info.lets for v in walk(n.indices))
                      and lane_stride(flat_index(n.tensor, n.indices), info) == 1), None)
        elem = T.storage_bytes(store.tensor.dtype) if store is not None else 0
        if store is None or STREAM_ALIGN % elem:
            return lo
        saved = self.env.get(s.loop_var)
        self.env[s.loop_var] = lo
        try:
            index = self.typed(flat_index(store.tensor, store.indices), int64)
        finally:
            self._restore(s.loop_var, saved)
        address = self.b.ptrtoint(self._gep(store.tensor, index), T.I64)
        gap = self.b.and_(self.b.sub(ir.Constant(T.I64, 0), address), ir.Constant(T.I64, STREAM_ALIGN - 1))
        start = self.b.add(lo, T.cast(self.b, self.b.udiv(gap, ir.Constant(T.I64, elem)), int64,
                                      s.loop_var.dtype))
        start = self.b.select(self.b.icmp_signed("<", start, hi), start, hi)
        self.counted_loop(s.loop_var, lo, start, 1, lambda: self.stmt(body))
        return start

    def tail_guard_as_bound(self, s: For, lo: ir.Value, hi: ir.Value) -> tuple[Stmt, ir.Value]:
        """A vectorised loop whose whole body is a split's tail guard, `if (a < b) body` with `a`
        moving by one per iteration and `b` loop-invariant, runs `body` over the shortened range
        `[lo, min(hi, max(lo, lo + b - a(lo))))` instead (`<=`: one more): the guard would
        otherwise make every lane's condition differ and the loop scalar. Loop-invariant
        conjuncts of the condition stay as an `if` around the body."""
        guard = _single_guard(s.body)
        if guard is None:
            return s.body, hi
        info = LaneInfo(s.loop_var)
        bounds = [c for c in _conjuncts(guard.condition) if _is_tail_bound(c, info)]
        rest = [c for c in _conjuncts(guard.condition) if not _is_tail_bound(c, info)]
        if not bounds or any(varies(c, info) for c in rest):
            return s.body, hi
        var, dtype = s.loop_var, s.loop_var.dtype
        saved = self.env.get(var)
        self.env[var] = lo
        try:
            limits = [(self.typed(c.a, dtype), self.typed(c.b, dtype), isinstance(c, LE)) for c in bounds]
        finally:
            self._restore(var, saved)
        for a_lo, b, inclusive in limits:
            limit = self.b.add(lo, self.b.sub(b, a_lo))
            if inclusive:
                limit = self.b.add(limit, ir.Constant(limit.type, 1))
            limit = self.b.select(self.b.icmp_signed("<", limit, lo), lo, limit)
            hi = self.b.select(self.b.icmp_signed("<", limit, hi), limit, hi)
        if not rest:
            return guard.true_case, hi
        cond = rest[0]
        for c in rest[1:]:
            cond = And(cond, c)
        return IfThenElse(cond, guard.true_case), hi


def _single_guard(body: Stmt) -> IfThenElse | None:
    """`body` when it is (a block of) one `if` without `else`."""
    while isinstance(body, Block) and len(body.stmts) == 1:
        body = body.stmts[0]
    return body if isinstance(body, IfThenElse) and body.false_case is None else None


def _conjuncts(cond: Expr) -> list[Expr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _is_tail_bound(c: Expr, info: LaneInfo) -> TypeGuard[LT | LE]:
    """`a < b` / `a <= b` on integers, `a` stepping by one per iteration, `b` invariant, no loads."""
    return (isinstance(c, (LT, LE)) and c.a.dtype.is_int and not any(isinstance(n, Load) for n in walk(c))
            and lane_stride(c.a, info) == 1 and lane_stride(c.b, info) == 0 and not varies(c.b, info))


def _small_const(s: For) -> bool:
    return (isinstance(s.min, (IntImm, UIntImm)) and isinstance(s.extent, (IntImm, UIntImm))
            and 0 <= int(s.extent.value) <= UNROLL_LIMIT)
