"""`schedules.registry`: primitives register themselves and `IRSchedule` methods are generated
from their signatures (handles resolved, results wrapped, steps recorded, errors named)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import cinn_py as cp
from cinn_py.ir import For, LoweredFunc, ScheduleBlockRealize, Tensor, reset_name_ids
from schedules import IRSchedule, Trace, replay
from schedules.primitives.annotate import annotate
from schedules.registry import PRIMITIVES, STEP_KINDS, primitive
from schedules.schedule import generated
from schedules.state import BlockRV, LoopRV


def _elementwise() -> LoweredFunc:
    reset_name_ids()
    A = cp.placeholder((8, 4), "float32", "A")
    B = cp.compute((8, 4), lambda i, j: A[i, j] * 2.0, "B")
    return cp.lower("fn", [A, B])


@pytest.fixture
def scratch_registry() -> Iterator[None]:
    saved = dict(PRIMITIVES), dict(STEP_KINDS)
    yield
    PRIMITIVES.clear()
    PRIMITIVES.update(saved[0])
    STEP_KINDS.clear()
    STEP_KINDS.update(saved[1])


def test_every_primitive_is_an_irschedule_method_with_its_step_kind() -> None:
    assert len(PRIMITIVES) >= 24
    for name, prim in PRIMITIVES.items():
        method = getattr(IRSchedule, name)
        declared = tuple(inspect.signature(method).parameters)[1:]
        assert declared == STEP_KINDS[name].params == prim.step.params, name
    assert STEP_KINDS["split"].returns == "list" and STEP_KINDS["fuse"].returns == "one"
    assert STEP_KINDS["rfactor"].returns == "none" and STEP_KINDS["cache_read"].returns == "one"
    assert STEP_KINDS["bind"].params == ("loop", "thread_axis")  # gpu_limits comes from the schedule
    assert [p.kind for p in PRIMITIVES["compute_at"].params] == ["block", "loop", "value"]
    assert [p.kind for p in PRIMITIVES["sync_threads"].params] == ["node", "value"]
    assert {"get_block", "get_loops", "get_all_blocks"} <= set(STEP_KINDS) - set(PRIMITIVES)  # queries


def test_a_new_primitive_is_one_decorated_function_and_a_declaration(
        scratch_registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    @primitive
    def tag_and_split(func: LoweredFunc, block: ScheduleBlockRealize, loops: Sequence[For],
                      tag: str = "t") -> tuple[LoweredFunc, For]:
        """Annotate `block` with `tag` and return the first loop (a test primitive)."""
        return annotate(func, block, tag, 1), loops[0]

    def tag_and_split_method(self: IRSchedule, block: BlockRV | str, loops: Sequence[LoopRV],
                             tag: str = "t") -> LoopRV:
        """Test primitive."""
        ...

    tag_and_split_method.__name__ = "tag_and_split"
    monkeypatch.setattr(IRSchedule, "tag_and_split", generated(tag_and_split_method), raising=False)
    func = _elementwise()
    sch: Any = IRSchedule(func)
    i, j = sch.get_loops("B")
    first = sch.tag_and_split("B", [i, j], tag="marked")
    assert isinstance(first, LoopRV) and first == i and first.rv_name == "e2"
    assert dict(sch.get("B").schedule_block.attrs)["marked"] == 1
    step = sch.trace.steps[-1]
    assert (step.kind, step.inputs, step.attrs, step.outputs) == (
        "tag_and_split", {"loops": ["e0", "e1"]}, {"block": "B", "tag": "marked"}, ["e2"])
    assert "e2 = sch.tag_and_split(block='B', loops=[e0, e1], tag='marked')" in sch.trace.as_python()
    replayed = replay(Trace.from_json(sch.trace.to_json()), func)
    assert cp.ir.structural_equal(replayed.func, sch.func)
    with pytest.raises(TypeError, match="tag_and_split: expected a block name or block handle"):
        sch.tag_and_split(i, [i, j])
    with pytest.raises(cp.ScheduleError, match="tag_and_split: 'loops' mixes handles and other values"):
        sch.tag_and_split("B", [i, "j"])
    with pytest.raises(TypeError, match="tag_and_split: missing a required argument"):
        sch.tag_and_split("B")  # type: ignore[call-arg]


def test_generated_methods_reject_handles_of_two_functions() -> None:
    f1, f2 = _elementwise(), _elementwise()
    mod = cp.ir.Module("m", (f1, dataclasses.replace(f2, name="g")))
    sch = IRSchedule(mod)
    blocks = sch.get_all_blocks()
    loop_of_second = sch.get_loops(blocks[1])[0]
    with pytest.raises(cp.ScheduleError,
                       match="compute_at: the block and the loop are in different functions"):
        sch.compute_at(blocks[0], loop_of_second)


def test_registration_rejects_signatures_it_cannot_derive(scratch_registry: None) -> None:
    with pytest.raises(TypeError, match="first parameter must be the LoweredFunc"):
        primitive(lambda loop: loop)
    with pytest.raises(TypeError, match="must return LoweredFunc or tuple"):
        @primitive
        def bad_return(func: LoweredFunc, loop: For) -> For:
            return loop
    with pytest.raises(TypeError, match="without handle parameters runs on every function"):
        @primitive
        def no_handles(func: LoweredFunc) -> tuple[LoweredFunc, Tensor]:
            raise AssertionError
    with pytest.raises(TypeError, match="from_schedule names no parameter"):
        @primitive(from_schedule={"limits": "gpu_limits"})
        def no_limits(func: LoweredFunc, loop: For) -> LoweredFunc:
            return func


def test_declarations_must_match_the_primitive() -> None:
    with pytest.raises(TypeError,
                       match=r"declares \(loop, factor\) but the primitive takes \(loop, factors\)"):
        class _Bad(IRSchedule):
            @generated
            def split(self, loop: LoopRV, factor: int) -> list[LoopRV]:
                ...
    with pytest.raises(TypeError, match="'keep_unit_loops' defaults to True"):
        class _Bad2(IRSchedule):
            @generated
            def compute_at(self, block: str, loop: LoopRV, keep_unit_loops: bool = True) -> None:
                ...
    with pytest.raises(TypeError, match="no @primitive of that name"):
        class _Bad3(IRSchedule):
            @generated
            def not_a_primitive(self) -> None:
                ...


def test_report_is_a_declared_field() -> None:
    sch = IRSchedule(_elementwise())
    assert sch.report is None
    with pytest.raises(AttributeError, match="not made by auto_schedule"):
        _ = sch.auto_report
    auto = cp.auto_schedule(_elementwise(), target="x86")
    assert auto.report is not None and auto.auto_report is auto.report and auto.report.strategy
