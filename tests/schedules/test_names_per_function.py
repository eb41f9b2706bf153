"""Generated names are per function: lowering or scheduling the same program twice in one
process prints the same IR (CINN's counters are process-global; ours restart per function)."""

from __future__ import annotations

import numpy as np

import cinn_py as cp
from cinn_py.ir import print_ir, unique_name
from schedules import IRSchedule


def _program() -> list[cp.ComputeTensor]:
    a = cp.placeholder((8, 6, 16), "float32", "A")
    k = cp.reduce_axis(16, "k")
    b = cp.compute((8, 6), lambda i, j: cp.reduce_sum(a[i, j, k], k), "B")
    return [a, cp.compute((8, 6), lambda i, j: b[i, j] * 2.0, "C")]


def _schedule(func: cp.LoweredFunc) -> str:
    sch = IRSchedule(func)
    sch.cache_write("B", 0, "local")
    i, _ = sch.get_loops("C")
    sch.split(i, [2, -1])
    return str(sch)


def test_lowering_twice_prints_the_same_ir() -> None:
    program = _program()
    first = print_ir(cp.lower("f", program))
    unique_name("i0")                                      # unrelated use of the process generator
    assert print_ir(cp.lower("f", program)) == first
    assert print_ir(cp.lower("f", _program())) == first     # rebuilt program, same names


def test_scheduling_twice_prints_the_same_ir() -> None:
    first = _schedule(cp.lower("f", _program()))
    assert "ScheduleBlock(B_local_temp_buffer)" in first and "serial for (i_0, " in first
    assert _schedule(cp.lower("f", _program())) == first


def test_generated_names_avoid_the_functions_own_names() -> None:
    a = cp.placeholder((8,), "float32", "i_0")              # a user tensor named like a split loop
    func = cp.lower("f", [a, cp.compute((8,), lambda i: a[i] + 1.0, "B")])
    sch = IRSchedule(func)
    sch.split(sch.get_loops("B")[0], [2, 4])
    assert "serial for (i_0," not in str(sch) and "serial for (i_1, 0, 4)" in str(sch)


def test_a_new_loop_never_takes_the_name_of_a_loop_it_encloses() -> None:
    """Fuzz seed 1 case 37 (`--cuda --emulate`): a second IRSchedule over `for i { for i_0 { for
    i_1 } }` split `i` into `i`, `i_0`; the new `i_0` captured the inner loop's uses (Vars compare
    by name), so the interpreter and the CUDA kernel read t1 at the wrong index."""
    a = cp.placeholder((12,), "float32", "A")
    func = cp.lower("f", [a, cp.compute((12,), lambda i: a[i] * 2.0, "B")])
    first = IRSchedule(func)
    first.split(first.get_loops("B")[0], [2, -1, 2])
    second = IRSchedule(first.func)
    second.split(second.get_loops("B")[0], [-1, 1])
    names = [lp.var_name for lp in second.get_loops("B")]
    assert len(set(names)) == len(names) == 4, names
    x = np.arange(12, dtype=np.float32)
    np.testing.assert_array_equal(cp.run_ir(second.func, {"A": x})["B"], x * 2)
