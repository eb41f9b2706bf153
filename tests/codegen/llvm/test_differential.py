"""Lowered and scheduled programs through the x86 backend agree with run_ir and numpy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.interp import run_ir
from cinn_py.ir import LoweredFunc
from cinn_py.runtime.args import eval_int_expr
from codegen.llvm import build_x86
from schedules import IRSchedule
from tests.codegen.llvm.llvm_helpers import bf16_values, random_array
from tests.lower import programs as P
from tests.lower.test_seed_example import build_seed


def _inputs(func: LoweredFunc, syms: dict[str, int]) -> dict[str, np.ndarray]:
    return ({t.name: random_array(tuple(eval_int_expr(d, syms) for d in t.shape), t.dtype) for t
             in func.inputs})


def _check(func: LoweredFunc, syms: dict[str, int] | None = None, rtol: float = 1e-5,
           **build: object) -> None:
    ins = _inputs(func, syms or {})
    ref = run_ir(func, ins)
    got = build_x86(func, **build)(*[ins[t.name] for t in func.inputs])
    got = got if isinstance(got, tuple) else (got,)
    for tensor, out in zip(func.outputs, got):
        value = bf16_values(out) if tensor.dtype.kind == "bfloat" else out
        expected = ref[tensor.name]
        if tensor.dtype.kind == "bfloat":
            expected = bf16_values(expected) if expected.dtype == np.uint16 else expected
        assert value.shape == expected.shape, tensor.name
        np.testing.assert_allclose(value.astype(np.float64), np.asarray(expected, np.float64),
                                   rtol=rtol, atol=rtol,
                                   err_msg=tensor.name)


PROGRAMS: dict[str, Callable[[], LoweredFunc]] = {
    "elementwise": P.elementwise, "broadcast": P.broadcast, "keepdims": P.multi_axis_keepdims,
    "full_reduction": P.full_reduction, "half": P.half, "ints_bool": P.ints_bool,
    "two_outputs": P.two_outputs,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_lowered_programs(name: str) -> None:
    _check(PROGRAMS[name]())


def test_every_reduction_kind() -> None:
    for func in P.reductions().values():
        _check(func)


@pytest.mark.parametrize("s", [1, 5])
def test_symbolic_programs(s: int) -> None:
    _check(P.symbolic_mixed(), {"S": s})
    _check(P.rms_norm(), {"S": s}, rtol=1e-4)


def test_seed_example_with_symbolic_s1_s2_against_numpy() -> None:
    X, F = build_seed()
    kernel = build_x86(cp.lower("fn", [X, F]))
    for s1, s2 in [(1, 1), (3, 5), (4, 7)]:
        x = random_array((s1, s2, 1024), "float32")
        d = (x * 2 + 1).sum(axis=2, dtype=np.float64) * 2
        np.testing.assert_allclose(kernel(x), np.broadcast_to(d[:, :, None] + 1, x.shape),
                                   rtol=1e-4, atol=1e-3)


def test_scheduled_elementwise_split_fuse_vectorize_parallel() -> None:
    func = P.elementwise()  # B[32, 64] = A * 2
    sch = IRSchedule(func)
    i, j = sch.get_loops("B")
    fused = sch.fuse([i, j])
    outer, inner = sch.split(fused, [-1, 16])
    sch.parallel(outer)
    sch.vectorize(inner, 8)
    text = str(sch.func)
    assert "parallel for" in text and "vectorize[8]" in text
    for threads in (1, 2, 4):
        _check(sch.func, num_threads=threads)


def test_scheduled_non_dividing_split_with_guard() -> None:
    A = cp.placeholder((50, 30), "float32", "A")
    B = cp.compute((50, 30), lambda i, j: cp.tanh(A[i, j]) + 1.0, "B")
    sch = IRSchedule(cp.lower("g", [A, B]))
    i, j = sch.get_loops("B")
    jo, ji = sch.split(j, [-1, 8])  # 30 = 4 * 8 with a guard
    sch.parallel(i)
    sch.vectorize(ji, 8)
    _check(sch.func)
    _check(sch.func, fast_math=True, rtol=1e-5)


def test_scheduled_rms_norm_rows_in_parallel() -> None:
    func = P.rms_norm()
    sch = IRSchedule(func)
    for block in sch.get_all_blocks():
        loops = sch.get_loops(block)
        if loops:
            sch.parallel(loops[0])
            break
    _check(sch.func, {"S": 7}, rtol=1e-4, num_threads=2)
