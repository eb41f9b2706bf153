"""compute_at / simple_compute_at through IRSchedule: golden IR (static and symbolic extents), one
test per rule, and for every successful schedule trace replay (JSON + Python) plus an interpreter
differential run over several bindings of the symbolic dims."""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py.ir import print_ir
from schedules import IllegalDependenceError, IRSchedule, LoopNotFoundError, StaleHandleError
from schedules.primitives.compute_at import LoopMismatchError, RegionError
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import SYM2, check, iter_values
from tests.schedules.seed_program import seed_func


def aligned() -> tuple[object, IRSchedule]:
    f = seed_func(8)
    sch = IRSchedule(f)
    sch.align_iter_space()
    return f, sch


def test_simple_compute_at_fuses_consumer() -> None:
    f, sch = aligned()
    sch.simple_compute_at("F", sch.get_loops("E")[0])
    assert sch.get_loops("F")[0] == sch.get_loops("E")[0]
    assert sch.get_loops("F")[1] != sch.get_loops("E")[1]
    assert iter_values(sch, "F") == ["(sp / S2)", "(sp % S2)", "rb"]
    check(f, sch, SYM2)


def test_simple_compute_at_golden_static() -> None:
    f = P.two_stage((4, 8))
    sch = IRSchedule(f)
    sch.simple_compute_at("C", sch.get_loops("B")[1])
    assert print_ir(sch.func.body.stmts[0].schedule_block.body) == """\
{
  serial for (i, 0, 4)
  {
    serial for (j, 0, 8)
    {
      ScheduleBlock(B)
      {
        i0, i1 = axis.bind(i, j)
        B[i0, i1] = (A[i0, i1] + 1.00000000f)
      }
      ScheduleBlock(C)
      {
        i0_0, i1_0 = axis.bind(i, j)
        C[i0_0, i1_0] = (B[i0_0, i1_0] * 2.00000000f)
      }
    }
  }
}"""
    check(f, sch)


def test_simple_compute_at_tiled_with_guard() -> None:
    f, sch = aligned()
    for name in "DE":
        sch.compute_inline(name)
    for name in "CF":
        sch.split(sch.get_loops(name)[0], [-1, 4])
    sch.simple_compute_at("F", sch.get_loops("C")[1])
    assert str(sch).count("if ((((sp * 4ll) + sp_0) < (S1 * S2)))") == 2
    check(f, sch, SYM2)


def test_simple_compute_at_too_few_loops() -> None:
    _, sch = aligned()
    with pytest.raises(LoopMismatchError,
                       match="simple_compute_at: block 'D' must have at least 2 loops to match, "
                                                "but has 1"):
        sch.simple_compute_at("D", sch.get_loops("E")[1])


def test_simple_compute_at_extent_mismatch() -> None:
    _, sch = aligned()
    sch.split(sch.get_loops("E")[0], [-1, 4])
    with pytest.raises(LoopMismatchError, match=r"extent of loop 'sp' should equal that of 'sp': expected "
                                                r"\(\(\(S1 \* S2\) \+ 3ll\) / 4ll\), got \(S1 \* S2\)"):
        sch.simple_compute_at("F", sch.get_loops("E")[1])


def test_simple_compute_at_illegal_dependence() -> None:
    _, sch = aligned()
    with pytest.raises(IllegalDependenceError, match="moving 'C' would reorder its accesses to 'B'"):
        sch.simple_compute_at("C", sch.get_loops("A")[0])
    with pytest.raises(IllegalDependenceError, match="accesses to 'C' with block 'D'"):
        sch.simple_compute_at("C", sch.get_loops("F")[0])


def test_loop_enclosing_block_rejected() -> None:
    _, sch = aligned()
    for prim in ("simple_compute_at", "compute_at"):
        with pytest.raises(LoopNotFoundError,
                           match=f"{prim}: loop 'sp' must not enclose block 'A', but it does"):
            getattr(sch, prim)("A", sch.get_loops("A")[0])


def test_compute_at_region_symbolic() -> None:
    f, sch = aligned()
    sch.compute_at("A", sch.get_loops("B")[0])
    text = str(sch)
    assert "serial for (ax0, 0ll, 8ll)" in text
    assert "attrs(compute_at_extra_var:ax0)" in text
    assert iter_values(sch, "A") == ["(sp / S2)", "(sp % S2)", "ax0"]
    check(f, sch, SYM2)


def test_compute_at_tiled_inner_loop_golden() -> None:
    f = P.two_stage((16, 8))
    sch = IRSchedule(f)
    sch.split(sch.get_loops("C")[0], [4, 4])
    sch.compute_at("B", sch.get_loops("C")[0])
    text = print_ir(sch.func.body.stmts[0].schedule_block.body)
    # The region guard `((i * 4) + ax0) < 16` is provably true (islpy) and left out.
    assert text.startswith("""\
{
  serial for (i, 0, 4)
  {
    serial for (ax0, 0, 4)
    {
      serial for (ax1, 0, 8)
      {
        ScheduleBlock(B)
        {
          i0, i1 = axis.bind(((i * 4) + ax0), ax1)
          attrs(compute_at_extra_var:ax0,ax1)
          B[i0, i1] = (A[i0, i1] + 1.00000000f)""")
    check(f, sch)


def test_compute_at_symbolic_extent_split() -> None:
    f = P.two_stage((P.sym("N"), 8))
    sch = IRSchedule(f)
    sch.split(sch.get_loops("C")[0], [-1, 4])
    sch.compute_at("B", sch.get_loops("C")[1])
    assert "ScheduleBlock(B)" in str(sch)
    check(f, sch, ({"N": 1}, {"N": 5}, {"N": 8}))


def test_compute_at_unit_loops() -> None:
    f = P.two_stage((4, 8))
    sch = IRSchedule(f)
    sch.compute_at("B", sch.get_loops("C")[1])
    assert "ax0" not in str(sch)
    check(f, sch)
    keep = IRSchedule(f)
    keep.compute_at("B", keep.get_loops("C")[1], keep_unit_loops=True)
    assert "serial for (ax0, 0, 1)" in str(keep)
    check(f, keep)


def test_compute_at_moves_a_reduction_with_its_init() -> None:
    f, sch = aligned()
    sch.compute_at("C", sch.get_loops("D")[0])
    sp = sch.get_loops("D")[0]
    assert sch.get_loops("C") == [sp, sch.get_loops("C")[1]] and sch.get_loops("C__reduce_init") == [sp]
    assert iter_values(sch, "C") == ["(sp / S2)", "(sp % S2)", "rb"]
    check(f, sch, SYM2)


def test_compute_at_of_a_cache_write_stage() -> None:
    """TVM's `CC = cache_write(C, "local"); compute_at(CC, C's loop)`: the local accumulator
    of each output element is initialised, reduced and copied back inside the copy loop."""
    a = cp.placeholder((8, 6, 16), "float32", "A")
    k = cp.reduce_axis(16, "k")
    f = cp.lower("red2", [a, cp.compute((8, 6), lambda i, j: cp.reduce_sum(a[i, j, k], k), "B")])
    sch = IRSchedule(f)
    sch.cache_write("B", 0, "local")
    sch.compute_at("B_local_temp_buffer", sch.get_loops("B")[1])
    assert [str(lp) for lp in sch.get_loops("B_local_temp_buffer")] == [
        "serial for (cache_ax0, 0, 8)", "serial for (cache_ax1, 0, 6)", "serial for (k, 0, 16)"]
    assert len(sch.get_loops("B__reduce_init")) == 2
    check(f, sch)


def test_compute_at_of_an_elementwise_cache_write_stage() -> None:
    a = cp.placeholder((6, 8), "float32", "A")
    b = cp.compute((6, 8), lambda i, j: a[i, j] + 1.0, "B")
    f = cp.lower("two", [a, cp.compute((6, 8), lambda i, j: b[i, j] * 2.0, "C")])
    sch = IRSchedule(f)
    sch.cache_write("B", 0, "local")
    sch.compute_at("B_local_temp_buffer", sch.get_loops("B")[1])
    sch.compute_at("B", sch.get_loops("C")[1])
    check(f, sch)


@pytest.mark.parametrize("factor", [4, 5])
def test_compute_at_into_a_fused_and_split_loop(factor: int) -> None:
    """The consumer's index `(f * 4 + f_1) / 8`, `% 8` needs div/mod bounds over the inner loop
    (the outer loop var is known non-negative): the producer covers whole rows of the region."""
    a = cp.placeholder((6, 8), "float32", "A")
    b = cp.compute((6, 8), lambda i, j: a[i, j] + 1.0, "B")
    f = cp.lower("two", [a, cp.compute((6, 8), lambda i, j: b[i, j] * 2.0, "C")])
    sch = IRSchedule(f)
    fused = sch.fuse(sch.get_loops("C"))
    outer, _ = sch.split(fused, [-1, factor])
    sch.compute_at("B", outer)
    assert sch.get_loops("B")[0] == outer
    check(f, sch)


def test_compute_at_into_a_fused_loop_with_symbolic_dims() -> None:
    n = cp.sym("N")
    a = cp.placeholder((n, 8), "float32", "A")
    b = cp.compute((n, 8), lambda i, j: a[i, j] + 1.0, "B")
    f = cp.lower("two", [a, cp.compute((n, 8), lambda i, j: b[i, j] * 2.0, "C")])
    sch = IRSchedule(f)
    outer, _ = sch.split(sch.fuse(sch.get_loops("C")), [-1, 4])
    sch.compute_at("B", outer)
    check(f, sch, [{"N": 1}, {"N": 3}, {"N": 5}])


def test_compute_at_rejects_outside_reader() -> None:
    _, sch = aligned()
    with pytest.raises(RegionError,
                       match="every reader of 'D' must be inside loop 'sp', but block.s. E outside"):
        sch.compute_at("D", sch.get_loops("F")[0])
    with pytest.raises(RegionError, match="but it is a function argument, whose every element is observable"):
        sch.compute_at("F", sch.get_loops("A")[0])


def test_compute_at_rejects_clobbered_input() -> None:
    """A block between the producer and the loop overwrites what the producer reads."""
    f = P.shifted()
    sch = IRSchedule(f)
    with pytest.raises(LoopNotFoundError):
        sch.compute_at("A", sch.get_loops("A")[0])


def test_stale_handles() -> None:
    _, sch = aligned()
    a_loops = sch.get_loops("A")
    sch.compute_at("A", sch.get_loops("B")[0])
    with pytest.raises(StaleHandleError, match=r"compute_at: handle to loop 'sp' \(e\d+\) is stale: it was "
                                               r"replaced or removed by compute_at \(trace step \d+\)"):
        sch.compute_at("A", a_loops[0])


def test_simple_compute_at_decided_by_islpy() -> None:
    """After splitting both nests by [4, 3], B and C share only the outer loop; an element
    `B[i * 3 + i_0, j]` is not a function of that loop alone, so the syntactic same-iteration
    test cannot decide, and islpy proves every read still follows its write."""
    f = P.two_stage((12, 4))
    sch = IRSchedule(f)
    for name in "BC":
        sch.split(sch.get_loops(name)[0], [4, 3])
    sch.simple_compute_at("C", sch.get_loops("B")[0])
    assert sch.get_loops("C")[0] == sch.get_loops("B")[0]
    check(f, sch)



def test_simple_compute_at_renames_a_kept_loop_named_like_a_target_loop() -> None:
    """Fuzzer finding (seed 7, cases 34 and 253): after `reorder`, C's nest is (i, k, j) and
    B's is (i, j); moving C under B's `j` maps C's `k` to B's `j` while C keeps its inner `j`,
    which must be renamed or it would capture the mapped uses (`axis.bind(i, j, j)`)."""
    a = cp.placeholder((3,), "int32", "A")
    b = cp.compute((3, 16), lambda i, k: a[i] + k, "B")
    c = cp.compute((3, 4, 16), lambda i, j, k: b[i, k] * (j + 1), "C")
    f = cp.lower("f", [a, c])
    sch = IRSchedule(f)
    i, j, k = sch.get_loops("C")
    sch.reorder([i, k, j])
    sch.simple_compute_at("C", sch.get_loops("B")[1])
    assert iter_values(sch, "C") == ["i", "j_0", "j"]
    assert "serial for (j_0, 0, 4)" in str(sch)
    check(f, sch)


def test_compute_at_new_loops_named_apart_from_the_target_loops() -> None:
    """compute_at into an `ax0` loop that an earlier compute_at created: the new region loop
    must not be called `ax0` too (it would shadow the target's `ax0` in `ax0 * 2 + ax0`)."""
    a = cp.placeholder((8, 16), "float32", "A")
    b = cp.compute((8, 16), lambda i, j: a[i, j] * 2.0, "B")
    c = cp.compute((8, 8), lambda i, j: b[i, 2 * j] + b[i, 2 * j + 1], "C")
    d = cp.compute((8, 8), lambda i, j: c[i, j] * c[i, j], "D")
    f = cp.lower("f", [a, d])
    sch = IRSchedule(f)
    sch.compute_at("C", sch.get_loops("D")[0])
    sch.compute_at("B", sch.get_loops("C")[1])
    assert iter_values(sch, "B") == ["i", "((ax0 * 2) + ax0_0)"]
    check(f, sch)


def test_simple_compute_at_with_equal_coefficients_in_an_index() -> None:
    """Fuzzer finding (seed 24, case 661): after splits by [5, 1] the shared index is `i + i_0`;
    ordering its terms by coefficient compared the two Vars (an IR `<`) and raised TypeError."""
    a = cp.placeholder((5, 8), "float32", "A")
    b = cp.compute((5, 8), lambda i, j: a[i, j] + 1.0, "B")
    c = cp.compute((5, 8), lambda i, j: b[i, j] * 2.0, "C")
    f = cp.lower("f", [a, c])
    sch = IRSchedule(f)
    for name in "BC":
        sch.split(sch.get_loops(name)[0], [5, 1])
    sch.simple_compute_at("C", sch.get_loops("B")[1])
    assert iter_values(sch, "C") == ["(i + i_0)", "j"]
    check(f, sch)
