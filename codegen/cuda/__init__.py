"""CUDA backend: GPU lowering passes, CUDA C printer, NVRTC compilation, device runtime header,
PyCUDA kernels and bucket dispatch.

    generate_cuda(func, fast_math=False, arch="sm_90") -> GeneratedCode(.source, .ptx, .cubin, .launch)
    build_cuda(func, fast_math=False, arch="auto", **options) -> Kernel   (needs PyCUDA and a GPU)
    build_cuda(func, buckets=[(pred, f), ...]) -> BucketDispatch        (dynamic shapes: one kernel
        per predicate on the symbolic dims, chosen per call on the host)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.ir import Expr, LoweredFunc
from cinn_py.options import BuildOptions
from cinn_py.target import Target
from codegen.cuda.backend import CUDA_BACKEND, loader_for
from codegen.cuda.dispatch import BucketDispatch, bucket_kernel_name, mangle_predicate
from codegen.cuda.generate import GeneratedCode, generate_cuda, print_cuda
from codegen.cuda.launch import LaunchInfo, TempSpace
from codegen.cuda.lowering import lower_for_cuda
from codegen.cuda.nvrtc import CompiledCuda, compile_cuda

__all__ = [
    "BucketDispatch", "CompiledCuda", "GeneratedCode", "LaunchInfo", "TempSpace", "build_cuda",
    "bucket_kernel_name", "compile_cuda", "generate_cuda", "mangle_predicate", "print_cuda",
]


def build_cuda(func: LoweredFunc, fast_math: bool = False, arch: str = "auto",
               buckets: Sequence[tuple[Expr, LoweredFunc]] | None = None, **options: object) -> Any:
    """Lower a scheduled `func` with the CUDA target's passes, generate, compile and load it as a
    launchable `Kernel` (see `codegen.cuda.kernel`): the pipeline's last three steps in one call.

    The keyword options are `cinn_py.build`'s, checked as it checks them (`BuildOptions.parse`):
    `nvrtc_options` (extra NVRTC flags); `checked` (bounds-checked kernel, default
    `cinn_py.runtime.checked.default_checked()`: the launch raises OutOfBoundsAccessError after
    a failed check); `emulate` (default from `$CINN_PY_CUDA`, see `codegen.cuda.loader`): run the
    kernel in the CPU emulator instead of on a GPU (`EmulatedCudaKernel`, same call interface);
    `race_check` (emulator only): also run each launch under ThreadSanitizer and raise
    `DataRaceError` on a data race; `count_traffic` (emulator only): the kernel counts the bytes of
    its global loads and stores, read after each launch as `kernel.last_traffic`
    (`codegen.cuda.traffic.Traffic`). `arch="auto"` compiles for the current device (sm_90 in the
    emulator); an explicit `sm_XX` must match it (`sm_90` for H100). `buckets`: a list of
    `(predicate on the symbolic dims, scheduled LoweredFunc)` pairs with `func`'s signature, built
    into a `BucketDispatch` named after `func` (`CudaBackend.build_buckets`).
    """
    build_options = BuildOptions.parse(fast_math, **options)
    loader = loader_for(build_options, func.name, buckets=buckets is not None)  # checks before the device
    target = Target.cuda(loader.arch(arch))
    if buckets is not None:
        lowered = [(pred, lower_for_cuda(bucket, target)) for pred, bucket in buckets]
        return CUDA_BACKEND.build_buckets(func, target, lowered, build_options)
    return CUDA_BACKEND.build(lower_for_cuda(func, target), target, build_options)
