"""The schedule bisector finds the first trace step that changes results."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cinn_py as cp
from cinn_py import ir
from cinn_py.ir import For, LoweredFunc, Mutator
from schedules import IRSchedule, Trace
from schedules.bisect import BisectResult, bisect_trace
from schedules.primitives.for_type import unroll
from schedules.registry import PRIMITIVES


def _program() -> LoweredFunc:
    a = cp.placeholder((8, 6), "float32", "A")
    b = cp.compute((8, 6), lambda i, j: a[i, j] * 2.0, "B")
    k = cp.reduce_axis(6)
    c = cp.compute((8,), lambda i: cp.reduce_sum(b[i, k] + 1.0, [k]), "C")
    return cp.lower("fn", [a, c])


def _schedule(func: LoweredFunc) -> IRSchedule:
    sch = IRSchedule(func)
    sch.compute_inline("B")
    loops = sch.get_loops("C")
    sch.split(loops[0], [2, 4])
    sch.unroll(sch.get_loops("C")[-1])
    return sch


class _ShrinkInnermost(Mutator):
    """A wrong "optimisation": the loop handed to it runs one iteration fewer."""

    def __init__(self, uid: int) -> None:
        self.uid = uid

    def visit_for(self, node: For) -> For:
        node = self.generic_visit(node)
        if node.uid == self.uid:
            return dataclasses.replace(node, extent=ir.const(int(node.extent.value) - 1, node.extent.dtype))
        return node


def _bad_unroll(func: LoweredFunc, loop: For) -> LoweredFunc:
    marked = unroll(func, loop)
    return dataclasses.replace(marked, body=_ShrinkInnermost(loop.uid).visit(marked.body))


def test_correct_trace_reports_ok() -> None:
    func = _program()
    sch = _schedule(func)
    result = bisect_trace(sch.trace, func)
    assert result.ok and result.step_index is None
    assert "keep the results" in result.format()


def _swap(monkeypatch: pytest.MonkeyPatch, name: str, fn: object) -> None:
    """Replace the registered primitive `name`'s function for this test."""
    monkeypatch.setitem(PRIMITIVES, name, dataclasses.replace(PRIMITIVES[name], fn=fn))


def test_monkeypatched_primitive_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    func = _program()
    sch = _schedule(func)                 # recorded with the correct primitives
    _swap(monkeypatch, "unroll", _bad_unroll)    # replays now use the broken unroll
    result = bisect_trace(sch.trace, func)
    assert not result.ok
    assert result.step is not None and result.step.kind == "unroll"
    assert result.step_index == len(sch.trace.steps) - 1
    assert "sch.unroll(" in result.step_source
    text = result.format()
    assert "output 'C'" in result.difference and "elements differ" in result.difference
    # the diff shows the shrunk loop extent
    assert "-" in result.diff and "+" in result.diff and "unroll" in result.diff
    assert f"step {result.step_index} of {len(sch.trace.steps)}" in text


def test_culprit_in_the_middle_with_given_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    func = _program()
    sch = IRSchedule(func)
    loops = sch.get_loops("B")
    sch.unroll(loops[1])                   # step 2: will be broken
    sch.compute_inline("B")                # later steps are fine but come after the culprit
    _swap(monkeypatch, "unroll", _bad_unroll)
    x = np.arange(48, dtype=np.float32).reshape(8, 6)
    result = bisect_trace(sch.trace, func, inputs={"A": x})
    assert (result.step_index == 1 and result.num_steps == 3 and result.step is not None and result.step.kind
            == "unroll")


def test_step_that_raises_is_the_culprit(monkeypatch: pytest.MonkeyPatch) -> None:
    func = _program()
    sch = _schedule(func)

    def crash(*args: object, **kwargs: object) -> LoweredFunc:
        raise KeyError("internal bug")

    _swap(monkeypatch, "split", crash)
    result = bisect_trace(sch.trace, func)
    assert result.step is not None and result.step.kind == "split"
    assert "raised KeyError" in result.difference


def test_trace_of_another_function_is_a_schedule_error() -> None:
    func = _program()
    sch = _schedule(func)
    other = cp.lower("g", [p := cp.placeholder((4,), "float32", "X"), cp.compute((4,), lambda i: p[i], "Y")])
    with pytest.raises(cp.ScheduleError):
        bisect_trace(sch.trace, other)


def test_bad_arguments() -> None:
    func = _program()
    with pytest.raises(TypeError, match="Trace"):
        bisect_trace([], func)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="LoweredFunc"):
        bisect_trace(Trace(), "fn")  # type: ignore[arg-type]
    assert bisect_trace(Trace(), func).ok


def test_symbolic_function_and_format_without_text_change() -> None:
    s = cp.sym("S")
    a = cp.placeholder((s, 4), "int32", "A")
    b = cp.compute((s, 4), lambda i, j: a[i, j] + 1, "B")
    func = cp.lower("fn", [a, b])
    sch = IRSchedule(func)
    sch.split(sch.get_loops("B")[1], [2, 2])
    result = bisect_trace(sch.trace, func, symbols={"S": 3})
    assert result.ok
    fake = BisectResult(1, 0, None, "sch.noop()", "same", "same", "x")
    assert "did not change" in fake.format()
