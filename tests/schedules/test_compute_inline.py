"""compute_inline / reverse_compute_inline: golden IR, one test per rule, differential runs."""

from __future__ import annotations

import pytest

from cinn_py.ir import print_ir
import importlib

ci = importlib.import_module("schedules.primitives.compute_inline")
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import assert_same_results, block
from tests.schedules.seed_program import seed_func

SYM = ({"S1": 1, "S2": 1}, {"S1": 3, "S2": 5}, {"S1": 4, "S2": 7})


def test_inline_two_stage_golden() -> None:
    f = P.two_stage((P.sym("N"), 8))
    g = ci.compute_inline(f, block(f, "B"))
    assert "ScheduleBlock(B)" not in print_ir(g)
    assert "C[i0_0, i1_0] = ((A[i0_0, i1_0] + 1.00000000f) * 2.00000000f)" in print_ir(g)
    assert "serial for (i, 0ll, N)" in print_ir(g)
    assert_same_results(f, g, ({"N": 3}, {"N": 1}))


def test_inline_seed_chain() -> None:
    f = seed_func(8)
    g = f
    for name in "ABDE":
        g = ci.compute_inline(g, block(g, name))
    text = print_ir(g)
    assert "(C[i0_2, i1_2] + ((X[i0_2, i1_2, i2_1] * 2.00000000f) + 1.00000000f))" in text
    assert "F[i0_5, i1_5, i2_3] = ((C[i0_5, i1_5] * 2.00000000f) + 1.00000000f)" in text
    assert_same_results(f, g, SYM)


def test_inline_keeps_untouched_uids() -> None:
    f = seed_func(8)
    c = block(f, "C")
    g = ci.compute_inline(f, block(f, "A"))
    assert block(g, "C").uid == c.uid and block(g, "C") is c


def test_inline_reduction_rejected() -> None:
    f = seed_func(8)
    with pytest.raises(ci.InlineReductionError, match="must not be a reduction"):
        ci.compute_inline(f, block(f, "C"))


def test_inline_output_rejected() -> None:
    f = seed_func(8)
    with pytest.raises(ci.InlineOutputError, match="argument of function"):
        ci.compute_inline(f, block(f, "F"))


def test_inline_pattern_rejected() -> None:
    f = P.shifted()
    with pytest.raises(ci.InlineReductionError):  # reads its own output
        ci.compute_inline(f, block(f, "A"))
    f = P.two_stage((4, 4))
    b = block(f, "B")
    store = b.schedule_block.body
    import dataclasses
    from cinn_py import ir
    bad = dataclasses.replace(store, indices=(store.indices[1], store.indices[0] + 1))
    f2 = ir.replace_stmt(f, store, bad)
    with pytest.raises(ci.InlineBodyPatternError, match="distinct iter vars"):
        ci.compute_inline(f2, block(f2, "B"))


def test_inline_multiple_writers_rejected() -> None:
    # Differs from CINN: a second writer of the inlined tensor is really detected.
    import dataclasses

    from cinn_py import ir
    from schedules.analysis.loops import all_blocks

    f = P.two_stage((4, 4))
    b_tensor = block(f, "B").schedule_block.body.tensor
    extra = P.stage("B2", (4, 4), ir.dtype.int32, lambda v: ir.Store(b_tensor, ir.const(0.0), tuple(v)))
    root = f.body.stmts[0].schedule_block
    f2 = ir.replace_stmt(f, root, dataclasses.replace(root, body=ir.Block((extra,) + root.body.stmts)))
    b = [x for x in all_blocks(f2) if x.name == "B"][0]
    with pytest.raises(ci.InlineMultipleWritersError, match="exactly one writer block, but 2"):
        ci.compute_inline(f2, b)


def test_stale_block_rejected() -> None:
    f = seed_func(8)
    a = block(f, "A")
    g = ci.compute_inline(f, a)
    with pytest.raises(ci.StaleHandleError):
        ci.compute_inline(g, a)


def test_reverse_inline_golden_and_results() -> None:
    f = seed_func(8)
    g = ci.reverse_compute_inline(f, block(f, "F"))
    text = print_ir(g)
    assert "ScheduleBlock(F)" not in text
    assert "F[i0_4, i1_4, i2_2] = (D[i0_4, i1_4] + 1.00000000f)" in text
    assert_same_results(f, g, SYM)


def test_reverse_inline_broadcast_pattern_rejected() -> None:
    f = seed_func(8)
    g = ci.reverse_compute_inline(f, block(f, "F"))
    with pytest.raises(ci.InlineBodyPatternError, match="every load of 'D'"):
        ci.reverse_compute_inline(g, block(g, "E"))


def test_reverse_inline_reduction_rejected() -> None:
    f = seed_func(8)
    with pytest.raises(ci.InlineReductionError):
        ci.reverse_compute_inline(f, block(f, "C"))
    # D's producer is the reduction C, written by C__reduce_init and C.
    with pytest.raises(ci.InlineMultipleWritersError, match="C__reduce_init, C"):
        ci.reverse_compute_inline(f, block(f, "D"))
