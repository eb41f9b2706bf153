"""CUDA C printing (`print_cuda`: what the CUDA backend does with a function the CUDA target passes
lowered) and `generate_cuda` (the keyword convenience: those passes, then `print_cuda`); NVRTC
compilation on first use.

The CUDA C source needs no NVRTC: `GeneratedCode.source` and `.launch` are ready when
`generate_cuda` returns, so `cinn-py codegen --target cuda` and the demo print kernels on a
machine without the optional `nvrtc` extra. `.ptx`, `.cubin` and `.compiled` compile the source
with NVRTC the first time one of them is read (cached, like every `compile_cuda` call); without
NVRTC that access raises `CompileError` naming the missing extra.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

from cinn_py.diagnostics import CompileError
from cinn_py.ir import LoweredFunc
from cinn_py.options import BuildOptions, CudaOptions
from cinn_py.target import Target
from codegen.cuda.kernel_source import print_kernel
from codegen.cuda.launch import LaunchInfo, TempSpace, eval_int
from codegen.cuda.lowering import lower_for_cuda
from codegen.cuda.nvrtc import CompiledCuda, check_arch, compile_cuda
from codegen.cuda.resources import KernelResources, parse_ptxas_report, summary

FAST_MATH_OPTIONS = ("--use_fast_math",)


@dataclass(frozen=True)
class GeneratedCode:
    """Everything `generate_cuda` produced for one function."""

    source: str
    """The CUDA C translation unit (includes `cinn_cuda_runtime.cuh`)."""
    launch: LaunchInfo
    kernel_name: str
    """The kernel's symbol in the PTX/CUBIN (what `get_function` needs): the function name, or
    its sanitised spelling when the name is not a safe C identifier."""
    func: LoweredFunc
    """The function after the GPU passes (what was printed)."""
    target: Target
    """The GPU it was printed for: its arch is NVRTC's `--gpu-architecture`, its limits bound the launch."""
    options: tuple[str, ...]
    vector_alignment: int
    """Byte alignment every tensor pointer needs (vectorised accesses); 1 if none."""
    temp_spaces: tuple[TempSpace, ...] = ()
    """Global temporaries the host allocates per launch, passed after the function's arguments."""
    checks: tuple[str, ...] | None = None
    """Checked builds: what each `cinn_checked_index` guards (the host reports check k + 1)."""
    counts_traffic: bool = False
    """Traffic-counting builds: the kernel adds every global access's bytes to `cinn_traffic`."""
    _compiled: list[CompiledCuda] = field(default_factory=list, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def arch(self) -> str:
        """`sm_XX` (CUBIN + PTX) or `compute_XX` (PTX only)."""
        return self.target.arch

    @property
    def text(self) -> str:
        """The CUDA C source (what `cinn-py dump-ir --stage codegen` prints)."""
        return self.source

    @property
    def compiled(self) -> CompiledCuda:
        """The NVRTC products (compiled on first access).

        Raises:
            CompileError: NVRTC is not installed (the `nvrtc` extra) or rejected the source.
        """
        with self._lock:
            if not self._compiled:
                self._compiled.append(compile_cuda(self.source, arch=self.arch, options=self.options,
                                                   name=f"{self.kernel_name}.cu"))
            return self._compiled[0]

    @property
    def ptx(self) -> str:
        return self.compiled.ptx

    @property
    def cubin(self) -> bytes | None:
        """The CUBIN for an `sm_XX` arch; None for a virtual `compute_XX` arch (PTX only)."""
        return self.compiled.cubin

    @property
    def resources(self) -> KernelResources | None:
        """Registers, spills and static shared memory ptxas allocated (compiles on first use);
        None for a PTX-only `compute_XX` arch."""
        if not self.arch.startswith("sm_"):
            return None
        return parse_ptxas_report(self.compiled.log, self.kernel_name)

    @property
    def resource_summary(self) -> str:
        """`resources` with the launch and its theoretical occupancy, as text (`codegen --emit resources`)."""
        resources = self.resources
        if resources is None:
            return (f"kernel {self.kernel_name} ({self.arch}): a PTX-only build; ptxas allocates nothing "
                    "until an sm_XX build")
        try:  # the block and shared bytes are often constant even when the grid is symbolic
            block = [eval_int(d, {}) for d in self.launch.block]
            dynamic = eval_int(self.launch.shared_bytes, {})
        except ValueError:
            return summary(resources, str(self.launch), None)
        return summary(resources, str(self.launch), block[0] * block[1] * block[2], dynamic)

    @property
    def is_compiled(self) -> bool:
        return bool(self._compiled)


def nvrtc_options(fast_math: bool, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    return (*(FAST_MATH_OPTIONS if fast_math else ()), *extra)


def generate_cuda(func: LoweredFunc, fast_math: bool = False, arch: str = "sm_90",
                  options: tuple[str, ...] = (), kernel_name: str | None = None, checked: bool = False,
                  count_traffic: bool = False) -> GeneratedCode:
    """Lower a scheduled `func` for the GPU (the CUDA target's passes, `lower_for_cuda`) and print
    CUDA C for `arch` (NVRTC runs on first `.ptx`/`.cubin`). The pipeline runs those passes as its
    `target_passes` step and the backend calls `print_cuda`; this is the same in one call.

    Args:
        func: a scheduled LoweredFunc (loops bound with `bind`).
        fast_math: use `__expf`-style intrinsics and `--use_fast_math`.
        arch: `sm_XX` (CUBIN + PTX) or `compute_XX` (PTX only).
        options: extra NVRTC options.
        kernel_name: rename the kernel (bucket dispatch uses `<fn>_COND_<pred>__kernel`).
        checked: guard every index the printer cannot prove in range (`cinn_checked_index`).
        count_traffic: count the bytes of every global load and store (the CPU emulator reads
            them after each launch: codegen.cuda.traffic).

    Raises:
        CompileError: a GPU pass or the printer rejected the function.
        TypeError / ValueError: bad arguments.
    """
    if not isinstance(func, LoweredFunc):
        raise TypeError(f"generate_cuda: expected a LoweredFunc, got {type(func).__name__}")
    check_arch(arch)
    target = Target.cuda(arch)
    build_options = BuildOptions(fast_math=fast_math, checked=checked,
                                 cuda=CudaOptions(nvrtc_options=tuple(options), count_traffic=count_traffic))
    return print_cuda(lower_for_cuda(func, target), target, build_options, kernel_name)


def print_cuda(func: LoweredFunc, target: Target, options: BuildOptions,
               kernel_name: str | None = None) -> GeneratedCode:
    """CUDA C of `func` after the CUDA target's passes (the pipeline's `target_passes` step) for
    `target`; `options.checked` None means unchecked (a build resolves it before)."""
    info = func.cuda_axis_info
    if info is None:  # gpu_bind sets it
        raise CompileError(f"CUDA codegen: '{func.name}' has not been through the CUDA target passes "
                           f"({', '.join(target.passes)}); run them first "
                           f"(cinn_py.pipeline.target_passes(func, target))")
    if kernel_name is not None:
        func = dataclasses.replace(func, name=kernel_name)
    kernel = print_kernel(func, fast_math=options.fast_math, checked=bool(options.checked),
                          count_traffic=options.cuda.count_traffic)
    launch = LaunchInfo(info.grid_dims, info.block_dims, kernel.dynamic_shared_bytes, func.scalar_args,
                        target.gpu)
    flags = nvrtc_options(options.fast_math, options.cuda.nvrtc_options)
    return GeneratedCode(kernel.source, launch, kernel.name, func, target, flags, kernel.vector_alignment,
                         kernel.temp_spaces, kernel.checks, options.cuda.count_traffic)
