"""How the benchmarks measure: `time_call` (warm-up, repeats, an optional time budget), the
interleaved timings of several kernels (`time_alternating`) and the ones bracketed by a memory-copy
probe (`CopyProbe`, `time_bracketed`: the machine's bandwidth before and after, so a row timed
while another process used the memory bus shows it), `measure_bandwidth`, and `check_result`
(every timed result is compared with numpy; `BenchmarkError` when outside the tolerance).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import cinn_py as cp
from cinn_py.diagnostics import CinnError
from cinn_py.ir import LoweredFunc

BANDWIDTH_ELEMENTS = 1 << 25  # 128 MiB of float32


# An entry point (like the driver): schedules and codegen are imported lazily, inside functions.
def _schedule(func: LoweredFunc) -> Any:
    from schedules import IRSchedule  # noqa: PLC0415

    return IRSchedule(func)


class BenchmarkError(CinnError):
    """A benchmarked kernel computed a wrong result (or a workload name is unknown)."""


def check_result(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> float:
    """Max abs error of `got` vs `want`; BenchmarkError when outside the tolerance."""
    if got.shape != want.shape:
        raise BenchmarkError(f"bench '{name}': output shape {got.shape}, numpy's is {want.shape}")
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        where = np.unravel_index(int(np.nanargmax(err)), err.shape)
        raise BenchmarkError(f"bench '{name}': result differs from numpy (rtol={rtol}, atol={atol}): max abs "
                             f"error {float(np.nanmax(err)):.3g} at {tuple(int(w) for w in where)}: got "
                             f"{got[where]!r}, numpy {want[where]!r}")
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0


def time_call(fn: Callable[[], Any], repeat: int, warmup: int = 2,
              budget_s: float | None = None) -> list[float]:
    """Wall times (seconds) of `repeat` calls after `warmup` calls; with `budget_s`, stops early
    (after at least 3 calls) once the calls took that long."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    start = time.perf_counter()
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if budget_s is not None and len(times) >= 3 and time.perf_counter() - start > budget_s:
            break
    return times


def _torch() -> Any:
    try:
        import torch  # noqa: PLC0415  # pyright: ignore[reportMissingImports] (optional)
    except ImportError:
        return None
    return torch


# ---------------------------------------------------------------------------------------------
# Memory bandwidth
# ---------------------------------------------------------------------------------------------
def _copy_kernel(n: int, threads: int | None) -> Any:
    X = cp.placeholder((n,), "float32", "X")
    Y = cp.compute((n,), lambda i: X[i], "Y")
    sch = _schedule(cp.lower("bench_copy", [X, Y]))
    outer, _, inner = sch.split(sch.get_loops("Y")[0], [-1, 1024, 16])
    sch.parallel(outer)
    sch.vectorize(inner, 16)
    options = {} if threads is None else {"num_threads": threads}
    return cp.build(sch.func, target="x86", fast_math=True, **options)


def measure_bandwidth(repeat: int = 10, threads: int | None = None,
                      n: int = BANDWIDTH_ELEMENTS) -> dict[str, float]:
    """GB/s (read + write bytes) of numpy's copy and of a cinn-py parallel copy kernel."""
    src = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    dst = np.empty_like(src)
    kernel = _copy_kernel(n, threads)
    moved = 2 * src.nbytes
    t_np = statistics.median(time_call(lambda: np.copyto(dst, src), repeat))
    t_cp = statistics.median(time_call(lambda: kernel(src, out=dst), repeat))
    if not np.array_equal(dst, src):
        raise BenchmarkError("bench: the cinn-py copy kernel did not copy its input")
    return {"numpy_copy_gbs": moved / t_np / 1e9, "cinn_copy_gbs": moved / t_cp / 1e9,
            "bandwidth_gbs": max(moved / t_np, moved / t_cp) / 1e9}


# ---------------------------------------------------------------------------------------------
# One workload
# ---------------------------------------------------------------------------------------------
class CopyProbe:
    """The cinn-py copy kernel on a buffer of `n` float32, timed between workload calls."""

    def __init__(self, n: int, threads: int | None) -> None:
        self.src = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
        self.dst = np.empty_like(self.src)
        self.kernel = _copy_kernel(n, threads)
        self.kernel(self.src, out=self.dst)

    def __call__(self) -> float:
        """Seconds of one copy."""
        t0 = time.perf_counter()
        self.kernel(self.src, out=self.dst)
        return time.perf_counter() - t0

    def gbs(self, seconds: float) -> float:
        return 2 * self.src.nbytes / seconds / 1e9


def time_alternating(fns: Sequence[Callable[[], Any]], repeat: int, warmup: int = 3) -> list[list[float]]:
    """Wall times of `repeat` rounds that call each of `fns` once, in turn (after `warmup` such
    rounds): kernels compared with each other see the same load and cache state."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return times


def time_bracketed(fns: Sequence[Callable[[], Any]], probe: CopyProbe, repeat: int,
                   copies: int = 7) -> tuple[list[list[float]], float]:
    """`time_alternating(fns)`, bracketed by `copies` timed copies of `probe` right before and
    right after; returns (times per fn, the better of the two median copy times). The copies are
    kept out of the timed loop: they evict the caches, which would slow down workloads whose
    working set is cache-resident."""
    before = statistics.median(probe() for _ in range(copies))
    times = time_alternating(fns, repeat)
    after = statistics.median(probe() for _ in range(copies))
    return times, min(before, after)
