"""The CUDA backend object of the backend table (`cinn_py.backend.BACKENDS["cuda"]`): it prints
(`print_cuda`) and loads (PyCUDA or the CPU emulator) functions the CUDA target's passes lowered
(the pipeline's `target_passes` step); it runs no pass itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.backend import DEFAULT_OPTIONS, Backend
from cinn_py.backend import GeneratedCode as AnyCode
from cinn_py.diagnostics import CompileError
from cinn_py.ir import Expr, LoweredFunc
from cinn_py.options import BuildOptions
from cinn_py.runtime.checked import resolve_checked
from cinn_py.target import Target
from codegen.cuda.dispatch import BucketDispatch
from codegen.cuda.dispatch import signature as dispatch_signature
from codegen.cuda.generate import GeneratedCode, print_cuda
from codegen.cuda.loader import KernelLoader


def _check_target(target: Target) -> None:
    if target.kind != "cuda":
        raise CompileError(f"cuda backend: got a {target} target")


class CudaBackend:
    """CUDA C through NVRTC, launched with PyCUDA, or run on the CPU by the emulator (see `codegen.cuda`)."""

    name = "cuda"

    def generate(self, func: LoweredFunc, target: Target,
                 options: BuildOptions = DEFAULT_OPTIONS) -> GeneratedCode:
        """CUDA C for `target` (NVRTC runs on first `.ptx`/`.cubin`); unchecked unless
        `options.checked` asks."""
        _check_target(target)
        return print_cuda(func, target, options.with_checked(bool(options.checked)))

    def load(self, code: AnyCode, options: BuildOptions = DEFAULT_OPTIONS) -> Any:
        """A PyCUDA Kernel, or the CPU emulator's (`emulate`, `race_check`: see `codegen.cuda.loader`)."""
        if not isinstance(code, GeneratedCode):
            raise CompileError(f"cuda backend: load needs code from CudaBackend.generate, got "
                               f"{type(code).__name__}")
        return loader_for(options, code.func.name, buckets=False)(code, code.func)

    def build(self, func: LoweredFunc, target: Target, options: BuildOptions = DEFAULT_OPTIONS) -> Any:
        """`load(generate(func))` with the bounds checks the process default asks for when
        `options.checked` is None."""
        _check_target(target)
        loader = loader_for(options, func.name, buckets=False)
        code = print_cuda(func, target, options.with_checked(resolve_checked(options.checked)))
        return loader(code, code.func)

    def build_buckets(self, func: LoweredFunc, target: Target, buckets: Sequence[tuple[Expr, LoweredFunc]],
                      options: BuildOptions = DEFAULT_OPTIONS) -> BucketDispatch:
        """One kernel per shape bucket behind a `BucketDispatch` named after `func` (CINN's
        BucketLower: each call binds the symbolic dims from the input shapes, picks the first
        bucket whose predicate holds, and computes that kernel's launch dims and symbol arguments
        on the host). Every bucket is compiled now: a broken bucket fails the build, not a call."""
        _check_target(target)
        loader = loader_for(options, func.name, buckets=True)
        checked = options.with_checked(resolve_checked(options.checked))
        dispatch = BucketDispatch(list(buckets), target, checked, func.name, loader)
        if dispatch_signature(dispatch.func) != dispatch_signature(func):
            raise CompileError(f"build_cuda: the buckets of '{func.name}' take different arguments than "
                               f"'{func.name}' itself; every bucket must have its signature")
        for index, code in enumerate(dispatch.codes):
            _ = dispatch.kernel(index) if loader.emulate else code.cubin
        return dispatch


def loader_for(options: BuildOptions, name: str, buckets: bool) -> KernelLoader:
    """The loader of a build of `name` (one kernel, or `buckets`) with `options`, checked first."""
    loader = KernelLoader.for_options(options.cuda)
    if options.cuda.count_traffic and (not loader.emulate or buckets):
        raise ValueError(f"build_cuda: count_traffic=True on '{name}' needs the CPU emulator (emulate=True) "
                         "and one kernel (no buckets: give the shapes as constants)")
    return loader


CUDA_BACKEND = CudaBackend()
BACKEND: Backend = CUDA_BACKEND  # annotated: pyright checks the class against the protocol
