"""auto_schedule end to end: the scheduled IR runs equal to the unscheduled function on the
interpreter (which runs GPU-bound loops serially), CUDA kernels compile with NVRTC, x86 kernels
build and match numpy; key loop headers of the tiling are pinned."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.ir import For, walk
from schedules.tactics import auto_schedule

from tests.tactics.conftest import (
    broadcast, colnorm, elementwise, inputs_for, layernorm, reduce_all, rmsnorm, softmax, transpose,
)

GROUPS = {
    "elementwise": lambda: elementwise(33, 70),
    "broadcast": lambda: broadcast(20, 48),
    "transpose": lambda: transpose(24, 40),
    "rmsnorm": lambda: rmsnorm(37, 300),
    "rmsnorm_warp": lambda: rmsnorm(20, 64),
    "softmax": lambda: softmax(16, 100),
    "layernorm": lambda: layernorm(6, 1000),
    "colnorm_cross_thread": lambda: colnorm(100, 64),
    "colnorm_serial": lambda: colnorm(50, 70),
    "reduce_all": lambda: reduce_all(300, zero_d=False),
    "reduce_all_0d": lambda: reduce_all(300, zero_d=True),
}


def _headers(sch: Any) -> list[str]:
    """`kind var extent` of every loop, pre-order: the shape of the schedule."""
    out = []
    for node in walk(sch.func.body):
        if isinstance(node, For):
            kind = node.bind_axis or node.for_type.value
            out.append(f"{kind} {node.loop_var.name} {cp.print_ir(node.extent)}")
    return out


def _check_interp(func: Any, sch: Any) -> dict[str, np.ndarray]:
    inputs = inputs_for(func)
    want = cp.run_ir(func, inputs)
    got = cp.run_ir(sch.func, inputs)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    return want


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_cuda_schedule_is_legal_and_compiles(group: str) -> None:
    func = GROUPS[group]()
    sch = auto_schedule(func, target="cuda")
    assert sch.trace, "the tactics record their primitives"
    kinds = {h.split()[0] for h in _headers(sch)}
    assert "blockIdx.x" in kinds or group == "reduce_all_0d"
    assert "threadIdx.x" in kinds
    _check_interp(func, sch)
    code = cp.codegen(sch, target="cuda")
    assert isinstance(code.cubin, bytes) and len(code.cubin) > 0


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_x86_schedule_builds_and_matches(group: str) -> None:
    func = GROUPS[group]()
    sch = auto_schedule(func, target="x86")
    want = _check_interp(func, sch)
    inputs = inputs_for(func)
    kernel = cp.build(sch, target="x86")
    got = kernel(*[inputs[t.name] for t in func.inputs])
    got = got if isinstance(got, (list, tuple)) else [got]
    for value, (name, expected) in zip(got, want.items()):
        np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-5, err_msg=name)


def test_rmsnorm_cuda_tiling() -> None:
    """R = 300: block reduce over 64 threads (reduce_block 512 -> 2 warps, tree 64), one row per
    block; the tail fused into the reduction's row loop; statistics in registers."""
    sch = auto_schedule(rmsnorm(37, 300), target="cuda")
    assert _headers(sch) == [
        "blockIdx.x sp 37",
        "threadIdx.x rb_0 64", "serial rb 5",      # Sq_rf (strided, coalesced partial sums), then Sq
        "threadIdx.x rb_2 64", "serial rb_1 5",    # Y, fused under sp
    ]
    report = sch.auto_report
    assert (report.strategy, report.local) == ("continuous", ["Sq_rf", "Sq"])
    source = cp.codegen(sch, target="cuda").source
    assert "cinn_block_reduce_sum_fp32(Sq_rf_temp_buffer[0], " in source
    assert "float Sq_temp_buffer[1];" in source


def test_softmax_warp_reduce_tiling() -> None:
    """R = 100 <= 256: warp reduce, 8 rows per block on threadIdx.y, 2 serial rows per thread."""
    sch = auto_schedule(softmax(16, 100), target="cuda")
    headers = _headers(sch)
    assert headers[:3] == ["blockIdx.x sp 1", "serial sp_0 2", "threadIdx.y sp_1 8"]
    assert sch.auto_report.inlined == ["E"]
    source = cp.codegen(sch, target="cuda").source
    assert source.count("cinn_warp_reduce_") == 2
    assert "__launch_bounds__(256)" in source


def test_column_reduction_discrete_tiling() -> None:
    sch = auto_schedule(colnorm(100, 64), target="cuda")
    assert _headers(sch)[:3] == ["blockIdx.x sp 2", "threadIdx.x sp_0 32", "threadIdx.y rb 16"]
    assert "cinn_discrete_reduce_sum_fp32" in cp.codegen(sch, target="cuda").source


def test_x86_rmsnorm_vectorized_and_parallel() -> None:
    """One parallel row loop: 16 partial sums (2 AVX2 vectors) updated in a vector loop, the
    short final sum, then the normalised row written with 8-lane vectors."""
    from dataclasses import replace

    from schedules.tactics import analyze_group, build_schedule_config

    func = rmsnorm(37, 300)
    avx2 = replace(build_schedule_config(analyze_group(func)), vector_width_bits=256)
    headers = _headers(auto_schedule(func, target="x86", config=avx2))
    assert headers == ["parallel i 37", "vectorize j 16", "serial k_0 19", "vectorize k_1 16",
                       "serial rf_k_1 16",
                       "vectorize j 300"]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown target 'rocm'"):
        auto_schedule(elementwise(4, 4), target="rocm")
    with pytest.raises(TypeError, match="expected a LoweredFunc"):
        auto_schedule("fn")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="schedule must be None"):
        cp.build(elementwise(4, 4), schedule="tvm")


def test_driver_schedule_auto_x86() -> None:
    func = softmax(8, 40)
    x = inputs_for(func)["X"]
    got = cp.build(func, target="x86", schedule="auto")(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    # 8 rows of 40: one block of 8 warps (its blockIdx.x is the constant 0), a warp per row
    assert "cinn_warp_reduce_max_fp32" in cp.codegen(func, target="cuda", schedule="auto").source


def test_unalignable_cuda_group_falls_back_to_one_block() -> None:
    """A nest with neither the spatial nor the reduce extents cannot share one CUDA kernel's
    tiling: the group runs on one thread block, nests separated by barriers, and the report
    says why the tiling did not apply."""
    X = cp.placeholder((8, 16), "float32", "X")
    k = cp.reduce_axis(16, "k")
    C = cp.compute((8,), lambda i: cp.reduce_sum(X[i, k], k), "C")
    Z = cp.compute((8, 7), lambda i, j: X[i, j] * C[i], "Z")
    k2 = cp.reduce_axis(8, "k2")
    T = cp.compute((), lambda: cp.reduce_sum(C[k2] * 2.0, k2), "T")
    func = cp.lower("g", [X, Z, T])
    sch = auto_schedule(func, target="cuda")
    report = sch.auto_report
    assert report.strategy == "single-block"
    assert "cannot be aligned" in report.fallbacks[0]
    _check_interp(func, sch)
    source = cp.codegen(sch, target="cuda").source
    assert source.count("__syncthreads();") == 2 and "blockIdx" not in source
    assert "if (((int)threadIdx.x < 1)) {" in source  # the scalar reduction runs on thread 0 only
    _check_interp(func, auto_schedule(func, target="x86"))  # x86 runs the nests one after another
