"""Expressions of the CINN IR in LLVM IR (built with `llvmlite.ir`, never as text).

C semantics throughout: integer `/` and `%` truncate toward zero (`sdiv`/`srem`, `udiv`/`urem`
for unsigned), `cinn_min(a, b)` is `a < b ? a : b`, comparisons on floats are ordered except `!=`,
casts follow C. Two deliberate differences from C, because generated code must never crash the
process: an integer division or remainder by zero yields 0 (numpy's result) and `INT_MIN / -1`
wraps, instead of trapping. A `select` (and `and`/`or`) whose lazily evaluated side reads memory is
emitted with branches, as C's `?:`/`&&` would be, so a guard such as `select(i < n, A[i], 0)`
never reads out of bounds.

Vector values appear inside `vectorize[F]` loops (the loop var is a `<F x iN>` ramp) and for
explicit `Ramp`/`Broadcast` nodes; scalar operands are broadcast on demand. Loads and stores pick
a vector access when the flattened index moves by one element per lane, a scalar access for a
lane-invariant index, and per-lane gathers/scatters otherwise.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    Add, And, BinaryOp, Broadcast, Call, Cast, CmpOp, DType, Div, EQ, Expr, FloatImm, GE, GT, IntImm, LE, LT,
    Load, LogicalOp, Max, Min, Minus, Mod, Mul, NE, Not, Ramp, Reduce, Select, StringImm, Sub, Tensor,
    UIntImm, Var, bool_, int8, print_ir, walk,
)
from codegen.llvm import types as T
from codegen.llvm.analysis import LaneInfo, flat_index, lane_stride
from codegen.llvm.intrinsics import MathEmitter
from codegen.llvm.window_load import unclamped_window_load

FAST_FLAGS = ("reassoc", "contract", "nsz", "arcp", "afn")
_INT_CMP = {EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">="}


class ExprEmitter:
    """Emits expressions into one LLVM function at the builder's position."""

    def __init__(self, module: ir.Module, math: MathEmitter, builder: ir.IRBuilder, fast_math: bool) -> None:
        self.module = module
        self.math = math
        self.b = builder
        self.fast_math = fast_math
        self.env: dict[Var, ir.Value] = {}
        self.buffers: dict[str, ir.Value] = {}
        self.lane: LaneInfo | None = None
        self._no_lane = LaneInfo(Var("__no_vector_var__"))
        self.nontemporal: frozenset[str] = frozenset()
        """Buffers whose full-vector stores get `!nontemporal` (`analysis.nontemporal_buffers`)."""
        self.streamed = False
        """A streaming store was emitted (the function ends with an `sfence`)."""

    @property
    def fflags(self) -> tuple[str, ...]:
        return FAST_FLAGS if self.fast_math else ()

    # -- dispatch ------------------------------------------------------------------------------
    def expr(self, e: Expr) -> ir.Value:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is not None:
            return method(e)
        if isinstance(e, BinaryOp):
            return self.binary(e)
        raise CompileError(f"x86 codegen: cannot emit expression {type(e).__name__}: {print_ir(e)}")

    def typed(self, e: Expr, dtype: DType) -> ir.Value:
        """Emit `e` converted to IR dtype `dtype` (lanes preserved)."""
        value = self.expr(e)
        return T.cast(self.b, value, e.dtype, dtype) if e.dtype.element_of() != dtype.element_of() else value

    # -- leaves --------------------------------------------------------------------------------
    def e_IntImm(self, e: IntImm) -> ir.Value:
        return T.constant(e.dtype, e.value)

    def e_UIntImm(self, e: UIntImm) -> ir.Value:
        return T.constant(e.dtype, e.value)

    def e_FloatImm(self, e: FloatImm) -> ir.Value:
        return T.constant(e.dtype, e.value)

    def e_StringImm(self, e: StringImm) -> ir.Value:
        raise CompileError(f"x86 codegen: string immediate {print_ir(e)} has no value on x86")

    def e_Var(self, e: Var) -> ir.Value:
        value = self.env.get(e)
        if value is None:
            raise CompileError(f"x86 codegen: variable '{e.name}' ({e.dtype}) is used but not defined here")
        return value

    # -- arithmetic ----------------------------------------------------------------------------
    def binary(self, e: BinaryOp) -> ir.Value:
        dtype = e.a.dtype.element_of()
        if isinstance(e, LogicalOp):
            return self.logical(e)
        a = self.expr(e.a)
        b = self.typed(e.b, dtype)
        a, b = T.match_lanes(self.b, a, b)
        if isinstance(e, CmpOp):
            return self.compare(type(e), a, b, dtype)
        if isinstance(e, (Min, Max)):
            less = self.compare(LT if isinstance(e, Min) else GT, a, b, dtype)
            return self.b.select(less, a, b)
        if dtype.is_float:
            op = {Add: self.b.fadd, Sub: self.b.fsub, Mul: self.b.fmul, Div: self.b.fdiv,
                  Mod: self.b.frem}[type(e)]
            return op(a, b, flags=self.fflags)
        if isinstance(e, (Div, Mod)):
            return self.int_divmod(isinstance(e, Div), a, b, dtype, e.b)
        if dtype.is_bool:
            a, b = (T.cast(self.b, v, bool_, int8) for v in (a, b))
            out = {Add: self.b.add, Sub: self.b.sub, Mul: self.b.mul}[type(e)](a, b)
            return T.cast(self.b, out, int8, bool_)
        return {Add: self.b.add, Sub: self.b.sub, Mul: self.b.mul}[type(e)](a, b)

    def compare(self, kind: type, a: ir.Value, b: ir.Value, dtype: DType) -> ir.Value:
        op = _INT_CMP[kind]
        if dtype.is_float:
            return self.b.fcmp_unordered(op, a, b) if op == "!=" else self.b.fcmp_ordered(op, a, b)
        if dtype.is_int:
            return self.b.icmp_signed(op, a, b)
        return self.b.icmp_unsigned(op, a, b)

    def int_divmod(self, is_div: bool, a: ir.Value, b: ir.Value, dtype: DType, b_expr: Expr) -> ir.Value:
        signed = dtype.is_int
        const = int(b_expr.value) if isinstance(b_expr, (IntImm, UIntImm)) else None
        zero = ir.Constant(a.type, None)
        if const is not None and const not in (0, -1):
            if is_div:
                return self.b.sdiv(a, b) if signed else self.b.udiv(a, b)
            return self.b.srem(a, b) if signed else self.b.urem(a, b)
        one = T.splat(self.b, ir.Constant(T.scalar_reg_type(dtype), 1), T.lanes_of(a))
        minus_one = T.splat(self.b, ir.Constant(T.scalar_reg_type(dtype), -1), T.lanes_of(a))
        is_zero = self.b.icmp_unsigned("==", b, zero)
        unsafe = self.b.or_(is_zero, self.b.icmp_signed("==", b, minus_one)) if signed else is_zero
        safe_b = self.b.select(unsafe, one, b)
        if is_div:
            q = self.b.sdiv(a, safe_b) if signed else self.b.udiv(a, safe_b)
            if signed:
                q = self.b.select(self.b.icmp_signed("==", b, minus_one), self.b.sub(zero, a), q)
            return self.b.select(is_zero, zero, q)
        r = self.b.srem(a, safe_b) if signed else self.b.urem(a, safe_b)
        return self.b.select(unsafe, zero, r)

    def logical(self, e: BinaryOp) -> ir.Value:
        a = self.expr(e.a)
        if T.lanes_of(a) == 1 and _reads_memory(e.b):
            # short-circuit like C's && / ||: `i < n && A[i] > 0` must not load A[n]
            is_and = isinstance(e, And)
            return self.lazy(a if is_and else self.b.not_(a), lambda: self.expr(e.b),
                             lambda: ir.Constant(T.I1, 0 if is_and else 1))
        b = self.expr(e.b)
        a, b = T.match_lanes(self.b, a, b)
        return self.b.and_(a, b) if isinstance(e, And) else self.b.or_(a, b)

    def lazy(self, cond: ir.Value, then: Any, otherwise: Any, typ: ir.Type | None = None) -> ir.Value:
        """`cond ? then() : otherwise()` with only the taken side evaluated (scalar `cond`)."""
        with self.b.if_else(cond) as (on_true, on_false):
            with on_true:
                tv = then()
                tb = self.b.block
            with on_false:
                fv = otherwise()
                fb = self.b.block
        merge = self.b.block
        lanes = max(T.lanes_of(tv), T.lanes_of(fv))
        if T.lanes_of(tv) != lanes:  # widen inside the narrower branch, before its jump
            self.b.position_before(tb.terminator)
            tv = T.splat(self.b, tv, lanes)
        if T.lanes_of(fv) != lanes:
            self.b.position_before(fb.terminator)
            fv = T.splat(self.b, fv, lanes)
        self.b.position_at_end(merge)
        phi = self.b.phi(tv.type)
        phi.add_incoming(tv, tb)
        phi.add_incoming(fv, fb)
        return phi

    def e_Minus(self, e: Minus) -> ir.Value:
        v = self.expr(e.v)
        if e.dtype.is_float:
            return self.b.fneg(v)
        return self.b.sub(ir.Constant(v.type, None), v)

    def e_Not(self, e: Not) -> ir.Value:
        return self.b.not_(self.typed(e.v, bool_))

    def e_Cast(self, e: Cast) -> ir.Value:
        return T.cast(self.b, self.expr(e.v), e.v.dtype, e.dtype)

    def e_Select(self, e: Select) -> ir.Value:
        cond = self.typed(e.condition, bool_)
        if T.lanes_of(cond) == 1 and (_reads_memory(e.true_value) or _reads_memory(e.false_value)):
            return self.lazy(cond, lambda: self.expr(e.true_value), lambda: self.expr(e.false_value))
        if T.lanes_of(cond) > 1:
            masked = self.masked_window_load(e, cond)
            if masked is not None:
                return masked
        tv, fv = self.expr(e.true_value), self.expr(e.false_value)
        tv, fv = T.match_lanes(self.b, tv, fv)
        if T.lanes_of(cond) > 1:
            tv, fv = T.splat(self.b, tv, T.lanes_of(cond)), T.splat(self.b, fv, T.lanes_of(cond))
        return self.b.select(cond, tv, fv)

    # -- vectors -------------------------------------------------------------------------------
    def e_Ramp(self, e: Ramp) -> ir.Value:
        base = self.expr(e.base)
        stride = self.typed(e.stride, e.base.dtype)
        if T.lanes_of(base) != 1:
            raise CompileError(f"x86 codegen: Ramp base must be a scalar: {print_ir(e)}")
        steps = ir.Constant(ir.VectorType(base.type, e.lanes), list(range(e.lanes)))
        step_vec = self.b.mul(T.splat(self.b, stride, e.lanes), steps)
        return self.b.add(T.splat(self.b, base, e.lanes), step_vec)

    def e_Broadcast(self, e: Broadcast) -> ir.Value:
        return T.splat(self.b, self.expr(e.value), e.lanes)

    # -- memory --------------------------------------------------------------------------------
    def buffer_ptr(self, tensor: Tensor) -> ir.Value:
        ptr = self.buffers.get(tensor.buffer.name)
        if ptr is None:
            raise CompileError(f"x86 codegen: buffer '{tensor.buffer.name}' of tensor '{tensor.name}' is "
                               "neither "
                               f"an argument nor a temporary buffer of the function")
        return ptr

    def address(self, tensor: Tensor, indices: tuple[Expr, ...]) -> tuple[ir.Value, int | None]:
        """(flattened i64 index value, lane stride or None) of `tensor[indices]`."""
        flat = flat_index(tensor, indices)
        value = self.expr(flat)
        if T.lanes_of(value) == 1:
            return value, 0
        return value, lane_stride(flat, self.lane or self._no_lane)

    def _gep(self, tensor: Tensor, index: ir.Value) -> ir.Value:
        st = T.scalar_storage_type(tensor.dtype)
        return self.b.gep(self.buffer_ptr(tensor), [index], inbounds=True, source_etype=st)

    def _lane(self, v: ir.Value, k: int) -> ir.Value:
        return self.b.extract_element(v, ir.Constant(T.I32, k)) if T.lanes_of(v) > 1 else v

    def check_access(self, tensor: Tensor, indices: tuple[Expr, ...], is_write: bool) -> None:
        """Guard of one access in a checked build (`FunctionEmitter`); nothing by default."""

    def e_Load(self, e: Load) -> ir.Value:
        tensor = e.tensor
        self.check_access(tensor, e.indices, False)
        st = T.scalar_storage_type(tensor.dtype)
        align = T.storage_bytes(tensor.dtype)
        index, stride = self.address(tensor, e.indices)
        lanes = T.lanes_of(index)
        if lanes == 1 or stride == 0:
            raw = self.b.load(self._gep(tensor, self._lane(index, 0)), typ=st, align=align)
        elif stride == 1:
            raw = self.b.load(self._gep(tensor, self._lane(index, 0)), typ=ir.VectorType(st, lanes),
                              align=align)
        else:
            raw = self.gather(tensor, index, st, align)
        return T.load_convert(self.b, raw, tensor.dtype)

    def masked_window_load(self, e: Select, cond: ir.Value) -> ir.Value | None:
        """A padded window read (`window_load`) as one `llvm.masked.load`; None when `e` is not
        one or its unclamped index is not contiguous in the lane."""
        load = unclamped_window_load(e)
        if load is None or _reads_memory(e.false_value) or e.dtype != load.tensor.dtype:
            return None
        tensor = load.tensor
        index, stride = self.address(tensor, load.indices)
        lanes = T.lanes_of(cond)
        if stride != 1 or T.lanes_of(index) != lanes:
            return None
        self.check_access(tensor, e.true_value.indices, False)  # type: ignore[attr-defined]
        st = T.scalar_storage_type(tensor.dtype)
        vt = ir.VectorType(st, lanes)
        # not `inbounds`: the first lane's address may lie before the tensor (a masked-off lane)
        ptr = self.b.gep(self.buffer_ptr(tensor), [self._lane(index, 0)], source_etype=st)
        name = f"llvm.masked.load.v{lanes}{_type_suffix(st)}.p0"
        fn = self.module.globals.get(name)
        if not isinstance(fn, ir.Function):
            fn = ir.Function(self.module,
                             ir.FunctionType(vt, [T.PTR, T.I32, ir.VectorType(T.I1, lanes), vt]), name)
        pad = T.store_convert(self.b, T.splat(self.b, self.typed(e.false_value, tensor.dtype), lanes),
                              tensor.dtype)
        raw = self.b.call(fn, [ptr, ir.Constant(T.I32, T.storage_bytes(tensor.dtype)), cond, pad])
        return T.load_convert(self.b, raw, tensor.dtype)

    def gather(self, tensor: Tensor, index: ir.Value, st: ir.Type, align: int) -> ir.Value:
        """Per-lane loads as one `llvm.masked.gather` (all lanes on): a `vgatherdps` on
        AVX-512/AVX2 instead of N scalar loads and N inserts."""
        lanes = T.lanes_of(index)
        ptrs = self.b.gep(self.buffer_ptr(tensor), [index], inbounds=True, source_etype=st)
        ptrs.type = ir.VectorType(T.PTR, lanes)  # llvmlite types a vector GEP as a scalar ptr
        vt = ir.VectorType(st, lanes)
        name = f"llvm.masked.gather.v{lanes}{_type_suffix(st)}.v{lanes}p0"
        fn = self.module.globals.get(name)
        if not isinstance(fn, ir.Function):
            fn = ir.Function(self.module,
                             ir.FunctionType(vt, [ptrs.type, T.I32, ir.VectorType(T.I1, lanes), vt]),
                             name)
        mask = ir.Constant(ir.VectorType(T.I1, lanes), [ir.Constant(T.I1, 1)] * lanes)
        return self.b.call(fn, [ptrs, ir.Constant(T.I32, align), mask, ir.Constant(vt, ir.Undefined)])

    def store(self, tensor: Tensor, indices: tuple[Expr, ...], value_expr: Expr) -> None:
        self.check_access(tensor, indices, True)
        align = T.storage_bytes(tensor.dtype)
        index, stride = self.address(tensor, indices)
        value = T.store_convert(self.b, self.typed(value_expr, tensor.dtype), tensor.dtype)
        lanes = max(T.lanes_of(index), T.lanes_of(value))
        if lanes == 1:
            self.b.store(value, self._gep(tensor, index), align=align)
        elif T.lanes_of(index) == 1 or stride == 0:
            # every lane writes the same element: sequential semantics keep the last lane
            self.b.store(self._lane(value, lanes - 1), self._gep(tensor, self._lane(index, 0)), align=align)
        elif stride == 1:
            ptr = self._gep(tensor, self._lane(index, 0))
            if tensor.buffer.name in self.nontemporal:
                self.streaming_store(T.splat(self.b, value, lanes), ptr, align)
            else:
                self.b.store(T.splat(self.b, value, lanes), ptr, align=align)
        else:
            for k in range(lanes):
                self.b.store(self._lane(value, k), self._gep(tensor, self._lane(index, k)), align=align)

    def streaming_store(self, vector: ir.Value, ptr: ir.Value, align: int) -> None:
        """A vector store with LLVM's `!nontemporal` (x86 `vmovntps`: no read-for-ownership, the
        line does not evict cached data). Those need an address aligned to the vector's size,
        which user-provided outputs need not be: the address is checked at run time and a
        misaligned one gets an ordinary store (one predictable branch per vector)."""
        size = T.lanes_of(vector) * align
        if size & (size - 1):
            self.b.store(vector, ptr, align=align)
            return
        offset = self.b.and_(self.b.ptrtoint(ptr, T.I64), ir.Constant(T.I64, size - 1))
        with self.b.if_else(self.b.icmp_unsigned("==", offset, ir.Constant(T.I64, 0))) as (aligned, other):
            with aligned:
                self.streamed = True
                inst = self.b.store(vector, ptr, align=size)
                inst.set_metadata("nontemporal", self.module.add_metadata([ir.Constant(T.I32, 1)]))
            with other:
                self.b.store(vector, ptr, align=align)

    # -- calls -----------------------------------------------------------------------------------
    def e_Call(self, e: Call) -> ir.Value:
        if not e.args:
            raise CompileError(f"x86 codegen: call '{e.name}' has no x86 implementation: {print_ir(e)}")
        arg_dtype = e.args[0].dtype.element_of()
        if e.dtype.element_of().is_float and not arg_dtype.is_float:
            arg_dtype = e.dtype.element_of()  # exp(int) computes in the call's float type
        values = [self.typed(a, arg_dtype) for a in e.args]
        lanes = max(T.lanes_of(v) for v in values)
        values = [T.splat(self.b, v, lanes) for v in values]
        out = self.math.emit(self.b, e.name, values, arg_dtype, e.dtype)
        result = e.dtype.element_of()
        if result.is_bool or result == arg_dtype:
            return out
        return T.cast(self.b, out, arg_dtype, result)

    def e_Reduce(self, e: Reduce) -> ir.Value:
        raise CompileError(f"x86 codegen: Reduce nodes must be lowered before codegen: {print_ir(e)}")


def _type_suffix(t: ir.Type) -> str:
    """LLVM's overload suffix of a scalar type: f16, f32, f64, i8, i16, ..."""
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return {"half": "f16", "float": "f32", "double": "f64"}[str(t)]


def _reads_memory(e: Expr) -> bool:
    return any(isinstance(n, Load) for n in walk(e))
