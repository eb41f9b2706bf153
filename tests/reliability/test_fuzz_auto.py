"""The fuzzer's auto mode (`--auto`: every program also with `schedule="auto"` on x86 and CUDA) and
its NetBuilder programs (`--net`), in fixed-seed CI runs, plus the rule that the automatic
scheduler failing on a valid program is a failure whatever the exception."""

from __future__ import annotations

import json
import random
import time

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.diagnostics import ScheduleError
from cinn_py.tools import fuzz
from cinn_py.tools.fuzzing import dsl_case, net_case, netgen
from cinn_py.tools.fuzzing.worker import Summary, run_in_process

CI_SEED = 20240601


def _run(indices: range, opts: fuzz.Options) -> tuple[Summary, str]:
    summary = Summary()
    start = time.monotonic()
    run_in_process(CI_SEED, indices, opts, fuzz.check_case, summary, echo=False)
    report = summary.format(time.monotonic() - start) + "\n\n" + "\n\n".join(
        f["reproducer"] or json.dumps(f) for f in summary.failures)
    return summary, report


# Each fixed-seed campaign is cut in two: a first slice in the default run and the rest in the
# `slow` tier (`.ci/run` runs both, so CI still checks every case).
@pytest.mark.parametrize("cases", [pytest.param(range(0, 60), id="first-60"),
                                   pytest.param(range(60, 300), id="rest-of-300", marks=pytest.mark.slow)])
def test_fixed_seed_auto_run(cases: range) -> None:
    """300 DSL programs with schedule="auto": x86 kernels vs numpy, the CUDA schedule in the
    interpreter (static shapes), NVRTC for every 10th."""
    summary, report = _run(cases, fuzz.Options(hand=False, auto=True, auto_cuda_every=10))
    assert summary.total == len(cases) and not summary.failures, report
    assert summary.status["ok"] >= 0.95 * len(cases), report          # valid programs all get through


def test_fixed_seed_netbuilder_run() -> None:
    """NetBuilder op graphs through decomposition, fusion and the auto scheduler."""
    summary, report = _run(range(20), fuzz.Options(net=True, auto_cuda_every=4))
    assert summary.total == 20 and not summary.failures, report
    assert summary.status["ok"] == 20, report


@pytest.mark.parametrize("cases", [pytest.param(range(0, 8), id="first-8"),
                                   pytest.param(range(8, 24), id="rest-of-24", marks=pytest.mark.slow)])
def test_fixed_seed_netbuilder_gradient_run(cases: range) -> None:
    """The same op graphs differentiated (`cinn_py.autodiff.grad`): each backward program compiled
    with schedule="auto" vs its numpy reference, and the reference vs a float64 central difference."""
    summary, report = _run(cases, fuzz.Options(net=True, grad=True, auto_cuda_every=1000))
    assert summary.total == len(cases) and not summary.failures, report
    assert summary.status["ok"] == len(cases), report


def test_grad_mode_catches_a_wrong_gradient_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    import cinn_py.autodiff  # noqa: F401  (attaches the rules)
    from cinn_py.frontend.ops.base import REGISTRY

    def doubled(c):  # type: ignore[no-untyped-def]  (a deliberately wrong rule: twice tanh's gradient)
        (g,) = real(c)
        return [c.nb.scale(g, 2.0)]

    real = REGISTRY["tanh"].grad
    assert real is not None
    monkeypatch.setitem(REGISTRY, "tanh", dataclasses.replace(REGISTRY["tanh"], grad=doubled))
    spec = netgen.NetSpec((("x0", "float32", (4, "S0")),),
                          (("tanh", (0,), ()), ("multiply", (1, 0), ())), (2,))
    monkeypatch.setattr(net_case, "make_net_case",
                        lambda seed, index, specials=False: (spec, random.Random(index)))
    result = fuzz.check_case(CI_SEED, 3, fuzz.Options(net=True, grad=True, auto_cuda_every=1000))
    assert (result.status, result.stage) == ("fail", "grad-vs-finite-difference"), result
    assert f"--net --grad --seed {CI_SEED} --case 3" in result.reproducer


def test_auto_stage_failures_are_failures_whatever_the_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    case = fuzz.make_case(CI_SEED, 0)
    opts = fuzz.Options(hand=False, auto=True)
    for exc in (TypeError("unsupported operand"), RecursionError("maximum recursion depth exceeded"),
                ScheduleError("split: refused"), ValueError("bad")):
        def boom(*args: object, **kwargs: object) -> None:
            raise exc
        monkeypatch.setattr(cp, "build", boom)
        result, _ = fuzz.run_case(case, opts)
        assert (result.status, result.stage) == ("fail", "auto-x86"), (exc, result)
        assert result.error.startswith(type(exc).__name__)


def test_recursion_error_in_a_hand_schedule_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    case = fuzz.make_case(CI_SEED, 0)

    def deep(*args: object, **kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(dsl_case, "_schedule", deep)
    result, _ = fuzz.run_case(case, fuzz.Options(x86=False))
    assert (result.status, result.stage) == ("fail", "schedule")


def test_net_specs_round_trip_and_print_runnable_netbuilder_source() -> None:
    for seed in range(30):
        spec = netgen.generate_net(random.Random(seed))
        assert netgen.NetSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
        namespace: dict = {}
        exec(compile(netgen.to_python(spec), "<net program>", "exec"), namespace)  # noqa: S102 - our own source
        program, direct = namespace["program"], netgen.build_program(spec)
        inputs = netgen.random_inputs(spec, random.Random(seed), np.random.default_rng(seed))
        for a, b in zip(fuzz._as_tuple(program.run_numpy(*inputs)),
                        fuzz._as_tuple(direct.run_numpy(*inputs))):
            np.testing.assert_array_equal(a, b)


def test_net_generator_covers_the_planned_ops() -> None:
    methods = {m for s in range(200) for m, _, _ in netgen.generate_net(random.Random(s)).ops}
    assert {"softmax", "rms_norm", "layer_norm", "transpose", "matmul", "select", "reduce_sum", "reduce_max",
            "divide", "exp", "add", "reverse", "tile", "repeat", "pad", "expand_dims", "squeeze",
            "slice_assign", "concat", "gather", "scatter_add", "argmax"} <= methods
    assert any(netgen.generate_net(random.Random(s)).symbols for s in range(50))


def test_net_mode_reports_a_wrong_result_with_a_reproducer(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cp.compile_program

    def off_by_one(*args: object, **kwargs: object) -> object:
        compiled = real(*args, **kwargs)
        return lambda *inputs: tuple(np.asarray(o) + 1 for o in fuzz._as_tuple(compiled(*inputs)))

    monkeypatch.setattr(cp, "compile_program", off_by_one)
    result = fuzz.check_case(CI_SEED, 0, fuzz.Options(net=True, auto_cuda_every=1000))
    assert (result.status, result.stage) == ("fail", "auto-x86-vs-numpy")
    assert "nb = cp.NetBuilder('fuzz_net')" in result.reproducer
    assert f"--net --seed {CI_SEED} --case 0" in result.reproducer


@pytest.mark.parametrize(("target", "stage", "status"), [
    ("_run_x86", "x86", "fail"), ("_lower", "lower", "fail"), ("_schedule", "schedule", "rejected"),
])
def test_type_error_is_a_failure_past_the_schedule_arguments(monkeypatch: pytest.MonkeyPatch, target: str,
                                                             stage: str, status: str) -> None:
    """Issue 12: `select(X[0, j] > 0, X[0, j], cast(j, "int32"))` failed in lowering with an
    internal TypeError that the fuzzer counted as a clean rejection; only a random schedule's
    arguments may draw a documented TypeError."""
    case = fuzz.make_case(CI_SEED, 0)

    def typed(*args: object, **kwargs: object) -> None:
        raise TypeError("select: true and false values have different dtypes int32 and int64")

    monkeypatch.setattr(dsl_case, target, typed)
    result, _ = fuzz.run_case(case, fuzz.Options())
    assert (result.status, result.stage) == (status, stage), result
