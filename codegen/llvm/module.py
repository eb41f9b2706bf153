"""One LoweredFunc -> one LLVM module (`llvmlite.ir.Module`).

C ABI of the generated functions (all symbols are C functions, callable through ctypes):

    int32_t <fn>(T0* noalias a0, ..., Tn* noalias an, int64_t S0, ..., int64_t Sk);
        Arguments in LoweredFunc order: input tensors, output tensors, then one int64 per
        symbolic dim (CINN's dynamic-shape ABI). Tensors are dense row-major buffers of their
        storage type (bool: 1 byte, float16: IEEE half, bfloat16: uint16 bits). No alignment is
        assumed (numpy inputs may be unaligned; x86 unaligned vector loads cost nothing on
        aligned data), outputs the Kernel allocates are 64-byte aligned anyway.
        Returns 0, or 1 when a heap temp buffer could not be allocated, -1 when the byte size of
        one (symbolic dims) is negative or past int64, or in a checked build
        2 + k when bounds check k failed (before its access; the index is in `<fn>__oob_index`).

    void <fn>_infer_shape(const int64_t* sym_values, int64_t* out_shapes);
        CINN's infer-shape function (reference/cinn.md §4) with a flat ABI: `sym_values[j]` is
        the j-th symbolic dim argument, and the dims of output k are written row-major at
        `out_shapes[r_0 + ... + r_{k-1} + d]` (r_i = rank of output i). The Kernel calls it to
        allocate outputs before the kernel itself.

    void <fn>__parallel_<k>(int64_t task_id, int64_t num_tasks, void* closure);
        Outlined parallel loops (see `parallel.py`).

Names: user names never reach the module as they are; see `codegen.llvm.names` (the kernel
symbol is a sanitised, collision-free identifier; `<symbol>_infer_shape`, `<symbol>__parallel_<k>`
derive from it).
"""

from __future__ import annotations

from llvmlite import ir

from cinn_py.diagnostics import CompileError
from cinn_py.ir import Buffer, LoweredFunc, ScheduleBlockRealize, int64, print_ir_marked, walk
from cinn_py.target import X86_PASSES
from codegen.llvm import types as T
from codegen.llvm.analysis import buffers_used, nontemporal_buffers
from codegen.llvm.intrinsics import MathEmitter
from codegen.llvm.loop_md import has_many_loops
from codegen.llvm.names import symbol_name, value_name
from cinn_py.passes.x86_privatize import task_only_buffers, task_private_buffers
from codegen.llvm.stmts import FunctionEmitter


def _check_lowered(func: LoweredFunc) -> None:
    """The printer takes the x86 target passes' output: a schedule block that still binds iter vars
    means they did not run (`cinn_py.build` runs them; `codegen.llvm.build_x86` too)."""
    for node in walk(func.body):
        if isinstance(node, ScheduleBlockRealize) and node.iter_values:
            raise CompileError(f"x86 codegen: schedule block '{node.name}' still binds iter vars; run the "
                               f"x86 target passes first ({', '.join(X86_PASSES)}: "
                               f"cinn_py.pipeline.target_passes(func, 'x86'))", print_ir_marked(func, node))


def oob_index_symbol(symbol: str) -> str:
    return f"{symbol}__oob_index"


class CodegenUnit:
    """State shared by every function emitted for one LoweredFunc."""

    def __init__(self, func: LoweredFunc, fast_math: bool, triple: str = "", data_layout: str = "",
                 checked: bool = False) -> None:
        self.func = func
        self.fast_math = fast_math
        self.checks: list[str] | None = [] if checked else None
        """Checked builds: what each bounds check guards (status STATUS_OUT_OF_BOUNDS + k)."""
        self._oob_index: ir.GlobalVariable | None = None
        self.symbol = symbol_name(func.name)
        self.module = ir.Module(name=self.symbol)
        if triple:
            self.module.triple = triple
        if data_layout:
            self.module.data_layout = data_layout
        self.math = MathEmitter(self.module, fast_math)
        _check_lowered(func)
        self.nontemporal = nontemporal_buffers(func.body)
        self.keep_loops = has_many_loops(func.body)
        self.body = func.body
        self.arg_buffers = {a.tensor.buffer.name for a in func.args if a.tensor is not None}
        self.temps = self._temp_buffers()
        self._counter = 0

    def _temp_buffers(self) -> list[Buffer]:
        found: dict[str, Buffer] = {}
        for buf in self.func.temp_bufs:
            found.setdefault(buf.name, buf)
        for name, buf in buffers_used(self.body).items():
            found.setdefault(name, buf)
        return [b for name, b in found.items() if name not in self.arg_buffers]

    def fresh_name(self, suffix: str) -> str:
        """A new module-level function name `<symbol><suffix>_<k>` (helpers of the kernel)."""
        name = f"{self.symbol}{suffix}_{self._counter}"
        self._counter += 1
        return name

    def oob_index(self) -> ir.GlobalVariable:
        """`<symbol>__oob_index`: the index value of the failed bounds check (checked builds)."""
        if self._oob_index is None:
            self._oob_index = ir.GlobalVariable(self.module, T.I64, oob_index_symbol(self.symbol))
            self._oob_index.initializer = ir.Constant(T.I64, 0)
        return self._oob_index

    def runtime_fn(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        return ir.Function(self.module, ir.FunctionType(ret, args), name)

    # -- functions -----------------------------------------------------------------------------
    def build(self) -> ir.Module:
        self._emit_kernel()
        self._emit_infer_shape()
        return self.module

    def _emit_kernel(self) -> None:
        params: list[ir.Type] = []
        for arg in self.func.args:
            params.append(T.PTR if arg.tensor is not None else T.scalar_reg_type(arg.var.dtype))  # type: ignore[union-attr]
        fn = ir.Function(self.module, ir.FunctionType(T.I32, params), self.symbol)
        fn.attributes.add("nounwind")
        em = FunctionEmitter(self, fn)
        for arg, param in zip(self.func.args, fn.args):
            param.name = value_name(arg.name)
            if arg.tensor is not None:
                param.add_attribute("noalias")
                em.buffers[arg.tensor.buffer.name] = param
            else:
                em.env[arg.var] = param  # type: ignore[index]
        # task-private buffers used only in parallel loops are allocated by each task instead
        task_only = task_only_buffers(self.body, task_private_buffers(self.body, self.arg_buffers))
        em.allocate_temps([b for b in self.temps if b.name not in task_only])
        em.stmt(self.body)
        em.finish(returns_status=True)

    def _emit_infer_shape(self) -> None:
        fn = ir.Function(self.module, ir.FunctionType(T.VOID, [T.PTR, T.PTR]), f"{self.symbol}_infer_shape")
        fn.attributes.add("nounwind")
        sym_values, out_shapes = fn.args
        sym_values.name, out_shapes.name = "sym_values", "out_shapes"
        em = FunctionEmitter(self, fn)
        b = em.b
        for j, var in enumerate(self.func.scalar_args):
            raw = b.load(b.gep(sym_values, [ir.Constant(T.I64, j)], source_etype=T.I64), typ=T.I64)
            em.env[var] = T.cast(b, raw, int64, var.dtype)
        slot = 0
        for tensor in self.func.outputs:
            for dim in tensor.shape:
                value = T.cast(b, em.expr(dim), dim.dtype, int64)
                b.store(value, b.gep(out_shapes, [ir.Constant(T.I64, slot)], source_etype=T.I64))
                slot += 1
        em.finish(returns_status=False)


def build_module(func: LoweredFunc, fast_math: bool, triple: str = "", data_layout: str = "",
                 checked: bool = False) -> CodegenUnit:
    """Emit the LLVM module of `func` (unverified, unoptimised); returns the unit with `.module`
    (and `.checks`, the bounds checks of a checked build)."""
    unit = CodegenUnit(func, fast_math, triple, data_layout, checked)
    unit.build()
    return unit
