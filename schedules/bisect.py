"""Schedule bisection: find the first trace step that changes a function's results.

    result = bisect_trace(sch.trace, func)           # func: the unscheduled LoweredFunc
    print(result.format())

`bisect_trace` replays the trace one step at a time on a fresh copy of the function, runs the
reference interpreter (`cinn_py.interp.run_ir`) after every step that changed the IR, and
compares with the unscheduled function's outputs. It reports the first step whose outputs
differ (or that raised something other than a `ScheduleError`), with the step as Python, the
IR before and after it as a unified diff, and what differed. A trace whose every step keeps
the results is reported as such (`result.ok`).

Replays run with the name generator restored to its state at the start of the bisection, so
generated names (`i_0`, `i_j_fused`) match a replay of the whole trace.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.ir import (
    CompileContext, LoweredFunc, compile_context, current_context, print_ir, structural_equal,
)
from schedules.errors import ScheduleError
from schedules.schedule import IRSchedule
from schedules.trace import Step, Trace, replay

__all__ = ["BisectResult", "bisect_trace"]

Runner = Callable[[LoweredFunc, dict[str, np.ndarray]], dict[str, np.ndarray]]


@dataclass
class BisectResult:
    """Outcome of `bisect_trace`. `step_index` is None when no step changed the results."""

    num_steps: int
    step_index: int | None = None
    step: Step | None = None
    step_source: str = ""
    ir_before: str = ""
    ir_after: str = ""
    difference: str = ""

    @property
    def ok(self) -> bool:
        return self.step_index is None

    @property
    def diff(self) -> str:
        """Unified diff of the IR before and after the culprit step."""
        return "".join(difflib.unified_diff(self.ir_before.splitlines(keepends=True),
                                            self.ir_after.splitlines(keepends=True),
                                            fromfile="before step", tofile="after step"))

    def format(self) -> str:
        """A report for terminals and logs."""
        if self.ok:
            return f"bisect: all {self.num_steps} step(s) keep the results of the unscheduled function"
        return "\n".join([
            f"bisect: step {self.step_index} of {self.num_steps} changes the results:",
            f"  {self.step_source}",
            f"what differed: {self.difference}",
            "IR diff:",
            self.diff.rstrip("\n") or "  (the IR text did not change)",
        ])


def bisect_trace(trace: Trace, fresh_func: LoweredFunc, inputs: Mapping[str, np.ndarray] | None = None,
                 runner: Runner | None = None, rtol: float = 1e-5, atol: float = 1e-5,
                 symbols: Mapping[str, int] | None = None, seed: int = 0) -> BisectResult:
    """Replay `trace` step by step on `fresh_func` and find the first step that changes results.

    Args:
        trace: the schedule trace (`sch.trace`), e.g. of a failing fuzz case.
        fresh_func: the unscheduled function the trace was recorded on.
        inputs: input arrays by tensor name; default random ones (seeded by `seed`), symbolic
            dims bound from `symbols` (default 5 for each).
        runner: executes a function (default `run_ir`).
        rtol, atol: tolerances of the comparison (integers compare exactly either way).

    Raises:
        ScheduleError: a step does not replay on `fresh_func` (the trace belongs to another function).
        TypeError: `trace` or `fresh_func` has the wrong type.
    """
    if not isinstance(trace, Trace):
        raise TypeError(f"bisect_trace: expected a schedules.Trace, got {type(trace).__name__}")
    if not isinstance(fresh_func, LoweredFunc):
        raise TypeError("bisect_trace: expected the unscheduled LoweredFunc, got "
                        f"{type(fresh_func).__name__}")
    run = runner or _default_runner()
    arrays = dict(inputs) if inputs is not None else _random_inputs(fresh_func, symbols, seed)
    expected = run(fresh_func, _copy(arrays))
    names = copy.deepcopy(current_context().names)
    result = BisectResult(len(trace.steps))
    previous = fresh_func
    for k, step in enumerate(trace.steps):
        source = Trace(steps=[step]).as_python().rstrip("\n").splitlines()[-1]
        try:
            current = _replay_prefix(trace.steps[:k + 1], fresh_func, names)
        except ScheduleError:
            raise   # the trace does not fit fresh_func: the caller's mistake, not a culprit step
        except Exception as exc:  # noqa: BLE001 - a primitive that crashes is the culprit
            return _culprit(result, k, step, source, previous, previous,
                            f"the step raised {type(exc).__name__}: {exc}")
        if current is not previous and not structural_equal(current, previous):
            difference = _compare(expected, _run_safely(run, current, arrays), rtol, atol)
            if difference:
                return _culprit(result, k, step, source, previous, current, difference)
        previous = current
    return result


def _default_runner() -> Runner:
    from cinn_py.interp import run_ir  # noqa: PLC0415

    return run_ir


def _random_inputs(func: LoweredFunc, symbols: Mapping[str, int] | None, seed: int) -> dict[str, np.ndarray]:
    from schedules.testing import random_inputs  # noqa: PLC0415

    values = {v.name: 5 for v in func.scalar_args} | dict(symbols or {})
    return random_inputs(func, values, np.random.default_rng(seed))


def _copy(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.array(v, copy=True) for k, v in arrays.items()}


def _replay_prefix(steps: list[Step], func: LoweredFunc, names: Any) -> LoweredFunc:
    with compile_context(CompileContext(names=copy.deepcopy(names))):
        sch: IRSchedule = replay(Trace(steps=list(steps)), func)
    return sch.func


def _run_safely(run: Runner, func: LoweredFunc, arrays: Mapping[str, np.ndarray]) -> dict[str, Any] | str:
    try:
        return run(func, _copy(arrays))
    except Exception as exc:  # noqa: BLE001 - failing to run is a difference too
        return (f"running the scheduled IR raised {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}")


def _compare(expected: dict[str, np.ndarray], actual: dict[str, Any] | str, rtol: float, atol: float) -> str:
    if isinstance(actual, str):
        return actual
    if expected.keys() != actual.keys():
        return f"outputs {sorted(actual)} instead of {sorted(expected)}"
    for name, want in expected.items():
        got = np.asarray(actual[name])
        if got.shape != want.shape:
            return f"output '{name}' has shape {got.shape}, expected {want.shape}"
        exact = want.dtype.kind in "iub"
        close = np.equal(got, want) if exact else np.isclose(got.astype(np.float64), want.astype(np.float64),
                                                              rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            where = tuple(int(i) for i in np.argwhere(~close)[0])
            return (f"output '{name}': {int((~close).sum())}/{close.size} elements differ; first at {where}: "
                    f"got {got[where]!r}, expected {want[where]!r}")
    return ""


def _culprit(result: BisectResult, k: int, step: Step, source: str, before: LoweredFunc, after: LoweredFunc,
             difference: str) -> BisectResult:
    result.step_index, result.step, result.step_source = k, step, source
    result.ir_before, result.ir_after = print_ir(before), print_ir(after)
    result.difference = difference
    return result
