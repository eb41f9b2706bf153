"""Compute-DSL cases: a random program (`programs`) x a random schedule (`schedgen`), run in the
interpreter, on x86, with `schedule="auto"` and as CUDA (NVRTC or the CPU emulator), each stage
against the independent numpy reference (`reference`); failing cases are shrunk (`shrink`)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.tools.fuzzing import programs as P
from cinn_py.tools.fuzzing.netgen import SIGNED_ZEROS, SPECIAL_VALUES, with_specials
from cinn_py.tools.fuzzing.outcome import (Options, Result, _Failure, _classify, _first_line,
                                           compile_cuda_auto, nvrtc_available)
from cinn_py.tools.fuzzing.reference import build_tensors, evaluate, to_python
from cinn_py.tools.fuzzing.schedgen import apply_random_schedule, bind_for_gpu
from cinn_py.tools.fuzzing.shrink import shrink

FUNC_NAME = "fuzz_kernel"


@dataclass
class Case:
    """A generated case: the program, its input seed and bindings, and the schedule seed."""

    seed: int
    index: int
    spec: P.ProgramSpec
    bindings: list[dict[str, int]]
    input_seed: int
    schedule_seed: int


def make_case(seed: int, index: int) -> Case:
    """The case `index` of a run with `seed` (deterministic)."""
    rng = random.Random(f"cinn-py-fuzz:{seed}:{index}")
    spec = P.generate_program(rng)
    return Case(seed, index, spec, P.random_bindings(spec, rng), rng.randrange(2 ** 31),
                rng.randrange(2 ** 31))


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


def check_dsl_case(seed: int, index: int, opts: Options) -> Result:
    """Run one DSL case; on failure, shrink it and attach the reproducer."""
    case = make_case(seed, index)
    result, sch = run_case(case, opts)
    if result.status == "fail":
        spec, steps = shrink_case(case, opts, result, sch) if opts.shrink else (
            case.spec, list(sch.trace.steps) if sch is not None else [])
        result.reproducer = reproducer(case, opts, spec, steps, result)
    return result


def describe_dsl_case(seed: int, index: int, opts: Options) -> str:
    """The reproducer text of a DSL case without running it (for crashes and hangs)."""
    case = make_case(seed, index)
    steps: list[Any] = []
    try:
        sch, _ = _schedule(_lower(case.spec), case, opts, None)
        steps = list(sch.trace.steps)
    except Exception as exc:  # noqa: BLE001 - describe as much as possible
        print(f"(scheduling failed: {type(exc).__name__}: {_first_line(exc)})")
    return reproducer(case, opts, case.spec, steps, Result(index, "described", "not run"))
