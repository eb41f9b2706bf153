"""`generate_cuda`: GPU lowering passes + CUDA C printing + NVRTC compilation, no GPU needed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cinn_py.diagnostics import CompileError
from cinn_py.ir.func import LoweredFunc
from codegen.cuda.kernel_source import print_kernel
from codegen.cuda.launch import LaunchInfo, TempSpace
from codegen.cuda.lowering import lower_for_cuda
from codegen.cuda.nvrtc import check_arch, compile_cuda

FAST_MATH_OPTIONS = ("--use_fast_math",)


@dataclass(frozen=True)
class GeneratedCode:
    """Everything `generate_cuda` produced for one function."""

    source: str
    """The CUDA C translation unit (includes `cinn_cuda_runtime.cuh`)."""
    ptx: str
    cubin: bytes | None
    launch: LaunchInfo
    kernel_name: str
    func: LoweredFunc
    """The function after the GPU passes (what was printed)."""
    arch: str
    options: tuple[str, ...]
    vector_alignment: int
    """Byte alignment every tensor pointer needs (vectorised accesses); 1 if none."""
    temp_spaces: tuple[TempSpace, ...] = ()
    """Global temporaries the host allocates per launch, passed after the function's arguments."""


def nvrtc_options(fast_math: bool, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    return (*(FAST_MATH_OPTIONS if fast_math else ()), *extra)


def generate_cuda(func: LoweredFunc, fast_math: bool = False, arch: str = "sm_90",
                  options: tuple[str, ...] = (), kernel_name: str | None = None) -> GeneratedCode:
    """Lower `func` for the GPU, print CUDA C and compile it with NVRTC for `arch`.

    Args:
        func: a scheduled LoweredFunc (loops bound with `bind`).
        fast_math: use `__expf`-style intrinsics and `--use_fast_math`.
        arch: `sm_XX` (CUBIN + PTX) or `compute_XX` (PTX only).
        options: extra NVRTC options.
        kernel_name: rename the kernel (bucket dispatch uses `<fn>_COND_<pred>__kernel`).

    Raises:
        CompileError: a GPU pass, the printer or NVRTC rejected the function.
        TypeError / ValueError: bad arguments.
    """
    if not isinstance(func, LoweredFunc):
        raise TypeError(f"generate_cuda: expected a LoweredFunc, got {type(func).__name__}")
    check_arch(arch)
    if kernel_name is not None:
        func = dataclasses.replace(func, name=kernel_name)
    lowered = lower_for_cuda(func)
    kernel = print_kernel(lowered, fast_math=fast_math)
    opts = nvrtc_options(fast_math, tuple(options))
    compiled = compile_cuda(kernel.source, arch=arch, options=opts, name=f"{lowered.name}.cu")
    info = lowered.cuda_axis_info
    if info is None:  # gpu_bind always sets it
        raise CompileError(f"generate_cuda: '{func.name}' has no CUDA axis info after gpu_bind")
    launch = LaunchInfo(info.grid_dims, info.block_dims, kernel.dynamic_shared_bytes, lowered.scalar_args)
    return GeneratedCode(kernel.source, compiled.ptx, compiled.cubin, launch, lowered.name, lowered, arch,
                         opts, kernel.vector_alignment, kernel.temp_spaces)

