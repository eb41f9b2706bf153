"""The matmul benchmark workloads (`matmul`, `bmm`, `matmul_bias_relu`) and their hand schedule, the
GotoBLAS loop nest (docs/auto_schedule.md, "Matmul"). Compute-bound: the target is numpy's BLAS,
not a share of the memory bandwidth. `bench_workloads.WORKLOADS` lists them with the others.
"""

from __future__ import annotations


import numpy as np

import cinn_py as cp
from cinn_py.ir import LoweredFunc
from cinn_py.tools.bench_workload import LANES, Schedule, Shape, Workload, _f32


# -- matmul ---------------------------------------------------------------------------------------
# The hand schedule is the GotoBLAS loop nest (docs/auto_schedule.md, "Matmul"): column panels of
# 2 x 16 lanes run in parallel, each k block of B is packed into a contiguous task-private panel
# (cache_read + compute_at), and an 8 x 32 register tile (16 zmm accumulators, k outermost,
# unrolled rows and vectors) does the FMAs; an epilogue is computed on the output panel.
MM_TILE = {"mr": 8, "nv": 2, "kc": 256}


def _mm_lower(sh: Shape, epilogue: bool = False) -> LoweredFunc:
    batch = (sh["batch"],) if "batch" in sh else ()
    A = cp.placeholder(batch + (sh["m"], sh["k"]), "float32", "A")
    B = cp.placeholder(batch + (sh["k"], sh["n"]), "float32", "B")
    r = cp.reduce_axis(sh["k"], "r")
    C = cp.compute(batch + (sh["m"], sh["n"]),
                   lambda *ix: cp.reduce_sum(A[ix[:-1] + (r,)] * B[ix[:-2] + (r, ix[-1])], r),
                   "C")
    if not epilogue:
        return cp.lower("bench_bmm" if batch else "bench_matmul", [A, B, C])
    bias = cp.placeholder((sh["n"],), "float32", "bias")
    D = cp.compute(batch + (sh["m"], sh["n"]), lambda *ix: cp.maximum(C[ix] + bias[ix[-1]], 0.0), "D")
    return cp.lower("bench_matmul_bias_relu", [A, B, bias, D])


def _mm_schedule(s: Schedule, sh: Shape, epilogue: bool = False) -> None:
    t = MM_TILE
    *batch, i, j, k = s.get_loops("C")
    io, ii = s.split(i, [-1, min(t["mr"], sh["m"])])
    jo, jv, ji = s.split(j, [-1, t["nv"], LANES])
    ko, ki = s.split(k, [-1, min(t["kc"], sh["k"])])
    s.reorder([*batch, jo, io, ii, jv, ji])
    init = s.decompose_reduction("C", io)
    s.reorder([ko, io, ki, ii, jv, ji])
    s.unroll(ii)
    s.unroll(jv)
    s.vectorize(ji, LANES)
    s.vectorize(s.get_loops(init)[-1], LANES)
    s.annotate("C", "fp_contract", True)
    panel = s.cache_read("C", 2, "local")  # reads: C, A, B
    s.compute_at(panel, ko)
    s.vectorize(s.split(s.get_loops(panel)[-1], [-1, LANES])[-1], LANES)
    if epilogue:
        s.reverse_compute_at("D", jo)
        s.vectorize(s.split(s.get_loops("D")[-1], [-1, LANES])[-1], LANES)
        s.set_buffer("C", "local")
    s.parallel(s.get_loops("C")[0])


def _mm_inputs(sh: Shape, rng: np.random.Generator, epilogue: bool = False) -> list[np.ndarray]:
    batch = (sh["batch"],) if "batch" in sh else ()
    ins = [_f32(rng, *batch, sh["m"], sh["k"]), _f32(rng, *batch, sh["k"], sh["n"])]
    return ins + [_f32(rng, sh["n"])] if epilogue else ins


MM_NOTES = "compute-bound: GB/s and % BW do not apply; the target is numpy's BLAS (within 1.5x)"
MATMUL = Workload(
    "matmul", "C = A @ B (fp32)", {"m": 1024, "n": 1024, "k": 1024}, {"m": 24, "n": 64, "k": 40}, _mm_lower,
    _mm_schedule, _mm_inputs, lambda a, b: a @ b, lambda torch, a, b: a @ b, rtol=1e-3, atol=1e-3,
    fused_memory_bound=False, notes=MM_NOTES, extra={"blas": True})
BMM = Workload(
    "bmm", "C[b] = A[b] @ B[b] (fp32, batched)", {"batch": 16, "m": 256, "n": 256, "k": 256},
    {"batch": 2, "m": 16, "n": 32, "k": 24}, _mm_lower, _mm_schedule, _mm_inputs, np.matmul,
    lambda torch, a, b: torch.bmm(a, b), rtol=1e-3, atol=1e-3, fused_memory_bound=False, notes=MM_NOTES,
    extra={"blas": True})
MATMUL_BIAS_RELU = Workload(
    "matmul_bias_relu", "D = relu(A @ B + bias) (epilogue fused)", {"m": 1024, "n": 1024, "k": 1024},
    {"m": 24, "n": 64, "k": 40}, lambda sh: _mm_lower(sh, True), lambda s, sh: _mm_schedule(s, sh, True),
    lambda sh, rng: _mm_inputs(sh, rng, True), lambda a, b, bias: np.maximum(a @ b + bias, np.float32(0)),
    lambda torch, a, b, bias: torch.relu(a @ b + bias), rtol=1e-3, atol=1e-3, fused_memory_bound=False,
    notes=MM_NOTES, extra={"blas": True})
