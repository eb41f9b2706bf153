"""cache_read / cache_write: golden IR (static and symbolic), one test per rule, trace replay and
interpreter differential runs through `schedules.testing.check_schedule`."""

from __future__ import annotations

import pytest

from cinn_py import ir
from cinn_py.frontend.compute import compute, placeholder, reduce_axis, reduce_sum, sym
from cinn_py.ir import LoweredFunc, MemoryType, print_ir
from cinn_py.ir.text.parser import parse_ir
from cinn_py.lowering import lower
from schedules import BlockNotFoundError, InvalidArgumentError, IRSchedule, StaleHandleError
from schedules.analysis.loops import find_block, root_block
from schedules.primitives.cache import CacheError, cache_read, cache_write
from schedules.testing import check_schedule
from tests.schedules import sched_programs as P
from tests.schedules.block_helpers import lowered_two_stage, root_text


def _row_sum(n: object = 4, m: object = 6) -> LoweredFunc:
    a = placeholder((n, m), "float32", "A")
    b = compute((n, m), lambda i, j: a[i, j] * a[i, j], "B")
    k = reduce_axis(m)
    c = compute((n,), lambda i: reduce_sum(b[i, k], [k]), "C")
    return lower("fn", [a, c])


CACHE_READ_INPUT = """\
serial for (cache_ax0, 0, 4)
{
  serial for (cache_ax1, 0, 8)
  {
    ScheduleBlock(A_local_temp_buffer)
    {
      v0, v1 = axis.bind(cache_ax0, cache_ax1)
      A_local_temp_buffer[v0, v1] = A[v0, v1]
    }
  }
}
serial for (i, 0, 4)
{
  serial for (j, 0, 8)
  {
    ScheduleBlock(B)
    {
      i0, i1 = axis.bind(i, j)
      B[i0, i1] = (A_local_temp_buffer[i0, i1] * 2.00000000f)
    }
  }
}
serial for (i, 0, 4)
{
  serial for (j, 0, 8)
  {
    ScheduleBlock(C)
    {
      i0_0, i1_0 = axis.bind(i, j)
      C[i0_0, i1_0] = (B[i0_0, i1_0] + 1.00000000f)
    }
  }
}
"""


def test_cache_read_input_goes_first() -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    copy = sch.cache_read("B", 0, "local")
    assert copy.name == "A_local_temp_buffer"
    assert root_text(sch.func) == CACHE_READ_INPUT
    buf = sch.func.temp_bufs[-1]
    assert (buf.name, buf.memory_type) == ("_A_local_temp_buffer", MemoryType.GPU_LOCAL)
    assert ir.structural_equal(parse_ir(print_ir(sch.func, decls=True)), sch.func)
    check_schedule(f, sch)


CACHE_READ_SYMBOLIC = """\
serial for (i, 0ll, S0)
{
  serial for (j, 0ll, S1)
  {
    ScheduleBlock(B)
    {
      i0, i1 = axis.bind(i, j)
      B[i0, i1] = (A[i0, i1] * 2.00000000f)
    }
  }
}
serial for (cache_ax0, 0ll, S0)
{
  serial for (cache_ax1, 0ll, S1)
  {
    ScheduleBlock(B_shared_temp_buffer)
    {
      v0, v1 = axis.bind(cache_ax0, cache_ax1)
      B_shared_temp_buffer[v0, v1] = B[v0, v1]
    }
  }
}
"""


def test_cache_read_intermediate_after_its_producer_symbolic() -> None:
    f = lowered_two_stage((sym("S0"), sym("S1")))
    sch = IRSchedule(f)
    sch.cache_read("C", 0, "shared")
    text = root_text(sch.func)
    assert text.startswith(CACHE_READ_SYMBOLIC)
    assert "C[i0_0, i1_0] = (B_shared_temp_buffer[i0_0, i1_0] + 1.00000000f)" in text
    check_schedule(f, sch, sym_bindings=[{"S0": 1, "S1": 1}, {"S0": 3, "S1": 5}, {"S0": 4, "S1": 2}])


def test_cache_read_region_is_what_the_block_reads() -> None:
    a = placeholder((6, 10), "float32", "A")
    b = compute((4, 8), lambda i, j: a[i + 1, j + 2] + a[i + 2, j], "B")
    f = lower("fn", [a, b])
    sch = IRSchedule(f)
    sch.cache_read("B", 0, "global")
    text = print_ir(sch.func)
    assert "serial for (cache_ax0, 0, 5)" in text and "serial for (cache_ax1, 0, 10)" in text
    assert "v0, v1 = axis.bind((cache_ax0 + 1), cache_ax1)" in text
    assert "(A_global_temp_buffer[(i0 + 1), (i1 + 2)] + A_global_temp_buffer[(i0 + 2), i1])" in text
    check_schedule(f, sch)


def test_cache_read_index_counts_distinct_tensors() -> None:
    a = placeholder((4,), "float32", "A")
    b = placeholder((4,), "float32", "B")
    c = compute((4,), lambda i: a[i] * b[i] + a[i], "C")
    f = lower("fn", [a, b, c])
    g, copy = cache_read(f, find_block(f, "C"), 1, "local")
    assert copy.name == "B_local_temp_buffer"
    assert "C[i0] = ((A[i0] * B_local_temp_buffer[i0]) + A[i0])" in print_ir(g)
    with pytest.raises(InvalidArgumentError, match=r"read index must be in \[0, 2\) .*reads A, B\), got 2"):
        cache_read(f, find_block(f, "C"), 2, "local")
    with pytest.raises(InvalidArgumentError, match="got -1"):
        cache_read(f, find_block(f, "C"), -1, "local")


def test_cache_read_then_compute_at_localises_the_copy() -> None:
    f = lowered_two_stage((sym("S0"), 8))
    sch = IRSchedule(f)
    copy = sch.cache_read("C", 0, "local")
    sch.compute_at(copy, sch.get_loops("C")[0])
    text = print_ir(sch.func)
    assert "serial for (ax0, 0ll, 8ll)" in text
    assert "v0, v1 = axis.bind(i, ax0)" in text
    check_schedule(f, sch)


def test_cache_read_twice_gets_unique_names() -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    sch.cache_read("B", 0, "local")
    second = sch.cache_read("B", 0, "local")
    assert second.name == "A_local_temp_buffer_local_temp_buffer"
    sch.cache_read("C", 0, "local")
    names = [b.name for b in sch.get_all_blocks()]
    assert len(names) == len(set(names))
    check_schedule(f, sch)


CACHE_WRITE_STATIC = """\
serial for (i, 0, 4)
{
  serial for (j, 0, 8)
  {
    ScheduleBlock(B_local_temp_buffer)
    {
      i0, i1 = axis.bind(i, j)
      B_local_temp_buffer[i0, i1] = (A[i0, i1] * 2.00000000f)
    }
  }
}
serial for (cache_ax0, 0, 4)
{
  serial for (cache_ax1, 0, 8)
  {
    ScheduleBlock(B)
    {
      v0, v1 = axis.bind(cache_ax0, cache_ax1)
      B[v0, v1] = B_local_temp_buffer[v0, v1]
    }
  }
}
serial for (i, 0, 4)
{
  serial for (j, 0, 8)
  {
    ScheduleBlock(C)
    {
      i0_0, i1_0 = axis.bind(i, j)
      C[i0_0, i1_0] = (B[i0_0, i1_0] + 1.00000000f)
    }
  }
}
"""


def test_cache_write_swaps_names_and_copies_back() -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    block = sch.get_block("B")
    copy = sch.cache_write(block, 0, "local")
    assert copy.name == "B"
    assert root_text(sch.func) == CACHE_WRITE_STATIC
    assert str(sch.get_loops(block)[0]) == "serial for (i, 0, 4)"  # the handle follows the renamed block
    assert [b.name for b in sch.func.temp_bufs] == ["_B", "_B_local_temp_buffer"]
    check_schedule(f, sch)


CACHE_WRITE_REDUCE = """\
serial for (i, 0ll, S0)
{
  ScheduleBlock(C__reduce_init)
  {
    i0_0 = axis.bind(i)
    C__reduce_init[i0_0] = 0.00000000f
  }
  serial for (reduce_k, 0ll, 6ll)
  {
    ScheduleBlock(C_local_temp_buffer)
    {
      i0_1, i1_0 = axis.bind(i, reduce_k)
      C_local_temp_buffer[i0_1] = (C_local_temp_buffer[i0_1] + B[i0_1, i1_0])
    }
  }
}
serial for (cache_ax0, 0ll, S0)
{
  ScheduleBlock(C)
  {
    v0 = axis.bind(cache_ax0)
    C[v0] = C_local_temp_buffer[v0]
  }
}
"""


def test_cache_write_reduction_rebinds_its_init() -> None:
    f = _row_sum(sym("S0"))
    sch = IRSchedule(f)
    sch.cache_write("C", 0, "local")
    assert root_text(sch.func).endswith(CACHE_WRITE_REDUCE)
    init = find_block(sch.func, "C__reduce_init")
    assert init.schedule_block.body.tensor.buffer.name == "_C_local_temp_buffer"  # type: ignore[union-attr]
    check_schedule(f, sch)


def test_cache_write_then_reverse_compute_at_the_copy() -> None:
    f = _row_sum(sym("S0"))
    sch = IRSchedule(f)
    copy = sch.cache_write("C", 0, "local")
    sch.reverse_compute_at(copy, sch.get_loops("C__reduce_init")[0])
    text = print_ir(sch.func)
    assert "cache_ax0" not in text.split("ScheduleBlock(C)")[1]
    assert "v0 = axis.bind(i)" in text
    check_schedule(f, sch)


def test_cache_write_of_a_middle_stage_feeds_consumers() -> None:
    f = _row_sum()
    sch = IRSchedule(f)
    sch.cache_write("B", 0, "shared")
    sch.cache_read("C", 1, "local")
    assert "(C[i0_1] + B_local_temp_buffer[i0_1, i1_0])" in print_ir(sch.func)
    check_schedule(f, sch)


# ----------------------------------------------------------------------------------------------
# Errors: one per precondition; the schedule is unchanged after each
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prim", ["cache_read", "cache_write"])
def test_unknown_memory_type(prim: str) -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    with pytest.raises(InvalidArgumentError, match="must be 'global', 'shared' or 'local', got 'texture'"):
        getattr(sch, prim)("B", 0, "texture")
    with pytest.raises(ValueError):
        getattr(sch, prim)("B", 0, "heap")
    with pytest.raises(TypeError, match="memory_type"):
        getattr(sch, prim)("B", 0, 3)
    assert sch.func is f and len(sch.trace) == 0


def test_write_index_out_of_range() -> None:
    f = lowered_two_stage((4, 8))
    with pytest.raises(InvalidArgumentError, match=r"write index must be in \[0, 1\) .*writes B\), got 1"):
        cache_write(f, find_block(f, "B"), 1, "local")
    with pytest.raises(TypeError, match="must be an int"):
        cache_write(f, find_block(f, "B"), True, "local")


@pytest.mark.parametrize("prim", [cache_read, cache_write])
def test_root_and_stale_blocks(prim: object) -> None:
    f = lowered_two_stage((4, 8))
    with pytest.raises(InvalidArgumentError, match="got the root block 'root'"):
        prim(f, root_block(f), 0, "local")  # type: ignore[operator]
    g, _ = cache_read(f, find_block(f, "C"), 0, "local")
    with pytest.raises(StaleHandleError, match="stale handle"):
        prim(g, find_block(f, "C"), 0, "local")  # type: ignore[operator]
    sch = IRSchedule(f)
    with pytest.raises(BlockNotFoundError, match="no block named 'D'"):
        getattr(sch, prim.__name__)("D", 0, "local")  # type: ignore[attr-defined]


def test_cache_read_of_own_output_rejected() -> None:
    f = _row_sum()
    with pytest.raises(CacheError, match="also writes its buffer '_C'.*use cache_write"):
        cache_read(f, find_block(f, "C"), 0, "local")


def test_cache_read_writer_in_the_same_nest_rejected() -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    sch.simple_compute_at("C", sch.get_loops("B")[1])
    before = sch.func
    with pytest.raises(CacheError, match="block 'B' writes 'B' in the same loop nest as 'C'"):
        sch.cache_read("C", 0, "local")
    assert sch.func is before


def test_cache_write_reader_before_copy_back_rejected() -> None:
    f = lowered_two_stage((4, 8))
    sch = IRSchedule(f)
    sch.simple_compute_at("C", sch.get_loops("B")[1])
    with pytest.raises(CacheError, match="block 'C' accesses 'B' between the cached block 'B' and the copy"):
        sch.cache_write("B", 0, "local")


def test_cache_write_read_before_write_without_init_rejected() -> None:
    f = P.shifted(8)
    with pytest.raises(CacheError, match="reads other elements than it writes"):
        cache_write(f, find_block(f, "A"), 0, "local")


def _two_writers(n: int = 8) -> LoweredFunc:
    """`B[i] = A[i]` for all i, then `B[2*i] = A[2*i] * 2` for i < n/2 (a strided, partial write)."""
    idt = ir.dtype.int32
    a, b = P.tensor("A", [n], idt), P.tensor("B", [n], idt)
    first = P.stage("B", [n], idt, lambda iv: ir.Store(b, ir.Load(a, (iv[0],)), (iv[0],)))
    second = P.stage("B2", [n // 2], idt, lambda iv: ir.Store(
        b, ir.Load(a, (iv[0] * 2,)) * ir.const(2.0), (iv[0] * 2,)))
    return P.func("fn", [a], [b], [first, second])


def test_cache_write_inexact_region_over_other_data_rejected() -> None:
    f = _two_writers()
    with pytest.raises(CacheError, match="cannot be proven to be a box, and block 'B' also writes it"):
        cache_write(f, find_block(f, "B2"), 0, "local")
    g, copy = cache_write(f, find_block(f, "B"), 0, "local")  # the first writer's box is exact
    assert copy.name == "B" and g.temp_bufs[-1].name == "_B_local_temp_buffer"
    sch = IRSchedule(f)
    sch.cache_write("B", 0, "local")
    check_schedule(f, sch)
