"""The CUDA auto scheduler's last resort (`schedules.tactics.cuda_fallback`, and the race check
after the tiling tactics that sends a kernel needing a grid barrier there): programs the fuzzer's
auto mode found failing, each now scheduled (by the tiling tactics or the one-block fallback),
equal to the unscheduled function in the interpreter for every shape bucket, and compiled by
NVRTC.

* fuzz --net seed 1 case 2: reductions over a 1-element row (`split: the product 32 of the
  factors other than -1 is larger than the extent 1`);
* fuzz --net seed 1 case 10: a group whose nests cannot be aligned (AutoScheduleError);
* fuzz --auto seed 7 case 70: a tiling whose global temporary is written by one block and read
  by another (gpu_bind's race check refused the kernel at codegen);
* fuzz --net seed 202 case 75: a 0-d result read after a 0-d reduction in the one-block fallback
  ran on every thread without a barrier (top-level blocks without iter vars cannot be bound).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend.fusion import plan
from cinn_py.lowering.group import lower_group
from cinn_py.tools.fuzz import nvrtc_available
from cinn_py.tools.testing.cuda import run_cuda_emulated
from schedules.tactics import auto_schedule_buckets
from schedules.testing import random_inputs


def _check(func: Any, inputs: dict[str, np.ndarray]) -> list[str]:
    want = cp.run_ir(func, inputs)
    strategies = []
    for _, sch in auto_schedule_buckets(func, target="cuda"):
        strategies.append(sch.auto_report.strategy)
        got = cp.run_ir(sch.func, inputs)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
        code = cp.codegen(sch, target="cuda")
        assert "__global__" in code.source                     # printing runs gpu_bind's race checks
        if nvrtc_available():
            assert isinstance(code.cubin, bytes)
    return strategies


def _groups(program: Any) -> list[Any]:
    return [lower_group(g) for g in plan(program).groups]


def _inputs(func: Any, syms: dict[str, int]) -> dict[str, np.ndarray]:
    return random_inputs(func, syms, np.random.default_rng(0))


def test_reductions_over_one_element_rows() -> None:
    nb = cp.NetBuilder("net2")
    x0 = nb.create_input("float32", ["S0", 7, 32], "x0")
    x1 = nb.create_input("float32", [1], "x1")
    nb.reduce_mean(x1, dim=(0,), keep_dim=False)
    nb.reduce_mean(nb.softmax(x0, axes=[-3]), dim=(0, 1, 2), keep_dim=False)
    nb.reduce_min(x0, dim=(1, 2), keep_dim=True)
    for func in _groups(nb.build()):
        _check(func, _inputs(func, {"S0": 3}))


def test_unalignable_group() -> None:
    nb = cp.NetBuilder("net10")
    x0 = nb.create_input("float32", ["S1", 2], "x0")
    x1 = nb.create_input("float32", [2], "x1")
    v2 = nb.multiply(x0, x1)
    v3 = nb.maximum(x0, v2)
    nb.transpose(v3, axis=(1, 0))
    nb.reduce_sum(x0, dim=(0, 1), keep_dim=False)
    nb.reduce_min(nb.maximum(v2, x1), dim=(1,), keep_dim=True)
    strategies = []
    for func in _groups(nb.build()):
        strategies += _check(func, _inputs(func, {"S1": 5}))
    assert "single-block" in strategies


def test_tiling_that_needs_a_grid_barrier_falls_back() -> None:
    s0 = cp.sym("S0")
    in0 = cp.placeholder((1, s0, s0), "float64", "in0")
    rk = cp.reduce_axis(s0)
    t1 = cp.compute((1, s0),
                    lambda v1, v2: cp.reduce_sum(cp.minimum(in0[v1, v2, rk], in0[v1, v2, rk]), [rk]), "t1")
    t3 = cp.compute((s0, s0, 1), lambda v0, v2, v1: t1[v1, v2] / (cp.abs(t1[v1, v2]) + 1.0), "t3")
    t4 = cp.compute((s0, s0, 1), lambda v0, v2, v1: t3[v0, v2, v1] * cp.cast(v0, "float64"), "t4")
    func = cp.lower("fuzz_kernel", [in0, t3, t4])
    for n in (2, 5):
        strategies = _check(func, _inputs(func, {"S0": n}))
    assert "single-block" in strategies


@pytest.mark.parametrize("n", [1, 100, 300])
def test_single_block_schedule_of_a_two_stage_function(n: int) -> None:
    """More elements than threads: each thread strides over its nest's elements."""
    from schedules.tactics.cuda_fallback import single_block_schedule

    X = cp.placeholder((n,), "float32", "X")
    Y = cp.compute((n,), lambda i: X[i] * 2.0, "Y")
    Z = cp.compute((n,), lambda i: Y[(n - 1) - i] + 1.0, "Z")     # reads what other threads wrote
    func = cp.lower("two", [X, Z])
    sch = cp.IRSchedule(func)
    single_block_schedule(sch)
    x = np.arange(n, dtype=np.float32)
    np.testing.assert_allclose(cp.run_ir(sch.func, {"X": x})["Z"], x[::-1] * 2 + 1)
    source = cp.codegen(sch.func, target="cuda").source
    assert "__syncthreads();" in source and "blockIdx" not in source


def test_fallback_with_a_0d_result_after_a_0d_reduction() -> None:
    nb = cp.NetBuilder("net75")
    x0 = nb.create_input("float32", [3], "x0")
    x2 = nb.create_input("float32", [3], "x2")
    v7 = nb.minimum(nb.exp(nb.tanh(x0)), x2)
    nb.relu(nb.reduce_min(v7, dim=(0,), keep_dim=False))
    nb.gelu(v7)
    strategies = []
    for func in _groups(nb.build()):
        strategies += _check(func, _inputs(func, {}))
    assert "single-block" in strategies


def test_0d_reduction_init_is_separated_from_thread_0s_update_by_a_barrier() -> None:
    """Fuzz --net --emulate seed 2027 case 56: every thread writes the 0-d identity (the init
    block cannot be addressed, so not bound), thread 0 accumulates; without a barrier between
    them a late thread's identity overwrote the result (inf)."""
    nb = cp.NetBuilder("net56")
    x0 = nb.create_input("float32", [4], "x0")
    low = nb.reduce_min(x0, dim=(0,), keep_dim=False)
    out = nb.maximum(x0, low)
    x = np.array([0.5, -1.0, 2.0, -3.0], np.float32)
    got_low, got_out = run_cuda_emulated(nb.build([low, out]), x)
    np.testing.assert_array_equal(got_low, x.min())
    np.testing.assert_array_equal(got_out, np.maximum(x, x.min()))
    source = cp.codegen(_groups(nb.build([low, out]))[0], target="cuda", schedule="auto").source
    init, barrier, update = (source.index(s) for s in ("0x7f800000", "__syncthreads", "min("))
    assert init < barrier < update
