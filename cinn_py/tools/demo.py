"""`cinn-py demo`: the seed example (CINN article §2.2) end to end.

1. build the fused group X -> A -> B -> C (sum) -> D -> E (broadcast) -> F with symbolic S1, S2
   and lower it to CINN's AST;
2. apply the article's GPU schedule (align, tile, inline, two-step reduce, fuse, bind) and print
   the scheduled IR and the CUDA C kernel, compiled with NVRTC when it is installed;
3. apply a CPU schedule (inline, parallel rows, vectorised elementwise tail), JIT it for x86
   and check it against numpy for a few sizes of S1, S2.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import cinn_py as cp
from cinn_py.ir import LoweredFunc, reset_name_ids


def seed_program(red: int = 1024) -> LoweredFunc:
    """The seed's composite example over [S1, S2, red], lowered (examples/seed_example.py);
    tests use smaller `red` values."""
    s1, s2 = cp.sym("S1"), cp.sym("S2")
    x = cp.placeholder((s1, s2, red), "float32", "X")
    a = cp.compute((s1, s2, red), lambda i, j, k: x[i, j, k] * 2.0, "A")
    b = cp.compute((s1, s2, red), lambda i, j, k: a[i, j, k] + 1.0, "B")
    r = cp.reduce_axis(red, "k")
    c = cp.compute((s1, s2), lambda i, j: cp.reduce_sum(b[i, j, r], [r]), "C")
    d = cp.compute((s1, s2), lambda i, j: c[i, j] * 2.0, "D")
    e = cp.compute((s1, s2, red), lambda i, j, k: d[i, j], "E")
    f = cp.compute((s1, s2, red), lambda i, j, k: e[i, j, k] + 1.0, "F")
    return cp.lower("fn", [x, f])


def seed_reference(x: np.ndarray) -> np.ndarray:
    """numpy version of the seed example (sums in float64)."""
    c = (x.astype(np.float64) * 2 + 1).sum(axis=-1)
    return (np.broadcast_to((c * 2)[..., None], x.shape) + 1).astype(np.float32)


def gpu_schedule(func: LoweredFunc) -> Any:
    """The article's steps (2)-(7) (examples/seed_schedule.py)."""
    sch = cp.IRSchedule(func)
    sch.align_iter_space()
    for name in "ABCDEF":
        loops = sch.get_loops(name)
        sch.split(loops[0], [-1, 16, 32])
        if len(loops) == 2:
            sch.split(sch.get_loops(name)[3], [-1, 32])
    for name in "ABDE":
        sch.compute_inline(name)
    sch.bind(sch.get_loops("C")[3], "threadIdx.x")
    sch.factorize_reduction(sch.get_loops("C")[3], 2)
    sch.simple_compute_at("F", sch.get_loops("C")[2])
    sch.bind(sch.get_loops("C")[1], "blockIdx.x")
    sch.bind(sch.get_loops("C")[2], "threadIdx.y")
    sch.bind(sch.get_loops("F")[3], "threadIdx.x")
    return sch


def cpu_schedule(func: LoweredFunc) -> Any:
    """Inline the elementwise ops, run rows in parallel, vectorise the broadcast output."""
    sch = cp.IRSchedule(func)
    for name in "ABDE":
        sch.compute_inline(name)
    sch.parallel(sch.get_loops("C")[0])
    f_loops = sch.get_loops("F")
    sch.parallel(f_loops[0])
    sch.vectorize(f_loops[2], 16)
    return sch


def run_demo(verbose: bool = True) -> int:
    """Run the demo; returns the exit status (0 when every check passed)."""
    say = print if verbose else (lambda *a, **k: None)
    reset_name_ids()
    func = seed_program()
    say("== 1. lowered AST (first lines) ==")
    say("\n".join(str(func).splitlines()[:18]) + "\n  ...")
    sch = gpu_schedule(func)
    say(f"\n== 2. GPU schedule: {len(sch.trace.steps)} trace steps; scheduled IR (first lines) ==")
    say("\n".join(str(sch.func).splitlines()[:14]) + "\n  ...")
    _show_cuda(sch, say)
    return _run_x86(func, say)


def _show_cuda(sch: Any, say: Any) -> None:
    try:
        code = cp.codegen(sch, target="cuda")
    except ImportError as err:
        say(f"\n(CUDA C skipped: {err})")
        return
    except cp.CinnError as err:
        say(f"\n(CUDA codegen reported: {err.message})")
        return
    say("\n== CUDA C (kernel signature) ==")
    say(next(line for line in code.source.splitlines() if "__global__" in line))
    try:  # NVRTC (the optional `nvrtc` extra) compiles on first access to .cubin
        say(f"NVRTC: {len(code.cubin or b'')}-byte CUBIN; launch {code.launch}")
    except cp.CinnError as err:
        say(f"launch {code.launch}\n(NVRTC compile skipped: {err.message})")


def _run_x86(func: LoweredFunc, say: Any) -> int:
    kernel = cp.build(cpu_schedule(func), target="x86")
    say("\n== 3. x86: scheduled kernel vs numpy ==")
    status = 0
    for s1, s2 in ((1, 1), (3, 5), (4, 64)):
        x = np.random.default_rng(s1 * 100 + s2).uniform(-1, 1, (s1, s2, 1024)).astype(np.float32)
        start = time.perf_counter()
        out = kernel(x)
        elapsed = (time.perf_counter() - start) * 1e3
        err = float(np.max(np.abs(out - seed_reference(x)) / (1 + np.abs(seed_reference(x)))))
        ok = err < 1e-4
        status |= 0 if ok else 1
        say(f"S1={s1:<2} S2={s2:<3} max rel err {err:.2e}  {elapsed:7.3f} ms  {'ok' if ok else 'MISMATCH'}")
    return status
