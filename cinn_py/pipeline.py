"""The compiler pipeline: one list of named steps from a Program to loaded kernels.

    decompose -> optimize -> fuse -> lower -> schedule -> target_passes -> codegen -> load

- `decompose`: composite ops (softmax, layer_norm, gelu, ...) become primitive ops.
- `optimize`: graph passes (pattern rewrites, constant folding, CSE, DCE).
- `fuse`: partition into fused groups (`FusionPlan`).
- `lower`: each group becomes one ScheduleBlock `LoweredFunc`.
- `schedule`: none (serial loop nests as lowered), the automatic group scheduler, or (for the
  command line) a schedule script.
- `target_passes`: the target's post-lowering passes (`Target.passes`; CUDA: cross-thread
  reduction, bind lowering, index simplification; x86: loop checks, block inlining).
- `codegen`: the backend generates code (`Backend.generate`).
- `load`: the backend loads it as a callable kernel (`Backend.build`: codegen and load in one
  call through the backend's compile cache).

`compile_program(program, target)` runs all of them; `build(func, target)` the last four on one
function. Both run `trace_program` / `trace_func`, generators of `StepOutput(step, unit, value)`,
which is also what `CINN_PY_DUMP_IR=DIR` and `cinn-py dump-ir --stage/--diff` observe: the
variable writes what every step produced to `DIR/NN_<step>_<unit>.txt` (NN is the step's place in
`STEPS`, the unit the program's name for the program steps and the function's for the others).

    >>> from cinn_py.pipeline import STEPS, PROGRAM_STEPS, FUNC_STEPS
    >>> STEPS
    ('decompose', 'optimize', 'fuse', 'lower', 'schedule', 'target_passes', 'codegen', 'load')
    >>> PROGRAM_STEPS, FUNC_STEPS
    (('decompose', 'optimize', 'fuse', 'lower'), ('schedule', 'target_passes', 'codegen', 'load'))
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Union

from cinn_py.backend import DEFAULT_OPTIONS, GeneratedCode, get_backend
from cinn_py.frontend.conv_gemm import conv_to_gemm
from cinn_py.frontend.fusion import FusionPlan, fuse
from cinn_py.frontend.graph_passes import DEFAULT_PASSES
from cinn_py.frontend.program import Program, bind_inputs, frontend_array, pack
from cinn_py.diagnostics import CompileError
from cinn_py.ir import LoweredFunc, Module, deep_nesting, nesting_room
from cinn_py.lowering.group import lower_group
from cinn_py.options import BuildOptions
from cinn_py.passes import run_passes
from cinn_py.runtime import compile_jobs, graph_cache
from cinn_py.runtime.checked import resolve_checked
from cinn_py.runtime.graph_plan import plan_graph
from cinn_py.runtime.native import NativeGraph
from cinn_py.runtime.program import CompiledProgram
from cinn_py.steps import (
    DUMP_ENV, FUNC_STEPS, PIPELINE, PROGRAM_STEPS, STEPS, Step, StepOutput, check_step, dump_dir, dump_path,
    dumped, step_text, through,
)
from cinn_py.target import Target, TargetLike

SCHEDULES = (None, "auto")
# What the `schedule` step takes: None (as lowered), "auto", or a function that schedules (the CLI's
# schedule scripts); the public build entry points accept the first two.
ScheduleLike = Union[str, None, Callable[[LoweredFunc], LoweredFunc]]


# -- the function steps ----------------------------------------------------------------------------------
def check_schedule(schedule: Any) -> None:
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be None (build the function as given) or 'auto', got {schedule!r}")


def schedule_step(func: LoweredFunc, target: Target, schedule: ScheduleLike) -> LoweredFunc:
    """`schedule`: the function as given (None), auto-scheduled for `target` ("auto"), or what a
    scheduling function returns."""
    if callable(schedule):
        return schedule(func)
    check_schedule(schedule)
    if schedule is None:
        return func
    tactics = importlib.import_module("schedules.tactics")
    scheduled: LoweredFunc = tactics.auto_schedule(func, target=target).func
    return scheduled


def target_passes(func: LoweredFunc, target: TargetLike) -> LoweredFunc:
    """`target_passes`: run the target's post-lowering passes in order."""
    return run_passes(func, Target.parse(target).passes)


def codegen_step(func: LoweredFunc, target: Target, options: BuildOptions = DEFAULT_OPTIONS) -> GeneratedCode:
    """`codegen`: the backend's code for a function that went through `target_passes`."""
    return get_backend(target).generate(func, target, options)


def parse_options(target: TargetLike, fast_math: bool, options: Mapping[str, object]) -> tuple[Target,
                                                                                            BuildOptions]:
    """The door: the target and the keyword options of a public call, checked once. `arch=` (a CUDA
    arch) is the spelling of `Target.cuda(arch)`."""
    keywords = dict(options)
    tgt = Target.parse(target)
    arch = keywords.pop("arch", None)
    if arch is not None:
        if not tgt.is_gpu:
            raise TypeError(f"build option 'arch': a GPU architecture, but the target is {tgt}")
        if not isinstance(arch, str):
            raise TypeError(f"build option arch: expected a string such as 'sm_90', got "
                            f"{type(arch).__name__} {arch!r}")
        tgt = Target.cuda(arch)
    return tgt, BuildOptions.parse(fast_math, **keywords)


def _codegen_options(options: BuildOptions) -> BuildOptions:
    """The options shaping the `codegen` step's code as `load` builds it (the bounds checks
    resolved as the build resolves them)."""
    return options.with_checked(resolve_checked(options.checked))


def _trace_buckets(func: LoweredFunc, target: Target, options: BuildOptions,
                   until: str) -> Iterator[StepOutput]:
    """The function steps for a GPU function with symbolic dims under `schedule="auto"`: one
    auto-scheduled kernel per shape bucket behind a host dispatch (built now, so a broken bucket
    fails the build rather than its first call)."""
    tactics = importlib.import_module("schedules.tactics")
    buckets = [(pred, sch.func) for pred, sch in tactics.auto_schedule_buckets(func, target=target)]
    names = [f"{func.name}_bucket{index}" for index in range(len(buckets))]
    for name, (_, bucket) in zip(names, buckets):
        yield StepOutput("schedule", name, bucket)
    if not through(until, "target_passes"):
        return
    lowered = [(pred, target_passes(bucket, target)) for pred, bucket in buckets]
    for name, (_, bucket) in zip(names, lowered):
        yield StepOutput("target_passes", name, bucket)
    if not through(until, "codegen"):
        return
    build_buckets = getattr(get_backend(target), "build_buckets", None)
    if build_buckets is None:
        raise CompileError(f"schedule='auto' with symbolic dims: the {target} backend builds no shape "
                           "buckets")
    dispatch = build_buckets(func, target, lowered, options)
    for name, code in zip(names, getattr(dispatch, "codes", ())):
        yield StepOutput("codegen", name, code)
    if through(until, "load"):
        yield StepOutput("load", func.name, dispatch)


def trace_func(func: LoweredFunc, target: TargetLike = "x86", schedule: ScheduleLike = None,
               fast_math: bool = False, until: str = "load", show_codegen: bool | None = None,
               **options: object) -> Iterator[StepOutput]:
    """`schedule` -> `target_passes` -> `codegen` -> `load` for one function, as a generator of
    what each step produced, stopping after `until`. `load` builds through the backend's compile
    cache, so the `codegen` step generates code separately: when `show_codegen` is true, or when
    it is None and `codegen` is the last step or `$CINN_PY_DUMP_IR` is set."""
    check_step(until)
    tgt, checked_options = parse_options(target, fast_math, options)
    yield from _trace_func(func, tgt, schedule, checked_options, until, show_codegen)


def _trace_func(func: LoweredFunc, target: Target, schedule: ScheduleLike, options: BuildOptions, until: str,
                show_codegen: bool | None) -> Iterator[StepOutput]:
    if show_codegen is None:
        show_codegen = until == "codegen" or dump_dir() is not None
    if schedule == "auto" and target.is_gpu and func.scalar_args:
        yield from _trace_buckets(func, target, options, until)
        return
    yield from _trace_one(func, target, schedule, until, _codegen_options(options) if show_codegen else None,
                          options)


def _trace_one(func: LoweredFunc, target: Target, schedule: ScheduleLike, until: str,
               codegen_options: BuildOptions | None, options: BuildOptions) -> Iterator[StepOutput]:
    """The function steps for one kernel; `codegen` runs when `codegen_options` is given."""
    scheduled = schedule_step(func, target, schedule)
    yield StepOutput("schedule", func.name, scheduled)
    if not through(until, "target_passes"):
        return
    lowered = target_passes(scheduled, target)
    yield StepOutput("target_passes", func.name, lowered)
    if codegen_options is not None and through(until, "codegen"):
        yield StepOutput("codegen", func.name, codegen_step(lowered, target, codegen_options))
    if through(until, "load"):
        kernel = get_backend(target).build(lowered, target, options)
        yield StepOutput("load", func.name, kernel)


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


def codegen(func_or_schedule: Any, target: TargetLike = "cuda", fast_math: bool = False,
            schedule: str | None = None, **options: object) -> Any:
    """`cinn_py.codegen`: `schedule` -> `target_passes` -> `codegen` for one function (a LoweredFunc,
    a one-function Module or an IRSchedule); returns the backend's generated code without loading
    it: `.source/.ptx/.cubin/.launch` (cuda), `.llvm_ir/.asm` (x86). `schedule="auto"`
    auto-schedules it for `target` first (one config, also for symbolic GPU shapes)."""
    func = as_lowered_func(func_or_schedule)
    with nesting_room():
        check_schedule(schedule)
        tgt, checked_options = parse_options(target, fast_math, options)
        outputs = list(dumped(_trace_one(func, tgt, schedule, "codegen", checked_options, checked_options)))
        return outputs[-1].value


def build(func_or_schedule: Any, target: TargetLike = "x86", fast_math: bool = False,
          schedule: str | None = None, **options: object) -> Any:
    """`cinn_py.build`: `schedule` -> `target_passes` -> `codegen` -> `load` for one function (a
    LoweredFunc, a one-function Module or an IRSchedule); returns the Kernel: `kernel(*inputs)`
    returns the outputs, `kernel(*inputs, out=[...])` writes them. `schedule=None` builds the
    function as given; `schedule="auto"` auto-schedules it for `target` first (CUDA with symbolic
    dims: one kernel per shape bucket, picked at call time)."""
    func = as_lowered_func(func_or_schedule)
    with nesting_room():
        check_schedule(schedule)
        kernel: Any = None
        for output in dumped(trace_func(func, target, schedule, fast_math, "load", None, **options)):
            kernel = output.value
        return kernel


def auto_schedule(func_or_schedule: Any, target: TargetLike = "cuda", config: Any = None) -> Any:
    """`cinn_py.auto_schedule`: schedule a function automatically for `target`
    (`schedules.tactics.auto_schedule`); returns the IRSchedule. A schedule passed in is
    re-scheduled from its current function."""
    tactics = importlib.import_module("schedules.tactics")
    return tactics.auto_schedule(as_lowered_func(func_or_schedule), target=Target.parse(target),
                                 config=config)


# -- the program steps -------------------------------------------------------------------------------
def trace_program(program: Program, until: str = "lower",
                  target: Target | None = None) -> Iterator[StepOutput]:
    """`decompose` .. `lower` (one output per group's LoweredFunc), stopping after `until`. With a
    CPU `target`, `optimize` ends with the CPU's graph rewrites (`conv_to_gemm`)."""
    if not isinstance(program, Program):
        raise TypeError(f"expected a Program (NetBuilder.build()), got {type(program).__name__}")
    check_step(until)
    decompose, *graph_passes = DEFAULT_PASSES
    current = decompose(program)
    yield StepOutput("decompose", program.name, current)
    if not through(until, "optimize"):
        return
    for graph_pass in graph_passes:
        current = graph_pass(current)
    if target is not None and not target.is_gpu:
        current = conv_to_gemm(current)
    yield StepOutput("optimize", program.name, current)
    if not through(until, "fuse"):
        return
    fusion = fuse(current)
    yield StepOutput("fuse", program.name, fusion)
    if through(until, "lower"):
        for group in fusion.groups:
            func = lower_group(group)
            yield StepOutput("lower", func.name, func)


def trace(source: Program | Sequence[LoweredFunc], target: TargetLike = "x86", schedule: ScheduleLike = None,
          fast_math: bool = False, until: str = "load", show_codegen: bool | None = None,
          **options: object) -> Iterator[StepOutput]:
    """Every step, stopping after `until`: for a Program all of them (the function steps for each
    group's function in turn); for functions the `lower` output is each function as given."""
    check_step(until)
    if isinstance(source, Program):
        funcs: list[LoweredFunc] = []
        tgt = Target.parse(target)
        for output in trace_program(source, until=until if until in PROGRAM_STEPS else "lower", target=tgt):
            funcs += [output.value] if output.step == "lower" else []
            yield output
    else:
        funcs = list(source)
        yield from (StepOutput("lower", f.name, f) for f in funcs)
    if until in FUNC_STEPS:
        for func in funcs:
            yield from trace_func(func, target, schedule, fast_math, until, show_codegen, **options)


def _outputs_of(outputs: Sequence[StepOutput], step: str) -> list[Any]:
    return [o.value for o in outputs if o.step == step]


@deep_nesting
def program_steps(program: Program) -> tuple[FusionPlan, list[LoweredFunc]]:
    """`decompose` .. `lower`: the fusion plan and one LoweredFunc per group (dumped when
    `$CINN_PY_DUMP_IR` is set)."""
    outputs = list(dumped(trace_program(program)))
    return _outputs_of(outputs, "fuse")[0], _outputs_of(outputs, "lower")


def compile_program(program: Program, target: TargetLike = "x86", schedule: str | None = None,
                    fast_math: bool = False) -> CompiledProgram:
    """Every step for every group of `program`: a callable `CompiledProgram`.

    `schedule=None` builds each group's loop nests as lowered (serial); `schedule="auto"` lets
    the automatic group scheduler schedule each group first.
    """
    with nesting_room():
        check_schedule(schedule)
        tgt = Target.parse(target)
        if tgt.is_gpu or dump_dir() is not None:  # every step observed, or GPU shape buckets: step by step
            outputs = list(dumped(trace(program, tgt, schedule, fast_math)))
            fusion: FusionPlan = _outputs_of(outputs, "fuse")[0]
            compiled = CompiledProgram(program, fusion, _outputs_of(outputs, "lower"),
                                       _outputs_of(outputs, "load"), tgt)
        else:
            compiled = _compile_cpu_program(program, tgt, schedule, fast_math)
        link_native(compiled, tgt)
        return compiled


def compile_group(func: LoweredFunc, target: Target, schedule: str | None, fast_math: bool,
                  checked: bool) -> LoweredFunc:
    """A compile worker's job (`cinn_py.runtime.compile_jobs`): the function steps of one group up
    to `target_passes`, and its kernel built into the disk cache; returns the final function."""
    final = target_passes(schedule_step(func, target, schedule), target)
    get_backend(target).build(final, target, BuildOptions(fast_math=fast_math, checked=checked))
    return final


def _compile_cpu_program(program: Program, target: Target, schedule: str | None,
                         fast_math: bool) -> CompiledProgram:
    """`compile_program` on a CPU: the steps up to `target_passes` come from the compiled-graph
    cache when this program was compiled before (`cinn_py.runtime.graph_cache`), else they run
    with the groups' function steps in worker processes, identical groups once
    (`cinn_py.runtime.compile_jobs`); the kernels are then built (from the disk cache, where
    the workers left them), one per distinct function."""
    checked = resolve_checked(None)
    key = graph_cache.graph_key(program, target.name, schedule, fast_math, checked)
    cached = graph_cache.load(key)
    if cached is None:
        steps = list(trace_program(program, until="lower", target=target))
        fusion: FusionPlan = _outputs_of(steps, "fuse")[0]
        lowered: list[LoweredFunc] = _outputs_of(steps, "lower")

        def here(func: LoweredFunc) -> LoweredFunc:
            return target_passes(schedule_step(func, target, schedule), target)

        finals = compile_jobs.compile_groups(program.name, lowered, compile_group,
                                             (target, schedule, fast_math, checked), here)
        graph_cache.store(key, fusion, lowered, finals)
        cached = graph_cache.CachedGraph(fusion, tuple(lowered), tuple(finals))
    backend = get_backend(target)
    kernels: dict[int, Any] = {}
    for func in cached.final:  # identical groups share one function object, hence one kernel
        if id(func) not in kernels:
            kernels[id(func)] = backend.build(func, target, BuildOptions(fast_math=fast_math))
    return CompiledProgram(program, cached.fusion, cached.lowered, [kernels[id(f)] for f in cached.final],
                           target)


NATIVE_ENV = "CINN_PY_NATIVE_GRAPH"


def link_native(compiled: CompiledProgram, target: Target) -> None:
    """Give `compiled` its native graph (`CompiledProgram.native`: every kernel in one native
    call) where the backend links one (`link_program`: x86) and the memory plan expresses the
    program; otherwise `native_reason` says why it runs kernel by kernel. `CINN_PY_NATIVE_GRAPH=0`
    turns it off (to compare)."""
    if os.environ.get(NATIVE_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        compiled.native_reason = f"{NATIVE_ENV}=0"
        return
    link = getattr(get_backend(target), "link_program", None)
    if link is None:
        compiled.native_reason = f"the {target.kind} backend runs kernels one by one"
        return
    plan = plan_graph(compiled.plan, [kernel.func for kernel in compiled.kernels])
    if isinstance(plan, str):
        compiled.native_reason = plan
        return
    entry = link(plan, compiled.kernels)
    if entry is None:
        compiled.native_reason = "a kernel has its own thread count"
        return
    compiled.native = NativeGraph(plan, entry)
    compiled.native_reason = ""


@deep_nesting
def run_interpreted(program: Program, inputs: Sequence[Any] | Mapping[str, Any]) -> Any:
    """`decompose` .. `lower`, then every group's LoweredFunc in the IR interpreter."""
    from cinn_py.interp import run_ir  # noqa: PLC0415

    arrays, env = bind_inputs(program, inputs)
    fusion, funcs = program_steps(program)
    values = {id(v): arrays[v.name] for v in fusion.program.inputs}
    for group, func in zip(fusion.groups, funcs):
        outs = run_ir(func, {v.name: values[id(v)] for v in group.args}, env)
        values.update({id(v): outs[v.name] for v in group.outputs})
    return pack([frontend_array(values[id(v)], v) for v in fusion.program.outputs])


__all__ = ["DUMP_ENV", "FUNC_STEPS", "PIPELINE", "PROGRAM_STEPS", "STEPS", "ScheduleLike", "Step",
           "StepOutput", "as_lowered_func", "auto_schedule", "build", "check_step", "codegen", "codegen_step",
           "compile_group", "compile_program", "dump_dir", "dump_path", "dumped", "link_native",
           "program_steps", "run_interpreted", "schedule_step", "step_text", "target_passes", "trace",
           "trace_func", "trace_program"]
