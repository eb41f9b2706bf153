"""CUDA backend: GPU lowering passes, CUDA C printer, NVRTC compilation, device runtime header,
PyCUDA kernels and bucket dispatch.

    generate_cuda(func, fast_math=False, arch="sm_90") -> GeneratedCode(.source, .ptx, .cubin, .launch)
    build_cuda(func, fast_math=False, arch="auto", **options) -> Kernel   (needs PyCUDA and a GPU)
"""

from __future__ import annotations

from typing import Any

from cinn_py.ir.func import LoweredFunc
from codegen.cuda.dispatch import BucketDispatch, bucket_kernel_name, mangle_predicate
from codegen.cuda.generate import GeneratedCode, generate_cuda
from codegen.cuda.launch import LaunchInfo, TempSpace
from codegen.cuda.nvrtc import CompiledCuda, compile_cuda

__all__ = [
    "BucketDispatch", "CompiledCuda", "GeneratedCode", "LaunchInfo", "TempSpace", "build_cuda", "bucket_kernel_name",
    "compile_cuda", "generate_cuda", "mangle_predicate",
]


def build_cuda(func: LoweredFunc, fast_math: bool = False, arch: str = "auto", **options: Any) -> Any:
    """Generate, compile and load `func` as a launchable `Kernel` (see `codegen.cuda.kernel`).

    Options: `nvrtc_options` (tuple of extra NVRTC flags). `arch="auto"` compiles for the current
    device; an explicit `sm_XX` must match it (`sm_90` for H100).
    """
    from codegen.cuda.kernel import Kernel, device_arch  # noqa: PLC0415

    extra = tuple(options.pop("nvrtc_options", ()))
    if options:
        raise TypeError(f"build_cuda: unknown options {sorted(options)}")
    if arch == "auto":
        arch = device_arch()
    code = generate_cuda(func, fast_math=fast_math, arch=arch, options=extra)
    return Kernel(code, func)
