"""CUDA backend: GPU lowering passes, CUDA C printer, NVRTC compilation, device runtime header,
PyCUDA kernels and bucket dispatch.

    generate_cuda(func, fast_math=False, arch="sm_90") -> GeneratedCode(.source, .ptx, .cubin, .launch)
    build_cuda(func, fast_math=False, arch="auto", **options) -> Kernel   (needs PyCUDA and a GPU)
    build_cuda(func, buckets=[(pred, f), ...]) -> BucketDispatch        (dynamic shapes: one kernel
        per predicate on the symbolic dims, chosen per call on the host)
"""

from __future__ import annotations

from typing import Any

from cinn_py.diagnostics import CompileError
from cinn_py.ir import LoweredFunc
from cinn_py.runtime.checked import resolve_checked
from codegen.cuda.dispatch import BucketDispatch, bucket_kernel_name, mangle_predicate
from codegen.cuda.dispatch import signature as _dispatch_signature
from codegen.cuda.generate import GeneratedCode, generate_cuda
from codegen.cuda.launch import LaunchInfo, TempSpace
from codegen.cuda.loader import KernelLoader
from codegen.cuda.nvrtc import CompiledCuda, compile_cuda

__all__ = [
    "BucketDispatch", "CompiledCuda", "GeneratedCode", "LaunchInfo", "TempSpace", "build_cuda",
    "bucket_kernel_name",
    "compile_cuda", "generate_cuda", "mangle_predicate",
]


def build_cuda(func: LoweredFunc, fast_math: bool = False, arch: str = "auto", **options: Any) -> Any:
    """Generate, compile and load `func` as a launchable `Kernel` (see `codegen.cuda.kernel`).

    Options: `nvrtc_options` (tuple of extra NVRTC flags); `checked` (bounds-checked kernel, default
    `cinn_py.runtime.checked.default_checked()`: the launch raises OutOfBoundsAccessError after
    a failed check); `buckets`: a list of
    `(predicate on the symbolic dims, scheduled LoweredFunc)` pairs with `func`'s signature, built
    into a `BucketDispatch` named after `func` (CINN's BucketLower: each call binds the symbolic
    dims from the input shapes, picks the first bucket whose predicate holds, and computes that
    kernel's launch dims and symbol arguments on the host). `arch="auto"` compiles for the current
    device; an explicit `sm_XX` must match it (`sm_90` for H100). `emulate` (default from
    `$CINN_PY_CUDA`, see `codegen.cuda.loader`): run the kernel in the CPU emulator instead of on a
    GPU (`EmulatedCudaKernel`, same call interface); `race_check` (emulator only): also run each
    launch under ThreadSanitizer and raise `DataRaceError` on a data race; `count_traffic` (emulator
    only): the kernel counts the bytes of its global loads and stores, read after each launch as
    `kernel.last_traffic` (`codegen.cuda.traffic.Traffic`).
    """
    extra = tuple(options.pop("nvrtc_options", ()))
    buckets = options.pop("buckets", None)
    checked = resolve_checked(options.pop("checked", None))
    lowered = bool(options.pop("lowered", False))
    count_traffic = bool(options.pop("count_traffic", False))
    loader = KernelLoader.from_options(options)
    if options:
        raise TypeError(f"build_cuda: unknown options {sorted(options)}")
    if count_traffic and (not loader.emulate or buckets is not None):
        raise ValueError(f"build_cuda: count_traffic=True on '{func.name}' needs the CPU emulator "
                         "(emulate=True) and "
                         "one kernel (no buckets: give the shapes as constants)")
    arch = loader.arch(arch)
    if buckets is not None:
        dispatch = BucketDispatch(list(buckets), fast_math=fast_math, arch=arch, name=func.name,
                                  options=extra,
                                  checked=checked, loader=loader)
        if _dispatch_signature(dispatch.func) != _dispatch_signature(func):
            raise CompileError(f"build_cuda: the buckets of '{func.name}' take different arguments than "
                               f"'{func.name}' itself; every bucket must have its signature")
        for index, code in enumerate(dispatch.codes):
            # Compile every bucket now: a broken bucket fails the build, not a later call.
            _ = dispatch.kernel(index) if loader.emulate else code.cubin
        return dispatch
    code = generate_cuda(func, fast_math=fast_math, arch=arch, options=extra, checked=checked,
                         lowered=lowered,
                         count_traffic=count_traffic)
    return loader(code, func)
