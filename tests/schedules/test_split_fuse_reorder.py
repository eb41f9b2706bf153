"""Golden, error and differential tests of split, fuse, reorder (and their traces)."""

from __future__ import annotations

import pytest

import cinn_py as cp
from tests.schedules import sched_programs as P

from cinn_py import ir
from schedules import (
    ExtentMismatchError, IllegalDependenceError, InvalidArgumentError, IRSchedule, LoopKindError,
    NotAChainError, NotPerfectlyNestedError,
)
from schedules.testing import check_replay, check_schedule


def body(sch: IRSchedule) -> str:
    """The printed IR under `ScheduleBlock(root)`, dedented, for compact goldens."""
    lines = str(sch).splitlines()[4:-2]
    return "\n".join(line[4:] for line in lines)


def check(before: ir.LoweredFunc, sch: IRSchedule) -> None:
    check_schedule(before, sch)


def test_split_divisible_golden() -> None:
    fn = P.elementwise()
    sch = IRSchedule(fn)
    i, _ = sch.get_loops("B")
    outer, inner = sch.split(i, [4, 8])
    assert body(sch) == """\
serial for (i, 0, 4)
{
  serial for (i_0, 0, 8)
  {
    serial for (j, 0, 64)
    {
      ScheduleBlock(B)
      {
        i0, i1 = axis.bind(((i * 8) + i_0), j)
        B[i0, i1] = (A[i0, i1] * 2.00000000f)
      }
    }
  }
}"""
    assert str(outer) == "serial for (i, 0, 4)" and str(inner) == "serial for (i_0, 0, 8)"
    check(fn, sch)


def test_split_non_dividing_adds_guard() -> None:
    fn = P.elementwise((30, 8))
    sch = IRSchedule(fn)
    i, _ = sch.get_loops("B")
    sch.split(i, [-1, 8])
    text = body(sch)
    assert text.startswith("serial for (i, 0, 4)\n{\n  serial for (i_0, 0, 8)\n  {\n"
                           "    if ((((i * 8) + i_0) < 30)) {")
    check(fn, sch)


def test_split_symbolic_extent_golden() -> None:
    s0 = P.sym("S0")
    fn = P.elementwise((s0, 4))
    sch = IRSchedule(fn)
    i, _ = sch.get_loops("B")
    sch.split(i, [-1, 32])
    assert body(sch).splitlines()[:5] == [
        "serial for (i, 0ll, ((S0 + 31ll) / 32ll))", "{", "  serial for (i_0, 0ll, 32ll)", "  {",
        "    if ((((i * 32ll) + i_0) < S0)) {"]
    check(fn, sch)


def test_split_by_symbolic_factor() -> None:
    s0 = P.sym("S0")
    fn = P.elementwise((s0 * ir.const(4, ir.dtype.int64), 2))
    sch = IRSchedule(fn)
    i, _ = sch.get_loops("B")
    sch.split(i, [s0, 4])
    assert body(sch).splitlines()[0] == "serial for (i, 0ll, S0)"
    assert "if" not in body(sch)
    check_replay(fn, sch)  # the oracle binds dims from plain-symbol input shapes only


@pytest.mark.parametrize(("factors", "error", "match"), [
    ([4, 0], InvalidArgumentError, "positive or -1"),
    ([-1, -1], InvalidArgumentError, "at most one factor may be -1"),
    ([4, -3], InvalidArgumentError, "positive or -1"),
    ([], InvalidArgumentError, "must not be empty"),
    ([2, 8], ExtentMismatchError, "product 16 is smaller than the extent 32"),
    ([64, -1], ExtentMismatchError, "larger than the extent 32"),
])
def test_split_factor_errors(factors: list[int], error: type, match: str) -> None:
    sch = IRSchedule(P.elementwise())
    i, _ = sch.get_loops("B")
    before = str(sch)
    with pytest.raises(error, match=match) as info:
        sch.split(i, factors)
    assert "^^^" in str(info.value) and str(sch) == before and len(sch.trace) == 1


def test_split_symbolic_needs_minus_one_or_proof() -> None:
    sch = IRSchedule(P.elementwise((P.sym("S0"), 4)))
    i, _ = sch.get_loops("B")
    with pytest.raises(ExtentMismatchError, match="cannot prove"):
        sch.split(i, [4, 8])
    with pytest.raises(InvalidArgumentError, match="may only use symbolic dims"):
        sch.split(i, [ir.Var("q", ir.dtype.int64), -1])


def test_split_rejects_bound_loop() -> None:
    sch = IRSchedule(P.elementwise())
    i, _ = sch.get_loops("B")
    sch.bind(i, "blockIdx.x")
    with pytest.raises(LoopKindError, match="split before bind"):
        sch.split(i, [4, 8])


def test_fuse_golden_and_replay() -> None:
    fn = P.elementwise()
    sch = IRSchedule(fn)
    fused = sch.fuse(sch.get_loops("B"))
    assert body(sch) == """\
serial for (i_j_fused, 0, 2048)
{
  ScheduleBlock(B)
  {
    i0, i1 = axis.bind((i_j_fused / 64), (i_j_fused % 64))
    B[i0, i1] = (A[i0, i1] * 2.00000000f)
  }
}"""
    assert str(fused) == "serial for (i_j_fused, 0, 2048)"
    check(fn, sch)


def test_fuse_symbolic_extent() -> None:
    fn = P.elementwise((P.sym("S0"), P.sym("S1")))
    sch = IRSchedule(fn)
    sch.fuse(sch.get_loops("B"))
    assert "serial for (i_j_fused, 0ll, (S0 * S1))" in str(sch)
    assert "axis.bind((i_j_fused / S1), (i_j_fused % S1))" in str(sch)
    check_schedule(fn, sch, sym_bindings=[{"S0": 3, "S1": 5}, {"S0": 1, "S1": 2}])


def test_fuse_errors() -> None:
    sch = IRSchedule(P.reduce_sum())
    i, k = sch.get_loops("B")
    with pytest.raises(NotPerfectlyNestedError, match="holds 2 statements"):
        sch.fuse([i, k])
    with pytest.raises(InvalidArgumentError, match="at least 2 loops"):
        sch.fuse([i])
    with pytest.raises(InvalidArgumentError, match="listed twice"):
        sch.fuse([i, i])
    sch2 = IRSchedule(P.elementwise())
    a, b = sch2.get_loops("B")
    with pytest.raises(NotPerfectlyNestedError):
        sch2.fuse([b, a])
    sch2.unroll(b)
    with pytest.raises(LoopKindError, match="inner loop 'j' must be serial"):
        sch2.fuse([a, b])


def test_reorder_golden_keeps_handles() -> None:
    fn = P.elementwise()
    sch = IRSchedule(fn)
    i, j = sch.get_loops("B")
    sch.reorder([j, i])
    assert body(sch).splitlines()[0] == "serial for (j, 0, 64)"
    assert str(i) == "serial for (i, 0, 32)"
    assert [str(x) for x in sch.get_loops("B")] == ["serial for (j, 0, 64)", "serial for (i, 0, 32)"]
    check(fn, sch)


def test_reorder_preserves_guard_and_unlisted_loops() -> None:
    fn = P.elementwise((30, 6))
    sch = IRSchedule(fn)
    i, j = sch.get_loops("B")
    a, b = sch.split(i, [-1, 8])
    sch.reorder([b, a])
    lines = [line.strip() for line in body(sch).splitlines() if "for" in line or "if" in line]
    assert lines == ["serial for (i_0, 0, 8)", "serial for (i, 0, 4)", "if ((((i * 8) + i_0) < 30)) {",
                     "serial for (j, 0, 6)"]
    check(fn, sch)


def test_reorder_sinks_a_tail_guard_below_the_loops_it_uses() -> None:
    fn = P.elementwise((30, 6))
    sch = IRSchedule(fn)
    i, j = sch.get_loops("B")
    a, b = sch.split(i, [-1, 8])
    sch.reorder([j, a])  # the guard on (i, i_0) would sit above i: it follows i down
    lines = [line.strip() for line in body(sch).splitlines() if "for" in line or "if" in line]
    assert lines == ["serial for (j, 0, 6)", "serial for (i_0, 0, 8)", "serial for (i, 0, 4)",
                     "if ((((i * 8) + i_0) < 30)) {"]
    check(fn, sch)


def test_reduction_loop_reorder_is_allowed() -> None:
    fn = P.reduce_sum()
    sch = IRSchedule(fn)
    _, k = sch.get_loops("B")
    a, b = sch.split(k, [4, 4])
    sch.reorder([b, a])
    check(fn, sch)


def test_reorder_moves_a_split_guard_below_the_loops_it_tests() -> None:
    """CINN moves the guard: `j` goes between `i` and `i_0`, the guard on `i * 8 + i_0` under
    `i_0`, the deepest loop it uses."""
    fn = P.elementwise((30, 6))
    sch = IRSchedule(fn)
    i, j = sch.get_loops("B")
    a, b = sch.split(i, [-1, 8])
    sch.reorder([j, b])
    lines = [line.strip() for line in body(sch).splitlines() if "for" in line or "if" in line]
    assert lines == ["serial for (i, 0, 4)", "serial for (j, 0, 6)", "serial for (i_0, 0, 8)",
                     "if ((((i * 8) + i_0) < 30)) {"]
    check(fn, sch)
    sch2 = IRSchedule(fn)
    a, b = sch2.split(sch2.get_loops("B")[0], [-1, 8])
    sch2.reorder([sch2.get_loops("B")[2], a])          # j outermost, then i_0, i and the guard
    lines = [line.strip() for line in body(sch2).splitlines() if "for" in line or "if" in line]
    assert lines == ["serial for (j, 0, 6)", "serial for (i_0, 0, 8)", "serial for (i, 0, 4)",
                     "if ((((i * 8) + i_0) < 30)) {"]
    check(fn, sch2)


def test_reorder_distributes_an_init_block_beside_the_reduce_loop() -> None:
    """`for i { B__reduce_init; for k { B } }`: reorder([k, i]) first runs the init nest, then
    `for k { for i { B } }`; the loop handles stay on the update's nest."""
    fn = P.reduce_sum()
    sch = IRSchedule(fn)
    i, k = sch.get_loops("B")
    sch.reorder([k, i])
    assert [str(lp) for lp in sch.get_loops("B")] == ["serial for (k0, 0, 16)", "serial for (i, 0, 32)"]
    assert [str(lp) for lp in sch.get_loops("B__reduce_init")] == ["serial for (i, 0, 32)"]
    assert str(i) == "serial for (i, 0, 32)" and sch.get_loops("B")[1] == i
    check(fn, sch)


def test_reorder_distributes_a_computed_at_producer() -> None:
    fn = P.two_stage((8, 6))
    sch = IRSchedule(fn)
    i, j = sch.get_loops("C")
    sch.compute_at("B", i)
    sch.reorder([j, i])
    assert [str(lp) for lp in sch.get_loops("C")] == ["serial for (j, 0, 6)", "serial for (i, 0, 8)"]
    check(fn, sch)


def test_reorder_does_not_distribute_over_a_carried_dependence() -> None:
    """`for i { A[i + 1] = A[i] + 1; for j { C[i, j] = A[i] } }`: running every A update first
    would change what C reads, so the level is not distributed."""
    idt = ir.dtype.int32
    a, c = P.tensor("A", [9], idt), P.tensor("C", [8, 4], idt)
    i, j = ir.Var("i", idt), ir.Var("j", idt)
    v, w, x = ir.Var("i0", idt), ir.Var("i0_0", idt), ir.Var("i1", idt)
    scan = ir.ScheduleBlockRealize((i,), ir.ScheduleBlock(
        "A", (v,), ir.Store(a, ir.Load(a, (v,)) + ir.const(1.0), (v + 1,))))
    use = ir.ScheduleBlockRealize((i, j),
                                  ir.ScheduleBlock("C", (w, x), ir.Store(c, ir.Load(a, (w,)), (w, x))))
    nest = ir.For(i, ir.const(0, idt), ir.const(8, idt), ir.Block((scan, ir.For(
        j, ir.const(0, idt), ir.const(4, idt), ir.Block((use,))))))
    sch = IRSchedule(P.func("fn", [], [a, c], [nest]))
    outer, inner = sch.get_loops("C")
    with pytest.raises(NotAChainError, match="holds 2 statements, and they cannot be distributed: loop 'i' "
                                             "carries a dependence"):
        sch.reorder([inner, outer])


def test_reorder_errors() -> None:
    sch2 = IRSchedule(P.two_stage())
    (b_i, _), (c_i, _) = sch2.get_loops("B"), sch2.get_loops("C")
    with pytest.raises(NotAChainError, match="not a chain"):
        sch2.reorder([b_i, c_i])


def test_reorder_rejects_dependence() -> None:
    """`A[i+1, j] = A[i, j+1]`-style carried dependence: moving `i` inward is rejected."""
    idt = ir.dtype.int32
    a = P.tensor("A", [9, 9], idt)
    def store(iv: list[ir.Var]) -> ir.Store:
        return ir.Store(a, ir.Load(a, (iv[0], iv[1] + 1)) + ir.const(1.0), (iv[0] + 1, iv[1]))
    fn = P.func("fn", [], [a], [P.stage("A", [8, 8], idt, store)])
    sch = IRSchedule(fn)
    i, j = sch.get_loops("A")
    with pytest.raises(IllegalDependenceError, match="loop 'i' carries a dependence"):
        sch.reorder([j, i])


def test_split_of_a_fused_loop_names_loops_as_cinn_and_fusing_back_binds_the_plain_var() -> None:
    """Issue 23 item 9: CINN names the loops of split(i_j_fused) `i_j_fused`, `i_j_fused_0` (the
    split loop's name is free again), and fusing them back binds `x`, not `((x / 256) * 256) + (x % 256)`."""
    a = cp.placeholder((32, 64), "float32", "A")
    b = cp.compute((32, 64), lambda i, j: a[i, j] * 2.0, "B")
    sch = IRSchedule(cp.lower("fn", [a, b]))
    outer, inner = sch.split(sch.fuse(sch.get_loops("B")), [-1, 256])
    assert str(outer).startswith("serial for (i_j_fused, 0, 8)")
    assert "serial for (i_j_fused_0, 0, 256)" in str(inner)
    fused = sch.fuse([outer, inner])
    text = cp.print_ir(sch.func)
    assert "serial for (i_j_fused_i_j_fused_0_fused, 0, 2048)" in str(fused)
    assert "axis.bind((i_j_fused_i_j_fused_0_fused / 64), (i_j_fused_i_j_fused_0_fused % 64))" in text
    assert "* 256)" not in text
