"""Where the tuner's measurements run: spawned worker processes, Ray tasks, or this process.

A runner takes jobs (argument tuples of a module-level function, default `measure_job`) and
yields each job's `(seconds or None, error or None)` in order; a worker that crashes or hangs
past `timeout_s` is a failed job, never a failure of the tuner:

* `process` (default): a `concurrent.futures.ProcessPoolExecutor` (spawned processes); a worker
  that crashes or hangs is killed and replaced;
* `ray`: tasks on a Ray cluster (`ray.init()` of the running cluster or a local one; install
  `cinn-py[distributed]`); a crashed or timed-out task is cancelled and counted as failed;
* `inline`: in this process (no isolation; for debugging).

`measure_job` parses the group from its IR text, schedules it with the candidate
(`schedules.tuning.space.apply_candidate`), compiles it, compares its outputs with the default
schedule's on the same random inputs and times it; `confirm_job` times several candidates
interleaved, round after round, so that their times are taken under the same load.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from cinn_py.ir import LoweredFunc
from cinn_py.target import Target
from cinn_py.tools.runner import random_inputs

__all__ = ["WORKER_KINDS", "confirm_job", "make_runner", "measure_job", "run_all"]

WORKER_KINDS = ("process", "ray", "inline")
Job = tuple[Any, ...]


# -- one measurement (runs in a worker) -----------------------------------------------------------
def _build(func: LoweredFunc, cand: Any, target: Target, fast_math: bool) -> Any:
    import cinn_py as cp
    from schedules.tuning.space import apply_candidate

    return cp.build(apply_candidate(func, target, cand).schedule.func, target=target, fast_math=fast_math)


_REFERENCE: dict[str, list[np.ndarray]] = {}


def _reference(func: LoweredFunc, default: Any, target: Target, arrays: list[np.ndarray], key: str,
               fast_math: bool) -> list[np.ndarray]:
    """The default schedule's outputs on `arrays` (computed once per worker process)."""
    if key not in _REFERENCE:
        _REFERENCE[key] = _as_list(_build(func, default, target, fast_math)(*arrays))
    return _REFERENCE[key]


def _check(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want):
        if not np.allclose(g, w, rtol=1e-3, atol=1e-3, equal_nan=True):
            error = float(np.nanmax(np.abs(g - w)))
            raise ArithmeticError(f"wrong result: max abs error {error} against the "
                                  "default schedule")


def _calls_per_sample(kernel: Any, arrays: list[np.ndarray], min_sample_s: float = 2e-3) -> int:
    """Warm up (caches, thread pool) and pick how many calls make one sample >= `min_sample_s`,
    so that short kernels are not timed at the clock's resolution."""
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            kernel(*arrays)
        elapsed = time.perf_counter() - t0
        if elapsed >= min_sample_s or calls >= 1 << 16:
            return calls
        calls *= 2


def _sample(kernel: Any, arrays: list[np.ndarray], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        kernel(*arrays)
    return (time.perf_counter() - t0) / calls


def _as_list(out: Any) -> list[np.ndarray]:
    return list(out) if isinstance(out, tuple) else [out]


def _setup(func_text: str, dims: dict[str, int], seed: int) -> tuple[LoweredFunc, list[np.ndarray], str]:
    """The group parsed from IR text (a pickled LoweredFunc would carry statement uids that
    collide with the ones this process hands out, and schedule handles are uids), its inputs and
    the reference key."""
    from cinn_py.ir import parse_func

    func = parse_func(func_text)
    arrays = list(random_inputs(func, dims, seed).values())
    return func, arrays, f"{hash(func_text)}:{sorted(dims.items())}:{seed}"


def measure_job(func_text: str, cand: Any, default: Any, dims: dict[str, int], repeat: int, seed: int = 0,
                target: str = "x86", fast_math: bool = False) -> tuple[float | None, str | None]:
    """The fastest of `repeat` samples of one call of the group scheduled with `cand` (after a
    warm-up), or (None, why) when it fails or computes another result than the default."""
    try:
        tgt = Target.parse(target)
        func, arrays, key = _setup(func_text, dims, seed)
        kernel = _build(func, cand, tgt, fast_math)
        _check(_as_list(kernel(*arrays)), _reference(func, default, tgt, arrays, key, fast_math))
        calls = _calls_per_sample(kernel, arrays)
        return min(_sample(kernel, arrays, calls) for _ in range(repeat)), None  # noise only adds time
    except Exception as err:  # a failed candidate: reported as a failed trial
        return None, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def confirm_job(func_text: str, cands: Sequence[Any], dims: dict[str, int], rounds: int, seed: int = 0,
                target: str = "x86", fast_math: bool = False) -> tuple[list[float | None], str | None]:
    """Each candidate's fastest sample over `rounds` rounds that time every candidate once, in
    turn (the same load for all); a candidate that fails to build gets None."""
    try:
        tgt = Target.parse(target)
        func, arrays, _ = _setup(func_text, dims, seed)
        kernels: list[Any] = []
        for cand in cands:
            try:
                kernels.append(_build(func, cand, tgt, fast_math))
            except Exception:  # measured before: a failure here leaves it out of the comparison
                kernels.append(None)
        calls = [_calls_per_sample(k, arrays) if k is not None else 0 for k in kernels]
        best: list[float | None] = [None] * len(cands)
        for _ in range(rounds):
            for i, k in enumerate(kernels):
                if k is not None:
                    t = _sample(k, arrays, calls[i])
                    best[i] = t if best[i] is None else min(best[i], t)  # type: ignore[type-var]
        return best, None
    except Exception as err:
        return [None] * len(cands), f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


# -- runners -----------------------------------------------------------------------------------------


class _ProcessRunner:
    """Runs jobs in spawned worker processes; a crash or a hang kills and replaces the pool."""

    def __init__(self, parallel: int, timeout_s: float, fn: Callable[..., Any] | None = None) -> None:
        self.parallel, self.timeout_s = parallel, timeout_s
        self.fn = fn or measure_job
        self.pool = self._new_pool()

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(max_workers=self.parallel,
                                      mp_context=multiprocessing.get_context("spawn"))

    def _restart(self) -> None:
        for proc in list(getattr(self.pool, "_processes", {}).values()):
            proc.kill()  # our own workers, by handle
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool = self._new_pool()

    def run(self, jobs: Sequence[Job], fn: Callable[..., Any] | None = None) -> Iterable[Any]:
        futures = [self.pool.submit(fn or self.fn, *job) for job in jobs]
        for fut in futures:
            try:
                yield fut.result(timeout=self.timeout_s)
            except cf.TimeoutError:
                self._restart()
                yield None, f"timed out after {self.timeout_s:g} s"
                return
            except cf.process.BrokenProcessPool:
                self._restart()
                yield None, "worker process crashed"
                return

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class _RayRunner:
    """Runs jobs as Ray tasks (the running cluster, else a local one)."""

    def __init__(self, parallel: int, timeout_s: float, fn: Callable[..., Any] | None = None) -> None:
        try:
            import ray  # pyright: ignore[reportMissingImports] (optional: distributed extra)
        except ImportError:
            raise RuntimeError("tune: workers='ray' needs Ray (pip install 'cinn-py[distributed]')") from None
        self.ray, self.timeout_s = ray, timeout_s
        if not ray.is_initialized():
            ray.init(num_cpus=parallel, include_dashboard=False, log_to_driver=False,
                     ignore_reinit_error=True)
        self.fn = fn or measure_job
        self._remotes: dict[Any, Any] = {}

    def _remote(self, fn: Callable[..., Any]) -> Any:
        if fn not in self._remotes:
            self._remotes[fn] = self.ray.remote(max_retries=0)(fn)
        return self._remotes[fn]

    def run(self, jobs: Sequence[Job], fn: Callable[..., Any] | None = None) -> Iterable[Any]:
        ray = self.ray
        remote = self._remote(fn or self.fn)
        for job in jobs:  # one at a time: concurrent timings on shared cores are not comparable
            ref = remote.remote(*job)
            try:
                yield ray.get(ref, timeout=self.timeout_s)
            except ray.exceptions.GetTimeoutError:
                ray.cancel(ref, force=True)
                yield None, f"timed out after {self.timeout_s:g} s"
            except ray.exceptions.RayError as err:
                yield None, f"ray task failed: {type(err).__name__}"

    def close(self) -> None:
        """The cluster stays up for the caller (it may be shared)."""


class _InlineRunner:
    def __init__(self, parallel: int, timeout_s: float, fn: Callable[..., Any] | None = None) -> None:
        self.fn = fn or measure_job

    def run(self, jobs: Sequence[Job], fn: Callable[..., Any] | None = None) -> Iterable[Any]:
        for job in jobs:
            yield (fn or self.fn)(*job)

    def close(self) -> None:
        pass


def make_runner(workers: str, parallel: int = 1, timeout_s: float = 120.0,
                fn: Callable[..., Any] | None = None) -> Any:
    """A runner of measurement jobs (`fn`, default the measurement) on `workers`."""
    if workers not in WORKER_KINDS:
        raise ValueError(f"tune: workers must be one of {WORKER_KINDS}, got {workers!r}")
    kinds = {"process": _ProcessRunner, "ray": _RayRunner, "inline": _InlineRunner}
    return kinds[workers](parallel, timeout_s, fn)


def run_all(runner: Any, jobs: Sequence[Any]) -> Iterable[tuple[float | None, str | None]]:
    """Every job's outcome in order; after a crash or hang the remaining jobs are resubmitted."""
    pending = list(jobs)
    while pending:
        got = 0
        for outcome in runner.run(pending):
            got += 1
            yield outcome
        pending = pending[got:]
