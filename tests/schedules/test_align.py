"""align_iter_space: the seed's [sp, rb] form for every block kind, loop kinds, errors; every
schedule is replayed (JSON + Python) and interpreted against the unscheduled IR."""

from __future__ import annotations

import dataclasses

import pytest

from cinn_py import ir
from cinn_py.ir import print_ir
from schedules import IRSchedule, LoopKindError
from schedules.primitives.align import AlignError
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import SYM2, check, iter_values, loop_names
from tests.schedules.seed_program import seed_func


def test_seed_aligned_golden() -> None:
    f = seed_func(8)
    sch = IRSchedule(f)
    sch.align_iter_space()
    text = str(sch)
    # every nest starts with the fused spatial loop
    assert text.count("serial for (sp, 0ll, (S1 * S2))") == 6
    # reduction, elementwise and broadcast [S1, S2, R] blocks all get rb
    assert text.count("serial for (rb, 0ll, 8ll)") == 5
    for name in ("A", "C", "E"):
        assert loop_names(sch, name) == ["sp", "rb"]
    assert loop_names(sch, "D") == ["sp"]
    assert iter_values(sch, "E") == ["(sp / S2)", "(sp % S2)", "rb"]
    check(f, sch, SYM2)


def test_three_spatial_dims_symbolic() -> None:
    f = P.two_stage((P.sym("N"), 3, 5))
    sch = IRSchedule(f)
    sch.align_iter_space()
    assert iter_values(sch, "C") == ["(sp / 15ll)", "((sp / 5ll) % 3ll)", "(sp % 5ll)"]
    assert "serial for (sp, 0ll, (N * 15ll))" in str(sch)
    check(f, sch, ({"N": 1}, {"N": 2}, {"N": 5}))


def test_static_reduce_group_golden() -> None:
    f = P.reduce_sum((6, 4))
    sch = IRSchedule(f)
    sch.align_iter_space()
    assert print_ir(sch.func.body.stmts[0].schedule_block.body) == """\
serial for (sp, 0, 6)
{
  ScheduleBlock(B__reduce_init)
  {
    i0 = axis.bind(sp)
    B__reduce_init[i0] = 0.00000000f
  }
  serial for (rb, 0, 4)
  {
    ScheduleBlock(B)
    {
      i0_0, i1 = axis.bind(sp, rb)
      B[i0_0] = (B[i0_0] + A[i0_0, i1])
    }
  }
}"""
    check(f, sch)


def test_single_loop_keeps_its_kind_and_handle() -> None:
    f = P.reduce_sum((6, 4))
    sch = IRSchedule(f)
    i, k = sch.get_loops("B")
    sch.bind(i, "threadIdx.x")
    sch.align_iter_space()
    assert "thread_bind[threadIdx.x] for (sp, 0, 6)" in str(sch)
    assert sch.get_loops("B") == [i, k]  # renamed only: the handles stay valid
    check(f, sch)


@pytest.mark.parametrize("kind", ["bind", "vectorize", "parallel", "unroll"])
def test_fused_loops_must_be_serial(kind: str) -> None:
    f = P.two_stage((4, 8))
    sch = IRSchedule(f)
    i, j = sch.get_loops("C")
    if kind == "bind":
        sch.bind(j, "threadIdx.x")
    elif kind == "vectorize":
        sch.vectorize(j, 4)
    else:
        getattr(sch, kind)(j)
    before, steps = sch.func, len(sch.trace)
    with pytest.raises(LoopKindError, match=r"align_iter_space: loop 'j' must be serial to be fused into the "
                                            r"aligned loop, but is "):
        sch.align_iter_space()
    assert sch.func is before and len(sch.trace) == steps


def test_mismatched_nest_rejected() -> None:
    f = P.two_stage((4, 8))
    other = P.stage("D", (8, 4), ir.dtype.int32, lambda v: ir.Store(
        P.tensor("D", (8, 4), ir.dtype.int32), ir.const(1.0), tuple(v)))
    root = f.body.stmts[0].schedule_block
    f2 = ir.replace_stmt(f, root, dataclasses.replace(root, body=ir.Block(root.body.stmts + (other,))))
    sch = IRSchedule(f2)
    with pytest.raises(AlignError, match=r"spatial extents \[8, 4\], but this one has \[4, 8\]") as err:
        sch.align_iter_space()
    assert "^^^" in err.value.detail
    assert sch.func is f2


def test_reduce_extent_mismatch_rejected() -> None:
    f = seed_func(8)
    sch = IRSchedule(f)
    _, _, k = sch.get_loops("A")
    sch.split(k, [2, 4])
    with pytest.raises(AlignError, match=r"only hold blocks or loops of the reduce extents \[8ll\], but has "
                                         r"\[2ll, 4ll\]"):
        sch.align_iter_space()


def test_align_of_a_0d_reduction_is_a_schedule_error() -> None:
    """A group with no spatial loops has nothing to align on: a clear ScheduleError, IR unchanged."""
    import cinn_py as cp
    from schedules import IRSchedule
    from schedules.primitives.align import AlignError

    a = cp.placeholder((16,), "float32", "A")
    k = cp.reduce_axis(16, "k")
    r = cp.compute((), lambda: cp.reduce_sum(a[k], [k]), "R")
    sch = IRSchedule(cp.lower("ra", [a, r]))
    before = str(sch)
    with pytest.raises(AlignError, match="no spatial loops"):
        sch.align_iter_space()
    assert str(sch) == before
