"""The x86 benchmark workloads: compute definitions, hand-written x86 schedules, numpy references.

Each `Workload` builds its tensors with the compute DSL for a shape, schedules the lowered
function with an `IRSchedule` it is handed (this module never imports `schedules` or `codegen`:
`cinn_py.tools.bench` creates the schedule and compiles), and knows its numpy reference, the bytes it
must move (inputs read once + outputs written once) and an optional PyTorch CPU version.

The schedules follow one pattern for row-wise fused kernels (RMSNorm, softmax, layernorm,
row-sum), CINN's x86 recipe of "compute_at the reductions into the row loop":

1. every reduction is split into `[-1, lanes]` and `rfactor`ed over the `lanes` loop, so the
   partial sums `rf_T[i, 0:lanes]` form a spatial axis that can be vectorised (a reduce loop
   itself cannot be, and LLVM does not reassociate float adds);
2. every stage is `simple_compute_at`ed into the row loop of the final consumer, so one row is
   read from memory once and stays in L1 while all stages use it;
3. the intermediates become `local` buffers (`set_buffer`): the x86 backend gives each task a
   private copy shrunk to one row (`cinn_py.passes.x86_privatize`), and the `[1, lanes]` partial-sum
   arrays end up in vector registers;
4. the row loop is `parallel`, the inner loops `vectorize[16]` (one AVX-512 register of float32).

The `Workload` record and these shared steps are `bench_workload`; the matmul workloads
`bench_matmul`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import cinn_py as cp
from cinn_py.ir import LoweredFunc
from cinn_py.tools.bench_matmul import BMM, MATMUL, MATMUL_BIAS_RELU
from cinn_py.tools.bench_workload import (
    LANES, Schedule, Shape, Workload, _f32, flat_parallel, fuse_into_rows, make_local, parallel_rows,
    rfactor_lanes, vectorize_inner,
)

GELU_C = math.sqrt(2.0 / math.pi)


# ---------------------------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------------------------
# -- y = relu(x * 2 + 1) ----------------------------------------------------------------------
def _relu_lower(sh: Shape) -> LoweredFunc:
    X = cp.placeholder((sh["n"],), "float32", "X")
    Y = cp.compute((sh["n"],), lambda i: cp.maximum(X[i] * 2.0 + 1.0, 0.0), "Y")
    return cp.lower("bench_relu", [X, Y])


def _relu_schedule(s: Schedule, sh: Shape) -> None:
    flat_parallel(s, "Y", sh["n"], chunk=16384)


def _relu_torch(torch: Any, x: Any) -> Any:
    return torch.relu(x * 2 + 1)


RELU = Workload(
    "relu", "y = relu(x*2+1)", {"n": 1 << 24}, {"n": 1 << 12}, _relu_lower, _relu_schedule,
    lambda sh, rng: [_f32(rng, sh["n"])],
    lambda x: np.maximum(x * np.float32(2) + np.float32(1), np.float32(0)),
    _relu_torch, rtol=0, atol=0)


# -- RMSNorm ----------------------------------------------------------------------------------
def _rms_lower(sh: Shape) -> LoweredFunc:
    R, C = sh["rows"], sh["cols"]
    X = cp.placeholder((R, C), "float32", "X")
    W = cp.placeholder((C,), "float32", "W")
    k = cp.reduce_axis(C, "k")
    SS = cp.compute((R,), lambda i: cp.reduce_sum(X[i, k] * X[i, k], k), "SS")
    Y = cp.compute((R, C), lambda i, j: X[i, j] * cp.rsqrt(SS[i] * (1.0 / C) + 1e-6) * W[j], "Y")
    return cp.lower("bench_rmsnorm", [X, W, Y])


def _rms_schedule(s: Schedule, sh: Shape) -> None:
    rf = rfactor_lanes(s, "SS")
    fuse_into_rows(s, "Y", [f"{rf}__reduce_init", rf, "SS__reduce_init", "SS"])
    make_local(s, rf, "SS")
    vectorize_inner(s, rf, LANES)
    vectorize_inner(s, f"{rf}__reduce_init", LANES)
    vectorize_inner(s, "Y", sh["cols"])
    parallel_rows(s, "Y")


def _rms_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + np.float32(1e-6)) * w


def _rms_torch(torch: Any, x: Any, w: Any) -> Any:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


RMSNORM = Workload(
    "rmsnorm", "RMSNorm over rows (x * rsqrt(mean(x^2) + eps) * w)", {"rows": 2048, "cols": 768},
    {"rows": 8, "cols": 64}, _rms_lower, _rms_schedule,
    lambda sh, rng: [_f32(rng, sh["rows"], sh["cols"]), _f32(rng, sh["cols"])], _rms_numpy, _rms_torch,
    rtol=1e-4, atol=1e-5)


# -- softmax ------------------------------------------------------------------------------------
def _softmax_lower(sh: Shape) -> LoweredFunc:
    R, C = sh["rows"], sh["cols"]
    X = cp.placeholder((R, C), "float32", "X")
    k1 = cp.reduce_axis(C, "k")
    M = cp.compute((R,), lambda i: cp.reduce_max(X[i, k1], k1), "M")
    E = cp.compute((R, C), lambda i, j: cp.exp(X[i, j] - M[i]), "E")
    k2 = cp.reduce_axis(C, "k")
    S = cp.compute((R,), lambda i: cp.reduce_sum(E[i, k2], k2), "S")
    Y = cp.compute((R, C), lambda i, j: E[i, j] * (1.0 / S[i]), "Y")
    return cp.lower("bench_softmax", [X, Y])


def _softmax_schedule(s: Schedule, sh: Shape) -> None:
    rf_m = rfactor_lanes(s, "M")
    rf_s = rfactor_lanes(s, "S")
    fuse_into_rows(s, "Y", [f"{rf_m}__reduce_init", rf_m, "M__reduce_init", "M", "E",
                            f"{rf_s}__reduce_init", rf_s, "S__reduce_init", "S"])
    make_local(s, rf_m, "M", "E", rf_s, "S")
    for rf in (rf_m, rf_s):
        vectorize_inner(s, rf, LANES)
        vectorize_inner(s, f"{rf}__reduce_init", LANES)
    vectorize_inner(s, "E", sh["cols"])
    vectorize_inner(s, "Y", sh["cols"])
    parallel_rows(s, "Y")


def _softmax_numpy(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


SOFTMAX = Workload(
    "softmax", "softmax over rows (max, exp, sum, scale fused)", {"rows": 4096, "cols": 1024},
    {"rows": 8, "cols": 64}, _softmax_lower, _softmax_schedule,
    lambda sh, rng: [_f32(rng, sh["rows"], sh["cols"], scale=3.0)], _softmax_numpy,
    lambda torch, x: torch.softmax(x, -1), rtol=1e-4, atol=1e-7)


# -- row sum / column sum -------------------------------------------------------------------------
def _rowsum_lower(sh: Shape) -> LoweredFunc:
    X = cp.placeholder((sh["rows"], sh["cols"]), "float32", "X")
    k = cp.reduce_axis(sh["cols"], "k")
    Rs = cp.compute((sh["rows"],), lambda i: cp.reduce_sum(X[i, k], k), "R")
    return cp.lower("bench_rowsum", [X, Rs])


def _rowsum_schedule(s: Schedule, sh: Shape) -> None:
    # 64 partial sums per row = four independent 16-lane accumulators (hides the add latency)
    rf = rfactor_lanes(s, "R", 4 * LANES)
    fuse_into_rows(s, "R", [f"{rf}__reduce_init", rf])
    make_local(s, rf)
    vectorize_inner(s, rf, 4 * LANES)
    vectorize_inner(s, f"{rf}__reduce_init", 4 * LANES)
    parallel_rows(s, "R")


def _colsum_lower(sh: Shape) -> LoweredFunc:
    X = cp.placeholder((sh["rows"], sh["cols"]), "float32", "X")
    k = cp.reduce_axis(sh["rows"], "k")
    Cs = cp.compute((sh["cols"],), lambda j: cp.reduce_sum(X[k, j], k), "C")
    return cp.lower("bench_colsum", [X, Cs])


COLSUM_ROWS_PER_PASS = 4


def _colsum_schedule(s: Schedule, sh: Shape) -> None:
    # rows split into `tasks` blocks reduced in parallel into rf_C[t, cols] (spatial over the
    # columns, vectorised), then the few partial rows are summed. Within a block, rows are
    # added 4 at a time (unrolled inside the column vector loop), so each 16-column slice of
    # the partial-sum row is loaded and stored once per 4 rows instead of once per row.
    tasks = min(8, sh["rows"])
    loops = s.get_loops("C")
    outer, _ = s.split(loops[-1], [tasks, -1])
    rf = s.rfactor(outer, 0).name
    loops = s.get_loops(rf)
    s.reorder([loops[1], loops[2], loops[0]])
    t, k, j = s.get_loops(rf)
    s.parallel(t)
    block_rows, cols = sh["rows"] // tasks, sh["cols"]
    if block_rows * tasks == sh["rows"] and block_rows % COLSUM_ROWS_PER_PASS == 0 and cols % LANES == 0:
        ko, ki = s.split(k, [-1, COLSUM_ROWS_PER_PASS])
        jo, ji = s.split(j, [-1, LANES])
        s.reorder([ko, jo, ki, ji])
        s.unroll(ki)
        s.vectorize(ji, LANES)
    else:
        vectorize_inner(s, rf, cols)
    vectorize_inner(s, f"{rf}__reduce_init", sh["cols"])


ROWSUM = Workload(
    "rowsum", "sum over the last axis", {"rows": 4096, "cols": 4096}, {"rows": 16, "cols": 128},
    _rowsum_lower, _rowsum_schedule, lambda sh, rng: [_f32(rng, sh["rows"], sh["cols"])],
    lambda x: x.sum(axis=1), lambda torch, x: x.sum(-1), rtol=1e-4, atol=1e-4)

COLSUM = Workload(
    "colsum", "sum over the first axis", {"rows": 4096, "cols": 4096}, {"rows": 64, "cols": 128},
    _colsum_lower, _colsum_schedule, lambda sh, rng: [_f32(rng, sh["rows"], sh["cols"])],
    lambda x: x.sum(axis=0), lambda torch, x: x.sum(0), rtol=1e-4, atol=1e-3)


# -- layernorm ----------------------------------------------------------------------------------
def _layernorm_lower(sh: Shape) -> LoweredFunc:
    R, C = sh["rows"], sh["cols"]
    inv = 1.0 / C
    X = cp.placeholder((R, C), "float32", "X")
    G = cp.placeholder((C,), "float32", "G")
    B = cp.placeholder((C,), "float32", "B")
    k1 = cp.reduce_axis(C, "k")
    Sx = cp.compute((R,), lambda i: cp.reduce_sum(X[i, k1], k1), "Sx")
    k2 = cp.reduce_axis(C, "k")
    # One pass over the row: sum and sum of squares are independent reductions (neither waits
    # for the mean), var = E[x^2] - mean^2 clamped at 0. The trade-off: E[x^2] - mean^2 cancels
    # when |mean| >> std (relative variance error ~ C * eps * mean^2 / var with float32
    # partial sums; rows of mean 0.5, std 1 here lose ~1e-6 relative). PyTorch/Apex's fused
    # CPU layernorm make the same choice; rows with |mean| >> std want the two-pass form.
    Sq = cp.compute((R,), lambda i: cp.reduce_sum(X[i, k2] * X[i, k2], k2), "Sq")

    def norm(i: Any, j: Any) -> Any:
        mean = Sx[i] * inv
        var = cp.maximum(Sq[i] * inv - mean * mean, 0.0)
        return (X[i, j] - mean) * cp.rsqrt(var + 1e-5) * G[j] + B[j]

    Y = cp.compute((R, C), norm, "Y")
    return cp.lower("bench_layernorm", [X, G, B, Y])


def _layernorm_schedule(s: Schedule, sh: Shape) -> None:
    rf_x = rfactor_lanes(s, "Sx")
    rf_v = rfactor_lanes(s, "Sq")
    fuse_into_rows(s, "Y", [f"{rf_x}__reduce_init", rf_x, "Sx__reduce_init", "Sx",
                            f"{rf_v}__reduce_init", rf_v, "Sq__reduce_init", "Sq"])
    make_local(s, rf_x, "Sx", rf_v, "Sq")
    for rf in (rf_x, rf_v):
        vectorize_inner(s, rf, LANES)
        vectorize_inner(s, f"{rf}__reduce_init", LANES)
    vectorize_inner(s, "Y", sh["cols"])
    parallel_rows(s, "Y")


def _layernorm_numpy(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(1e-5)) * g + b


def _layernorm_torch(torch: Any, x: Any, g: Any, b: Any) -> Any:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, 1e-5)


LAYERNORM = Workload(
    "layernorm", "LayerNorm over rows (one-pass sum / sum of squares)", {"rows": 8192, "cols": 768},
    {"rows": 8, "cols": 64}, _layernorm_lower, _layernorm_schedule,
    lambda sh, rng: [_f32(rng, sh["rows"], sh["cols"], offset=0.5), _f32(rng, sh["cols"]),
                     _f32(rng, sh["cols"])],
    _layernorm_numpy, _layernorm_torch, rtol=1e-4, atol=1e-4)


# -- bias + gelu (tanh approximation) ---------------------------------------------------------------
def _gelu_lower(sh: Shape) -> LoweredFunc:
    R, C = sh["rows"], sh["cols"]
    X = cp.placeholder((R, C), "float32", "X")
    Bias = cp.placeholder((C,), "float32", "bias")

    def gelu(i: Any, j: Any) -> Any:
        # 0.5 * (1 + tanh(u)) == 1 / (1 + exp(-2u)): the same tanh-form GELU with one fast exp
        # (about 15 vector ops with AVX-512 `vscalefps`) + a divide instead of the ~22-op
        # fast tanh; for very negative v, exp overflows to inf and the result is -0 (exact
        # to float32 precision: |gelu(v)| < 1e-30 there). u = c*v*(1 + 0.044715 v^2).
        v = X[i, j] + Bias[j]
        u2 = v * (v * v * (-2.0 * 0.044715 * GELU_C) - 2.0 * GELU_C)
        return v / (cp.exp(u2) + 1.0)

    Y = cp.compute((R, C), gelu, "Y")
    return cp.lower("bench_bias_gelu", [X, Bias, Y])


def _gelu_schedule(s: Schedule, sh: Shape) -> None:
    vectorize_inner(s, "Y", sh["cols"])
    parallel_rows(s, "Y")


def _gelu_numpy(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    v = x + b
    return (v * np.float32(0.5)
            * (np.tanh((v + np.float32(0.044715) * v * v * v) * np.float32(GELU_C)) + np.float32(1)))


def _gelu_torch(torch: Any, x: Any, b: Any) -> Any:
    return torch.nn.functional.gelu(x + b, approximate="tanh")


BIAS_GELU = Workload(
    "bias_gelu", "y = gelu_tanh(x + bias)", {"rows": 4096, "cols": 3072}, {"rows": 4, "cols": 64},
    _gelu_lower, _gelu_schedule, lambda sh, rng: [_f32(rng, sh["rows"], sh["cols"]), _f32(rng, sh["cols"])],
    _gelu_numpy, _gelu_torch, rtol=1e-5, atol=2e-6)


# -- transpose -------------------------------------------------------------------------------------
def _transpose_lower(sh: Shape) -> LoweredFunc:
    X = cp.placeholder((sh["n"], sh["n"]), "float32", "X")
    Y = cp.compute((sh["n"], sh["n"]), lambda i, j: X[j, i], "Y")
    return cp.lower("bench_transpose", [X, Y])


def _transpose_schedule(s: Schedule, sh: Shape) -> None:
    # Two-level tiles: 256x256 blocks (the rows of X a block reads stay in L2 and its pages in
    # the TLB), 16x16 inner tiles: 16 unrolled rows, each a 16-lane gather of X and a
    # contiguous vector store of Y.
    tile = min(LANES, sh["n"])
    block = min(256, sh["n"])
    i, j = s.get_loops("Y")
    io, im, ii = s.split(i, [-1, block // tile, tile])
    jo, jm, ji = s.split(j, [-1, block // tile, tile])
    s.reorder([io, jo, im, jm, ii, ji])
    s.parallel(io)
    s.unroll(ii)
    s.vectorize(ji, tile)


TRANSPOSE = Workload(
    "transpose", "y = x.T (copied)", {"n": 4096}, {"n": 64}, _transpose_lower, _transpose_schedule,
    lambda sh, rng: [_f32(rng, sh["n"], sh["n"])], lambda x: np.ascontiguousarray(x.T),
    lambda torch, x: x.t().contiguous(), rtol=0, atol=0)


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    RELU, RMSNORM, SOFTMAX, ROWSUM, COLSUM, LAYERNORM, BIAS_GELU, TRANSPOSE, MATMUL, BMM, MATMUL_BIAS_RELU)}
# Targets of the benchmark issue: >= 80% of measured bandwidth and >= 5x numpy on these.
FIVE_X_NUMPY = ("rmsnorm", "softmax", "layernorm", "bias_gelu")
