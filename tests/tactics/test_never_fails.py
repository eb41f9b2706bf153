"""Regressions: valid programs the automatic scheduler used to reject.

* x86: `parallel` on the fused loop of a `(7, S0, S1)` elementwise group raised
  IllegalDependenceError (see also test_x86_tactics.test_parallel_on_fused_symbolic_3d_nest);
* CUDA: any row reduction shorter than 32 raised ExtentMismatchError (a warp reduce split the
  row into 32 threads);
* CUDA: NetBuilder softmax raised AutoScheduleError (its keepdim reductions run over `[i, 0:1]`
  nests, which alignment did not match with the `[i, j]` ones);
* both: a group of 0-d blocks only (`exp(squeeze(x[1]))`, `reshape(x, [])`) raised AlignError
  from the group analysis, which looked for the master block's loops.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend.fusion import plan
from cinn_py.lowering.group import lower_group
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.tools.fuzz import nvrtc_available
from schedules.tactics import auto_schedule, auto_schedule_buckets


def _row_sum(rows: Any, cols: int) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    k = cp.reduce_axis(cols, "k")
    R = cp.compute((rows,), lambda i: cp.reduce_sum(X[i, k] * 2.0, k), "R")
    return cp.lower("row_sum", [X, R])


def _check_cuda_buckets(func: Any, inputs: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    """Every bucket's schedule runs equal to numpy on the interpreter and compiles with NVRTC."""
    for _, sch in auto_schedule_buckets(func, target="cuda"):
        got = cp.run_ir(sch.func, inputs)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
        assert isinstance(cp.codegen(sch, target="cuda").cubin, bytes)


def test_x86_elementwise_7_s0_s1_builds() -> None:
    s0, s1 = cp.sym("S0"), cp.sym("S1")
    X = cp.placeholder((7, s0, s1), "float32", "X")
    Y = cp.compute((7, s0, s1), lambda a, i, j: X[a, i, j] * 2.0 + 1.0, "Y")
    func = cp.lower("e3", [X, Y])
    x = np.random.default_rng(0).standard_normal((7, 5, 13)).astype(np.float32)
    np.testing.assert_allclose(cp.build(func, target="x86", schedule="auto")(x), x * 2 + 1, rtol=1e-6)
    assert "parallel" in cp.print_ir(auto_schedule(func, target="x86").func)


@pytest.mark.parametrize("cols", [1, 5, 20, 31])
def test_cuda_short_row_reduction(cols: int) -> None:
    x = np.random.default_rng(cols).standard_normal((40, cols)).astype(np.float32)
    _check_cuda_buckets(_row_sum(40, cols), {"X": x}, {"R": (x * 2).sum(axis=1)})
    _check_cuda_buckets(_row_sum(cp.sym("N"), cols), {"X": x}, {"R": (x * 2).sum(axis=1)})


def _netbuilder_softmax(rows: Any, cols: int) -> list[Any]:
    nb = NetBuilder("softmax")
    nb.softmax(nb.create_input("float32", [rows, cols], "X"))
    return [lower_group(g) for g in plan(nb.build()).groups]


@pytest.mark.parametrize("cols", [10, 17, 32])
@pytest.mark.parametrize("rows", ["S0", 6])
def test_cuda_netbuilder_softmax(rows: Any, cols: int) -> None:
    x = np.random.default_rng(cols).standard_normal((6, cols)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    [func] = _netbuilder_softmax(rows, cols)
    _check_cuda_buckets(func, {"X": x}, {func.outputs[0].name: e / e.sum(axis=1, keepdims=True)})


@pytest.mark.parametrize("target", ["x86", "cuda"])
def test_zero_dim_group_schedules(target: str) -> None:
    nb = NetBuilder("zero_dim")
    x = nb.create_input("float32", [1], "X")
    y = nb.exp(nb.squeeze(x))
    program = nb.build([y, nb.reshape(y, [])])
    x_np = np.array([0.5], np.float32)
    for group in plan(program).groups:
        sch = auto_schedule(lower_group(group), target=target)
        got = cp.run_ir(sch.func, {"X": x_np})
        np.testing.assert_allclose(got[y.name], np.exp(x_np[0]), rtol=1e-6)
        if target == "cuda" and nvrtc_available():
            assert isinstance(cp.codegen(sch, target="cuda").cubin, bytes)
    if target == "x86":
        out = cp.compile(program, "x86").run({"X": x_np})
        np.testing.assert_allclose(out[y.name], np.exp(x_np[0]), rtol=1e-6)


@pytest.mark.parametrize("target", ["x86", "cuda"])
def test_reduction_over_no_elements_schedules(target: str) -> None:
    """A sum over a zero-size axis (torch.linalg.vecdot of two [0] vectors) is its identity; the
    reduce-all tile had ceil(0 / 32) = 0 warps and raised ValueError from TileConfig."""
    nb = NetBuilder("empty_sum")
    x = nb.create_input("float32", [0], "X")
    program = nb.build([nb.reduce_sum(nb.multiply(x, x), [0])])
    x_np = np.zeros((0,), np.float32)
    [group] = plan(program).groups
    sch = auto_schedule(lower_group(group), target=target)
    got = cp.run_ir(sch.func, {"X": x_np})
    np.testing.assert_array_equal(got[sch.func.outputs[0].name], np.float32(0.0))
    if target == "x86":
        out = cp.compile(program, "x86").run({"X": x_np})
        np.testing.assert_array_equal(next(iter(out.values())), np.float32(0.0))
