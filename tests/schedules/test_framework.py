"""IRSchedule framework: handles (validity, staleness), trace JSON/Python round trips, errors that
leave the schedule unchanged, modules."""

from __future__ import annotations

import json

import pytest
from tests.schedules import sched_programs as P

from cinn_py import ir
from schedules import (
    BlockNotFoundError, IRSchedule, ScheduleError, StaleHandleError, Trace, replay,
)
from schedules.testing import check_replay, check_schedule, restored_names


def test_queries_and_handle_printing() -> None:
    sch = IRSchedule(P.reduce_sum())
    assert [b.name for b in sch.get_all_blocks()] == ["B__reduce_init", "B"]
    i, k = sch.get_loops("B")
    assert repr(i) == "LoopRV(e2: serial for (i, 0, 32))"
    assert [b.name for b in sch.get_child_blocks(i)] == ["B__reduce_init", "B"]
    assert sch.get_root_block().name == "root"
    assert sch.get_block("B") == sch.get_block("B")
    with pytest.raises(BlockNotFoundError, match=r"no block named 'Z' \(blocks: B__reduce_init, B\)"):
        sch.get_block("Z")


def test_handles_survive_unrelated_primitives() -> None:
    sch = IRSchedule(P.two_stage())
    b_i, b_j = sch.get_loops("B")
    c_i, _ = sch.get_loops("C")
    sch.split(c_i, [4, 8])
    sch.parallel(b_i)          # still valid after a split elsewhere
    sch.vectorize(b_j, 4)      # and after re-kinding its parent
    assert str(b_i) == "parallel for (i, 0, 32)" and str(b_j) == "vectorize[4] for (j, 0, 64)"


def test_stale_handle_names_the_primitive() -> None:
    sch = IRSchedule(P.elementwise())
    i, j = sch.get_loops("B")
    sch.fuse([i, j])
    before = str(sch)
    with pytest.raises(StaleHandleError,
                       match=r"handle to loop 'i' \(e0\) is stale: it was replaced or removed "
                                               r"by fuse \(trace step 1\)"):
        sch.split(i, [2, -1])
    assert str(sch) == before and len(sch.trace) == 2


def test_block_given_by_name_or_handle_and_foreign_handles() -> None:
    sch = IRSchedule(P.elementwise())
    other = IRSchedule(P.elementwise())
    with pytest.raises(ScheduleError, match="belongs to another IRSchedule"):
        sch.get_loops(other.get_block("B"))
    with pytest.raises(TypeError, match="expected a loop handle"):
        sch.parallel("B")  # type: ignore[arg-type]


def test_get_loops_adds_unit_loop_for_loopless_block() -> None:
    idt = ir.dtype.int32
    a, b = P.tensor("A", [1], idt), P.tensor("B", [1], idt)
    i0 = ir.Var("i0", idt)
    blk = ir.ScheduleBlockRealize((ir.const(0),), ir.ScheduleBlock(
        "B", (i0,), ir.Store(b, ir.Load(a, (i0,)) + ir.const(1.0), (i0,))))
    fn = P.func("fn", [a], [b], [blk])
    sch = IRSchedule(fn)
    (loop,) = sch.get_loops("B")
    assert str(loop) == "serial for (ix, 0, 1)"
    assert [s.kind for s in sch.trace] == ["get_loops"]
    check_schedule(fn, sch)


def test_trace_json_and_python_round_trip() -> None:
    s0 = P.sym("S0")
    fn = P.elementwise((s0, 8))
    sch = IRSchedule(fn)
    i, j = sch.get_loops("B")
    outer, inner = sch.split(i, [-1, 4])
    sch.reorder([inner, outer])
    sch.annotate("B", "tile", "x")
    sch.bind(j, "threadIdx.x")
    data = json.loads(sch.trace.to_json())
    assert [s["kind"] for s in data["steps"]] == ["get_loops", "split", "reorder", "annotate", "bind"]
    assert data["steps"][1] == {"kind": "split", "inputs": {"loop": "e0"}, "attrs": {"factors": [-1, 4]},
                                "outputs": ["e2", "e3"]}
    script = sch.trace.as_python()
    assert "e2, e3 = sch.split(loop=e0, factors=[-1, 4])" in script
    assert "sch.bind(loop=e1, thread_axis='threadIdx.x')" in script
    check_schedule(fn, sch)


def test_symbolic_factor_in_trace() -> None:
    s0 = P.sym("S0")
    fn = P.elementwise((s0 * ir.const(4, ir.dtype.int64), 2))
    sch = IRSchedule(fn)
    i, _ = sch.get_loops("B")
    sch.split(i, [s0, 4])
    assert "ir.Var('S0', dtype=dt.int64" in sch.trace.as_python()
    check_replay(fn, sch)


def test_replay_detects_mismatch() -> None:
    sch = IRSchedule(P.elementwise())
    sch.get_loops("B")
    with restored_names(sch), pytest.raises(ScheduleError, match="returned 1 handle"):
        replay(sch.trace, P.elementwise((32,)))
    with pytest.raises(ValueError, match="version"):
        Trace.from_json('{"steps": []}')
    with pytest.raises(ValueError, match="unknown schedule step kind"):
        Trace.from_json('{"version": 1, "steps": [{"kind": "explode"}]}')


def test_failed_primitive_records_nothing() -> None:
    sch = IRSchedule(P.elementwise())
    i, _ = sch.get_loops("B")
    with pytest.raises(ScheduleError):
        sch.split(i, [3, 3])
    assert [s.kind for s in sch.trace] == ["get_loops"]


def test_module_schedule() -> None:
    mod = ir.Module("m", (P.elementwise(name="f"), P.reduce_sum(name="g")))
    sch = IRSchedule(mod)
    sch.parallel(sch.get_loops("B__reduce_init")[0])
    assert str(sch).startswith("Module m {")
    with pytest.raises(ValueError, match="use .mod"):
        _ = sch.func
    with pytest.raises(BlockNotFoundError, match="2 blocks are named 'B'"):
        sch.get_block("B")
    check_replay(mod, sch)


def test_get_returns_the_current_node_and_is_not_recorded() -> None:
    import cinn_py as cp
    from cinn_py.ir import For, ScheduleBlockRealize
    from schedules import IRSchedule, StaleHandleError

    x = cp.placeholder((8, 4), "float32", "X")
    y = cp.compute((8, 4), lambda i, j: x[i, j] + 1.0, "Y")
    sch = IRSchedule(cp.lower("fn", [x, y]))
    i, j = sch.get_loops("Y")
    steps = len(sch.trace.steps)
    node = sch.get(i)
    assert isinstance(node, For) and node.loop_var.name == "i" and str(node.extent) == "8"
    assert isinstance(sch.get("Y"), ScheduleBlockRealize)
    assert len(sch.trace.steps) == steps
    sch.fuse([i, j])
    with pytest.raises(StaleHandleError, match="get: handle to loop 'i'"):
        sch.get(i)
