"""reverse_compute_at: golden IR (static and symbolic), one test per rule, trace replay and
interpreter differential runs through `schedules.testing.check_schedule`."""

from __future__ import annotations

import pytest

from cinn_py import ir
from cinn_py.frontend.compute import compute, placeholder, reduce_axis, reduce_sum, sym
from cinn_py.ir import print_ir
from cinn_py.lowering import lower
from schedules import IllegalDependenceError, IRSchedule, LoopNotFoundError, StaleHandleError
from schedules.analysis.loops import enclosing_loops, find_block
from schedules.primitives.reverse_compute_at import RegionError, reverse_compute_at
from schedules.testing import check_results, check_schedule
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import lowered_two_stage, root_text

SYM2 = [{"S0": 1, "S1": 1}, {"S0": 5, "S1": 3}, {"S0": 7, "S1": 2}]


AT_OUTER = """\
serial for (i, 0, 4)
{
  serial for (j, 0, 8)
  {
    ScheduleBlock(B)
    {
      i0, i1 = axis.bind(i, j)
      B[i0, i1] = (A[i0, i1] * 2.00000000f)
    }
  }
  serial for (ax0, 0, 8)
  {
    ScheduleBlock(C)
    {
      i0_0, i1_0 = axis.bind(i, ax0)
      attrs(reverse_compute_at_extra_var:ax0)
      C[i0_0, i1_0] = (B[i0_0, i1_0] + 1.00000000f)
    }
  }
}
"""


def test_consumer_under_outer_producer_loop() -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    block = sch.get_block("C")
    sch.reverse_compute_at(block, sch.get_loops("B")[0])
    assert root_text(sch.func) == AT_OUTER
    assert [str(lp) for lp in sch.get_loops(block)] == ["serial for (i, 0, 4)", "serial for (ax0, 0, 8)"]
    check_schedule(f, sch)


def test_consumer_under_inner_loop_and_unit_loops() -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    sch.reverse_compute_at("C", sch.get_loops("B")[1])
    text = print_ir(sch.func)
    assert "ax0" not in text and "i0_0, i1_0 = axis.bind(i, j)" in text
    assert "attrs(reverse_compute_at_extra_var:)" in text
    check_schedule(f, sch)
    inner = enclosing_loops(f, find_block(f, "B"))[1]
    kept = reverse_compute_at(f, find_block(f, "C"), inner, keep_unit_loops=True)
    text = print_ir(kept)
    assert "serial for (ax0, 0, 1)" in text and "serial for (ax1, 0, 1)" in text
    assert "i0_0, i1_0 = axis.bind((ax0 + i), (ax1 + j))" in text
    check_results(f, kept)


AT_TILED_SYMBOLIC = """\
serial for (i, 0ll, ((S0 + 2ll) / 3ll))
{
  serial for (i_0, 0ll, 3ll)
  {
    if ((((i * 3ll) + i_0) < S0)) {
      serial for (j, 0ll, S1)
      {
        ScheduleBlock(B)
        {
          i0, i1 = axis.bind(((i * 3ll) + i_0), j)
          B[i0, i1] = (A[i0, i1] * 2.00000000f)
        }
      }
    }
  }
  serial for (ax0, 0ll, 3ll)
  {
    serial for (ax1, 0ll, S1)
    {
      if ((((i * 3ll) + ax0) < S0)) {
        ScheduleBlock(C)
        {
          i0_0, i1_0 = axis.bind(((i * 3ll) + ax0), ax1)
          attrs(reverse_compute_at_extra_var:ax0,ax1)
          C[i0_0, i1_0] = (B[i0_0, i1_0] + 1.00000000f)
        }
      }
    }
  }
}
"""


def test_tiled_symbolic_producer_gets_a_guard() -> None:
    f = lowered_two_stage((sym("S0"), sym("S1")))
    sch = IRSchedule(f)
    outer, _ = sch.split(sch.get_loops("B")[0], [-1, 3])
    sch.reverse_compute_at("C", outer)
    assert root_text(sch.func) == AT_TILED_SYMBOLIC
    check_schedule(f, sch, sym_bindings=SYM2)


def test_consumer_of_a_reduction_at_its_spatial_loop() -> None:
    s0 = sym("S0")
    a = placeholder((s0, 6), "float32", "A")
    k = reduce_axis(6)
    b = compute((s0,), lambda i: reduce_sum(a[i, k], [k]), "B")
    c = compute((s0,), lambda i: b[i] * 2.0, "C")
    f = lower("fn", [a, c])
    sch = IRSchedule(f)
    sch.reverse_compute_at("C", sch.get_loops("B")[0])
    text = print_ir(sch.func)
    assert text.index("ScheduleBlock(C)") > text.index("ScheduleBlock(B)")
    assert "i0_1 = axis.bind(i)" in text
    check_schedule(f, sch)
    before = sch.func
    with pytest.raises(IllegalDependenceError, match="under loop 'reduce_k' block 'C' would compute some "
                       "instances more than once"):
        sch.reverse_compute_at("C", sch.get_loops("B")[1])  # inside the reduce loop: partial sums
    assert sch.func is before


def test_reads_from_a_later_iteration_rejected() -> None:
    a = placeholder((9,), "float32", "A")
    b = compute((9,), lambda i: a[i] * 2.0, "B")
    c = compute((8,), lambda i: b[i] + b[i + 1], "C")
    f = lower("fn", [a, c])
    sch = IRSchedule(f)
    with pytest.raises(IllegalDependenceError, match="moving 'C' would reorder its accesses to 'B'"):
        sch.reverse_compute_at("C", sch.get_loops("B")[0])
    assert sch.func is f and [step.kind for step in sch.trace] == ["get_loops"]


def test_block_between_producer_and_consumer_rejected() -> None:
    a = placeholder((4, 8), "float32", "A")
    b = compute((4, 8), lambda i, j: a[i, j] * 2.0, "B")
    y = compute((4, 8), lambda i, j: a[i, j] + 1.0, "Y")
    c = compute((4, 8), lambda i, j: b[i, j] + y[i, j], "C")
    f = lower("fn", [a, c])
    with pytest.raises(IllegalDependenceError, match="accesses to 'Y' with block 'Y'"):
        reverse_compute_at(f, find_block(f, "C"), enclosing_loops(f, find_block(f, "B"))[0])


def test_reduction_consumer_needs_its_init_moved_first() -> None:
    a = placeholder((4, 6), "float32", "A")
    b = compute((4, 6), lambda i, j: a[i, j] * 2.0, "B")
    k = reduce_axis(6)
    c = compute((4,), lambda i: reduce_sum(b[i, k], [k]), "C")
    f = lower("fn", [a, c])
    loop = enclosing_loops(f, find_block(f, "B"))[0]
    with pytest.raises(IllegalDependenceError, match="accesses to 'C' with block 'C__reduce_init'"):
        reverse_compute_at(f, find_block(f, "C"), loop)
    with pytest.raises(RegionError, match="'C__reduce_init' reads nothing that the blocks under loop 'i'"):
        reverse_compute_at(f, find_block(f, "C__reduce_init"), loop)


def test_loop_after_or_around_the_block_rejected() -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    with pytest.raises(LoopNotFoundError, match="must come after loop 'i'.*use compute_at"):
        sch.reverse_compute_at("B", sch.get_loops("C")[0])
    with pytest.raises(LoopNotFoundError, match="loop 'i' must not enclose block 'C'"):
        sch.reverse_compute_at("C", sch.get_loops("C")[0])


def test_consumer_with_transformed_loops_rejected() -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    sch.split(sch.get_loops("C")[1], [2, 4])
    with pytest.raises(RegionError, match=r"iter var 'i1_0' of block 'C' is bound to \(\(j \* 4\) \+ j_0\)"):
        sch.reverse_compute_at("C", sch.get_loops("B")[0])


def test_region_not_covering_the_consumer_rejected() -> None:
    idt = ir.dtype.int32
    a, b, c = P.tensor("A", [4, 8], idt), P.tensor("B", [4, 8], idt), P.tensor("C", [4, 8], idt)
    s1 = P.stage("B", [4, 4], idt, lambda iv: ir.Store(b, ir.Load(a, tuple(iv)), tuple(iv)))
    s2 = P.stage("C", [4, 8], idt, lambda iv: ir.Store(c, ir.Load(b, tuple(iv)), tuple(iv)))
    f = P.func("fn", [a], [c], [s1, s2], temps=[b])
    with pytest.raises(RegionError, match=r"does not cover iter var 'i1_0' of block 'C'.*\[0, 7\]"):
        reverse_compute_at(f, find_block(f, "C"), enclosing_loops(f, find_block(f, "B"))[0])


def test_producer_loop_not_splitting_the_data_rejected() -> None:
    a = placeholder((4, 8), "float32", "A")
    b = compute((4, 8), lambda i, j: a[i, j] * 2.0, "B")
    c = compute((4,), lambda i: b[i, 0] + b[i, 7], "C")
    f = lower("fn", [a, c])
    with pytest.raises(IllegalDependenceError):
        reverse_compute_at(f, find_block(f, "C"), enclosing_loops(f, find_block(f, "B"))[1])


def test_stale_handles() -> None:
    f = lowered_two_stage((4, 8))
    loop = enclosing_loops(f, find_block(f, "B"))[0]
    g = reverse_compute_at(f, find_block(f, "C"), loop)
    with pytest.raises(StaleHandleError, match="block 'C' is not a block of the current function"):
        reverse_compute_at(g, find_block(f, "C"), enclosing_loops(g, find_block(g, "B"))[0])
    with pytest.raises(StaleHandleError, match="target loop is not a loop of the current function"):
        reverse_compute_at(g, find_block(g, "C"), loop)
    sch = IRSchedule(f)
    loops = sch.get_loops("B")
    sch.split(loops[0], [2, 2])
    with pytest.raises(StaleHandleError, match="replaced or removed by split"):
        sch.reverse_compute_at("C", loops[0])
    with pytest.raises(TypeError, match="keep_unit_loops must be a bool"):
        reverse_compute_at(f, find_block(f, "C"), loop, keep_unit_loops=1)  # type: ignore[arg-type]


def test_new_loops_named_apart_from_a_target_loop_compute_at_created() -> None:
    """reverse_compute_at under an `ax0` loop made by compute_at: C's new loop for its last
    dim is named apart (`ax0_0`); an `ax0` would shadow the target's and bind C at
    `(i, ax0, ax0)`."""
    a = placeholder((4, 4, 4), "float32", "A")
    b = compute((4, 4, 4), lambda i, j, k: a[i, j, k] + 1.0, "B")
    c = compute((4, 4, 4), lambda i, j, k: b[i, j, k] * 2.0, "C")
    d = compute((4, 4, 4), lambda i, j, k: c[i, j, k] - 1.0, "D")
    f = lower("f", [a, d])
    sch = IRSchedule(f)
    sch.compute_at("B", sch.get_loops("C")[0])
    sch.reverse_compute_at("C", sch.get_loops("B")[1])
    assert "axis.bind(i, ax0, ax0_0)" in str(sch)
    check_schedule(f, sch)
