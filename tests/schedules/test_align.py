"""align_iter_space: the seed's [sp, rb] form for every block kind, errors, differential runs."""

from __future__ import annotations

import importlib

import pytest

from cinn_py.ir import print_ir
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import assert_same_results, block, loops
from tests.schedules.seed_program import seed_func

A = importlib.import_module("schedules.primitives.align")
SYM = ({"S1": 1, "S2": 1}, {"S1": 3, "S2": 5}, {"S1": 4, "S2": 7})


def test_seed_aligned_golden() -> None:
    f = seed_func(8)
    g = A.align_iter_space(f)
    text = print_ir(g)
    # every nest starts with the fused spatial loop
    assert text.count("serial for (sp, 0ll, (S1 * S2))") == 6
    # reduction, elementwise and broadcast [S1, S2, R] blocks all get rb
    assert text.count("serial for (rb, 0ll, 8ll)") == 5
    for name in ("A", "C", "E"):
        assert [lp.loop_var.name for lp in loops(g, name)] == ["sp", "rb"]
    assert [lp.loop_var.name for lp in loops(g, "D")] == ["sp"]
    realize = block(g, "E")
    assert [print_ir(v) for v in realize.iter_values] == ["(sp / S2)", "(sp % S2)", "rb"]
    assert_same_results(f, g, SYM)


def test_three_spatial_dims() -> None:
    f = P.two_stage((P.sym("N"), 3, 5))
    g = A.align_iter_space(f)
    assert [print_ir(v) for v in block(g, "C").iter_values] == ["(sp / 15ll)", "((sp / 5ll) % 3ll)", "(sp % 5ll)"]
    assert_same_results(f, g, ({"N": 2},))


def test_static_reduce_group() -> None:
    f = P.reduce_sum((6, 4))
    g = A.align_iter_space(f)
    assert [lp.extent for lp in loops(g, "B")] == [lp.extent for lp in loops(f, "B")]
    assert [lp.loop_var.name for lp in loops(g, "B")] == ["sp", "rb"]
    assert_same_results(f, g)


def test_mismatched_nest_rejected() -> None:
    from cinn_py import ir
    import dataclasses
    f = P.two_stage((4, 8))
    other = P.stage("D", (8, 4), ir.dtype.int32, lambda v: ir.Store(
        P.tensor("D", (8, 4), ir.dtype.int32), ir.const(1.0), tuple(v)))
    root = f.body.stmts[0].schedule_block
    f2 = ir.replace_stmt(f, root, dataclasses.replace(root, body=ir.Block(root.body.stmts + (other,))))
    with pytest.raises(A.AlignError, match=r"spatial extents \[8, 4\], but this one has \[4, 8\]"):
        A.align_iter_space(f2)
