"""One `__global__` kernel: signature, buffer declarations and the NVRTC translation unit.

`print_kernel(func)` prints a GPU-lowered function (after `lower_for_cuda`) with the
`CudaPrinter` expression/statement rules:

- tensor arguments print as `const T* __restrict__` (inputs) / `T* __restrict__` (outputs),
  symbolic dims as `int64_t S0`; `__launch_bounds__` is the block size when it is constant;
- shared buffers of constant size are static (`__shared__ float s[256];`); shared buffers whose
  size is symbolic live in one dynamic `extern __shared__` array, each at a 16-byte aligned offset
  computed from the symbolic dims (the host passes the total as the launch's shared bytes);
- local buffers are register arrays (`float r[4];`); a symbolic local size is rejected;
- global intermediates (temp buffers left in global memory) cannot be allocated by a kernel: they
  become trailing pointer arguments `T* __restrict__ C` that the host allocates for each launch
  (CINN's `temp_spaces`), sized from the symbolic dims and zero-filled when the kernel may read an
  element before writing it (`TempSpace`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    Add, ArgIO, Buffer, Cast, Div, Expr, IntImm, Load, LoweredFunc, MemoryType, Mul, Store, Var, handle,
    int32, int64, walk,
)
from cinn_py.passes.gpu_buffers import collect_accesses, interval, is_bound_var
from codegen.cuda.codegen import CudaPrinter, is_global_buffer
from codegen.cuda.half import promote_half
from codegen.cuda.launch import TempSpace
from codegen.cuda.nvrtc import RUNTIME_HEADER_NAME

SHARED_ALIGN = 16
DYNAMIC_SHARED = "cinn_dyn_shared"


@dataclass(frozen=True)
class KernelSource:
    """What the printer produced for one kernel."""

    source: str
    name: str
    """The kernel's symbol: the function name, sanitised when it is not a safe identifier."""
    dynamic_shared_bytes: Expr
    """Bytes of dynamic shared memory to pass at launch (an expression of the symbolic dims)."""
    vector_alignment: int
    """Byte alignment that vectorised global accesses need from every tensor pointer (1: none)."""
    temp_spaces: tuple[TempSpace, ...] = ()
    """Global temporaries passed after the regular arguments, in signature order."""
    checks: tuple[str, ...] | None = None
    """Checked builds: what each bounds check guards; None when unchecked."""
    counts_traffic: bool = False
    """Every global load/store adds its bytes to `cinn_traffic` (codegen.cuda.traffic)."""


def scoped_buffers(func: LoweredFunc) -> list[Buffer]:
    """Buffers the kernel body uses that are not arguments, in first-use order.

    A buffer is used through a Load/Store, or passed by name to a runtime helper (the
    cross-thread reduce scratch `shm32__fp32_reduce`, listed in `temp_bufs`).
    """
    arg_buffers = {a.tensor.buffer.name for a in func.args if a.tensor is not None}
    temps = {b.name: b for b in func.temp_bufs}
    seen: dict[str, Buffer] = {}
    for node in walk(func.body):
        buf: Buffer | None = None
        if isinstance(node, (Load, Store)):
            buf = node.tensor.buffer
        elif isinstance(node, Var) and node.dtype == handle and node.name in temps:
            buf = temps[node.name]
        if buf is not None and buf.name not in arg_buffers and buf.name not in seen:
            seen[buf.name] = buf
    return list(seen.values())


def _num_elements(buffer: Buffer) -> Expr:
    total: Expr | None = None
    for dim in buffer.shape:
        total = dim if total is None else Mul(total, dim)
    return total if total is not None else IntImm(int32, 1)


def _const_value(e: Expr) -> int | None:
    rng = interval(e, {})
    return rng[0] if rng is not None and rng[0] == rng[1] else None


def temp_spaces(func: LoweredFunc, names: dict[str, str]) -> tuple[TempSpace, ...]:
    """The global temporaries of a GPU-lowered `func` as host-allocated kernel arguments.

    A temporary needs zero-filling when its first access in program order is a load (e.g. an
    accumulation without an init block); every buffer the lowering creates is written first.
    """
    buffers = [b for b in scoped_buffers(func) if is_global_buffer(b)]
    if not buffers:
        return ()
    accesses = collect_accesses(func.body, [b.name for b in buffers])
    spaces = []
    for buf in buffers:
        found = accesses[buf.name]
        zero = not found or not found[0].is_write
        spaces.append(TempSpace(names.get(buf.name, buf.name), buf.dtype,
                                _to_int64(_num_elements(buf)), zero))
    return tuple(spaces)


class _KernelPrinter(CudaPrinter):
    def __init__(self, func: LoweredFunc, fast_math: bool, checked: bool = False) -> None:
        super().__init__(fast_math)
        self.func = func
        self.checks = [] if checked else None
        if checked and func.cuda_axis_info is not None:
            self.ranges.update(launch_ranges(func))
        self.dynamic_bytes: Expr = IntImm(int64, 0)
        self.buffers = scoped_buffers(func)
        self.ids.reserve(DYNAMIC_SHARED)
        # The kernel symbol first, then the signature's names: each keeps its own spelling when
        # it is already a safe identifier; later clashes are renamed.
        self.kernel_name = self.identifier("func", func.name)
        for buf in (*(a.tensor.buffer for a in func.args if a.tensor is not None), *self.buffers):
            self.name_buffer(buf)
        for var in func.scalar_args:
            self.name_var(var)
        self.handle_buffers = {b.name: b for b in func.temp_bufs}
        self.temp_spaces = temp_spaces(func, self.buffer_names)

    def signature(self) -> str:
        params = []
        for arg in self.func.args:
            if arg.tensor is not None:
                const = "const " if arg.io is ArgIO.INPUT else ""
                params.append(f"{const}{self.ctype(arg.tensor.dtype)}* __restrict__ "
                              f"{self.name_buffer(arg.tensor.buffer)}")
            elif arg.var is not None:
                params.append(f"{self.ctype(arg.var.dtype)} {self.name_var(arg.var)}")
        # CINN appends the temp_spaces after the function's own arguments.
        params.extend(f"{self.ctype(t.dtype)}* __restrict__ {t.name}" for t in self.temp_spaces)
        bounds = ""
        info = self.func.cuda_axis_info
        if info is not None and all(_const_value(d) is not None for d in info.block_dims):
            threads = 1
            for d in info.block_dims:
                threads *= _const_value(d) or 1
            bounds = f"__launch_bounds__({threads}) "
        return f"__global__ void {bounds}{self.kernel_name}({', '.join(params)})"

    def declare_buffers(self) -> None:
        offset: Expr = IntImm(int64, 0)
        dynamic = False
        for buf in self.buffers:
            if is_global_buffer(buf):
                continue  # a temp_space argument
            name = self.name_buffer(buf)
            elems = _num_elements(buf)
            count = _const_value(elems)
            ctype = self.ctype(buf.dtype)
            if buf.memory_type is MemoryType.GPU_LOCAL:
                if count is None:
                    raise CompileError(
                        f"CUDA codegen: local buffer '{buf.name}' has symbolic size {elems}; registers need "
                        "a "
                        "constant size. It stays symbolic when its index depends on a loop that does not "
                        "enclose "
                        "all its accesses, or when it is read before it is written in an iteration; use a "
                        "shared or global buffer, or schedule the accesses under one loop nest")
                self.line(f"{ctype} {name}[{count}];")
                continue
            if count is not None:
                self.line(f"__shared__ {ctype} {name}[{count}];")
                continue
            if not dynamic:
                self.line(f"extern __shared__ __align__(16) unsigned char {DYNAMIC_SHARED}[];")
                dynamic = True
            self.line(f"{ctype}* {name} = "
                      f"reinterpret_cast<{ctype}*>(&{DYNAMIC_SHARED}[{self.expr(offset)}]);")
            size = _to_int64(Mul(elems, IntImm(elems.dtype, max(1, buf.dtype.bits // 8))))
            offset = _align_up(Add(offset, size), SHARED_ALIGN)
        self.dynamic_bytes = offset

    def kernel(self) -> str:
        self.line(self.signature())
        self.line("{")
        self.level += 1
        self.declare_buffers()
        self.stmt(self.func.body)
        self.level -= 1
        self.line("}")
        return self.text()


def _to_int64(e: Expr) -> Expr:
    if isinstance(e, IntImm):
        return IntImm(int64, e.value)
    return e if e.dtype == int64 else Cast(int64, e)


def _align_up(e: Expr, k: int) -> Expr:
    c = _const_value(e)
    if c is not None:
        return IntImm(int64, (c + k - 1) // k * k)
    kk = IntImm(int64, k)
    return Mul(Div(Add(e, IntImm(int64, k - 1)), kk), kk)


def launch_ranges(func: LoweredFunc) -> dict[Var, tuple[Expr, Expr]]:
    """`blockIdx.x` in [0, grid x), `threadIdx.y` in [0, block y), ... for the bound vars of `func`."""
    info = func.cuda_axis_info
    if info is None:
        return {}
    out: dict[Var, tuple[Expr, Expr]] = {}
    for node in walk(func.body):
        if isinstance(node, Var) and is_bound_var(node) and node not in out:
            kind, _, axis = node.name.partition(".")
            dims = info.grid_dims if kind == "blockIdx" else info.block_dims
            if axis in ("x", "y", "z"):
                out[node] = (IntImm(node.dtype, 0), dims["xyz".index(axis)])
    return out


def print_kernel(func: LoweredFunc, fast_math: bool = False, checked: bool = False,
                 count_traffic: bool = False) -> KernelSource:
    """The full NVRTC translation unit for one GPU-lowered function (`checked`: indices the
    printer cannot prove in range go through `cinn_checked_index`; `count_traffic`: every global
    load and store adds its bytes to `cinn_traffic`)."""
    body = promote_half(func.body)
    printer = _KernelPrinter(dataclasses.replace(func, body=body), fast_math, checked)
    printer.count_traffic = count_traffic
    kernel = printer.kernel()
    source = f'#include "{RUNTIME_HEADER_NAME}"\n\nextern "C" {{\n\n{kernel}\n}}\n'
    return KernelSource(source, printer.kernel_name, printer.dynamic_bytes, printer.vector_alignment,
                        printer.temp_spaces, None if printer.checks is None else tuple(printer.checks),
                        count_traffic)
