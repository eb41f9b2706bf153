"""CUDA auto schedule of reduce -> broadcast groups (NetBuilder softmax, layer_norm, rms_norm):
the row statistic is reduced once per block (warp or block reduce through the `__shared__`
scratch) and every thread of the row reads it from a register; no intermediate goes through a
global temporary. Checked on the generated CUDA text (FileCheck), with NVRTC, and by running the
scheduled IR in the interpreter against numpy (incl. one-row groups, rows shorter than a warp,
rows that are not a multiple of the block and symbolic dims)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend import NetBuilder
from cinn_py.ir import reset_name_ids
from cinn_py.pipeline import program_steps
from cinn_py.tools.testing.golden import GoldenCase, filecheck
from schedules.tactics import auto_schedule, auto_schedule_buckets
from tests.codegen.cuda.nvrtc_helpers import nvrtc_check

EPS = 1e-5


def _program(op: str, shape: list[Any], dtype: str = "float32") -> Any:
    reset_name_ids()
    nb = NetBuilder(op)
    x = nb.create_input(dtype, shape, "X")
    cols = shape[-1]
    w = nb.create_input(dtype, [cols], "W")
    b = nb.create_input(dtype, [cols], "B")
    if op == "softmax":
        nb.softmax(x)
    elif op == "rms_norm":
        nb.rms_norm(x, w, eps=EPS)
    else:
        nb.layer_norm(x, w, b, eps=EPS)
    return nb.build()


def _reference(op: str, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    if op == "softmax":
        e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    if op == "rms_norm":
        return x64 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + EPS) * w
    mean = x64.mean(axis=-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x64 - mean) / np.sqrt(var + EPS) * w + b


def _group(op: str, shape: list[Any], dtype: str = "float32") -> Any:
    _, funcs = program_steps(_program(op, shape, dtype))
    assert len(funcs) == 1, f"{op} fuses into one group"
    return funcs[0]


def _check_text(source: str, checks: list[str]) -> None:
    case = GoldenCase(path=Path(__file__), index=0, first_line=1, lines=[],
                      checks=[(n + 1, f"// {line}") for n, line in enumerate(checks)])
    ok, report = filecheck(source, case)
    assert ok, f"{report}\n--- CUDA source ---\n{source}"


def _run(func: Any, shape: tuple[int, ...], seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    w = (rng.random(shape[-1]) + 0.5).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    env = {str(d): n for d, n in zip(func.inputs[0].shape, shape) if not isinstance(d, cp.ir.IntImm)}
    return {"X": x, "W": w, "B": b}, env


def _assert_matches(op: str, func: Any, sch_func: Any, shape: tuple[int, ...]) -> None:
    inputs, env = _run(func, shape)
    names = {t.name for t in func.inputs}
    got = cp.run_ir(sch_func, {k: v for k, v in inputs.items() if k in names}, env)
    (out,) = [t.name for t in func.outputs]
    want = _reference(op, inputs["X"], inputs["W"], inputs["B"])
    np.testing.assert_allclose(got[out], want, rtol=2e-5, atol=2e-6)


OPS = ("softmax", "layer_norm", "rms_norm")


def test_softmax_block_reduce_golden() -> None:
    func = _group("softmax", [64, 512])
    sch = auto_schedule(func, "cuda")
    assert sch.report.strategy == "continuous" and not sch.report.fallbacks
    code = cp.codegen(sch, target="cuda")
    assert code.temp_spaces == ()
    _check_text(code.source, [
        "CHECK: __global__ void __launch_bounds__(64) softmax_group_0("
        "const float* __restrict__ X, float* __restrict__ softmax_0)",
        "CHECK-NEXT: {",
        "CHECK-DAG: float reduce_max_0_temp_buffer[1];",
        "CHECK-DAG: float reduce_sum_4_temp_buffer[1];",
        "CHECK-DAG: __shared__ float shm32__fp32_reduce[32];",
        # per thread: a strided (coalesced) slice of the row into a register partial
        "CHECK: reduce_max_0_rf_temp_buffer[0] = max(reduce_max_0_rf_temp_buffer[0], "
        "X[((((int)blockIdx.x * 512) + (rb * 64)) + (int)threadIdx.x)]);",
        # once per block: the row max, broadcast to every thread of the row as a register
        "CHECK: reduce_max_0_temp_buffer[0] = cinn_block_reduce_max_fp32(reduce_max_0_rf_temp_buffer[0], "
        "shm32__fp32_reduce, false);",
        "CHECK: expf((X[{{.*}}] - reduce_max_0_temp_buffer[0]))",
        "CHECK: reduce_sum_4_temp_buffer[0] = cinn_block_reduce_sum_fp32(",
        "CHECK: softmax_0[{{.*}}] = (expf((X[{{.*}}] - reduce_max_0_temp_buffer[0])) / "
        "reduce_sum_4_temp_buffer[0]);",
        "CHECK-NOT: __global__",
    ])
    nvrtc_check(code.source)


@pytest.mark.parametrize("op", OPS)
def test_one_row_is_stitched_in_one_block(op: str) -> None:
    """A single row (batch 1) was the single-block fallback with global temporaries: the row
    loop of extent 1 hid the statistics' dependence from compute_at and the buffer scoping."""
    func = _group(op, [1, 1000])
    sch = auto_schedule(func, "cuda")
    assert sch.report.strategy == "continuous", sch.report.fallbacks
    code = cp.codegen(sch, target="cuda")
    assert code.temp_spaces == ()
    _check_text(code.source, [
        "CHECK: __shared__ float shm32__fp32_reduce[32];",
        "CHECK: _temp_buffer[0] = cinn_block_reduce_{{max|sum}}_fp32(",
        "CHECK-NOT: blockIdx",
    ])
    assert code.launch.launch_dims({})[0] == (1, 1, 1)
    nvrtc_check(code.source)
    _assert_matches(op, func, sch.func, (1, 1000))


SHAPES = [
    ((64, 512), "cinn_block_reduce_"),   # block reduce, rows a multiple of the block
    ((7, 33), "cinn_warp_reduce_"),      # warp reduce, row not a multiple of 32 (guarded lanes)
    ((5, 20), None),                     # rows shorter than a warp: one thread per row, serial
    ((3, 3000), "cinn_block_reduce_"),   # 1024 threads, a tail
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,helper", SHAPES,
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else "")
def test_statistics_stay_on_chip(op: str, shape: tuple[int, int], helper: str | None) -> None:
    func = _group(op, list(shape))
    sch = auto_schedule(func, "cuda")
    assert sch.report.strategy == "continuous" and not sch.report.fallbacks
    code = cp.codegen(sch, target="cuda")
    assert code.temp_spaces == (), "no intermediate goes through global memory"
    assert "__global__" in code.source and code.source.count("__restrict__") == len(func.args)
    if helper is not None:
        assert helper in code.source
        assert ("__shared__" in code.source) == (helper == "cinn_block_reduce_")
    nvrtc_check(code.source)
    _assert_matches(op, func, sch.func, shape)


@pytest.mark.parametrize("op", OPS)
def test_symbolic_rows_and_cols_buckets(op: str) -> None:
    func = _group(op, ["S0", "C"])
    buckets = auto_schedule_buckets(func, "cuda")
    for _, sch in buckets:
        assert sch.report.strategy == "continuous", sch.report.fallbacks
        code = cp.codegen(sch, target="cuda")
        assert code.temp_spaces == ()
        nvrtc_check(code.source)
    (_, sch), = buckets
    for shape in ((3, 70), (1, 1), (2, 2100)):
        _assert_matches(op, func, sch.func, shape)


def test_fp16_accumulates_in_float() -> None:
    sch = auto_schedule(_group("layer_norm", [64, 512], "float16"), "cuda")
    code = cp.codegen(sch, target="cuda")
    assert code.temp_spaces == ()
    _check_text(code.source, [
        "CHECK: __shared__ float shm32__fp32_reduce[32];",
        "CHECK: float {{.*}}_rf_temp_buffer[1];",
        "CHECK: cinn_block_reduce_sum_fp32(",
    ])
    nvrtc_check(code.source)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", [(4, 300), (7, 33)], ids=["block_reduce", "warp_reduce"])
def test_emulated_cuda_matches_numpy_without_races(op: str, shape: tuple[int, int]) -> None:
    """The generated CUDA C itself (not the scheduled IR) on the CPU emulator, with the race
    check: the statistic reduced through `__shared__` is read by every thread of the row only
    after the block reduce's barriers."""
    from cinn_py.tools.testing.cuda import run_cuda_emulated
    program = _program(op, list(shape))
    func = _group(op, list(shape))
    inputs, _ = _run(func, shape, seed=3)
    got = run_cuda_emulated(program, inputs["X"], inputs["W"], inputs["B"], race_check=True)
    got = got[0] if isinstance(got, (list, tuple)) else got
    want = _reference(op, inputs["X"], inputs["W"], inputs["B"])
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-5, atol=2e-6)


def test_short_rows_several_per_block_golden() -> None:
    """Rows of <= 256 columns: a warp per row, 8 rows per block (threadIdx.y), two row tiles per
    thread; the statistics are warp-reduced (shuffles, no shared memory, no barrier) into registers
    that every lane of the row reads. The row guard depends on threadIdx.y only, so it is uniform
    over each warp and the shuffles see all 32 lanes."""
    func = _group("softmax", [37, 100])
    sch = auto_schedule(func, "cuda")
    assert sch.report.strategy == "continuous" and not sch.report.fallbacks
    code = cp.codegen(sch, target="cuda")
    assert code.temp_spaces == ()
    assert code.launch.launch_dims({})[:2] == ((3, 1, 1), (32, 8, 1))
    _check_text(code.source, [
        "CHECK: __global__ void __launch_bounds__(256) softmax_group_0(",
        "CHECK-NOT: __shared__",
        "CHECK: for (int32_t sp_0 = 0; sp_0 < 2; sp_0 += 1) {",
        "CHECK-NEXT: if ((((((int)blockIdx.x * 16) + (sp_0 * 8)) + (int)threadIdx.y) < 37)) {",
        "CHECK: X[((((((int)blockIdx.x * 1600) + (sp_0 * 800)) + ((int)threadIdx.y * 100)) + (rb * 32)) + "
        "(int)threadIdx.x)]",
        "CHECK: reduce_max_0_temp_buffer[0] = cinn_warp_reduce_max_fp32(reduce_max_0_rf_temp_buffer[0]);",
        "CHECK: reduce_sum_4_temp_buffer[0] = cinn_warp_reduce_sum_fp32(reduce_sum_4_rf_temp_buffer[0]);",
        "CHECK: softmax_0[{{.*}}] = (expf((X[{{.*}}] - reduce_max_0_temp_buffer[0])) / "
        "reduce_sum_4_temp_buffer[0]);",
        "CHECK-NOT: __syncthreads",
    ])
    nvrtc_check(code.source)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", [(37, 100), (13, 128), (9, 45), (5, 33)],
                         ids=lambda s: "x".join(map(str, s)))
def test_emulated_several_rows_per_block_without_races(op: str, shape: tuple[int, int]) -> None:
    """Several short rows per block (a warp each), odd row counts (a partial last row tile) and
    odd row lengths (guarded lanes), as generated CUDA C in the emulator with the race check."""
    from cinn_py.tools.testing.cuda import run_cuda_emulated
    func = _group(op, list(shape))
    code = cp.codegen(auto_schedule(func, "cuda"), target="cuda")
    assert code.launch.launch_dims({})[1][1] > 1 and "cinn_warp_reduce_" in code.source
    inputs, _ = _run(func, shape, seed=5)
    got = run_cuda_emulated(_program(op, list(shape)), inputs["X"], inputs["W"], inputs["B"], race_check=True)
    got = got[0] if isinstance(got, (list, tuple)) else got
    want = _reference(op, inputs["X"], inputs["W"], inputs["B"])
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-5, atol=2e-6)
