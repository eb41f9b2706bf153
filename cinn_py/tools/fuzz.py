"""The fuzzer: random programs x random schedules, checked end to end against numpy.

    python -m cinn_py.tools.fuzz --examples 1000 --seed 1 [--cuda] [--steps 6] [--timeout 30]
    python -m cinn_py.tools.fuzz --seed 1 --case 17          # re-run one case in-process, verbosely
    python -m cinn_py.tools.fuzz --examples 500 --auto        # hand schedules + schedule="auto"
    python -m cinn_py.tools.fuzz --examples 500 --net         # NetBuilder programs, schedule="auto"
    python -m cinn_py.tools.fuzz --examples 200 --auto --cuda --emulate   # run the CUDA kernels (no GPU)
    python -m cinn_py.tools.fuzz --examples 1000 --torch-strides  # torch.compile(backend="cinn_py") vs eager

Each case (derived deterministically from `(seed, index)`):

1. generates a compute-DSL program (`cinn_py.tools.fuzzing.programs`) and lowers it;
2. runs the interpreter (`run_ir`) and compares with the independent numpy reference;
3. applies a random schedule (`cinn_py.tools.fuzzing.schedgen`) and compares `run_ir` of the
   scheduled function with the unscheduled one;
4. builds the scheduled function for x86 and compares the kernel's outputs with the reference;
5. with `--cuda`, binds the loops to GPU threads and compiles CUDA C with NVRTC (compile only);
6. with `--auto`, also builds the program with `schedule="auto"`: for x86 it runs the kernel
   against the reference, for CUDA it generates the auto-scheduled kernels (one per shape
   bucket when there are symbolic dims) and compiles them with NVRTC.

With `--emulate` the CUDA stages run their kernels in the CPU emulator (`codegen.cuda.emulator`:
the exact CUDA C, compiled with g++) and compare them with the reference like the x86 stages, instead
of only compiling them with NVRTC: a wrong barrier, warp shuffle or thread index is a failure.

`--net` generates NetBuilder programs instead (`cinn_py.tools.fuzzing.netgen`: random op graphs
of elementwise, broadcast, reduction, softmax/norm, transpose, select and matmul ops) and runs
each through decomposition, fusion and the automatic scheduler (`compile_program(...,
schedule="auto")`) on x86 against the ops' numpy implementations (`Program.run_numpy`), plus
the CUDA codegen + NVRTC compile of every group.

`--torch-strides` fuzzes the torch backend instead (`cinn_py.tools.fuzzing.torchgen`): random
functions of strided tensors chaining views (permute, transpose, expand, slices, select, unsqueeze,
reshape, view) with converted ops and eager ones (`special.erfcx`, graph breaks), compiled with
`torch.compile(backend="cinn_py", options={"strict": True})` and compared with eager: values,
`.stride()` of every output (its dims longer than 1), and a `view` of each output attempted exactly
where eager's works.

The automatic scheduler must never fail on a valid program (one that lowered and matched the
reference in the interpreter): in the auto stages every exception is a failure, whatever its
type, and so is a `RecursionError` or an internal `TypeError` anywhere.

Outcomes: `ok`; `rejected` with a documented error type (`ScheduleError`, `CompileError`,
`LoweringError`, `ValueError`, `TypeError`: a component refused the input cleanly); or `fail`
(a wrong result, any other exception, a crash of the process, or a case exceeding the
timeout; also a `CompileError` from NVRTC or the LLVM verifier: generated code that its own
compiler rejects). Comparisons use `programs.tolerance(dtype, mag, err)`: integer and boolean
results must match exactly; float results within 8x the propagated rounding-error bound of the
program plus 4 ulps of the output's magnitude bound.

The CLI runs cases in a worker subprocess (`faulthandler` on), so a segfault in generated code
or a hang is reported as a failure of that case and the run goes on with a fresh worker.
Failing cases are shrunk (schedule steps, outputs, subexpressions) and printed as a reproducer:
the DSL program, the IR (`print_ir(..., decls=True)`), the trace (`trace.as_python()`), the
input seed and bindings, and what differed.

This module is an entry point (like `cinn_py.pipeline`): it imports `schedules` lazily.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cinn_py.diagnostics import CompileError, LoweringError, ScheduleError
from cinn_py.tools.fuzzing import programs as P
from cinn_py.tools.fuzzing.netgen import NetSpec, generate_net
from cinn_py.tools.fuzzing.netgen import build_program as build_net
from cinn_py.tools.fuzzing.netgen import random_inputs as net_inputs
from cinn_py.tools.fuzzing.netgen import SIGNED_ZEROS, SPECIAL_VALUES, with_specials
from cinn_py.tools.fuzzing.netgen import to_python as net_to_python
from cinn_py.tools.fuzzing.netgen import tolerance as net_tolerance
from cinn_py.tools.fuzzing.reference import build_tensors, evaluate, to_python
from cinn_py.tools.fuzzing.schedgen import apply_random_schedule, bind_for_gpu
from cinn_py.tools.fuzzing.shrink import shrink

DOCUMENTED_ERRORS: tuple[type[BaseException], ...] = (ScheduleError, CompileError, LoweringError, ValueError,
                                                      TypeError)
FUNC_NAME = "fuzz_kernel"
# CompileError messages meaning the generated code itself is broken (NVRTC / LLVM refused it).
_BROKEN_CODE = ("NVRTC: compiling", "x86 codegen: generated LLVM IR does not verify")
# TypeError messages that only our own code can cause (an IR expression used as a Python bool
# inside the compiler, e.g. sorting Vars), never a bad user argument.
_INTERNAL_TYPE_ERRORS = ("an IR expression has no truth value",)
# Stages where a TypeError may be a documented refusal of a generated argument (see `_classify`).
_ARGUMENT_STAGES = ("schedule", "build", "reference")


@dataclass
class Options:
    """What each case runs."""

    x86: bool = True
    x86_every: int = 1
    """Build and run on x86 only every n-th case (compiling dominates a case's time)."""
    cuda: bool = False
    steps: int = 6
    shrink: bool = True
    hand: bool = True
    """Apply a random hand schedule (False: only the auto stages, with `auto`)."""
    auto: bool = False
    """Also build with `schedule="auto"`: x86 (run vs the reference) and CUDA (NVRTC compile)."""
    auto_cuda_every: int = 1
    """Compile the auto-scheduled CUDA kernels only every n-th case (NVRTC dominates)."""
    net: bool = False
    """NetBuilder programs (`netgen`) through `compile_program(..., schedule="auto")`."""
    emulate: bool = False
    """Run the CUDA kernels in the CPU emulator against the reference (not only NVRTC-compile them)."""
    grad: bool = False
    """With `net`: also differentiate the program (`cinn_py.autodiff.grad`), run the backward program
    compiled with `schedule="auto"` against its numpy reference, and check the reference gradient
    against a central difference of the forward in float64 along a random direction."""
    torch_strides: bool = False
    """Random strided torch functions through the `cinn_py` torch.compile backend vs eager (`torchgen`)."""
    torch_values: bool = False
    """Random torch functions on NaN/inf/-0.0 inputs with value-sensitive ops, zero divisors and
    out-of-range indices vs eager: values, NaN positions, errors (`torchgen`, values=True)."""
    specials: bool = False
    """DSL and NetBuilder cases: NaN, +-inf, -0.0 and 0.0 in the float inputs (NaN positions must
    match the reference); NetBuilder cases also divide by values that may be zero."""


@dataclass
class Case:
    """A generated case: the program, its input seed and bindings, and the schedule seed."""

    seed: int
    index: int
    spec: P.ProgramSpec
    bindings: list[dict[str, int]]
    input_seed: int
    schedule_seed: int


@dataclass
class Result:
    """The outcome of one case. `stage` names where it ended; `detail` says what differed."""

    index: int
    status: str
    stage: str = ""
    error: str = ""
    detail: str = ""
    steps: list[tuple[str, str]] = field(default_factory=list)
    reproducer: str = ""

    @property
    def signature(self) -> str:
        return f"{self.status}:{self.stage}:{self.error.split(':')[0]}"


def make_case(seed: int, index: int) -> Case:
    """The case `index` of a run with `seed` (deterministic)."""
    rng = random.Random(f"cinn-py-fuzz:{seed}:{index}")
    spec = P.generate_program(rng)
    return Case(seed, index, spec, P.random_bindings(spec, rng), rng.randrange(2 ** 31),
                rng.randrange(2 ** 31))


# ---------------------------------------------------------------------------------------------
# Running one case
# ---------------------------------------------------------------------------------------------
class _Failure(Exception):
    def __init__(self, stage: str, detail: str) -> None:
        super().__init__(detail)
        self.stage, self.detail = stage, detail


def compare(spec: P.ProgramSpec, got: dict[str, np.ndarray], want: dict[str, np.ndarray], what: str) -> None:
    """Raise `_Failure(what, ...)` unless every output matches within its tolerance."""
    for k in spec.outputs:
        t = spec.tensors[k]
        if t.name not in got:
            raise _Failure(what, f"output '{t.name}' missing (got {sorted(got)})")
        a, b = np.asarray(got[t.name]), np.asarray(want[t.name])
        if a.shape != b.shape or a.dtype != b.dtype:
            raise _Failure(what, f"output '{t.name}': got {a.dtype}{a.shape}, expected {b.dtype}{b.shape}")
        with np.errstate(invalid="ignore"):
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        tol = P.tolerance(t.dtype, t.mag, t.err)
        bad = ~((diff <= tol) | (a == b) | (np.isnan(a) & np.isnan(b)))  # NaN positions and infinities
        if bad.any():
            where = tuple(int(x) for x in np.argwhere(bad)[0])
            raise _Failure(what,
                           f"output '{t.name}' ({t.dtype}): {int(bad.sum())}/{bad.size} elements differ; "
                                 f"max |diff| {np.nanmax(diff) if not np.isnan(diff).all() else 'nan'} > tol "
                                 f"{tol:.3g}; "
                                 f"first at {where}: got {a[where]!r}, expected {b[where]!r}")


def _inputs(case: Case, spec: P.ProgramSpec, specials: bool = False) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(case.input_seed)
    inputs = [P.random_inputs(spec, b, rng) for b in case.bindings]
    # NaN/inf/-0.0/0.0 in float inputs: every stage must agree on them too, except where C leaves
    # the result undefined (a non-finite value cast to an integer: finite inputs only) or the
    # schedule decides it (a max/min reduction of a row holding NaN: signed zeros only)
    if specials and not _casts_to_int(spec):
        values = SIGNED_ZEROS if any(t.reduce and t.reduce[0] in ("max", "min") for t in spec.tensors) \
            else SPECIAL_VALUES
        inputs = [{k: with_specials(a, rng, values) for k, a in inp.items()} for inp in inputs]
    return inputs


def _casts_to_int(spec: P.ProgramSpec) -> bool:
    def walk(node: Any) -> bool:
        if not isinstance(node, (list, tuple)) or not node:
            return False
        if node[0] == "cast" and node[1] in P.INT_DTYPES:
            return True
        return any(walk(child) for child in node[1:])
    return any(walk(t.body) for t in spec.tensors)


def _lower(spec: P.ProgramSpec) -> Any:
    import cinn_py  # noqa: PLC0415
    from cinn_py.ir import reset_name_ids  # noqa: PLC0415

    reset_name_ids()
    return cinn_py.lower(FUNC_NAME, build_tensors(spec))


def _schedule(func: Any, case: Case, opts: Options, trace_steps: list[Any] | None) -> tuple[Any, list[Any]]:
    from schedules import IRSchedule, Trace, replay  # noqa: PLC0415

    if trace_steps is not None:
        return replay(Trace(steps=list(trace_steps)), func), []
    sch = IRSchedule(func)
    log = apply_random_schedule(sch, random.Random(case.schedule_seed), opts.steps, "x86")
    return sch, log


def _run_x86(func: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import cinn_py  # noqa: PLC0415

    kernel = cinn_py.build(func, target="x86")
    outs = kernel(*[inputs[t.name] for t in func.inputs])
    outs = outs if isinstance(outs, tuple) else (outs,)
    return {t.name: o for t, o in zip(func.outputs, outs)}


def run_case(case: Case, opts: Options, spec: P.ProgramSpec | None = None,
             trace_steps: list[Any] | None = None) -> tuple[Result, Any]:
    """Run one case (optionally with a replacement spec / explicit trace steps, for shrinking).

    Returns the result and the schedule (None when it did not get that far)."""
    from cinn_py.interp import run_ir  # noqa: PLC0415

    spec = spec or case.spec
    result = Result(case.index, "ok")
    sch = None
    stage = "lower"
    # Bound before the try: the auto-schedule check below runs only past "interp", where they are set.
    func: Any = None
    all_inputs: list[Any] = []
    refs: list[Any] = []
    try:
        func = _lower(spec)
        all_inputs = _inputs(case, spec, opts.specials)
        refs = [evaluate(spec, inp, b) for inp, b in zip(all_inputs, case.bindings)]
        stage = "interp"
        befores = [run_ir(func, inp) for inp in all_inputs]
        for got, want in zip(befores, refs):
            compare(spec, got, want, "interp-vs-reference")
        stage = "schedule"
        if opts.hand:
            sch, result.steps = _schedule(func, case, opts, trace_steps)
            stage = "interp-scheduled"
            for inp, want in zip(all_inputs, befores):
                compare(spec, run_ir(sch.func, inp), want, "scheduled-interp-vs-unscheduled")
            if opts.x86 and case.index % max(opts.x86_every, 1) == 0:
                stage = "x86"
                for inp, want in zip(all_inputs, refs):
                    compare(spec, _run_x86(sch.func, inp), want, "x86-vs-reference")
            if opts.cuda:
                stage = "cuda"
                _hand_cuda(sch.func, case, opts, spec, all_inputs, refs)
    except _Failure as exc:
        result.status, result.stage, result.detail = "fail", exc.stage, exc.detail
    except Exception as exc:  # noqa: BLE001 - classified below
        _classify(result, stage, exc, strict=False)
    if opts.auto and result.status != "fail" and stage not in ("lower", "interp"):
        _run_auto(case, opts, spec, func, all_inputs, refs, result)
    return result, sch


def _run_auto(case: Case, opts: Options, spec: P.ProgramSpec, func: Any,
              all_inputs: list[dict[str, np.ndarray]],
              refs: list[dict[str, np.ndarray]], result: Result) -> None:
    """`schedule="auto"` on a valid program: any exception is a failure (`strict`)."""
    import cinn_py  # noqa: PLC0415

    stage = "auto-x86"
    try:
        kernel = cinn_py.build(func, target="x86", schedule="auto")
        for inp, want in zip(all_inputs, refs):
            outs = kernel(*[inp[t.name] for t in func.inputs])
            outs = outs if isinstance(outs, tuple) else (outs,)
            compare(spec, {t.name: o for t, o in zip(func.outputs, outs)}, want, "auto-x86-vs-reference")
        # the CUDA schedule's semantics, in the interpreter (bound loops run serially)
        if not func.scalar_args:
            stage = "auto-cuda-interp"
            from schedules.tactics import auto_schedule  # noqa: PLC0415
            from cinn_py.interp import run_ir  # noqa: PLC0415

            cuda_func = auto_schedule(func, target="cuda").func
            for inp, want in zip(all_inputs, refs):
                compare(spec, run_ir(cuda_func, inp), want, "auto-cuda-interp-vs-reference")
        if case.index % max(opts.auto_cuda_every, 1) == 0 and opts.emulate:
            stage = "auto-cuda-emulated"
            _compare_kernel(spec, _emulated(func, schedule="auto"), func, all_inputs, refs,
                            "auto-cuda-emulated-vs-reference")
        elif nvrtc_available() and case.index % max(opts.auto_cuda_every, 1) == 0:
            stage = "auto-cuda"
            compile_cuda_auto(func)
    except _Failure as exc:
        result.status, result.stage, result.detail, result.error = "fail", exc.stage, exc.detail, ""
    except Exception as exc:  # noqa: BLE001 - the auto scheduler must not fail on a valid program
        _classify(result, stage, exc, strict=True)


def _emulated(func: Any, schedule: str | None) -> Any:
    """`func` built for CUDA to run in the CPU emulator (a BucketDispatch with symbolic dims)."""
    import cinn_py  # noqa: PLC0415

    return cinn_py.build(func, target="cuda", schedule=schedule, emulate=True)


def _compare_kernel(spec: P.ProgramSpec, kernel: Any, func: Any, all_inputs: list[dict[str, np.ndarray]],
                    refs: list[dict[str, np.ndarray]], what: str) -> None:
    """Call `kernel` on every input set and compare its outputs with the reference's."""
    for inp, want in zip(all_inputs, refs):
        outs = kernel(*[inp[t.name] for t in func.inputs])
        outs = outs if isinstance(outs, tuple) else (outs,)
        compare(spec, {t.name: o for t, o in zip(func.outputs, outs)}, want, what)


def compile_cuda_auto(func: Any) -> None:
    """The auto-scheduled CUDA kernels of `func` (one per shape bucket with symbolic dims),
    generated and compiled with NVRTC."""
    import cinn_py  # noqa: PLC0415
    from schedules import tactics  # noqa: PLC0415

    if func.scalar_args:
        for _, sch in tactics.auto_schedule_buckets(func, target="cuda"):
            cinn_py.codegen(sch.func, target="cuda").cubin  # noqa: B018  (NVRTC compiles on first access)
    else:
        cinn_py.codegen(func, target="cuda", schedule="auto").cubin  # noqa: B018


def nvrtc_available() -> bool:
    """Whether CUDA C can be compiled here (the optional `nvrtc` extra)."""
    try:
        from cuda.bindings import nvrtc  # noqa: F401, PLC0415  # pyright: ignore[reportAttributeAccessIssue]
    except ImportError:
        return False
    return True


def _classify(result: Result, stage: str, exc: BaseException, strict: bool) -> None:
    """`rejected` for a documented error refusing the input cleanly (hand schedules only), else
    `fail`: generated code its own compiler refuses, an internal TypeError, a RecursionError or
    any other exception, and under `strict` (the auto scheduler on a valid program) everything.
    A TypeError is a bad argument only where generated arguments meet an API's checks (the random
    schedule, a NetBuilder program's build and numpy reference); lowering, interpreting or
    compiling a program that got past them never raises one for the user's input."""
    first = _first_line(exc)
    broken = (isinstance(exc, CompileError) and first.startswith(_BROKEN_CODE)) or (
        isinstance(exc, TypeError)
        and (first.startswith(_INTERNAL_TYPE_ERRORS) or stage not in _ARGUMENT_STAGES))
    documented = isinstance(exc, DOCUMENTED_ERRORS) and not isinstance(exc, RecursionError)
    result.status = "rejected" if documented and not broken and not strict else "fail"
    result.stage, result.error = stage, f"{type(exc).__name__}: {first}"
    if result.status == "fail" and not documented:
        import traceback  # noqa: PLC0415

        result.detail = "".join(traceback.format_exception(exc)[-6:])


def _hand_cuda(func: Any, case: Case, opts: Options, spec: P.ProgramSpec,
               all_inputs: list[dict[str, np.ndarray]],
               refs: list[dict[str, np.ndarray]]) -> None:
    """A few GPU primitives (bind, set_buffer local/shared, sync_threads, ...) on top of the x86
    schedule, then every nest bound to blockIdx.x/threadIdx.x, then CUDA C through NVRTC, or with
    `emulate` run in the CPU emulator against the reference."""
    import cinn_py  # noqa: PLC0415
    from schedules import IRSchedule  # noqa: PLC0415

    sch = IRSchedule(func)
    apply_random_schedule(sch, random.Random(case.schedule_seed + 1), 3, "cuda")
    bind_for_gpu(sch)
    if opts.emulate:
        _compare_kernel(spec, _emulated(sch.func, schedule=None), sch.func, all_inputs, refs,
                        "cuda-emulated-vs-reference")
        return
    cinn_py.codegen(sch.func, target="cuda").cubin  # noqa: B018  (NVRTC compiles on first access)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


# ---------------------------------------------------------------------------------------------
# Shrinking and reproducers
# ---------------------------------------------------------------------------------------------
def shrink_case(case: Case, opts: Options, result: Result, sch: Any) -> tuple[P.ProgramSpec, list[Any]]:
    """A smaller (spec, trace steps) failing with the same signature."""
    steps = list(sch.trace.steps) if sch is not None else []

    def still_fails(spec: P.ProgramSpec, cand_steps: list[Any]) -> bool:
        again, _ = run_case(case, opts, spec, cand_steps)
        return again.signature == result.signature

    if not still_fails(case.spec, steps):   # the failure needs the random schedule's exact replay
        return case.spec, steps
    return shrink(case.spec, steps, still_fails)


def reproducer(case: Case, opts: Options, spec: P.ProgramSpec, steps: list[Any], result: Result) -> str:
    """Everything needed to reproduce a failure, as text."""
    from cinn_py.ir import print_ir  # noqa: PLC0415
    from schedules import Trace  # noqa: PLC0415

    try:
        ir_text = print_ir(_lower(spec), decls=True)
    except Exception as exc:  # noqa: BLE001 - the failure may be in lowering itself
        ir_text = f"<lowering failed: {type(exc).__name__}: {_first_line(exc)}>"
    flags = "".join(flag for flag,
                    on in ((" --cuda", opts.cuda), (" --auto", opts.auto), (" --auto-only", not opts.hand),
                                          (" --emulate", opts.emulate)) if on)
    return "\n".join([
        f"=== FAIL case {case.index} (seed {case.seed}) at {result.stage}",
        f"what differed: {result.error or ''} {result.detail}".rstrip(),
        f"--- reproduce: python -m cinn_py.tools.fuzz --seed {case.seed} --case {case.index}{flags}",
        "--- program (compute DSL):", to_python(spec, FUNC_NAME),
        "--- IR before scheduling:", ir_text,
        "--- schedule (trace.as_python()):", Trace(steps=list(steps)).as_python(),
        f"--- inputs: numpy.random.default_rng({case.input_seed}); floats U[-2, 2], ints [-8, 8]; "
        f"symbol bindings {case.bindings}",
        f"--- spec JSON: {json.dumps(spec.to_json())}",
    ])


def check_case(seed: int, index: int, opts: Options) -> Result:
    """Run one case; on failure, shrink it and attach the reproducer."""
    if opts.torch_strides or opts.torch_values:
        return check_torch_strides_case(seed, index, opts.torch_values)
    if opts.net:
        return check_net_case(seed, index, opts)
    case = make_case(seed, index)
    result, sch = run_case(case, opts)
    if result.status == "fail":
        spec, steps = shrink_case(case, opts, result, sch) if opts.shrink else (
            case.spec, list(sch.trace.steps) if sch is not None else [])
        result.reproducer = reproducer(case, opts, spec, steps, result)
    return result


# ---------------------------------------------------------------------------------------------
# Torch backend: strides
# ---------------------------------------------------------------------------------------------
def check_torch_strides_case(seed: int, index: int, values: bool = False) -> Result:
    """A random strided torch function compiled by the `cinn_py` backend vs eager (`torchgen.check`):
    a wrong value, stride or view, and any exception of the compiled function, is a failure."""
    from cinn_py.tools.fuzzing import torchgen  # noqa: PLC0415

    result = Result(index, "ok")
    stage = "generate"
    mode = "values" if values else "strides"
    try:
        case = torchgen.generate(seed, index, values)
        stage = "compare"
        detail = torchgen.check(case)
    except Exception as exc:  # noqa: BLE001 - eager ran every line: any exception is the backend's
        result.status, result.stage, result.error = "fail", stage, f"{type(exc).__name__}: {_first_line(exc)}"
    else:
        if detail is not None:
            result.status, result.stage, result.detail = "fail", stage, detail
    if result.status == "fail":
        result.reproducer = "\n".join([
            f"=== FAIL torch-{mode} case {index} (seed {seed}) at {result.stage}",
            f"what differed: {result.error} {result.detail}".strip(),
            f"--- reproduce: python -m cinn_py.tools.fuzz --torch-{mode} --seed {seed} "
            f"--case {index}",
            "--- script:", torchgen.generate(seed, index, values).script() if stage != "generate" else "",
        ])
    return result


# ---------------------------------------------------------------------------------------------
# NetBuilder programs
# ---------------------------------------------------------------------------------------------
def make_net_case(seed: int, index: int, specials: bool = False) -> tuple[NetSpec, random.Random]:
    """The NetBuilder case `index` of a run with `seed` and the generator for its inputs."""
    rng = random.Random(f"cinn-py-fuzz-net{'-specials' if specials else ''}:{seed}:{index}")
    return generate_net(rng, specials), rng


def check_net_case(seed: int, index: int, opts: Options) -> Result:
    """A NetBuilder program through `compile_program(..., schedule="auto")` on x86 vs
    `Program.run_numpy`, and the auto-scheduled CUDA kernels of its groups through NVRTC."""
    import cinn_py  # noqa: PLC0415
    from cinn_py.frontend.fusion import plan  # noqa: PLC0415
    from cinn_py.lowering.group import lower_group  # noqa: PLC0415

    spec, rng = make_net_case(seed, index, opts.specials)
    result = Result(index, "ok")
    stage = "build"
    inputs: list[Any] = []  # reported with a failure past "build", where it is set
    try:
        program = build_net(spec)
        inputs = net_inputs(spec, rng, np.random.default_rng(rng.randrange(2 ** 31)), opts.specials)
        stage = "reference"
        wants = _as_tuple(program.run_numpy(*inputs))
        if opts.x86:
            stage = "auto-x86"
            gots = _as_tuple(cinn_py.compile_program(program, "x86", schedule="auto")(*inputs))
            _compare_net(program, gots, wants, "auto-x86-vs-numpy")
        if opts.emulate and index % max(opts.auto_cuda_every, 1) == 0:
            stage = "auto-cuda-emulated"
            from cinn_py.tools.testing.cuda import run_cuda_emulated  # noqa: PLC0415

            gots = _as_tuple(run_cuda_emulated(program, *inputs))
            _compare_net(program, gots, wants, "auto-cuda-emulated-vs-numpy")
        elif nvrtc_available() and index % max(opts.auto_cuda_every, 1) == 0:
            stage = "auto-cuda"
            for group in plan(program).groups:
                compile_cuda_auto(lower_group(group))
        if opts.grad:
            stage = "grad"
            _check_net_grad(spec, program, inputs, wants, rng, opts)
    except _Failure as exc:
        result.status, result.stage, result.detail = "fail", exc.stage, exc.detail
    except Exception as exc:  # noqa: BLE001 - after the reference, every exception is a failure
        _classify(result, stage, exc, strict=stage not in ("build", "reference"))
    if result.status == "fail":
        result.reproducer = "\n".join([
            f"=== FAIL net case {index} (seed {seed}) at {result.stage}",
            f"what differed: {result.error or ''} {result.detail}".rstrip(),
            f"--- reproduce: python -m cinn_py.tools.fuzz --net{' --grad' if opts.grad else ''}"
            f"{' --specials' if opts.specials else ''} --seed {seed} --case {index}",
            "--- program (NetBuilder):", net_to_python(spec),
            f"--- inputs: U[-2, 2] float32{' with NaN/inf/-0.0/0.0 at a fifth' if opts.specials else ''}, "
            f"shapes {[tuple(a.shape) for a in inputs]}" if stage != "build" else "",
            "--- input values:\n" + "\n".join(repr(a) for a in inputs) if opts.specials and inputs else "",
            f"--- spec JSON: {json.dumps(spec.to_json())}",
        ])
    return result


def _check_net_grad(spec: Any, program: Any, inputs: list[Any], outs: tuple[Any, ...], rng: random.Random,
                    opts: Options) -> None:
    """The backward program of a net case: compiled (auto, x86) vs its numpy reference, and the
    reference vs a central difference of the forward program in float64 (a directional
    derivative along a random direction: two forward evaluations, whatever the input sizes)."""
    import cinn_py  # noqa: PLC0415
    from cinn_py.autodiff import grad  # noqa: PLC0415

    np_rng = np.random.default_rng(rng.randrange(2 ** 31))
    backward = grad(program)
    wrt = [v for v in program.inputs if v.dtype.is_float]
    cots = [np_rng.uniform(-1.0, 1.0, np.shape(o)).astype(o.dtype) for o in outs]
    wants = _as_tuple(backward.run_numpy(*inputs, *cots))
    if opts.x86:
        gots = _as_tuple(cinn_py.compile_program(backward, "x86", schedule="auto")(*inputs, *cots))
        _compare_net(backward, gots, wants, "grad-auto-x86-vs-numpy")
    _check_directional_derivative(spec, inputs, wrt, cots, np_rng)


def _check_directional_derivative(spec: Any, inputs: list[Any], wrt: list[Any], cots: list[Any],
                                  np_rng: np.random.Generator) -> None:
    from cinn_py.autodiff import grad  # noqa: PLC0415

    wide = NetSpec(tuple((n, "float64" if d == "float32" else d, s) for n, d, s in spec.inputs), spec.ops,
                   spec.outputs)
    program64 = build_net(wide)
    xs = [np.asarray(a, np.float64) for a in inputs]
    ws = [np.asarray(c, np.float64) for c in cots]
    grads = _as_tuple(grad(program64).run_numpy(*xs, *ws))
    direction = [np_rng.uniform(-1.0, 1.0, x.shape) for x in xs]

    def central_difference(eps: float) -> float:
        def loss(step: float) -> float:
            moved = [x + step * d for x, d in zip(xs, direction)]
            return float(sum(np.sum(o * w) for o, w in zip(_as_tuple(program64.run_numpy(*moved)), ws)))
        return (loss(eps) - loss(-eps)) / (2 * eps)

    exact = float(sum(np.sum(g * d) for g, d in zip(grads, direction)))
    scale = float(sum(np.sum(np.abs(g * d)) for g, d in zip(grads, direction)))
    # a second, smaller step where the first misses: near a singular derivative (sqrt of a value
    # close to 0) the truncation error of eps 1e-6 alone exceeds the tolerance; a wrong rule misses both
    numerics = []
    for eps in (1e-6, 1e-8):
        numerics.append(central_difference(eps))
        if abs(numerics[-1] - exact) <= 1e-5 * max(1.0, scale):
            return
    raise _Failure("grad-vs-finite-difference",
                   f"directional derivative along a random direction: gradient gives {exact!r}, central "
                   f"differences (eps 1e-6, 1e-8) of the float64 forward give {numerics!r} (w.r.t. "
                   f"{[v.name for v in wrt]})")


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else (value,)


def _compare_net(program: Any, gots: tuple[Any, ...], wants: tuple[Any, ...], what: str) -> None:
    for var, got, want in zip(program.outputs, gots, wants):
        a, b = np.asarray(got), np.asarray(want)
        if a.shape != b.shape or a.dtype != b.dtype:
            raise _Failure(what, f"output '{var.name}': got {a.dtype}{a.shape}, expected {b.dtype}{b.shape}")
        tol = net_tolerance(b.astype(np.float64))
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        bad = ~((diff <= tol) | (np.isnan(a) & np.isnan(b)) | (a == b))
        if bad.any():
            where = tuple(int(x) for x in np.argwhere(bad)[0])
            raise _Failure(what,
                           f"output '{var.name}': {int(bad.sum())}/{bad.size} elements differ by more than "
                                 f"{tol:.3g}; first at {where}: got {a[where]!r}, expected {b[where]!r}")


def describe_case(seed: int, index: int, opts: Options) -> str:
    """The reproducer text of a case without running it (for crashes and hangs)."""
    if opts.torch_strides or opts.torch_values:
        from cinn_py.tools.fuzzing import torchgen  # noqa: PLC0415

        return torchgen.generate(seed, index, opts.torch_values).script()
    if opts.net:
        return describe_net_case(seed, index)
    case = make_case(seed, index)
    steps: list[Any] = []
    try:
        sch, _ = _schedule(_lower(case.spec), case, opts, None)
        steps = list(sch.trace.steps)
    except Exception as exc:  # noqa: BLE001 - describe as much as possible
        print(f"(scheduling failed: {type(exc).__name__}: {_first_line(exc)})")
    return reproducer(case, opts, case.spec, steps, Result(index, "described", "not run"))


def describe_net_case(seed: int, index: int) -> str:
    """A NetBuilder case without running it: its script, the built program, and per fusion group
    the lowered IR and the auto schedule's trace for x86 (as far as each step gets: a case that
    crashes the compiler is described up to the step that crashes)."""
    from cinn_py.frontend.fusion import plan  # noqa: PLC0415
    from cinn_py.lowering.group import lower_group  # noqa: PLC0415
    from schedules.tactics import auto_schedule  # noqa: PLC0415

    spec, _ = make_net_case(seed, index)
    lines = [f"=== net case {index} (seed {seed}), described, not run",
             f"--- reproduce: python -m cinn_py.tools.fuzz --net --seed {seed} --case {index} --in-process",
             "--- program (NetBuilder):", net_to_python(spec), f"--- spec JSON: {json.dumps(spec.to_json())}"]
    step = "build"
    try:
        program = build_net(spec)
        lines += ["--- program:", str(program)]
        step = "fusion"
        for k, group in enumerate(plan(program).groups):
            step = f"lowering group {k}"
            func = lower_group(group)
            lines += [f"--- group {k}: IR before scheduling:", str(func)]
            step = f"auto-scheduling group {k} for x86"
            lines += [f"--- group {k}: auto schedule (x86):", auto_schedule(func, "x86").trace.as_python()]
    except Exception as exc:  # noqa: BLE001 - describe as much as possible
        lines.append(f"({step} failed: {type(exc).__name__}: {_first_line(exc)})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m cinn_py.tools.fuzz",
                                description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--examples", type=int, default=200, help="number of cases (default 200)")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    p.add_argument("--start", type=int, default=0, help="first case index (default 0)")
    p.add_argument("--case", type=int, default=None, help="run only this case, in-process, verbosely")
    p.add_argument("--cuda", action="store_true", help="also generate CUDA C and compile it with NVRTC")
    p.add_argument("--emulate", action="store_true",
                   help="run the CUDA kernels (--cuda, --auto, --net) in the CPU emulator against the "
                        "reference "
                        "instead of only compiling them with NVRTC")
    p.add_argument("--no-x86", action="store_true", help="skip building and running on x86")
    p.add_argument("--auto", action="store_true",
                   help='also build every program with schedule="auto" (x86: run; CUDA: NVRTC compile)')
    p.add_argument("--auto-only", action="store_true", help="with --auto: no random hand schedule")
    p.add_argument("--net", action="store_true",
                   help='NetBuilder programs through compile_program(schedule="auto")')
    p.add_argument("--grad", action="store_true",
                   help="with --net: also check the backward program (cinn_py.autodiff.grad): compiled with "
                        "schedule='auto' vs its numpy reference, and vs a float64 central difference")
    p.add_argument("--torch-strides", action="store_true",
                   help='random strided torch functions through torch.compile(backend="cinn_py") vs eager: '
                        'values, '
                        "strides and views of every output")
    p.add_argument("--torch-values", action="store_true",
                   help='random torch functions on NaN/inf/-0.0 inputs (value-sensitive ops, zero divisors, '
                        'out-of-range indices) through torch.compile(backend="cinn_py") vs eager: '
                        "values, NaN positions and errors")
    p.add_argument("--specials", action="store_true",
                   help="DSL and --net cases: NaN, +-inf, -0.0 and 0.0 in the float inputs (and, with --net, "
                        "divisors that may be zero); NaN positions must match the reference")
    p.add_argument("--auto-cuda-every", type=int, default=1,
                   help="compile the auto-scheduled CUDA kernels every n-th case only (default 1)")
    p.add_argument("--steps", type=int, default=6, help="schedule steps per case (default 6)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per case before it counts as a hang")
    p.add_argument("--no-shrink", action="store_true", help="print failures without shrinking them")
    p.add_argument("--in-process", action="store_true", help="no worker subprocess (no crash isolation)")
    p.add_argument("--describe", action="store_true",
                   help="with --case: print the case's program, IR and schedule without running it")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _options(ns: argparse.Namespace) -> Options:
    return Options(x86=not ns.no_x86, cuda=ns.cuda, steps=ns.steps, shrink=not ns.no_shrink, auto=ns.auto,
                   hand=not ns.auto_only,
                   auto_cuda_every=ns.auto_cuda_every, net=ns.net or ns.grad, emulate=ns.emulate,
                   grad=ns.grad, torch_strides=ns.torch_strides, torch_values=ns.torch_values,
                   specials=ns.specials)


def main(argv: list[str] | None = None) -> int:
    ns = _parse(argv)
    opts = _options(ns)
    if ns.worker:
        from cinn_py.tools.fuzzing.worker import worker_loop  # noqa: PLC0415

        return worker_loop(ns.seed, ns.start, ns.start + ns.examples, opts, check_case)
    if ns.case is not None and ns.describe:
        print(describe_case(ns.seed, ns.case, opts))
        return 0
    if ns.case is not None:
        result = check_case(ns.seed, ns.case, opts)
        print(json.dumps(dataclasses.asdict(result) | {"reproducer": None}, indent=1))
        if result.reproducer:
            print(result.reproducer)
        return 1 if result.status == "fail" else 0
    from cinn_py.tools.fuzzing.worker import Summary, run_in_process, run_with_workers  # noqa: PLC0415

    start = time.monotonic()
    summary = Summary(expected=ns.examples)
    indices = range(ns.start, ns.start + ns.examples)
    if ns.in_process:
        run_in_process(ns.seed, indices, opts, check_case, summary)
    else:
        worker_args = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--in-process"]
        run_with_workers(ns.seed, indices, opts, ns.timeout, worker_args, summary)
    print(summary.format(time.monotonic() - start))
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
