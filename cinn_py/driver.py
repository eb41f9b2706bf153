"""The driver: the only core module that ties `schedules` and `codegen` together (lazily).

`build(x, target)` compiles a LoweredFunc (or an IRSchedule's current function, or a
single-function Module) into a callable Kernel; `codegen(x, target)` generates code without
running it. Both compile the function as given unless `schedule="auto"`: then the automatic
group scheduler (`schedules.tactics`, docs/auto_schedule.md) schedules it for the target first
(for CUDA with symbolic dims `build` makes one kernel per shape bucket behind a `BucketDispatch`). Backends live in `codegen.llvm` (x86) and `codegen.cuda` (CUDA) and expose
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


SCHEDULES = (None, "auto")


def _check_schedule(schedule: Any) -> None:
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be None (build the function as given) or 'auto', got {schedule!r}")


def auto_schedule(func_or_schedule: Any, target: str = "cuda", config: Any = None) -> Any:
    """Schedule a function automatically for `target` (`schedules.tactics.auto_schedule`);
    returns the IRSchedule. A schedule passed in is re-scheduled from its current function."""
    _backend(target)
    tactics = importlib.import_module("schedules.tactics")
    return tactics.auto_schedule(as_lowered_func(func_or_schedule), target=target, config=config)


def build(func_or_schedule: Any, target: str = "x86", fast_math: bool = False, schedule: str | None = None,
          **options: Any) -> Any:
    """Compile to a Kernel: `kernel(*inputs)` returns the outputs; `kernel(*inputs, out=[...])`.

    `schedule=None` builds the function as given; `schedule="auto"` auto-schedules it for `target`
    first (CUDA with symbolic dims: one kernel per shape bucket, picked at call time)."""
    _check_schedule(schedule)
    func = as_lowered_func(func_or_schedule)
    backend = _backend(target)
    if schedule == "auto" and target == "cuda" and func.scalar_args:
        return _build_cuda_buckets(func, backend, fast_math, **options)
    if schedule == "auto":
        func = auto_schedule(func, target).func
    entry = backend.build_x86 if target == "x86" else backend.build_cuda
    return entry(func, fast_math=fast_math, **options)


def _build_cuda_buckets(func: LoweredFunc, backend: Any, fast_math: bool, **options: Any) -> Any:
    """One auto-scheduled kernel per shape bucket behind a host dispatch; `build_cuda` compiles
    every bucket now, so a broken bucket fails the build rather than its first call."""
    tactics = importlib.import_module("schedules.tactics")
    buckets = [(pred, sch.func) for pred, sch in tactics.auto_schedule_buckets(func, target="cuda")]
    return backend.build_cuda(func, fast_math=fast_math, buckets=buckets, **options)


def codegen(func_or_schedule: Any, target: str = "cuda", fast_math: bool = False, schedule: str | None = None,
            **options: Any) -> Any:
    """Generate code without running it: `.source/.ptx/.cubin/.launch` (cuda), `.llvm_ir/.asm` (x86).

    `schedule="auto"` auto-schedules the function for `target` first (one config; use
    `schedules.tactics.auto_schedule_buckets` for the per-bucket kernels of symbolic shapes)."""
    _check_schedule(schedule)
    func = as_lowered_func(func_or_schedule)
    backend = _backend(target)
    if schedule == "auto":
        func = auto_schedule(func, target).func
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


def tune(func_or_program: Any, target: str = "x86", trials: int = 16, **options: Any) -> Any:
    """Tune the auto scheduler's parameters for every group of `func_or_program` and keep the
    best in the tuning database that `schedule="auto"` reads (`cinn_py.tools.tune.tune`,
    docs/auto_schedule.md "Tuning"). Returns one `TuneResult` per group."""
    return importlib.import_module("cinn_py.tools.tune").tune(func_or_program, target, trials, **options)
