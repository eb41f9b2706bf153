"""Deep loop nests (issue 12): a 1,000-way split, and nests hundreds of loops deep through the
printer, the parser, structural equality, the interpreter and x86 codegen.

a split into more than MAX_EXPR_DEPTH loops leaves the (always 0) variables of unit loops out of
its binding, so the index stays a few terms deep whatever the loop count; the entry points that walk a whole
function run under
`cinn_py.ir.nesting.deep_nesting` (Python's recursion limit raised for the call); x86 codegen
emits a unit loop as its body (LLVM's loop passes are superlinear in the nest depth).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

import cinn_py as cp
from cinn_py import ir
from cinn_py.ir import For, walk
from cinn_py.ir import NEST_RECURSION_LIMIT, nesting_room
from schedules import IRSchedule


def _split_schedule(ways: int) -> IRSchedule:
    a = cp.placeholder((64,), "float32", "A")
    b = cp.compute((64,), lambda i: a[i] * 2.0 + 1.0, "B")
    sch = IRSchedule(cp.lower("deep", [a, b]))
    loops = sch.split(sch.get_loops("B")[0], [1] * (ways - 1) + [-1])
    assert len(loops) == ways
    return sch


def _realize(sch: IRSchedule, name: str) -> ir.ScheduleBlockRealize:
    (realize,) = [n for n in walk(sch.func.body)
                  if isinstance(n, ir.ScheduleBlockRealize) and n.schedule_block.name == name]
    return realize


def _depth(func: ir.LoweredFunc) -> int:
    return sum(1 for n in walk(func.body) if isinstance(n, For))


def test_1000_way_split_prints_parses_builds_and_runs_in_seconds() -> None:
    start, limit = time.perf_counter(), sys.getrecursionlimit()
    sch = _split_schedule(1000)
    assert _depth(sch.func) == 1000
    realize = _realize(sch, "B")
    innermost = [n for n in walk(sch.func.body) if isinstance(n, For)][-1]
    assert realize.iter_values[0] == innermost.loop_var  # the 999 unit loops add no term to the binding
    text = cp.print_ir(sch.func, decls=True)
    assert ir.structural_equal(cp.parse_ir(text), sch.func)
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(cp.build(sch, "x86")(x), x * 2 + 1)
    np.testing.assert_array_equal(cp.run_ir(sch.func, {"A": x})["B"], x * 2 + 1)
    assert time.perf_counter() - start < 60
    assert sys.getrecursionlimit() == limit  # raised only during the calls


def test_a_split_within_the_depth_bound_binds_every_loop() -> None:
    """Up to MAX_EXPR_DEPTH loops every new loop's variable is in the binding (the block depends
    on each loop, as decompose_reduction at a unit loop needs); beyond it unit loops are left out."""
    a = cp.placeholder((24,), "float32", "A")
    b = cp.compute((24,), lambda i: a[i] + 1.0, "B")
    sch = IRSchedule(cp.lower("f", [a, b]))
    loops = sch.split(sch.get_loops("B")[0], [1, 2, 1, 3, 1, -1])
    names = {n.name for n in walk(_realize(sch, "B").iter_values[0]) if isinstance(n, ir.Var)}
    assert names == {sch.get(loop).loop_var.name for loop in loops}
    x = np.arange(24, dtype=np.float32)
    np.testing.assert_array_equal(cp.build(sch, "x86")(x), x + 1)


@pytest.mark.parametrize("depth", [100, 250])
def test_a_deep_nest_of_non_unit_loops_round_trips_through_text(depth: int) -> None:
    """Every level a loop of extent 2 over its own tensor axis (a `depth`-d tensor of 2^depth
    elements is never allocated: only the text, the parser and equality are exercised)."""
    loops: list[ir.Var] = [ir.Var(f"i{k}", ir.int32) for k in range(depth)]
    body: ir.Stmt = ir.Evaluate(ir.const(0, ir.int32))
    for var in reversed(loops):
        body = For(var, ir.const(0, ir.int32), ir.const(2, ir.int32), ir.Block((body,)), ir.ForType.SERIAL)
    text = cp.print_ir(body)
    assert text.count("serial for") == depth
    back = cp.parse_ir(text)
    assert cp.print_ir(back) == text and ir.structural_equal(back, body)


def test_nesting_room_restores_the_limit() -> None:
    before = sys.getrecursionlimit()
    with nesting_room():
        assert sys.getrecursionlimit() >= NEST_RECURSION_LIMIT
        with nesting_room():
            pass
        assert sys.getrecursionlimit() >= NEST_RECURSION_LIMIT
    assert sys.getrecursionlimit() == before

