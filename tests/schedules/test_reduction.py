"""factorize_reduction / rfactor: golden IR, one test per rule, differential runs."""

from __future__ import annotations

import importlib

import pytest

from cinn_py.ir import print_ir
from schedules.primitives.split import split
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import assert_same_results, block, loops

R = importlib.import_module("schedules.primitives.reduction")
SYM = ({"N": 1}, {"N": 3})


def _reduce(n: object = None) -> object:
    return P.reduce_sum((P.sym("N") if n is None else n, 16))


FACTORIZED = """\
serial for (i, 0ll, N)
{
  ScheduleBlock(B__reduce_init)
  {
    i0 = axis.bind(i)
    B__reduce_init[i0] = 0.00000000f
  }
  serial for (k0, 0ll, 4ll)
  {
    ScheduleBlock(B_rf__reduce_init)
    {
      i0_1, i1_0 = axis.bind(i, k0)
      B_rf__reduce_init[i0_1, i1_0] = 0.00000000f
    }
    serial for (k0_0, 0ll, 4ll)
    {
      ScheduleBlock(B_rf)
      {
        i0_2, i1_1, i1_2 = axis.bind(i, ((k0 * 4ll) + k0_0), k0)
        B_rf[i0_2, i1_2] = (B_rf[i0_2, i1_2] + A[i0_2, i1_1])
      }
    }
    ScheduleBlock(B)
    {
      i0_3, i1_3 = axis.bind(i, k0)
      B[i0_3] = (B[i0_3] + B_rf[i0_3, i1_3])
    }
  }
}"""


def test_factorize_golden_symbolic() -> None:
    f = _reduce()
    f, _ = split(f, loops(f, "B")[1], [4, 4])
    g, rf = R.factorize_reduction(f, loops(f, "B")[1], 1)
    assert rf.name == "B_rf" and len(rf.shape) == 2
    assert print_ir(g.body.stmts[0].schedule_block.body) == FACTORIZED
    assert rf.buffer in g.temp_bufs
    assert_same_results(f, g, SYM)


def test_factorize_keeps_loop_handle() -> None:
    f = _reduce()
    loop = loops(f, "B")[1]
    g, _ = R.factorize_reduction(f, loop, 0)
    assert loops(g, "B")[1].uid == loop.uid
    assert loops(g, "B_rf")[1].uid == loop.uid


def test_factorize_rejects_spatial_loop() -> None:
    f = _reduce()
    with pytest.raises(R.ReductionBlockError):  # the spatial loop holds the init block too
        R.factorize_reduction(f, loops(f, "B")[0], 0)
    f = P.elementwise((4, 4))
    with pytest.raises(R.ReductionBlockError, match="reduction update"):
        R.factorize_reduction(f, loops(f, "B")[1], 0)


def test_factorize_rejects_inner_reduce_loop() -> None:
    f = _reduce()
    f, _ = split(f, loops(f, "B")[1], [4, 4])
    with pytest.raises(R.RfLoopError, match="outermost loop of the reduction"):
        R.factorize_reduction(f, loops(f, "B")[2], 0)


def test_factorize_rejects_bad_rf_axis() -> None:
    f = _reduce()
    with pytest.raises(R.RfAxisError, match="rf_axis must be in \\[0, 1\\]"):
        R.factorize_reduction(f, loops(f, "B")[1], 2)


def test_rfactor_inner_loop_and_results() -> None:
    f = _reduce()
    f, _ = split(f, loops(f, "B")[1], [4, 4])
    g, rf = R.rfactor(f, loops(f, "B")[2], 0)
    text = print_ir(g)
    assert rf.name == "rf_B"
    assert "ScheduleBlock(rf_B__reduce_init)" in text and "serial for (rf_k0_0, 0ll, 4ll)" in text
    assert "B[i0_4] = (B[i0_4] + rf_B[i1_4, i0_4])" in text
    assert_same_results(f, g, SYM)


def test_rfactor_max_identity() -> None:
    import dataclasses

    from cinn_py import ir
    f = _reduce(8)
    b = block(f, "B")
    store = b.schedule_block.body
    mx = dataclasses.replace(store, value=ir.Max(store.value.a, store.value.b))
    f = ir.replace_stmt(f, store, mx)
    g, _ = R.rfactor(f, loops(f, "B")[1], 1)
    assert "] = -inf" in print_ir(g) and "B[i0_4] = cinn_max(B[i0_4], rf_B[i0_4, i1_4])" in print_ir(g)
    assert_same_results(f, g)


def test_stale_loop_rejected() -> None:
    f = _reduce()
    loop = loops(f, "B")[1]
    g, _ = R.factorize_reduction(f, loop, 0)
    with pytest.raises(R.StaleHandleError):
        R.rfactor(g, loop, 0)
