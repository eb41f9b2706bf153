"""The `cinn-py bench` workloads auto-scheduled for CUDA (`schedule="auto"`), run against numpy at
small shapes: on a GPU when there is one, else in the CPU emulator (the `cuda` marker), with the
shared-memory race check where the kernel stages values through shared memory. Also the hand
kernels of `cinn_py.tools.bench_cuda` and fp16/bf16 auto-scheduled softmax over symbolic rows."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.tools import bench_cuda
from cinn_py.tools.bench_workloads import WORKLOADS

pytestmark = pytest.mark.cuda

# Besides each workload's `tiny` shape: non-power-of-two extents, tails, a single row.
ODD_SHAPES: dict[str, dict[str, int]] = {
    "relu": {"n": 1000},
    "rmsnorm": {"rows": 3, "cols": 1000},
    "softmax": {"rows": 1, "cols": 333},
    "rowsum": {"rows": 5, "cols": 4100},
    "colsum": {"rows": 33, "cols": 5},
    "layernorm": {"rows": 40, "cols": 7},
    "bias_gelu": {"rows": 3, "cols": 33},
    "transpose": {"n": 33},
    "matmul": {"m": 33, "n": 17, "k": 65},
    "bmm": {"batch": 3, "m": 5, "n": 33, "k": 7},
    "matmul_bias_relu": {"m": 7, "n": 130, "k": 9},
}


def _emulated() -> bool:
    return os.environ.get("CINN_PY_CUDA") == "emulate"


def test_every_workload_has_an_odd_shape() -> None:
    assert sorted(ODD_SHAPES) == sorted(WORKLOADS)


@pytest.mark.parametrize("shape_kind", ["tiny", "odd"])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_auto_scheduled_workload_matches_numpy(name: str, shape_kind: str) -> None:
    workload = WORKLOADS[name]
    shape = workload.tiny if shape_kind == "tiny" else ODD_SHAPES[name]
    func = workload.lower(shape)
    kernel = cp.build(func, "cuda", schedule="auto", fast_math=True)
    if _emulated() and "__shared__" in kernel.source:
        kernel = cp.build(func, "cuda", schedule="auto", fast_math=True, race_check=True)
    arrays = workload.inputs(shape, np.random.default_rng(0))
    np.testing.assert_allclose(kernel(*arrays), workload.numpy(*arrays), rtol=max(workload.rtol, 1e-4),
                               atol=max(workload.atol, 1e-4))


def _softmax(dtype: str, cols: int) -> cp.LoweredFunc:
    S0 = cp.sym("S0")
    X = cp.placeholder((S0, cols), dtype, "X")
    k = cp.reduce_axis(cols, "k")
    M = cp.compute((S0,), lambda i: cp.reduce_max(X[i, k], k), "M")
    E = cp.compute((S0, cols), lambda i, j: cp.exp(X[i, j] - M[i]), "E")
    k2 = cp.reduce_axis(cols, "k2")
    Z = cp.compute((S0,), lambda i: cp.reduce_sum(E[i, k2], k2), "Z")
    return cp.lower("softmax", [X, cp.compute((S0, cols), lambda i, j: E[i, j] / Z[i], "Y")])


def _bf16(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _from_bf16(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_softmax_over_symbolic_rows(dtype: str) -> None:
    """Auto-scheduled buckets (one row, several rows) in fp16/bf16: the block reduces accumulate
    in float, the stores round back."""
    kernel = cp.build(_softmax(dtype, 300), "cuda", schedule="auto",
                      **({"race_check": True} if _emulated() else {}))
    for rows in (1, 5):
        x = np.random.default_rng(rows).standard_normal((rows, 300)).astype(np.float32)
        stored = x.astype(np.float16) if dtype == "float16" else _bf16(x)
        as_float = stored.astype(np.float32) if dtype == "float16" else _from_bf16(stored)
        got = kernel(stored)
        got = got.astype(np.float32) if dtype == "float16" else _from_bf16(got)
        e = np.exp(as_float - as_float.max(axis=1, keepdims=True))
        np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=2e-2, atol=2e-3)


def test_bench_cuda_hand_kernels_match_numpy() -> None:
    """The hand-scheduled kernels `python -m cinn_py.tools.bench_cuda` times on a GPU."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(5000).astype(np.float32)
    np.testing.assert_allclose(bench_cuda.elementwise(x.size)(x), x * 2 + 1, rtol=1e-6)
    X, b = rng.standard_normal((3, 100)).astype(np.float32), rng.standard_normal(100).astype(np.float32)
    v = (X + b).astype(np.float64)
    gelu = v * 0.5 * (1 + np.vectorize(math.erf)(v / np.sqrt(2)))
    np.testing.assert_allclose(bench_cuda.bias_gelu(3, 100)(X, b), gelu, rtol=1e-5, atol=1e-5)
    for rows, cols, square in ((5, 2048, False), (4, 512, True)):
        X = rng.standard_normal((rows, cols)).astype(np.float32)
        np.testing.assert_allclose(bench_cuda.row_reduce(rows, cols, square)(X),
                                   (X * X if square else X).sum(1),
                                   rtol=1e-4, atol=1e-4)
    X = rng.standard_normal((70, 300)).astype(np.float32)
    np.testing.assert_allclose(bench_cuda.col_reduce(70, 300)(X), X.sum(0), rtol=1e-4, atol=1e-4)
    X, W = rng.standard_normal((5, 100)).astype(np.float32), rng.standard_normal(100).astype(np.float32)
    S = (X * X).sum(1)
    np.testing.assert_allclose(bench_cuda.rms_scale(5, 100)(X, S, W),
                               X / np.sqrt(S[:, None] / 100 + 1e-6) * W,
                               rtol=1e-4, atol=1e-5)
