"""compute_inline / reverse_compute_inline through IRSchedule: golden IR (static and symbolic), one
test per rule, and for every successful schedule trace replay plus an interpreter differential
run over several bindings of the symbolic dims."""

from __future__ import annotations

import dataclasses

import pytest

from cinn_py import ir
from cinn_py.ir import print_ir
from schedules import IRSchedule, StaleHandleError
from schedules.analysis.loops import all_blocks
from schedules.primitives.compute_inline import (
    InlineBodyPatternError, InlineMultipleWritersError, InlineOutputError, InlineReductionError,
)
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import SYM2, block, check
from tests.schedules.seed_program import seed_func


def test_inline_two_stage_golden_symbolic() -> None:
    f = P.two_stage((P.sym("N"), 8))
    sch = IRSchedule(f)
    sch.compute_inline("B")
    assert print_ir(sch.func.body.stmts[0].schedule_block.body) == """\
{
  serial for (i, 0ll, N)
  {
    serial for (j, 0ll, 8ll)
    {
      ScheduleBlock(C)
      {
        i0_0, i1_0 = axis.bind(i, j)
        C[i0_0, i1_0] = ((A[i0_0, i1_0] + 1.00000000f) * 2.00000000f)
      }
    }
  }
}"""
    check(f, sch, ({"N": 1}, {"N": 3}))


def test_inline_seed_chain() -> None:
    f = seed_func(8)
    sch = IRSchedule(f)
    for name in "ABDE":
        sch.compute_inline(name)
    text = str(sch)
    assert "(C[i0_2, i1_2] + ((X[i0_2, i1_2, i2_1] * 2.00000000f) + 1.00000000f))" in text
    assert "F[i0_5, i1_5, i2_3] = ((C[i0_5, i1_5] * 2.00000000f) + 1.00000000f)" in text
    check(f, sch, SYM2)


def test_inline_keeps_untouched_handles() -> None:
    sch = IRSchedule(seed_func(8))
    c, c_loops = sch.get_block("C"), sch.get_loops("C")
    uid = block(sch, "C").uid
    sch.compute_inline("A")
    assert block(sch, "C").uid == uid and sch.get_loops(c) == c_loops


def test_inline_reduction_rejected() -> None:
    sch = IRSchedule(seed_func(8))
    with pytest.raises(InlineReductionError,
                       match="compute_inline: block 'C' must not be a reduction, but it has "
                                                   "reduce iter vars"):
        sch.compute_inline("C")


def test_inline_output_rejected() -> None:
    sch = IRSchedule(seed_func(8))
    with pytest.raises(InlineOutputError, match="argument of function"):
        sch.compute_inline("F")


def test_inline_self_read_rejected() -> None:
    sch = IRSchedule(P.shifted())
    with pytest.raises(InlineReductionError):  # reads its own output
        sch.compute_inline("A")


def test_inline_pattern_rejected() -> None:
    f = P.two_stage((4, 4))
    store = P_block(f, "B").schedule_block.body
    bad = dataclasses.replace(store, indices=(store.indices[1], store.indices[0] + 1))
    sch = IRSchedule(ir.replace_stmt(f, store, bad))
    with pytest.raises(InlineBodyPatternError, match="distinct iter vars"):
        sch.compute_inline("B")


def P_block(f: ir.LoweredFunc, name: str) -> ir.ScheduleBlockRealize:
    return next(b for b in all_blocks(f) if b.name == name)


def test_inline_multiple_writers_rejected() -> None:
    # Differs from CINN: a second writer of the inlined tensor is really detected.
    f = P.two_stage((4, 4))
    b_tensor = P_block(f, "B").schedule_block.body.tensor
    extra = P.stage("B2", (4, 4), ir.dtype.int32, lambda v: ir.Store(b_tensor, ir.const(0.0), tuple(v)))
    root = f.body.stmts[0].schedule_block
    sch = IRSchedule(ir.replace_stmt(f, root,
                                     dataclasses.replace(root, body=ir.Block((extra,) + root.body.stmts))))
    with pytest.raises(InlineMultipleWritersError, match="exactly one writer block, but 2"):
        sch.compute_inline("B")


def test_stale_block_rejected() -> None:
    sch = IRSchedule(seed_func(8))
    a = sch.get_block("A")
    sch.compute_inline(a)
    with pytest.raises(StaleHandleError, match=r"compute_inline: handle to block 'A' \(e0\) is stale: it was "
                                               r"replaced or removed by compute_inline \(trace step 1\)"):
        sch.compute_inline(a)


def test_reverse_inline_golden_and_results() -> None:
    f = seed_func(8)
    sch = IRSchedule(f)
    sch.reverse_compute_inline("F")
    text = str(sch)
    assert "ScheduleBlock(F)" not in text
    assert "F[i0_4, i1_4, i2_2] = (D[i0_4, i1_4] + 1.00000000f)" in text
    check(f, sch, SYM2)


def test_reverse_inline_static_golden() -> None:
    f = P.two_stage((4, 8))
    sch = IRSchedule(f)
    sch.reverse_compute_inline("C")
    assert "C[i0, i1] = ((A[i0, i1] + 1.00000000f) * 2.00000000f)" in str(sch)
    check(f, sch)


def test_reverse_inline_broadcast_pattern_rejected() -> None:
    sch = IRSchedule(seed_func(8))
    sch.reverse_compute_inline("F")
    with pytest.raises(InlineBodyPatternError, match="every load of 'D'"):
        sch.reverse_compute_inline("E")


def test_reverse_inline_reduction_rejected() -> None:
    sch = IRSchedule(seed_func(8))
    with pytest.raises(InlineReductionError):
        sch.reverse_compute_inline("C")
    # D's producer is the reduction C, written by C__reduce_init and C.
    with pytest.raises(InlineMultipleWritersError, match="C__reduce_init, C"):
        sch.reverse_compute_inline("D")
