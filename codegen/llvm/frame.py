"""The frame of one emitted LLVM function (`stmts.FunctionEmitter` is its statement side): the
entry / body / cleanup blocks, the status cell and the failure exits (`fail`), bounds checks of a
checked build (`check_access`, skipping what the enclosing loops' ranges prove), and the
temporary buffers: a constant size of at most `STACK_LIMIT_BYTES` is a 64-byte aligned alloca,
anything else `aligned_alloc(64, ...)` freed by cleanup, with the heap sizes checked for int64
overflow before any use (status -1) and the allocations for failure (status 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from cinn_py.diagnostics import CompileError
from cinn_py.ir import Buffer, Cast, DType, Expr, IntImm, Load, Tensor, UIntImm, Var, int64, print_ir
from cinn_py.symbolic import Analyzer
from codegen.llvm import types as T
from codegen.llvm.analysis import vars_used
from codegen.llvm.emitter import ExprEmitter
from codegen.llvm.names import value_name as local_name

if TYPE_CHECKING:
    from codegen.llvm.module import CodegenUnit

STACK_LIMIT_BYTES = 32 * 1024
STATUS_OK, STATUS_NOMEM = 0, 1
STATUS_SIZE_OVERFLOW = -1
"""A heap temp buffer's byte size (a product of symbolic dims) is negative or exceeds int64."""
STATUS_OUT_OF_BOUNDS = 2
"""Status of the first failed bounds check of a checked build is this plus the check's number
(`CodegenUnit.checks[k]` describes it); the offending index value is in `<symbol>__oob_index`."""


class FunctionFrame(ExprEmitter):
    """The state and exits of one LLVM function under emission (see the module docstring)."""

    def __init__(self, unit: CodegenUnit, fn: ir.Function) -> None:
        entry = fn.append_basic_block("entry")
        first = fn.append_basic_block("body")
        super().__init__(unit.module, unit.math, ir.IRBuilder(first), unit.fast_math)
        self.unit = unit
        self.nontemporal = unit.nontemporal
        self.fn = fn
        self.entry_b = ir.IRBuilder(entry)
        self.first = first
        self.cleanup = fn.append_basic_block("cleanup")
        self.heap: list[ir.Value] = []
        self.size_overflow: list[ir.Value] = []
        """Per heap temp: i1, its byte size overflows int64 (the function fails before using it)."""
        self.status: ir.Value = T.alloca(self.entry_b, T.I32, "status")
        self.entry_b.store(ir.Constant(T.I32, STATUS_OK), self.status)
        self.in_parallel = False
        self.ranges: dict[Var, tuple[Expr, Expr]] = {}
        """(min, extent) of the serial loops around the code being emitted: a checked build
        leaves out the checks these prove."""

    # -- function frame ----------------------------------------------------------------------------
    def finish(self, returns_status: bool) -> None:
        """Close the body: jump to cleanup, which frees heap temps and returns."""
        if self.b.block.terminator is None:
            self.b.branch(self.cleanup)
        self.entry_b.branch(self.first)
        cb = ir.IRBuilder(self.cleanup)
        if self.streamed:
            # streaming stores are weakly ordered: make them visible before the caller (or the
            # thread pool's join) reads the output
            cb.call(self.unit.runtime_fn("llvm.x86.sse.sfence", T.VOID, []), [])
        free = self.unit.runtime_fn("free", T.VOID, [T.PTR])
        for ptr in self.heap:
            cb.call(free, [ptr])
        if returns_status:
            cb.ret(cb.load(self.status, typ=T.I32))
        else:
            cb.ret_void()

    def fail(self, status_ptr: ir.Value, code: int) -> None:
        """Record `code` and leave through cleanup (current block gets terminated)."""
        self.b.store(ir.Constant(T.I32, code), status_ptr)
        self.b.branch(self.cleanup)

    def check_access(self, tensor: Tensor, indices: tuple[Expr, ...], is_write: bool) -> None:
        """Checked builds: leave with STATUS_OUT_OF_BOUNDS + k when an index is outside its
        dimension, before the access happens (the Kernel raises OutOfBoundsAccessError)."""
        checks = self.unit.checks
        if checks is None or len(indices) != len(tensor.shape):
            return
        analyzer: Analyzer | None = None
        for k, (index, extent) in enumerate(zip(indices, tensor.shape)):
            if index.dtype.lanes == 1:
                analyzer = analyzer or Analyzer(self.ranges)
                if analyzer.prove_le(IntImm(index.dtype, 0), index) and analyzer.prove_lt(
                        index, extent if extent.dtype == index.dtype else _retyped(extent, index.dtype)):
                    continue
            value = self.typed(index, int64)
            bad = self.b.icmp_unsigned(">=", value, T.splat(self.b, self._lane(self.typed(extent, int64), 0),
                                                               T.lanes_of(value)) if T.lanes_of(value) > 1
                                       else self._lane(self.typed(extent, int64), 0))
            if T.lanes_of(value) > 1:
                lanes = T.lanes_of(value)
                bad = self.b.icmp_unsigned("!=", self.b.bitcast(bad, ir.IntType(lanes)),
                                           ir.Constant(ir.IntType(lanes), 0))
                value = self._lane(value, 0)
            kind = "write to" if is_write else "read of"
            checks.append(f"{kind} {print_ir(Load(tensor, indices))}: index {k} ({print_ir(index)}) is "
                          "outside "
                          f"[0, {print_ir(extent)}) of '{tensor.name}'")
            oob = self.fn.append_basic_block("oob")
            ok = self.fn.append_basic_block("inbounds")
            self.b.cbranch(bad, oob, ok).set_weights([1, 1 << 20])
            self.b.position_at_end(oob)
            self.b.store(value, self.unit.oob_index())
            self.fail(self.status, STATUS_OUT_OF_BOUNDS + len(checks) - 1)
            self.b.position_at_end(ok)

    def allocate(self, buf: Buffer) -> ir.Value:
        """Storage for a temp buffer (see module docstring)."""
        st = T.scalar_storage_type(buf.dtype)
        count = _const_product(buf.shape)
        if count is not None and count * T.storage_bytes(buf.dtype) <= STACK_LIMIT_BYTES:
            return T.alloca(self.entry_b, ir.ArrayType(st, max(count, 1)), local_name(buf.name), align=64)
        size, overflow = self._heap_bytes(buf)
        self.size_overflow.append(overflow)
        aligned_alloc = self.unit.runtime_fn("aligned_alloc", T.PTR, [T.I64, T.I64])
        ptr = self.b.call(aligned_alloc, [ir.Constant(T.I64, 64), size], name=local_name(buf.name))
        self.heap.append(ptr)
        return ptr

    def _heap_bytes(self, buf: Buffer) -> tuple[ir.Value, ir.Value]:
        """(bytes to allocate, i1 "the size is not representable"): the product of symbolic dims
        can exceed int64 (three 2**21 dims of float32 make 2**65 bytes); a wrapped product would
        allocate a few bytes that the kernel then writes far past. A negative dim is flagged too."""
        count: ir.Value = ir.Constant(T.I64, 1)
        overflow: ir.Value = ir.Constant(T.I1, 0)
        zero = ir.Constant(T.I64, 0)
        for dim in buf.shape:
            unknown = [v.name for v in vars_used(dim) if v not in self.env]
            if unknown:
                raise CompileError(f"x86 codegen: size of temp buffer '{buf.name}' uses {unknown}, which are "
                                   "not "
                                   f"known at function entry (only symbolic dims may size a buffer)")
            value = T.cast(self.b, self.expr(dim), dim.dtype, int64)
            overflow = self.b.or_(overflow, self.b.icmp_signed("<", value, zero))
            count, wrapped = self._checked(self.b.smul_with_overflow(count, value))
            overflow = self.b.or_(overflow, wrapped)
        elem_bytes = ir.Constant(T.I64, T.storage_bytes(buf.dtype))
        nbytes, wrapped = self._checked(self.b.smul_with_overflow(count, elem_bytes))
        overflow = self.b.or_(overflow, wrapped)
        padded, wrapped = self._checked(self.b.sadd_with_overflow(nbytes, ir.Constant(T.I64, 63)))
        overflow = self.b.or_(overflow, wrapped)
        # aligned_alloc needs a multiple of the alignment; never ask for 0 bytes (nor for a wrapped size)
        rounded = self.b.and_(padded, ir.Constant(T.I64, -64))
        small = self.b.or_(overflow, self.b.icmp_signed("<", rounded, ir.Constant(T.I64, 64)))
        return self.b.select(small, ir.Constant(T.I64, 64), rounded), overflow

    def _checked(self, pair: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(result, overflow bit) of an `llvm.*.with.overflow` call."""
        return self.b.extract_value(pair, 0), self.b.extract_value(pair, 1)

    # -- temp buffers --------------------------------------------------------------------------------------
    def allocate_temps(self, buffers: list[Buffer]) -> None:
        """Allocate all `buffers`, then check the heap ones together: cleanup frees every heap
        pointer, so all of them must exist (possibly null) before the first failure exit."""
        for buf in buffers:
            self.buffers[buf.name] = self.allocate(buf)
        if not self.heap:
            return
        too_big = self.size_overflow[0]
        for flag in self.size_overflow[1:]:
            too_big = self.b.or_(too_big, flag)
        with self.b.if_then(too_big, likely=False):
            self.fail(self.status, STATUS_SIZE_OVERFLOW)
        null = ir.Constant(T.PTR, None)
        failed = self.b.icmp_unsigned("==", self.heap[0], null)
        for ptr in self.heap[1:]:
            failed = self.b.or_(failed, self.b.icmp_unsigned("==", ptr, null))
        with self.b.if_then(failed, likely=False):
            self.fail(self.status, STATUS_NOMEM)


def _const_product(shape: tuple[Expr, ...]) -> int | None:
    count = 1
    for dim in shape:
        if not isinstance(dim, (IntImm, UIntImm)):
            return None
        count *= int(dim.value)
    return count


def _retyped(e: Expr, dtype: DType) -> Expr:
    return IntImm(dtype, e.value) if isinstance(e, IntImm) else Cast(dtype, e)
