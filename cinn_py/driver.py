"""The driver: the public build/codegen entry points over the pipeline (`cinn_py.pipeline`).

`build(x, target)` compiles a LoweredFunc (or an IRSchedule's current function, or a
single-function Module) into a callable Kernel; `codegen(x, target)` generates code without
running it. Both compile the function as given unless `schedule="auto"`: then the automatic
group scheduler (`schedules.tactics`, docs/auto_schedule.md) schedules it for the target first
(for CUDA with symbolic dims `build` makes one kernel per shape bucket behind a `BucketDispatch`).
`target` is a `cinn_py.Target` or its string spelling ("x86", "cuda"); the backend comes from the
one backend table, `cinn_py.backend.BACKENDS`.
"""

from __future__ import annotations

import importlib
from typing import Any

from cinn_py import pipeline
from cinn_py.diagnostics import CompileError
from cinn_py.ir import LoweredFunc, Module
from cinn_py.target import KINDS, Target, TargetLike

TARGETS = KINDS
SCHEDULES = pipeline.SCHEDULES


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


def auto_schedule(func_or_schedule: Any, target: TargetLike = "cuda", config: Any = None) -> Any:
    """Schedule a function automatically for `target` (`schedules.tactics.auto_schedule`);
    returns the IRSchedule. A schedule passed in is re-scheduled from its current function."""
    tgt = Target.parse(target)
    tactics = importlib.import_module("schedules.tactics")
    return tactics.auto_schedule(as_lowered_func(func_or_schedule), target=tgt, config=config)


def build(func_or_schedule: Any, target: TargetLike = "x86", fast_math: bool = False,
          schedule: str | None = None, **options: Any) -> Any:
    """Compile to a Kernel: `kernel(*inputs)` returns the outputs; `kernel(*inputs, out=[...])`.

    `schedule=None` builds the function as given; `schedule="auto"` auto-schedules it for `target`
    first (CUDA with symbolic dims: one kernel per shape bucket, picked at call time)."""
    pipeline.check_schedule(schedule)
    return pipeline.build(as_lowered_func(func_or_schedule), target, fast_math, schedule, **options)


def codegen(func_or_schedule: Any, target: TargetLike = "cuda", fast_math: bool = False,
            schedule: str | None = None, **options: Any) -> Any:
    """Generate code without running it: `.source/.ptx/.cubin/.launch` (cuda), `.llvm_ir/.asm` (x86).

    `schedule="auto"` auto-schedules the function for `target` first (one config; use
    `schedules.tactics.auto_schedule_buckets` for the per-bucket kernels of symbolic shapes)."""
    return pipeline.generate(as_lowered_func(func_or_schedule), target, fast_math, schedule, **options)


def lower_for_target(func_or_schedule: Any, target: TargetLike) -> LoweredFunc:
    """The IR the backend prints: the function after its target's post-lowering passes
    (CUDA: cross-thread reduction, bind lowering, index simplification; x86: none)."""
    return pipeline.target_passes(as_lowered_func(func_or_schedule), target)


def compile(program: Any, target: TargetLike = "x86", schedule: str | None = "auto",  # noqa: A001
            fast_math: bool = False) -> Any:
    """Compile a NetBuilder `Program` for `target`: an `Executable` (`cinn_py.runtime.executable`)
    whose `run({"x": array, ...})` returns the outputs by name. Every group is auto-scheduled
    unless `schedule=None` (serial loop nests as lowered)."""
    from cinn_py.runtime.executable import Executable  # noqa: PLC0415

    _check_program(program, "compile")
    return Executable(pipeline.compile_program(program, target, schedule, fast_math))


def _check_program(program: Any, what: str) -> None:
    from cinn_py.frontend.program import Program  # noqa: PLC0415

    if not isinstance(program, Program):
        raise TypeError(f"{what}: expected a NetBuilder Program (NetBuilder.build()), got "
                        f"{type(program).__name__}")


def tune(func_or_program: Any, target: TargetLike = "x86", trials: int = 16, **options: Any) -> Any:
    """Tune the auto scheduler's parameters for every group of `func_or_program` and keep the
    best in the tuning database that `schedule="auto"` reads (`cinn_py.tools.tune.tune`,
    docs/auto_schedule.md "Tuning"). Returns one `TuneResult` per group."""
    return importlib.import_module("cinn_py.tools.tune").tune(func_or_program, target, trials, **options)
