"""The compiler pipeline: one list of named steps from a Program to loaded kernels.

    decompose -> optimize -> fuse -> lower -> schedule -> target_passes -> codegen -> load

- `decompose`: composite ops (softmax, layer_norm, gelu, ...) become primitive ops.
- `optimize`: graph passes (constant folding, CSE, DCE).
- `fuse`: partition into fused groups (`FusionPlan`).
- `lower`: each group becomes one ScheduleBlock `LoweredFunc`.
- `schedule`: none (serial loop nests as lowered) or the automatic group scheduler.
- `target_passes`: the target's post-lowering passes (`Target.passes`; CUDA: cross-thread
  reduction, bind lowering, index simplification; x86: none).
- `codegen`: the backend generates code (`Backend.generate`).
- `load`: the backend loads it as a callable kernel (`Backend.load`; `Backend.build` does
  codegen and load in one call through the backend's compile cache).

`compile_program(program, target)` runs all of them; `build(func, target)` the last four on one
function. `CINN_PY_DUMP_IR=DIR` writes what every step produced to `DIR/NN_<step>[_<func>].txt`
(numbered in pipeline order); `cinn-py dump-ir --stage NAME` prints the same steps.

    >>> from cinn_py.pipeline import STEPS, FUNC_STEPS
    >>> STEPS
    ('decompose', 'optimize', 'fuse', 'lower', 'schedule', 'target_passes', 'codegen', 'load')
    >>> FUNC_STEPS
    ('schedule', 'target_passes', 'codegen', 'load')
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cinn_py.backend import get_backend
from cinn_py.frontend.fusion import FusionPlan, fuse
from cinn_py.frontend.graph_passes import DEFAULT_PASSES
from cinn_py.frontend.program import Program, bind_inputs, pack
from cinn_py.ir import LoweredFunc, print_ir
from cinn_py.lowering.group import lower_group
from cinn_py.passes import run_passes
from cinn_py.runtime.program import CompiledProgram
from cinn_py.target import Target, TargetLike

DUMP_ENV = "CINN_PY_DUMP_IR"
SCHEDULES = (None, "auto")


@dataclass(frozen=True)
class Step:
    """One named pipeline step: what it does, for `--help` texts and docs."""

    name: str
    doc: str


PIPELINE: tuple[Step, ...] = (
    Step("decompose", "composite ops become primitive ops"),
    Step("optimize", "graph passes: constant folding, CSE, DCE"),
    Step("fuse", "partition the op graph into fused groups"),
    Step("lower", "each group becomes one ScheduleBlock LoweredFunc"),
    Step("schedule", "no schedule (as lowered) or the automatic group scheduler"),
    Step("target_passes", "the target's post-lowering passes (Target.passes)"),
    Step("codegen", "the backend generates code (Backend.generate)"),
    Step("load", "the backend loads the code as a callable kernel (Backend.load)"),
)
STEPS: tuple[str, ...] = tuple(s.name for s in PIPELINE)
PROGRAM_STEPS = STEPS[:4]
FUNC_STEPS = STEPS[4:]


# -- dumping ---------------------------------------------------------------------------------------
def _text(value: Any) -> str:
    """What a step produced, as text: IR through the printer, generated code's source/IR."""
    if isinstance(value, FusionPlan):
        return "\n\n".join(str(g) for g in value.groups)
    if isinstance(value, LoweredFunc):
        return print_ir(value)
    for attribute in ("source", "llvm_ir"):  # CUDA GeneratedCode / x86 GeneratedCode and kernels
        text = getattr(value, attribute, None)
        if isinstance(text, str):
            return text
    return str(value)


def dump(step: str, value: Any, unit: str = "") -> None:
    """Write `value` to `$CINN_PY_DUMP_IR/NN_<step>[_<unit>].txt` when the variable is set."""
    directory = os.environ.get(DUMP_ENV)
    if not directory:
        return
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    suffix = f"_{re.sub(r'[^A-Za-z0-9_.-]', '_', unit)}" if unit else ""
    (path / f"{STEPS.index(step):02d}_{step}{suffix}.txt").write_text(_text(value) + "\n")


# -- the function steps ------------------------------------------------------------------------------
def check_schedule(schedule: Any) -> None:
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be None (build the function as given) or 'auto', got {schedule!r}")


def schedule_step(func: LoweredFunc, target: Target, schedule: str | None) -> LoweredFunc:
    """`schedule`: the function as given (None) or auto-scheduled for `target` ("auto")."""
    check_schedule(schedule)
    if schedule is None:
        return func
    tactics = importlib.import_module("schedules.tactics")
    scheduled: LoweredFunc = tactics.auto_schedule(func, target=target).func
    return scheduled


def target_passes(func: LoweredFunc, target: TargetLike) -> LoweredFunc:
    """`target_passes`: run the target's post-lowering passes in order."""
    return run_passes(func, Target.parse(target).passes)


def codegen_step(func: LoweredFunc, target: Target, fast_math: bool = False, **options: Any) -> Any:
    """`codegen`: the backend's code for a function that went through `target_passes`."""
    return get_backend(target).generate(func, target, fast_math=fast_math, **_lowered(target, options))


def _lowered(target: Target, options: dict[str, Any]) -> dict[str, Any]:
    """Tell a backend whose target has passes that they already ran (the pipeline ran them)."""
    return {**options, "lowered": True} if target.passes else options


def _bucket_step(func: LoweredFunc, target: Target, fast_math: bool, **options: Any) -> Any:
    """`schedule` .. `load` for a GPU function with symbolic dims under `schedule="auto"`: one
    auto-scheduled kernel per shape bucket behind a host dispatch (built now, so a broken bucket
    fails the build rather than its first call)."""
    tactics = importlib.import_module("schedules.tactics")
    buckets = [(pred, sch.func) for pred, sch in tactics.auto_schedule_buckets(func, target=target)]
    for index, (_, bucket) in enumerate(buckets):
        dump("schedule", bucket, f"{func.name}_bucket{index}")
    return get_backend(target).build(func, target, fast_math=fast_math, buckets=buckets, **options)


def build(func: LoweredFunc, target: TargetLike = "x86", fast_math: bool = False, schedule: str | None = None,
          **options: Any) -> Any:
    """`schedule` -> `target_passes` -> `codegen` -> `load` for one function; returns the Kernel."""
    check_schedule(schedule)
    tgt = Target.parse(target)
    backend = get_backend(tgt)
    if schedule == "auto" and tgt.is_gpu and func.scalar_args:
        return _bucket_step(func, tgt, fast_math, **options)
    scheduled = schedule_step(func, tgt, schedule)
    dump("schedule", scheduled, func.name)
    lowered = target_passes(scheduled, tgt)
    dump("target_passes", lowered, func.name)
    if os.environ.get(DUMP_ENV):
        dump("codegen", codegen_step(lowered, tgt, fast_math, **options), func.name)
    kernel = backend.build(lowered, tgt, fast_math=fast_math, **_lowered(tgt, options))
    dump("load", repr(kernel), func.name)
    return kernel


# -- the program steps -------------------------------------------------------------------------------
def program_steps(program: Program) -> list[tuple[str, Any]]:
    """(step name, result) of `decompose`, `optimize`, `fuse` and `lower` (one LoweredFunc per group)."""
    if not isinstance(program, Program):
        raise TypeError(f"expected a Program (NetBuilder.build()), got {type(program).__name__}")
    decompose, *graph_passes = DEFAULT_PASSES
    decomposed = decompose(program)
    optimized = decomposed
    for graph_pass in graph_passes:
        optimized = graph_pass(optimized)
    fusion = fuse(optimized)
    funcs = [lower_group(g) for g in fusion.groups]
    return [("decompose", decomposed), ("optimize", optimized), ("fuse", fusion), ("lower", funcs)]


def compile_program(program: Program, target: TargetLike = "x86", schedule: str | None = None,
                    fast_math: bool = False) -> CompiledProgram:
    """Every step for every group of `program`: a callable `CompiledProgram`.

    `schedule=None` builds each group's loop nests as lowered (serial); `schedule="auto"` lets
    the automatic group scheduler schedule each group first.
    """
    check_schedule(schedule)
    tgt = Target.parse(target)
    results = program_steps(program)
    for name, value in results:
        if name == "lower":
            for func in value:
                dump(name, func, func.name)
        else:
            dump(name, value)
    fusion: FusionPlan = results[2][1]
    funcs: list[LoweredFunc] = results[3][1]
    kernels = [build(f, tgt, fast_math=fast_math, schedule=schedule) for f in funcs]
    return CompiledProgram(program, fusion, funcs, kernels, tgt.name)


def run_interpreted(program: Program, inputs: Sequence[Any] | Mapping[str, Any]) -> Any:
    """`decompose` .. `lower`, then every group's LoweredFunc in the IR interpreter."""
    from cinn_py.interp import run_ir  # noqa: PLC0415

    arrays, env = bind_inputs(program, inputs)
    results = dict(program_steps(program))
    fusion: FusionPlan = results["fuse"]
    values = {id(v): arrays[v.name] for v in fusion.program.inputs}
    for group, func in zip(fusion.groups, results["lower"]):
        outs = run_ir(func, {v.name: values[id(v)] for v in group.args}, env)
        values.update({id(v): outs[v.name] for v in group.outputs})
    return pack([values[id(v)] for v in fusion.program.outputs])



__all__ = ["DUMP_ENV", "FUNC_STEPS", "PIPELINE", "PROGRAM_STEPS", "STEPS", "Step", "build", "codegen_step",
           "compile_program", "dump", "program_steps", "run_interpreted", "schedule_step", "target_passes"]
