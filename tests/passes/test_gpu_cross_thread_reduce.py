"""cross_thread_reduce: helper selection per method/axis, padding, combination, errors."""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py.diagnostics import CompileError
from cinn_py.ir import ReduceMethod, Store, print_ir, walk
from cinn_py.passes.cross_thread_reduce import cross_thread_reduce
from schedules import IRSchedule


def _reduce(r: int, rows: int = 32, fn=cp.reduce_sum, axis: str = "threadIdx.x") -> IRSchedule:
    A = cp.placeholder((rows, r), "float32", "A")
    k = cp.reduce_axis(r, "k")
    B = cp.compute((rows,), lambda i: fn(A[i, k], k), "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    loops = s.get_loops("B")
    s.bind(loops[0], "blockIdx.x")
    s.bind(loops[1], axis)
    return s


def _update(func) -> str:
    return next(print_ir(n) for n in walk(func.body) if isinstance(n, Store) and n.tensor.name == "B")


def _set_method(s: IRSchedule, method: ReduceMethod):
    import dataclasses

    from cinn_py.ir import Mutator

    class _Set(Mutator):
        def visit_schedule_block(self, node):
            node = self.generic_visit(node)
            return dataclasses.replace(node, reduce_method=method) if node.name == "B" else node

    return dataclasses.replace(s.func, body=_Set().visit(s.func.body))


def test_block_reduce_replaces_update_and_adds_scratch() -> None:
    out = cross_thread_reduce(_reduce(256).func)
    assert _update(out) == "B[i0_0] = cinn_block_reduce_sum_fp32(A[i0_0, i1], shm32__fp32_reduce, false)"
    assert [(b.name, print_ir(b.shape[0])) for b in out.temp_bufs] == [("shm32__fp32_reduce", "32")]


def test_warp_method_uses_block_helper_with_return_warp() -> None:
    out = cross_thread_reduce(_set_method(_reduce(32, fn=cp.reduce_max), ReduceMethod.WARP))
    assert _update(out) == "B[i0_0] = cinn_block_reduce_max_fp32(A[i0_0, i1], shm32__fp32_reduce, true)"


def test_no_method_with_a_warp_of_threads_uses_warp_reduce() -> None:
    out = cross_thread_reduce(_reduce(16, fn=cp.reduce_min).func)
    assert _update(out) == "B[i0_0] = cinn_warp_reduce_min_fp32(A[i0_0, i1])"
    assert out.temp_bufs == ()


def test_threadidx_y_reduce_is_discrete() -> None:
    out = cross_thread_reduce(_reduce(8, axis="threadIdx.y").func)
    assert _update(out) == "B[i0_0] = cinn_discrete_reduce_sum_fp32(A[i0_0, i1], shm32__fp32_reduce)"
    assert print_ir(out.temp_bufs[0].shape[0]) == "8"


def test_loop_shorter_than_block_is_padded_with_identity() -> None:
    A = cp.placeholder((4, 100), "float32", "A")
    X = cp.compute((4, 128), lambda i, j: A[i, 0] * 1.0, "X")
    k = cp.reduce_axis(100, "k")
    B = cp.compute((4,), lambda i: cp.reduce_max(A[i, k], k), "B")
    s = IRSchedule(cp.lower("fn", [A, X, B]))
    for name in ("X", "B"):
        loops = s.get_loops(name)
        s.bind(loops[0], "blockIdx.x")
        s.bind(loops[1], "threadIdx.x")
    out = cross_thread_reduce(s.func)
    assert _update(out) == ("B[i0_1] = cinn_block_reduce_max_fp32(select((k < 100), A[i0_1, i1_0], -inf), "
                            "shm32__fp32_reduce, false)")
    assert "thread_bind[threadIdx.x] for (k, 0, 128)" in print_ir(out)


def test_non_identity_init_combines_with_old_value() -> None:
    import dataclasses

    from cinn_py.ir import FloatImm, Mutator, dtype

    class _Init(Mutator):
        def visit_store(self, node):
            if node.tensor.name == "B__reduce_init":
                return dataclasses.replace(node, value=FloatImm(dtype.float32, 1.0))
            return node

    func = _reduce(64).func
    func = dataclasses.replace(func, body=_Init().visit(func.body))
    text = print_ir(cross_thread_reduce(func))
    assert "float32 B_old = B[i0_0]" in text
    assert "B[i0_0] = (B_old + cinn_block_reduce_sum_fp32(A[i0_0, i1], shm32__fp32_reduce, false))" in text


def test_thread_dependent_guard_is_rejected() -> None:
    A = cp.placeholder((100, 64), "float32", "A")
    k = cp.reduce_axis(64, "k")
    B = cp.compute((100,), lambda i: cp.reduce_sum(A[i, k], k), "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    loops = s.get_loops("B")
    outer, inner = s.split(loops[0], [-1, 8])
    s.bind(inner, "threadIdx.y")
    s.bind(s.get_loops("B")[2], "threadIdx.x")
    with pytest.raises(CompileError, match="guard that depends on a thread index"):
        cross_thread_reduce(s.func)


def test_odd_block_dim_is_rejected() -> None:
    with pytest.raises(CompileError, match="blockDim.x = 48"):
        cross_thread_reduce(_reduce(48).func)


def test_untouched_without_thread_bound_reduce() -> None:
    A = cp.placeholder((8, 16), "float32", "A")
    k = cp.reduce_axis(16, "k")
    B = cp.compute((8,), lambda i: cp.reduce_sum(A[i, k], k), "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    s.bind(s.get_loops("B")[0], "threadIdx.x")
    assert cross_thread_reduce(s.func) is s.func
