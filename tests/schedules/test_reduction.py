"""factorize_reduction / rfactor through IRSchedule: golden IR (symbolic and static), one test per
rule, binding the rf loop after factorize_reduction, and for every successful schedule trace
replay plus an interpreter differential run over several bindings of the symbolic dims."""

from __future__ import annotations

import dataclasses

import pytest

from cinn_py import ir
from cinn_py.ir import print_ir
from schedules import IllegalDependenceError, IRSchedule, StaleHandleError
from schedules.analysis.loops import all_blocks
from schedules.primitives.reduction import ReductionBlockError, RfAxisError, RfLoopError
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import check

SYM = ({"N": 1}, {"N": 3}, {"N": 6})


def _reduce(n: object = None) -> ir.LoweredFunc:
    return P.reduce_sum((P.sym("N") if n is None else n, 16))


def _body(sch: IRSchedule) -> str:
    return print_ir(sch.func.body.stmts[0].schedule_block.body)


FACTORIZED = """\
serial for (i, 0ll, N)
{
  ScheduleBlock(B__reduce_init)
  {
    i0 = axis.bind(i)
    B__reduce_init[i0] = 0.00000000f
  }
  serial for (k0_0, 0ll, 4ll)
  {
    ScheduleBlock(B_rf__reduce_init)
    {
      i0_1, i1_0 = axis.bind(i, k0_0)
      B_rf__reduce_init[i0_1, i1_0] = 0.00000000f
    }
    serial for (k0_1, 0ll, 4ll)
    {
      ScheduleBlock(B_rf)
      {
        i0_2, i1_1, i1_2 = axis.bind(i, ((k0_0 * 4ll) + k0_1), k0_0)
        B_rf[i0_2, i1_2] = (B_rf[i0_2, i1_2] + A[i0_2, i1_1])
      }
    }
    ScheduleBlock(B)
    {
      i0_3, i1_3 = axis.bind(i, k0_0)
      B[i0_3] = (B[i0_3] + B_rf[i0_3, i1_3])
    }
  }
}"""


def test_factorize_golden_symbolic() -> None:
    f = _reduce()
    sch = IRSchedule(f)
    sch.split(sch.get_loops("B")[1], [4, 4])
    rf = sch.factorize_reduction(sch.get_loops("B")[1], 1)
    assert rf.name == "B_rf" and [print_ir(d) for d in rf.shape] == ["N", "4ll"]
    assert _body(sch) == FACTORIZED
    assert rf.buffer in sch.func.temp_bufs
    check(f, sch, SYM)


def test_factorize_then_bind_rf_loop() -> None:
    """CINN's TileFirstGeneralTactic order: factorize, then bind the rf loop to threadIdx.x (each
    thread owns a B_rf slot; the write-back becomes a cross-thread reduction)."""
    f = _reduce(8)
    sch = IRSchedule(f)
    sch.split(sch.get_loops("B")[1], [4, 4])
    sch.factorize_reduction(sch.get_loops("B")[1], 1)
    sch.bind(sch.get_loops("B")[1], "threadIdx.x")
    sch.bind(sch.get_loops("B")[0], "blockIdx.x")
    assert "thread_bind[threadIdx.x] for (k0_0, 0, 4)" in str(sch)
    check(f, sch)


def test_rf_loop_bind_rejected_when_result_read_inside() -> None:
    """A block reading the reduction's result inside the rf loop is a real cross-iteration
    dependence, unlike the accumulation itself."""
    f = _reduce(8)
    sch = IRSchedule(f)
    sch.factorize_reduction(sch.get_loops("B")[1], 1)
    k = sch.get_loops("B")[1]
    with pytest.raises(IllegalDependenceError, match="bind: loop 'k0' carries a dependence"):
        sch.bind(k, "blockIdx.x")  # blocks cannot reduce across each other
    with pytest.raises(IllegalDependenceError, match="vectorize: loop 'k0' carries a dependence"):
        sch.vectorize(k, 4)


def test_factorize_keeps_loop_handle() -> None:
    sch = IRSchedule(_reduce())
    loop = sch.get_loops("B")[1]
    sch.factorize_reduction(loop, 0)
    assert sch.get_loops("B")[1] == loop and sch.get_loops("B_rf")[1] == loop


def test_rfactor_twice_gives_fresh_names() -> None:
    """Factoring the final reduction again must not reuse `rf_B` (two buffers of one name)."""
    f = _reduce(8)
    sch = IRSchedule(f)
    first = sch.rfactor(sch.get_loops("B")[1], 0)
    second = sch.rfactor(sch.get_loops("B")[1], 1)
    third = sch.factorize_reduction(sch.get_loops("B")[1], 0)
    assert (first.name, second.name, third.name) == ("rf_B", "rf_B_0", "B_rf")
    assert len({b.name for b in sch.func.temp_bufs}) == len(sch.func.temp_bufs) == 3
    check(f, sch)


def test_factorize_rejects_spatial_loop() -> None:
    sch = IRSchedule(_reduce())
    with pytest.raises(ReductionBlockError,
                       match="loop 'i' must contain exactly one schedule block, but contains 2"):
        sch.factorize_reduction(sch.get_loops("B")[0], 0)
    sch = IRSchedule(P.elementwise((4, 4)))
    with pytest.raises(ReductionBlockError, match="block 'B' must be a reduction update"):
        sch.factorize_reduction(sch.get_loops("B")[1], 0)


def test_factorize_rejects_spatial_loop_of_update() -> None:
    f = P.reduce_sum((8, 16))
    init = next(b for b in all_blocks(f) if b.name == "B__reduce_init")
    sch = IRSchedule(ir.replace_stmt(f, init, ir.Block(())))  # the update alone under 'i'
    with pytest.raises(RfLoopError,
                       match="loop 'i' must be a pure reduce loop of block 'B', but it drives spatial "
                                          "iter var"):
        sch.factorize_reduction(sch.get_loops("B")[0], 0)


def test_factorize_inner_split_loop_like_tvm_rfactor() -> None:
    """The inner loop of a split reduction (here non-dividing: 10 = 3 x 4 with a guard) is
    moved above the outer one first, so the partial sums are indexed by it (TVM's rfactor on an
    inner loop: `B_rf[i, k_1] += A[i, k_0 * 4 + k_1]`)."""
    f = P.reduce_sum((P.sym("N"), 10))
    sch = IRSchedule(f)
    outer, inner = sch.split(sch.get_loops("B")[1], [3, -1])
    rf = sch.factorize_reduction(inner, 0)
    assert [print_ir(d) for d in rf.shape] == ["4ll", "N"]
    text = _body(sch)
    assert [line.strip() for line in text.splitlines() if "for (" in line or "if (" in line] == [
        "serial for (i, 0ll, N)", "serial for (k0_1, 0ll, 4ll)", "serial for (k0_0, 0ll, 3ll)",
        "if ((((k0_0 * 4ll) + k0_1) < 10ll)) {"]
    assert "B_rf[i1_2, i0_2] = (B_rf[i1_2, i0_2] + A[i0_2, i1_1])" in text
    assert [str(lp) for lp in sch.get_loops("B")] == ["serial for (i, 0ll, N)", "serial for (k0_1, 0ll, 4ll)"]
    assert str(inner) == "serial for (k0_1, 0ll, 4ll)"      # the handle follows the moved loop
    check(f, sch, SYM)


def test_factorize_a_reduce_loop_outside_the_spatial_loop() -> None:
    """After `reorder(k, i)` the rf loop encloses the spatial loop: the rf init and the write-back
    get their own copies of it (they referenced the update's `i` from outside it: an unbound
    variable; fuzz --cuda --emulate seed 2026 case 693)."""
    f = P.reduce_sum((P.sym("N"), 16))
    sch = IRSchedule(f)
    i, k = sch.get_loops("B")
    sch.reorder([k, i])
    sch.factorize_reduction(sch.get_loops("B")[0], 0)
    loops = [line.strip() for line in _body(sch).splitlines() if "for (" in line]
    assert loops == ["serial for (i, 0ll, N)", "serial for (k0, 0ll, 16ll)", "serial for (i, 0ll, N)",
                     "serial for (i, 0ll, N)", "serial for (i_0, 0ll, N)"], loops
    check(f, sch, SYM)


def test_factorize_inner_loop_then_bind() -> None:
    f = _reduce(8)
    sch = IRSchedule(f)
    _, inner = sch.split(sch.get_loops("B")[1], [4, 4])
    sch.factorize_reduction(inner, 1)
    sch.bind(inner, "threadIdx.x")
    sch.bind(sch.get_loops("B")[0], "blockIdx.x")
    check(f, sch)


@pytest.mark.parametrize("prim", ["factorize_reduction", "rfactor"])
def test_bad_rf_axis(prim: str) -> None:
    sch = IRSchedule(_reduce())
    with pytest.raises(RfAxisError, match=rf"{prim}: rf_axis must be in \[0, 1\] for tensor 'B', but is 2"):
        getattr(sch, prim)(sch.get_loops("B")[1], 2)


def test_rfactor_inner_loop_and_results() -> None:
    f = _reduce()
    sch = IRSchedule(f)
    sch.split(sch.get_loops("B")[1], [4, 4])
    rf = sch.rfactor(sch.get_loops("B")[2], 0)
    text = str(sch)
    assert rf.name == "rf_B"
    assert "ScheduleBlock(rf_B__reduce_init)" in text and "serial for (rf_k0_1, 0ll, 4ll)" in text
    assert "B[i0_4] = (B[i0_4] + rf_B[i1_4, i0_4])" in text
    check(f, sch, SYM)


def test_rfactor_rejects_other_blocks_in_nest() -> None:
    f = P.two_stage((4, 16))
    sch = IRSchedule(f)
    with pytest.raises(ReductionBlockError, match="block 'B' must be a reduction update"):
        sch.rfactor(sch.get_loops("B")[1], 0)


def test_rfactor_max_identity() -> None:
    f = _reduce(8)
    b = next(x for x in all_blocks(f) if x.name == "B")
    store = b.schedule_block.body
    f = ir.replace_stmt(f, store, dataclasses.replace(store, value=ir.Max(store.value.a, store.value.b)))
    sch = IRSchedule(f)
    sch.rfactor(sch.get_loops("B")[1], 1)
    assert "] = -inf" in str(sch) and "B[i0_4] = cinn_max(B[i0_4], rf_B[i0_4, i1_4])" in str(sch)
    check(f, sch)


@pytest.mark.parametrize("prim", ["factorize_reduction", "rfactor"])
def test_stale_loop_rejected(prim: str) -> None:
    sch = IRSchedule(_reduce())
    _, k = sch.get_loops("B")
    sch.split(k, [4, 4])
    with pytest.raises(StaleHandleError,
                       match=rf"{prim}: handle to loop 'k0' \(e1\) is stale: it was replaced "
                                               r"or removed by split \(trace step 1\)"):
        getattr(sch, prim)(k, 0)


def test_rfactor_keeps_the_rf_loop_handle() -> None:
    sch = IRSchedule(_reduce())
    _, k = sch.get_loops("B")
    sch.rfactor(k, 0)
    assert sch.get_loops("rf_B")[1] == k


# -- decompose_reduction --------------------------------------------------------------------------
def test_decompose_reduction_makes_the_update_nest_perfect() -> None:
    fn = _reduce(30)
    sch = IRSchedule(fn)
    i, k = sch.get_loops("B")
    io, ii = sch.split(i, [-1, 8])  # a tail guard on (io, ii)
    init = sch.decompose_reduction("B", ii)
    assert sch.get(init).schedule_block.name == "B__reduce_init"
    sch.reorder([k, ii])  # k now outside the tile loop; the guard follows ii down
    text = print_ir(sch.func)
    assert text.index("B__reduce_init") < text.index("serial for (k0, 0, 16)")
    assert text.index("serial for (k0, 0, 16)") < text.index("serial for (i_0, 0, 8)")
    check(fn, sch)


def test_decompose_reduction_rules() -> None:
    from schedules.errors import InvalidArgumentError
    from schedules.primitives.decompose import DecomposeError

    sch = IRSchedule(_reduce(32))
    i, k = sch.get_loops("B")
    before = print_ir(sch.func)
    with pytest.raises(DecomposeError, match="is not a reduction"):
        sch.decompose_reduction("B__reduce_init", i)
    with pytest.raises(InvalidArgumentError, match="must enclose both"):
        sch.decompose_reduction("B", k)
    assert print_ir(sch.func) == before  # nothing changed
