"""The CUDA matmul tactic: the tiled shared-memory schedule (block tile staged in `__shared__`
per k step between two barriers, a thread tile of float32 accumulators in registers, the bias +
activation epilogue applied from registers), checked on the CUDA text (FileCheck), with NVRTC,
and run in the CUDA emulator against numpy on shapes that are not tile multiples, transposed
operands, batched and symbolic sizes and float16; shapes the tactic refuses fall back with a reason."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend import NetBuilder
from cinn_py.pipeline import program_steps
from cinn_py.tools.testing.cuda import run_cuda_emulated
from schedules.tactics import auto, auto_schedule
from schedules.tactics.cuda_matmul import CudaMatmulParams
from tests.codegen.cuda.nvrtc_helpers import nvrtc_check
from tests.tactics.test_cuda_stitching import _check_text
from tests.tactics.test_matmul import matmul_func, reference


def _emulated(case: dict[str, Any], race_check: bool = False) -> None:
    fn = matmul_func(**case)
    m, n, k = case["m"], case["n"], case["k"]
    ta, tb, epi = case.get("ta", False), case.get("tb", False), case.get("epilogue", "")
    pre = (case["batch"],) if case.get("batch") else ()
    shapes = [pre + ((k, m) if ta else (m, k)),
              (pre if case.get("b_batched", True) else ()) + ((n, k) if tb else (k, n))]
    shapes += [(n,)] if epi else []
    dtype = case.get("dtype", "float32")
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal(s).astype(dtype) for s in shapes]
    got = run_cuda_emulated(fn, *ins, race_check=race_check)
    tol = 1e-2 if dtype == "float16" else 1e-4
    want = reference([i.astype(np.float32) for i in ins], ta, tb, epi)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def test_tiled_shared_memory_golden() -> None:
    sch = auto_schedule(matmul_func(128, 128, 64, epilogue="relu"), "cuda")
    assert sch.auto_report.strategy == "cuda-matmul" and not sch.auto_report.fallbacks, sch.auto_report
    code = cp.codegen(sch, target="cuda")
    assert code.temp_spaces == ()
    _check_text(code.source, [
        "CHECK: __global__ void __launch_bounds__(256) mm_epi(",
        "CHECK-DAG: float C_temp_buffer[16];",
        "CHECK-DAG: __shared__ float B_shared_temp_buffer[1024];",
        "CHECK-DAG: __shared__ float A_shared_temp_buffer[1024];",
        "CHECK: C_temp_buffer[{{.*}}] = 0.00000000f;",
        "CHECK: for (int32_t r_0 = 0; r_0 < 4; r_0 += 1) {",
        "CHECK-DAG: B_shared_temp_buffer[{{.*}}] = B[",
        "CHECK-DAG: A_shared_temp_buffer[{{.*}}] = A[",
        "CHECK: __syncthreads();",
        "CHECK: C_temp_buffer[{{.*}}] = (C_temp_buffer[{{.*}}] + (A_shared_temp_buffer[{{.*}}] * "
        "B_shared_temp_buffer[{{.*}}]));",
        "CHECK: __syncthreads();",
        "CHECK: D[{{.*}}] = max((C_temp_buffer[{{.*}}] + bias[{{.*}}]), 0.00000000f);",
        "CHECK-NOT: __global__",
    ])
    nvrtc_check(code.source)


def test_fp16_tiles_are_staged_as_half() -> None:
    """A float16 compute (accumulating in its own dtype, as written) keeps half tiles in shared
    memory: half the bytes of a float32 stage."""
    sch = auto_schedule(matmul_func(64, 64, 32, dtype="float16", epilogue="relu"), "cuda")
    assert sch.auto_report.strategy == "cuda-matmul", sch.auto_report
    code = cp.codegen(sch, target="cuda")
    _check_text(code.source, [
        "CHECK-DAG: __shared__ __half A_shared_temp_buffer[",
        "CHECK-DAG: __shared__ __half B_shared_temp_buffer[",
        "CHECK: __syncthreads();",
        "CHECK: __half2float(A_shared_temp_buffer[{{.*}}]) * __half2float(B_shared_temp_buffer[",
    ])
    nvrtc_check(code.source)


CASES = [
    dict(m=70, n=50, k=33, epilogue="relu"),
    dict(m=3, n=5, k=7),
    dict(m=20, n=9, k=40, ta=True, tb=True),
    dict(m=40, n=24, k=30, dtype="float16", epilogue="gelu"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "_".join(f"{k}{v}" for k, v in c.items()))
def test_emulated_matches_numpy(case: dict[str, Any]) -> None:
    assert auto_schedule(matmul_func(**case), "cuda").auto_report.strategy == "cuda-matmul"
    _emulated(case)


@pytest.mark.parametrize("case",
                         [dict(m=1, n=2, k=1), dict(m=1, n=1, k=1), dict(m=5, n=7, k=1), dict(m=1, n=1, k=3)],
                         ids=lambda c: "_".join(f"{k}{v}" for k, v in c.items()))
def test_one_element_tiles(case: dict[str, Any]) -> None:
    # A 1-wide k step (or M, N of 1) leaves a shared copy with no loops of its own under ko:
    # it was an IndexError in the tactic (fuzz --net seed 2025 cases 1598, 1632); one thread copies.
    assert auto_schedule(matmul_func(**case), "cuda").auto_report.strategy == "cuda-matmul"
    _emulated(case, race_check=True)


def test_barriers_leave_no_race() -> None:
    _emulated(dict(m=24, n=20, k=40, epilogue="relu"), race_check=True)


@pytest.mark.parametrize("case", [dict(m=17, n=33, k=19, batch=2, epilogue="gelu"),
                                  dict(m=17, n=33, k=19, batch=3, b_batched=False)],
                         ids=["batched_gelu", "shared_b"])
def test_batched(case: dict[str, Any]) -> None:
    sch = auto_schedule(matmul_func(**case), "cuda")
    assert sch.auto_report.strategy == "cuda-matmul" and "blockIdx.z" in str(sch.func), sch.auto_report
    _emulated(case, race_check=case.get("b_batched", True))


def test_symbolic_sizes() -> None:
    fn = matmul_func(cp.sym("M"), cp.sym("N"), cp.sym("K"))
    assert auto_schedule(fn, "cuda").auto_report.strategy == "cuda-matmul"
    rng = np.random.default_rng(1)
    for m, n, k in [(1, 1, 1), (70, 65, 20)]:
        a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
        np.testing.assert_allclose(run_cuda_emulated(fn, a, b), a.astype(np.float64) @ b,
                                   rtol=1e-4, atol=1e-4)


def test_refused_tile_falls_back_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never fails on a valid shape: a tile the tactic refuses (more threads than a block has)
    leaves the group to the generic tactics, the reason in the report, the result still right."""
    monkeypatch.setattr(auto, "CudaMatmulParams", lambda: CudaMatmulParams(128, 128, 16, 1, 1))
    case = dict(m=140, n=130, k=9, epilogue="relu")
    report = auto_schedule(matmul_func(**case), "cuda").auto_report
    assert report.strategy != "cuda-matmul"
    assert any("cuda matmul tactic did not apply: InvalidArgumentError" in f and "1024" in f
               for f in report.fallbacks), report
    _emulated(case)


def test_net_builder_fp16_linear_accumulates_in_float32() -> None:
    """NetBuilder's float16 matmul reads its operands through a cast to float32 (the widened
    match): half tiles in shared memory, float32 accumulators in registers, one rounding at the
    end; K = 512 ones-like sums would lose digits in a half accumulator."""
    nb = NetBuilder("linear16")
    x = nb.create_input("float16", [40, 512], "X")
    w = nb.create_input("float16", [512, 24], "W")
    b = nb.create_input("float16", [24], "B")
    nb.relu(nb.add(nb.matmul(x, w), b))
    program = nb.build()
    (group,) = program_steps(program)[1]
    sch = auto_schedule(group, "cuda")
    assert sch.auto_report.strategy == "cuda-matmul", sch.auto_report
    code = cp.codegen(sch, target="cuda")
    _check_text(code.source, [
        "CHECK-DAG: float matmul_{{[0-9]+}}__acc_temp_buffer[16];",
        "CHECK-DAG: __shared__ __half X_shared_temp_buffer[",
        "CHECK-DAG: __shared__ __half W_shared_temp_buffer[",
    ])
    nvrtc_check(code.source)
    rng = np.random.default_rng(0)
    xs, ws = rng.random((40, 512)).astype(np.float16), rng.random((512, 24)).astype(np.float16)
    bs = rng.standard_normal(24).astype(np.float16)
    got = run_cuda_emulated(program, xs, ws, bs)
    got = got[0] if isinstance(got, (list, tuple)) else got
    want = np.maximum(xs.astype(np.float64) @ ws + bs, 0)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-3)
