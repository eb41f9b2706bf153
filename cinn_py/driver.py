"""The driver: the only core module that ties `schedules` and `codegen` together (lazily).

`build(x, target)` compiles a LoweredFunc (or an IRSchedule's current function, or a
single-function Module) into a callable Kernel; `codegen(x, target)` generates code without
running it. Backends live in `codegen.llvm` (x86) and `codegen.cuda` (CUDA) and expose
`build_x86`/`generate_x86` and `build_cuda`/`generate_cuda`.
"""

from __future__ import annotations

import importlib
from typing import Any

from cinn_py.diagnostics import CompileError
from cinn_py.ir import LoweredFunc, Module

TARGETS = ("x86", "cuda")


def as_lowered_func(obj: Any) -> LoweredFunc:
    """Accept a LoweredFunc, a one-function Module, or anything with a `.func` (IRSchedule)."""
    if isinstance(obj, LoweredFunc):
        return obj
    if isinstance(obj, Module):
        if len(obj.functions) != 1:
            raise CompileError(f"build: expected a module with one function, got {len(obj.functions)}")
        return obj.functions[0]
    func = getattr(obj, "func", None)
    if isinstance(func, LoweredFunc):
        return func
    raise TypeError(f"build: expected a LoweredFunc, Module or IRSchedule, got {type(obj).__name__}")


def _backend(target: str) -> Any:
    if target not in TARGETS:
        raise ValueError(f"unknown target '{target}'; expected one of {TARGETS}")
    return importlib.import_module("codegen.llvm" if target == "x86" else "codegen.cuda")


def build(func_or_schedule: Any, target: str = "x86", fast_math: bool = False, **options: Any) -> Any:
    """Compile to a Kernel: `kernel(*inputs)` returns the outputs; `kernel(*inputs, out=[...])`."""
    func = as_lowered_func(func_or_schedule)
    backend = _backend(target)
    entry = backend.build_x86 if target == "x86" else backend.build_cuda
    return entry(func, fast_math=fast_math, **options)


def codegen(func_or_schedule: Any, target: str = "cuda", fast_math: bool = False, **options: Any) -> Any:
    """Generate code without running it: `.source/.ptx/.cubin/.launch` (cuda), `.llvm_ir/.asm` (x86)."""
    func = as_lowered_func(func_or_schedule)
    backend = _backend(target)
    entry = backend.generate_x86 if target == "x86" else backend.generate_cuda
    return entry(func, fast_math=fast_math, **options)


def lower_for_target(func_or_schedule: Any, target: str) -> LoweredFunc:
    """The IR the backend prints, after its post-processing passes (CUDA: cross-thread
    reduction, bind lowering, index simplification; x86: the function as scheduled)."""
    func = as_lowered_func(func_or_schedule)
    if target == "cuda":
        return importlib.import_module("codegen.cuda.lowering").lower_for_cuda(func)
    _backend(target)
    return func
