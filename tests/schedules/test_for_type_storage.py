"""parallel / vectorize / unroll / bind, annotate, set_buffer, sync_threads, flatten_loops:
goldens, one error test per rule, differential checks."""

from __future__ import annotations

import pytest
from tests.schedules import sched_programs as P

from schedules import (
    BindLimitError, BufferError, IllegalDependenceError, InvalidArgumentError,
    IRSchedule, LoopKindError, NonConstantExtentError,
)
from cinn_py.target import GpuLimits
from schedules.testing import check_schedule


def check(fn, sch: IRSchedule) -> None:  # type: ignore[no-untyped-def]
    check_schedule(fn, sch)


def test_loop_kinds_golden() -> None:
    fn = P.reduce_sum()
    sch = IRSchedule(fn)
    i, k = sch.get_loops("B")
    sch.bind(i, "blockIdx.x")
    sch.bind(k, "threadIdx.x")  # a reduce loop: becomes a cross-thread reduction
    text = str(sch)
    assert ("thread_bind[blockIdx.x] for (i, 0, 32)" in text
            and "thread_bind[threadIdx.x] for (k0, 0, 16)" in text)
    check(fn, sch)
    fn2 = P.elementwise()
    sch2 = IRSchedule(fn2)
    i, j = sch2.get_loops("B")
    sch2.parallel(i)
    sch2.vectorize(j, 8)
    assert "parallel for (i, 0, 32)" in str(sch2) and "vectorize[8] for (j, 0, 64)" in str(sch2)
    check(fn2, sch2)


@pytest.mark.parametrize("shape", [(5, 70), (P.sym("S0"), P.sym("S1"))], ids=["non-dividing", "symbolic"])
def test_vectorize_any_extent_has_a_scalar_tail(shape: tuple) -> None:
    """vectorize no longer needs the factor to divide a constant extent: the x86 backend runs
    `extent // 16` vector steps and a scalar tail (checked against the interpreter on x86)."""
    fn = P.elementwise(shape)
    sch = IRSchedule(fn)
    sch.vectorize(sch.get_loops("B")[1], 16)
    assert "vectorize[16] for (j, 0" in str(sch)
    check(fn, sch)


def test_loop_kind_errors() -> None:
    sch = IRSchedule(P.reduce_sum())
    i, k = sch.get_loops("B")
    with pytest.raises(IllegalDependenceError, match="loop 'k0' carries a dependence"):
        sch.parallel(k)
    with pytest.raises(IllegalDependenceError, match="reduction axis"):
        sch.vectorize(k, 4)
    with pytest.raises(IllegalDependenceError):
        sch.bind(k, "blockIdx.x")
    sch.unroll(k)
    with pytest.raises(LoopKindError, match="must be serial, but is unroll"):
        sch.parallel(k)
    with pytest.raises(InvalidArgumentError, match="unknown axis 'warp.x'"):
        sch.bind(i, "warp.x")
    with pytest.raises(InvalidArgumentError, match="factor must be positive"):
        sch.vectorize(i, 0)
    with pytest.raises(IllegalDependenceError, match="loop 'i' carries a dependence"):
        _parallel_shifted()


def _parallel_shifted() -> None:
    sch = IRSchedule(P.shifted())
    sch.parallel(sch.get_loops("A")[0])


def test_bind_limits() -> None:
    sch = IRSchedule(P.elementwise((4, 2048)), gpu_limits=GpuLimits())
    i, j = sch.get_loops("B")
    with pytest.raises(BindLimitError, match="exceeds the block limit 1024 of threadIdx.x"):
        sch.bind(j, "threadIdx.x")
    sch.bind(i, "threadIdx.y")
    jo, ji = sch.split(j, [-1, 512])
    with pytest.raises(BindLimitError, match="2048 threads per block"):
        sch.bind(ji, "threadIdx.x")
    with pytest.raises(BindLimitError, match="threadIdx.y is already bound"):
        sch.bind(jo, "threadIdx.y")
    sym = IRSchedule(P.elementwise((P.sym("S0"), 4)))
    si, sj = sym.get_loops("B")
    with pytest.raises(NonConstantExtentError, match="needs a constant extent"):
        sym.bind(si, "threadIdx.x")
    with pytest.raises(NonConstantExtentError):
        sym.unroll(si)
    sym.bind(si, "blockIdx.x")  # dynamic grids are fine


def test_annotate_unannotate() -> None:
    fn = P.elementwise()
    sch = IRSchedule(fn)
    sch.annotate("B", "k2", True)
    sch.annotate("B", "k1", 64)
    sch.annotate("B", "k3", 2.5)
    assert "attrs(k1:64, k2:1, k3:2.5)" in str(sch)
    sch.unannotate("B", "k2")
    with pytest.warns(UserWarning, match="has no attribute 'zz'"):
        sch.unannotate("B", "zz")
    with pytest.raises(TypeError):
        sch.annotate("B", "k", [1])  # type: ignore[arg-type]
    check(fn, sch)


def test_set_buffer_and_sync_threads() -> None:
    fn = P.two_stage()
    sch = IRSchedule(fn)
    sch.set_buffer("B", "shared")
    buf = next(b for b in sch.func.temp_bufs if b.name == "_B_temp_buffer")
    assert buf.memory_type.value == "shared"
    sch.sync_threads(sch.get_loops("B")[0])
    assert "__syncthreads()" in str(sch)
    check(fn, sch)
    with pytest.raises(BufferError, match="argument buffer '_C'"):
        sch.set_buffer("C", "local")
    with pytest.raises(InvalidArgumentError, match="memory_type must be"):
        sch.set_buffer("B", "texture")


def test_set_buffer_drops_old_temp() -> None:
    sch = IRSchedule(P.two_stage())
    sch.set_buffer("B", "local")
    assert [b.name for b in sch.func.temp_bufs] == ["_B_temp_buffer"]


def test_flatten_loops() -> None:
    fn = P.elementwise((4, 6))
    sch = IRSchedule(fn)
    sch.flatten_loops(sch.get_loops("B"))
    text = str(sch)
    assert "serial for (i_j_fused, 0, 24)" in text and "i0_0 = axis.bind(i_j_fused)" in text
    check(fn, sch)


def test_parallel_loops_cannot_nest() -> None:
    """Nested parallel loops are a ScheduleError at schedule time (the x86 backend cannot run
    them), whichever of the two loops is parallelized first; the IR is left unchanged."""
    import cinn_py as cp
    from schedules import IRSchedule, LoopKindError

    x = cp.placeholder((8, 16), "float32", "X")
    y = cp.compute((8, 16), lambda i, j: x[i, j] * 2.0, "Y")
    for first, second, where in ((0, 1, "inside"), (1, 0, "around")):
        sch = IRSchedule(cp.lower("fn", [x, y]))
        loops = sch.get_loops("Y")
        sch.parallel(loops[first])
        before = str(sch)
        with pytest.raises(LoopKindError, match=f"parallel: loop '.' is {where} the parallel loop"):
            sch.parallel(loops[second])
        assert str(sch) == before
