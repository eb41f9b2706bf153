"""NetBuilder cases (`netgen`): a random op graph through decomposition, fusion and
`compile_program(..., schedule="auto")` on x86 (and the CUDA kernels of its groups) against the ops'
numpy implementations, and with `grad` its backward program against a float64 central difference."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np

from cinn_py.tools.fuzzing.netgen import NetSpec, generate_net
from cinn_py.tools.fuzzing.netgen import build_program as build_net
from cinn_py.tools.fuzzing.netgen import random_inputs as net_inputs
from cinn_py.tools.fuzzing.netgen import to_python as net_to_python
from cinn_py.tools.fuzzing.netgen import tolerance as net_tolerance
from cinn_py.tools.fuzzing.outcome import (Options, Result, _as_tuple, _classify, _Failure, _first_line,
                                           compile_cuda_auto, nvrtc_available)

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
